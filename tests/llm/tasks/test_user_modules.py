"""Where a user's module is found (llm/tasks/user_modules.py): one rule for importing a reward module and for
hashing its source, so that a run started by the `escov` console script (the current folder not on the
Python path) records the my_rewards.py of the current folder and refuses an edited one on --resume, as a run
started by `python -m escov.llm` does."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from escov.llm import fingerprints
from escov.llm.tasks import user_modules
from escov.llm.tasks.reward_function import load_function

ROOT = Path(__file__).resolve().parents[3]
REWARDS = (
    "def exact(prompts, completions, answer, **kwargs):\n"
    "    return [float(c.strip() == a) + 0.01 * len(c) for c, a in zip(completions, answer)]\n"
)
# what pip writes as the `escov` console script: sys.path[0] is the script's folder, not the current one
CONSOLE_SCRIPT = """import os, re, sys
assert os.getcwd() not in sys.path and "" not in sys.path, sys.path  # the premise of the test
from escov.paper_checks.console import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""


@pytest.fixture
def away_from_path(tmp_path, monkeypatch):
    """A current folder that is not on the Python path (as under the console script); its modules forgotten after."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(here))])
    before = set(sys.modules)
    yield here
    for name in set(sys.modules) - before:
        if name.startswith("um_"):
            del sys.modules[name]


def test_a_module_in_the_current_folder_is_imported_and_hashed_from_the_same_file(away_from_path):
    (away_from_path / "um_rewards.py").write_text(REWARDS)
    (away_from_path / "um_pkg").mkdir()
    (away_from_path / "um_pkg" / "__init__.py").write_text("")
    (away_from_path / "um_pkg" / "inner.py").write_text(REWARDS)
    for module, file in (
        ("um_rewards", away_from_path / "um_rewards.py"),
        ("um_pkg.inner", away_from_path / "um_pkg" / "inner.py"),
    ):
        assert user_modules.source_file(module) == file  # before it is imported, and after
        assert Path(user_modules.import_module(module).__file__) == file
        assert user_modules.source_file(module) == file
        assert fingerprints.reward_source(f"{module}:exact") == file
    assert sys.path.count(str(away_from_path)) == 0  # the current folder was on the path only while looking


def test_a_module_on_the_python_path_wins_over_one_of_the_same_name_in_the_current_folder(
    away_from_path, tmp_path, monkeypatch
):
    elsewhere = tmp_path / "site"
    elsewhere.mkdir()
    (elsewhere / "um_twin.py").write_text("def exact(prompts, completions, **kwargs):\n    return ['site']\n")
    (away_from_path / "um_twin.py").write_text("def exact(prompts, completions, **kwargs):\n    return ['here']\n")
    monkeypatch.syspath_prepend(str(elsewhere))
    assert user_modules.source_file("um_twin") == elsewhere / "um_twin.py"
    assert load_function("um_twin:exact")(prompts=[], completions=[]) == ["site"]


def test_a_file_is_itself_as_given_and_a_built_in_module_has_no_file(away_from_path):
    assert user_modules.source_file("sub/um_missing.py") == Path("sub/um_missing.py")  # not resolved, even missing
    assert user_modules.source_file("sys") is None  # built in: found, but no source file to hash


def test_a_module_found_nowhere_is_named_once():
    with pytest.raises(ValueError) as err:
        user_modules.source_file("um_nowhere.sub")
    assert str(err.value) == "no module 'um_nowhere.sub' on the Python path nor in the current folder"
    with pytest.raises(ModuleNotFoundError):
        user_modules.import_module("um_nowhere")


def _escov(script: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`escov ARGS` run as the installed console script runs, with this checkout's escov."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_console_script_records_a_reward_module_of_the_current_folder_and_refuses_it_edited(
    tiny_model_dir, tmp_path
):
    script = tmp_path / "bin" / "escov"
    script.parent.mkdir()
    script.write_text(CONSOLE_SCRIPT)
    project = tmp_path / "project"
    project.mkdir()
    records = [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(8)]
    (project / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (project / "my_rewards.py").write_text(REWARDS)
    done = _escov(
        script,
        project,
        "llm",
        "train",
        "--model",
        str(tiny_model_dir),
        "--out",
        "run",
        "--task",
        "prompts",
        "--data",
        "train.jsonl",
        "--data_split",
        "first-4",
        "--reward_function",
        "my_rewards:exact",
        "--algo",
        "es",
        "--steps",
        "1",
        "--checkpoint_every",
        "1",
        "--batch_size",
        "2",
        "--train_pool",
        "4",
        "--threads",
        "1",
        "--max_completion_length",
        "4",
        "--step_samples",
        "2",
        "--probe",
        "false",
        "--eval_problems",
        "2",
        "--eval_samples",
        "2",
        "--eval_ks",
        "1",
        "--heldout_task",
        "",
        "--threshold_keep",
        "",
        "--es.population_size",
        "2",
        "--no-progress",
    )
    assert done.returncode == 0, done.stderr[-2000:]

    source = (project / "my_rewards.py").resolve()
    recorded = json.loads((project / "run" / "inputs.json").read_text())["inputs"]["reward_function[0]"]
    assert recorded["given"] == "my_rewards:exact" and recorded["path"] == str(source)
    assert recorded["sha256"] == hashlib.sha256(REWARDS.encode()).hexdigest()
    # config.json names the module by its file: a resume from any folder imports that file
    assert json.loads((project / "run" / "config.json").read_text())["reward_function"] == [f"{source}:exact"]

    (project / "my_rewards.py").write_text(REWARDS.replace("0.01", "0.02"))
    edited = hashlib.sha256((project / "my_rewards.py").read_bytes()).hexdigest()
    refused = _escov(script, project, "llm", "train", "--resume", "run", "--re_evaluate")
    assert refused.returncode != 0
    assert (
        f"{source}: reward function source changed since the run started "
        f"(sha256 {recorded['sha256'][:12]} -> {edited[:12]})"
    ) in refused.stderr
    assert "Traceback" not in refused.stderr
