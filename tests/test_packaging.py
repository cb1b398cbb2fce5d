"""The wheel installs one import package, `escov`, holding the four levels and the shipped bases, and
every package folder of the repository is in it (pyproject.toml lists them: a new folder must be added)."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ("theory", "simulate", "llm", "paper_checks")


def test_the_wheel_has_one_top_level_name_and_every_package(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("escov-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"escov"}, f"the wheel installs {sorted(top)}"
    folders = {str(p.parent.relative_to(ROOT)) for level in LEVELS for p in (ROOT / level).rglob("__init__.py")}
    assert {f"escov/{f}/__init__.py" for f in folders} <= set(names), "a package folder is missing from pyproject.toml"
    assert any(n.startswith("escov/paper_checks/reproduce/bases/") and n.endswith("model.safetensors") for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "escov = escov.paper_checks.console:main" in zipfile.ZipFile(wheel).read(entry).decode()
