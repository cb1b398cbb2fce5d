"""The package layout DESIGN.md states: one installed name, `escov`, whose levels import downward only
(theory <- simulate <- llm <- paper_checks) and always by their full name (`escov.llm`, never a bare
`llm`, which is another PyPI package's name), and no import cycle anywhere (all of llm/ included),
counting imports inside functions (which hide a cycle from the interpreter) and the package
`__init__` an import runs first, leaving out imports under TYPE_CHECKING (which never run)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ("theory", "simulate", "llm", "paper_checks")


def _module(path: Path, root: Path = ROOT) -> str:
    """The installed name of a file under a level's folder: llm/es/noise.py -> escov.llm.es.noise."""
    parts = ("escov",) + path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """Absolute names of the modules a file imports anywhere, except under `if TYPE_CHECKING:`."""
    tree, package = ast.parse(path.read_text()), _module(path, root).rsplit(".", 1)[0]
    if path.name == "__init__.py":
        package = _module(path, root)
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    out = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def _files(package: str, root: Path = ROOT) -> list[Path]:
    files = sorted((root / package).rglob("*.py"))
    assert files, f"no Python files under {package}/"
    return files


def _packages_above(module: str) -> set[str]:
    """escov.llm.es.noise -> {escov, escov.llm, escov.llm.es}."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _import_graph(folders, root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules importing it runs: each module it imports anywhere (functions included) and
    the packages above that module, whose __init__ runs first, except the packages that hold the
    importer itself (their __init__ has begun already: importing a sibling does not run it again)."""
    modules = {_module(p, root): p for folder in folders for p in _files(folder, root)}
    graph = {}
    for m, path in modules.items():
        runs = set()
        for name in _imports(path, root):
            if name in modules:
                runs |= {name} | (_packages_above(name) & set(modules))
        graph[m] = runs - _packages_above(m) - {m}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """An import cycle of the graph, as the modules along it (the first repeated at the end); None if none."""
    done, path = set(), []

    def visit(m):
        if m in path:
            return path[path.index(m) :] + [m]
        if m in done:
            return None
        path.append(m)
        for dep in sorted(graph[m]):
            if found := visit(dep):
                return found
        path.pop()
        done.add(m)
        return None

    for m in sorted(graph):
        if found := visit(m):
            return found
    return None


def test_levels_import_downward_only():
    for i, level in enumerate(LEVELS):
        above = LEVELS[i + 1 :]
        for path in _files(level):
            wrong = sorted(m for m in _imports(path) if m.split(".")[:2] in [["escov", a] for a in above])
            assert not wrong, f"{path.relative_to(ROOT)} imports {wrong} from a level above {level}"


EXPERIMENTS = "paper_checks/reproduce"  # the experiment side: budgets, bases, jobs, runs, sweep, pilot, control, grid
ENTRY_POINTS = ("paper_checks/cli.py",)  # both sides' command line: `report` here, the rest in EXPERIMENTS/cli.py


def test_the_verdicts_never_import_the_experiments():
    """paper_checks/ decides verdicts from run directories; paper_checks/reproduce/ runs the experiments that write
    them, on the floor above: no verdict module imports it (only the command line that offers both does)."""
    verdicts = [
        p
        for p in _files("paper_checks")
        if not p.is_relative_to(ROOT / EXPERIMENTS) and p.relative_to(ROOT).as_posix() not in ENTRY_POINTS
    ]
    assert len(verdicts) >= 15 and ROOT / "paper_checks" / "report.py" in verdicts
    experiment = "escov." + EXPERIMENTS.replace("/", ".")
    for path in verdicts:
        wrong = sorted(m for m in _imports(path) if m == experiment or m.startswith(experiment + "."))
        assert not wrong, f"{path.relative_to(ROOT)} imports {wrong} from the experiment side ({EXPERIMENTS}/)"


def test_no_file_imports_a_level_by_its_bare_name():
    """`import llm` would find another installed package (or this checkout only when run from its root)."""
    files = [p for d in (*LEVELS, "escov", "tests", "scripts", "benchmarks") for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 100
    for path in files:
        bare = sorted(m for m in _imports(path) if m.split(".")[0] in LEVELS)
        assert not bare, f"{path.relative_to(ROOT)} imports {bare}: write escov.{bare[0]}"


def test_no_level_has_an_import_cycle():
    graph = _import_graph(LEVELS)
    assert len([m for m in graph if m.startswith("escov.llm.")]) >= 50  # all of llm/, its subpackages included
    assert {"escov.llm.config", "escov.llm.es.factory", "escov.llm.tasks"} <= set(graph)
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_search_sees_imports_in_functions_and_package_inits_and_skips_type_checking(tmp_path):
    """Known truth: settings.py imports pkg.rules inside a function; pkg/__init__.py imports pkg.impl, which
    imports settings: a cycle through the package's __init__ (the shape of the old settings <-> ES circle).
    Imports under TYPE_CHECKING and a sibling's import of its own package make none."""

    def write(name, text):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    write("lv/settings.py", "def validate():\n    from escov.lv.pkg.rules import check\n    check()\n")
    write("lv/pkg/__init__.py", "from escov.lv.pkg.impl import run\n")
    write("lv/pkg/rules.py", "def check():\n    pass\n")
    write("lv/pkg/impl.py", "from escov.lv.settings import validate\nfrom escov.lv.pkg.rules import check\n")
    graph = _import_graph(["lv"], tmp_path)
    assert graph["escov.lv.settings"] == {"escov.lv.pkg", "escov.lv.pkg.rules"}
    assert graph["escov.lv.pkg.impl"] == {"escov.lv.settings", "escov.lv.pkg.rules"}  # not its own package
    assert _cycle(graph) == ["escov.lv.pkg", "escov.lv.pkg.impl", "escov.lv.settings", "escov.lv.pkg"]
    write("lv/pkg/__init__.py", "")  # the package no longer runs impl: no cycle left
    assert _cycle(_import_graph(["lv"], tmp_path)) is None
    write(
        "lv/pkg/__init__.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from escov.lv.pkg.impl import run\n",
    )
    assert _cycle(_import_graph(["lv"], tmp_path)) is None


def test_tomllib_comes_with_the_tomli_fallback_the_python_floor_needs():
    """tomllib is in the standard library from Python 3.11; below it, its backport tomli is the dependency
    pyproject.toml installs. A file that imports tomllib under Python < 3.11 must fall back to tomli."""
    import re

    floor = re.search(r'requires-python\s*=\s*">=\s*3\.(\d+)', (ROOT / "pyproject.toml").read_text())
    assert floor, "pyproject.toml states no requires-python >= 3.N"
    if int(floor.group(1)) >= 11:
        return
    files = [p for d in (*LEVELS, "escov", "tests", "scripts", "benchmarks") for p in sorted((ROOT / d).rglob("*.py"))]
    for path in files:
        tree = ast.parse(path.read_text())
        guarded = set()  # the imports inside `if sys.version_info ...:` whose else branch imports tomli
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.If)
                and "version_info" in ast.unparse(node.test)
                and "import tomli" in "\n".join(ast.unparse(n) for n in node.orelse)
            ):
                guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
        bare = [
            n.lineno
            for n in ast.walk(tree)
            if id(n) not in guarded
            and (
                isinstance(n, ast.Import)
                and any(a.name == "tomllib" for a in n.names)
                or isinstance(n, ast.ImportFrom)
                and n.module == "tomllib"
            )
        ]
        where = f"{path.relative_to(ROOT)}:{bare[0]}" if bare else ""
        assert not bare, f"{where} imports tomllib without the tomli fallback (Python < 3.11)"


# ---- tests beside their modules: tests/LEVEL/SUB/... mirrors the package LEVEL/SUB/ ----
TESTS = ROOT / "tests"


def _level_test_files(tests: Path = TESTS) -> list[Path]:
    """The test files under a level's folder of tests/ (the files directly in tests/ check the project as a whole)."""
    return sorted(p for p in tests.rglob("test_*.py") if p.parent != tests)


def _module_names(package: Path) -> set[str]:
    """The modules and subpackages of a package folder, by name (llm/es -> {algorithm, ..., vllm_lora})."""
    return {p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")} | {
        p.name for p in package.iterdir() if (p / "__init__.py").is_file()
    }


def named_after(test: Path, package: Path) -> str | None:
    """The module (or subpackage) of `package` a test file is named after: test_M.py or test_M_ASPECT.py, the longest
    M that fits (test_grpo_losses.py is grpo_losses', not grpo's); None when it names none."""
    fits = [m for m in _module_names(package) if test.stem == f"test_{m}" or test.stem.startswith(f"test_{m}_")]
    return max(fits, key=len) if fits else None


def layout_errors(tests: Path = TESTS, root: Path = ROOT) -> list[str]:
    """Where test files stray from the package they specify: a folder of tests/ that is no package folder of the
    repository; a file named after a subpackage (it belongs in that subpackage's folder), or after a module of a
    subpackage and none of its own folder; a file named after nothing there that never names its package
    (escov.LEVEL.SUB: an import, or its command line)."""
    errors = []
    for test in _level_test_files(tests):
        where = test.parent.relative_to(tests)
        package = root / where
        shown = test.relative_to(tests.parent).as_posix()
        if where.parts[0] not in LEVELS or not (package / "__init__.py").is_file():
            errors.append(f"{shown}: {where.as_posix()}/ is not a package folder of the repository")
            continue
        name = named_after(test, package)
        subpackages = sorted(p for p in package.iterdir() if (p / "__init__.py").is_file())
        if name is not None and (package / name / "__init__.py").is_file():
            below = (where / name).as_posix()
            errors.append(f"{shown}: named after the subpackage {name}: it belongs in tests/{below}/")
        elif name is None:
            deeper = [f"{sub.name}.{m}" for sub in subpackages if (m := named_after(test, sub))]
            dotted = "escov." + ".".join(where.parts)
            if deeper:
                errors.append(
                    f"{shown}: named after {deeper[0]}: it belongs in tests/{where.as_posix()}/"
                    f"{deeper[0].split('.')[0]}/"
                )
            elif dotted not in test.read_text(encoding="utf-8"):
                errors.append(f"{shown}: named after no module of {where.as_posix()}/ and never names {dotted}")
    return errors


def test_every_test_file_sits_beside_the_package_it_specifies():
    assert len(_level_test_files()) > 100
    errors = layout_errors()
    assert not errors, "\n".join(errors)


def test_every_test_folder_is_a_package_so_same_named_files_in_two_folders_do_not_clash():
    """pytest's default import mode names a test module by its package path (tests.llm.es.test_noise): without an
    __init__.py two test_cli.py files would clash."""
    folders = {p.parent for p in TESTS.rglob("test_*.py")}
    missing = sorted(f.relative_to(ROOT).as_posix() for f in folders if not (f / "__init__.py").is_file())
    assert not missing, f"test folders without __init__.py: {missing}"


def test_the_layout_rule_catches_a_test_in_the_wrong_folder(tmp_path):
    """Known truth on a made-up repository: lv/ with modules a and b and a subpackage sub/ with module c."""

    def write(name, text=""):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    for name in ("lv/__init__.py", "lv/a.py", "lv/b_c.py", "lv/sub/__init__.py", "lv/sub/c.py"):
        write(name)
    for name in (
        "tests/lv/test_a.py",
        "tests/lv/test_a_more.py",
        "tests/lv/test_b_c_x.py",
        "tests/lv/sub/test_c.py",
        "tests/lv/test_whole.py",
    ):
        write(name, "from escov.lv import a\n")
    write("tests/lv/sub/test_other.py", "from escov.lv.sub import c\n")
    import tests.test_layout as layout

    levels = layout.LEVELS
    layout.LEVELS = (*levels, "lv")
    try:
        assert layout_errors(tmp_path / "tests", tmp_path) == []
        assert named_after(tmp_path / "tests/lv/test_b_c_x.py", tmp_path / "lv") == "b_c"
        write("tests/lv/test_sub_c.py", "from escov.lv.sub import c\n")  # named after the subpackage
        write("tests/lv/test_c.py", "from escov.lv.sub import c\n")  # after a module of the subpackage
        write("tests/lv/sub/test_loose.py", "from escov.lv import a\n")  # names neither c nor escov.lv.sub
        write("tests/nowhere/test_x.py", "")  # no package lv/nowhere
        assert layout_errors(tmp_path / "tests", tmp_path) == [
            "tests/lv/sub/test_loose.py: named after no module of lv/sub/ and never names escov.lv.sub",
            "tests/lv/test_c.py: named after sub.c: it belongs in tests/lv/sub/",
            "tests/lv/test_sub_c.py: named after the subpackage sub: it belongs in tests/lv/sub/",
            "tests/nowhere/test_x.py: nowhere/ is not a package folder of the repository",
        ]
    finally:
        layout.LEVELS = levels
