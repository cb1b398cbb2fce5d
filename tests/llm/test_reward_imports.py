"""Which modules a reward's source brings in (llm/reward_imports.py), on real files: a helper found in the working
folder and the helper it imports in turn, an import inside a function, a package module with its package and a
relative import, a helper beside the reward file that it puts on sys.path itself; the standard library, installed
packages (numpy) and escov left out, as are names that are attributes, not modules."""

from __future__ import annotations

from escov.llm.reward_imports import imported_files


def test_the_modules_a_reward_brings_in_from_outside_the_installation(tmp_path, monkeypatch):
    work, rewards = tmp_path / "work", tmp_path / "rewards"
    (work / "ri_pkg").mkdir(parents=True)
    rewards.mkdir()
    (work / "ri_helper.py").write_text("import ri_deeper\nfrom ri_pkg.sub import NAME\n")
    (work / "ri_deeper.py").write_text("import math\n")
    (work / "ri_pkg" / "__init__.py").write_text("")
    (work / "ri_pkg" / "sub.py").write_text("from . import other\nNAME = 1\n")
    (work / "ri_pkg" / "other.py").write_text("")
    (work / "ri_unused.py").write_text("")  # beside them, never imported: not recorded
    (rewards / "ri_beside.py").write_text("")
    source = rewards / "reward.py"
    source.write_text(
        "import json, os.path\nimport sys\nimport numpy as np\nimport escov.llm.rundir\n"
        "sys.path.insert(0, os.path.dirname(__file__))\nimport ri_beside\n"
        "from ri_helper import NAME, missing_attribute\n\n\n"
        "def score(completions, **kw):\n    import ri_late\n    return [0.0] * len(completions)\n"
    )
    (work / "ri_late.py").write_text("")
    monkeypatch.chdir(work)
    found = imported_files(source)
    assert found == {
        name: path.resolve()
        for name, path in (
            ("ri_beside", rewards / "ri_beside.py"),
            ("ri_deeper", work / "ri_deeper.py"),
            ("ri_helper", work / "ri_helper.py"),
            ("ri_late", work / "ri_late.py"),
            ("ri_pkg", work / "ri_pkg/__init__.py"),
            ("ri_pkg.other", work / "ri_pkg/other.py"),
            ("ri_pkg.sub", work / "ri_pkg/sub.py"),
        )
    }
    # a package module named as the reward ('ri_pkg.sub:f') brings in its package and what it imports
    assert imported_files(work / "ri_pkg" / "sub.py", "ri_pkg.sub") == {
        "ri_pkg": (work / "ri_pkg/__init__.py").resolve(),
        "ri_pkg.other": (work / "ri_pkg/other.py").resolve(),
    }


def test_dotted_imports_bring_in_every_package_on_the_way_and_a_packages_relative_imports_its_own(
    tmp_path, monkeypatch
):
    """`import ri2_a.b.c` runs ri2_a/__init__.py and ri2_a/b/__init__.py before c; a package's __init__.py importing
    `from . import h` means its own ri2_a.h (the package is the module itself, not its parent); `from .. import up` in
    a subpackage's module goes one level up."""
    (tmp_path / "ri2_a" / "b").mkdir(parents=True)
    (tmp_path / "ri2_a" / "__init__.py").write_text("from . import h\n")
    (tmp_path / "ri2_a" / "h.py").write_text("")
    (tmp_path / "ri2_a" / "up.py").write_text("")
    (tmp_path / "ri2_a" / "b" / "__init__.py").write_text("")
    (tmp_path / "ri2_a" / "b" / "c.py").write_text("from .. import up\n")
    source = tmp_path / "reward.py"
    source.write_text("import ri2_a.b.c\n")
    monkeypatch.chdir(tmp_path)
    found = imported_files(source)
    assert found == {
        name: (tmp_path / path).resolve()
        for name, path in (
            ("ri2_a", "ri2_a/__init__.py"),
            ("ri2_a.h", "ri2_a/h.py"),
            ("ri2_a.up", "ri2_a/up.py"),
            ("ri2_a.b", "ri2_a/b/__init__.py"),
            ("ri2_a.b.c", "ri2_a/b/c.py"),
        )
    }
    # a reward named 'ri2_a.up:f' runs its package's __init__.py first, though up.py imports nothing
    assert imported_files(tmp_path / "ri2_a" / "up.py", "ri2_a.up") == {
        "ri2_a": (tmp_path / "ri2_a/__init__.py").resolve(),
        "ri2_a.h": (tmp_path / "ri2_a/h.py").resolve(),
    }


def test_modules_in_the_users_site_packages_are_the_installations(tmp_path, monkeypatch):
    """A module installed with `pip install --user` is part of the Python installation, not of the run's inputs."""
    import site

    user_site, work = tmp_path / "user-site", tmp_path / "work"
    user_site.mkdir()
    work.mkdir()
    (user_site / "ri3_installed.py").write_text("")
    (work / "ri3_own.py").write_text("")
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(user_site))
    monkeypatch.syspath_prepend(str(user_site))
    monkeypatch.chdir(work)
    source = work / "reward.py"
    source.write_text("import ri3_installed\nimport ri3_own\n")
    assert imported_files(source) == {"ri3_own": (work / "ri3_own.py").resolve()}
