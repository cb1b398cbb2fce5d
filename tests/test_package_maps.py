"""Maps that cover every room: the docstring of each package's __init__.py names each of its modules and
subpackages at the start of a line of its own (`noise.py  eps regenerated from the seeds`, `es/  ...`), as
llm/es/__init__.py does; docs/llm.md names every module of llm/ by its path there (`es/noise.py`).
__main__.py (the `python -m` hook) is left out."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ("theory", "simulate", "llm", "paper_checks")


def packages() -> list[Path]:
    return sorted(p.parent for level in LEVELS for p in (ROOT / level).rglob("__init__.py"))


def rooms(package: Path) -> list[str]:
    """A package's modules (`name.py`) and subpackages (`name/`), as its map names them."""
    modules = [p.name for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    return sorted(modules + [p.name + "/" for p in package.iterdir() if (p / "__init__.py").is_file()])


def unnamed(docstring: str, names: list[str]) -> list[str]:
    """The names that no line of the docstring starts with (followed by a space or the line's end)."""
    starts = {line.split()[0] for line in docstring.splitlines() if line.strip()}
    return [n for n in names if n not in starts]


@pytest.mark.parametrize("package", [pytest.param(p, id=str(p.relative_to(ROOT))) for p in packages()])
def test_every_package_docstring_names_each_of_its_modules_on_a_line(package):
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    missing = unnamed(docstring, rooms(package))
    assert not missing, f"{package.relative_to(ROOT)}/__init__.py's docstring does not name {missing}"


def test_the_map_check_finds_a_module_left_out_and_a_name_only_mentioned(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("__init__.py", "__main__.py", "alpha.py", "beta.py", "sub/__init__.py"):
        (tmp_path / "pkg" / name).write_text("")
    names = rooms(tmp_path / "pkg")
    assert names == ["alpha.py", "beta.py", "sub/"]
    assert unnamed("Title.\n\n    alpha.py  the first\n    sub/      the rest\n", names) == ["beta.py"]
    assert unnamed("Title naming alpha.py, beta.py and sub/ in a sentence.\n", names) == names


def test_docs_llm_names_every_module_of_llm():
    text = (ROOT / "docs" / "llm.md").read_text()
    llm = ROOT / "llm"
    modules = [
        p.relative_to(llm).as_posix() for p in sorted(llm.rglob("*.py")) if p.name not in ("__init__.py", "__main__.py")
    ]
    assert len(modules) > 60
    missing = [m for m in modules if not re.search(rf"`{re.escape(m)}`", text)]
    assert not missing, f"docs/llm.md does not name {missing}"
