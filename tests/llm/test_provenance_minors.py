"""The minor holes of a run directory, each on a real tiny run or real files: TensorBoard's final events after a
kill in the final evaluation (one per step, not two), a config_history.jsonl whose last line a kill cut (recovered,
not a dead end), a folder left by a kill during the first config.json write (a new start takes it), run files read
with a bound (a metrics.jsonl linked to an endless device, a file larger than any run file), the resume's start
line naming the folder the run is in now, and answers graded at the math grader's safety net named by the
train summary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from escov.llm import rundir
from escov.llm.config import TrainConfig
from escov.llm.rundir import RunDirError
from escov.llm.train import resume, train
from tests.llm.test_provenance_resume import RUN, copy, project  # noqa: F401 (fixtures)
from tests.llm.test_train_run import _cfg, _cli, _flags

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parents[2]


def _train(*args, env_extra=None) -> tuple[int, str]:
    proc = _cli(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env_extra=env_extra)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out.decode() + err.decode()


@pytest.mark.slow  # a run killed in its final evaluation and resumed, in fresh processes (21 s)
def test_tensorboard_holds_one_final_event_per_metric_after_a_kill_in_the_final_evaluation(tiny_model_dir, tmp_path):
    EventAccumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator").EventAccumulator
    run = tmp_path / "run"
    flags = _flags(_cfg(tiny_model_dir, run, "es", steps=2, checkpoint_every=1, report_to="tensorboard"))
    code, _ = _train(*flags, env_extra={"ESCOV_TEST_STOP_AT": "final-eval"})
    assert code != 0 and not (run / "curves.png").exists()  # killed in the final evaluation
    code, err = _train("--resume", str(run), "--no_progress")
    assert code == 0, err[-2000:]
    last = rundir.checkpoint_steps(run)[0][0]
    acc = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0})
    acc.Reload()
    for tag in ("eval/final/pass_at_k/1", "eval/final_greedy/pass_at_k/1", "train/reward_mean", "train/drift_rel"):
        steps = [e.step for e in acc.Scalars(tag)]
        assert steps.count(last) == 1, (tag, steps)  # neither twice (the killed run's and the resumed) nor lost
    rows = {r["step"]: r["reward_mean"] for r in rundir.read_steps(run)}
    assert {e.step: pytest.approx(e.value) for e in acc.Scalars("train/reward_mean")} == rows


def test_a_cut_last_line_of_config_history_is_dropped_and_the_run_resumes(copy):  # noqa: F811
    run = copy / "run"
    whole = (run / rundir.CONFIG_HISTORY).read_text()
    (run / rundir.CONFIG_HISTORY).write_text(whole + whole[:40])  # a kill while the next record was written
    shutil.rmtree(rundir.checkpoint_dir(run, rundir.checkpoint_steps(run)[0][0]))
    resume(run, show_progress=False)
    text = (run / rundir.CONFIG_HISTORY).read_text()
    assert text == whole  # the cut record gone, the file whole again (nothing changed: nothing appended)
    # a damaged line that is not a cut last one is named
    (run / rundir.CONFIG_HISTORY).write_text("{not json\n" + whole)
    with pytest.raises(RunDirError, match=r"config_history.jsonl: line 1: not a JSON record$"):
        rundir.config_history(run)


def test_a_kill_in_the_first_config_write_leaves_a_folder_a_new_run_takes(project, tmp_path, monkeypatch):  # noqa: F811
    """What the kill leaves: the lock file of the dead writer and config.json.tmp, half written."""
    out = tmp_path / "run"
    out.mkdir()
    (out / rundir.LOCK).write_text(json.dumps({"pid": 999999, "host": "gone", "since": "then"}))
    (out / "config.json.tmp").write_text('{"algo": "es", "mod')
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    train(TrainConfig.from_dict(RUN | {"model": "model", "out": str(out)}), show_progress=False)
    assert rundir.read_config(out)["algo"] == "es" and not (out / "config.json.tmp").exists()
    assert len(rundir.read_steps(out)) == rundir.checkpoint_steps(out)[0][0]


def test_run_files_are_read_with_a_bound(tmp_path):
    """A metrics.jsonl linked to an endless device, and an eval.json larger than a run file can be (a sparse file):
    refused in one line before anything is read (in a process whose memory is bounded: reading either whole would
    exhaust it)."""
    run = tmp_path / "run"
    run.mkdir()
    os.symlink("/dev/zero", run / rundir.METRICS)
    with open(run / rundir.EVAL, "wb") as fh:
        fh.truncate(rundir.MAX_FILE_BYTES + 1)
    script = (
        "import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
        "from escov.llm import rundir\n"
        "for read in (rundir.read_steps, rundir.read_eval):\n"
        "    try:\n        read(sys.argv[1])\n    except rundir.RunDirError as err:\n        print(err)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(run)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        f"{run / rundir.METRICS}: not a regular file (a device or a pipe?); a run file is a plain file",
        f"{run / rundir.EVAL}: 1024 MB, larger than a run file can be (1024 MB)",
    ]


def test_the_resume_start_line_names_the_folder_the_run_is_in_now(copy):  # noqa: F811
    run = copy / "run"
    shutil.rmtree(rundir.checkpoint_dir(run, rundir.checkpoint_steps(run)[0][0]))
    done = subprocess.run(
        [sys.executable, "-m", "escov.llm", "train", "--resume", str(run), "--no_progress"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=copy,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [line] = [line for line in done.stdout.splitlines() if line.startswith("resuming")]
    assert line.endswith(f"output {run}")  # config.json's out names the original project's run


def test_the_train_summary_names_answers_graded_at_the_safety_net(copy):  # noqa: F811
    from escov.llm.train_cli import summary
    from escov.paper_checks.rundir import load_run

    run = copy / "run"
    assert "safety net" not in summary(run)
    rows = rundir.read_steps(run)
    rows[0]["grading_timeouts"] = 2
    (run / rundir.METRICS).write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev = json.loads((run / rundir.EVAL).read_text())
    ev["final"]["grading_timeouts"] = 1
    (run / rundir.EVAL).write_text(json.dumps(ev))
    assert (
        "  warning: 3 answers graded wrong at the math grader's wall-clock safety net (grading_timeouts in "
        "metrics.jsonl and eval.json)"
    ) in summary(run)
    assert any(p.startswith(f"{run}: 3 answers graded wrong at the math grader's") for p in load_run(run).problems)
