"""Run directories that nothing corrupts silently, each case on a real tiny run of `llm train` (in
fresh processes, as in test_train_run.py): one writer at a time (run.lock) and a crashed writer's lock
taken over; the settings a run started with kept on resume (an edited config.json refused naming the
setting, or with --allow_config_change recorded); every metrics row up to the resumed checkpoint
(rebuilt from an earlier checkpoint, or a one-line error); a full disk a one-line error naming the
file; and paper_checks naming each of these in a run it reads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from escov.llm import rundir
from escov.paper_checks.rundir import load_run
from tests.llm.test_device import _refused
from tests.llm.test_train_run import _cfg, _cli, _flags, _strip_timing

TWO_STEPS = dict(steps=2, checkpoint_every=1)  # ES: checkpoints step-1 and step-2


def _train(*args, env_extra=None) -> tuple[int, str]:
    proc = _cli(*args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env_extra=env_extra)
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err.decode()


def _error_line(err: str) -> str:
    """The one error line of a failed command (beside argparse's usage line, notes and progress bars)."""
    lines = [l for l in err.strip().splitlines() if "error:" in l]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


def _rows(run):
    return _strip_timing([json.loads(l) for l in (run / rundir.METRICS).read_text().splitlines()])


@pytest.fixture(scope="module")
def finished(tiny_model_dir, tmp_path_factory):
    """A finished two-step ES run (read-only: tests copy it)."""
    run = tmp_path_factory.mktemp("finished") / "run"
    code, err = _train(*_flags(_cfg(tiny_model_dir, run, "es", **TWO_STEPS)))
    assert code == 0, err[-2000:]
    return run


@pytest.fixture
def copy_of(tmp_path):
    import shutil

    def copy(run):
        target = tmp_path / "copy"
        shutil.copytree(run, target)
        return target

    return copy


# ----------------------------------------------------------------------------- one writer at a time


def test_a_second_writer_is_refused_in_one_line_and_a_dead_writers_lock_is_taken_over(tiny_model_dir, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from escov.llm.rundir import WriterLock; "
            "WriterLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(600)",
            str(run),
        ],
        stdout=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=os.getcwd()),
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        # refused before anything loads: in this process, through the same main as `python -m escov.llm`
        line = _error_line(_refused(capsys, "train", *_flags(_cfg(tiny_model_dir, run, "es", **TWO_STEPS))))
        assert str(run / rundir.LOCK) in line and f"pid {holder.pid}" in line
        assert sorted(p.name for p in run.iterdir()) == [rundir.LOCK]  # the second writer wrote nothing
        assert rundir.in_use(run)["pid"] == holder.pid
    finally:
        holder.send_signal(signal.SIGKILL)  # a crash: the lock file stays, its flock goes with the process
        holder.wait()
    assert rundir.in_use(run) is None
    code, err = _train(*_flags(_cfg(tiny_model_dir, run, "es", steps=1)))
    assert code == 0, err[-2000:]
    assert f"left by pid {holder.pid}" in err and "taken over" in err
    assert [r["step"] for r in _rows(run)] == [1]


def test_the_lock_excludes_a_second_holder_in_the_same_process_and_is_released(tmp_path):
    first = rundir.WriterLock(tmp_path)
    assert first.acquire() is None
    with pytest.raises(rundir.RunDirBusy, match=f"pid {os.getpid()}"):
        rundir.WriterLock(tmp_path).acquire()
    first.release()
    second = rundir.WriterLock(tmp_path)
    assert second.acquire() is None  # released cleanly: no stale record to report
    second.release()


# ----------------------------------------------------------------------------- the settings a run started with


def test_resume_with_an_edited_setting_is_refused_naming_it_or_allowed_and_recorded(tiny_model_dir, tmp_path):
    run = tmp_path / "run"
    code, err = _train(
        *_flags(_cfg(tiny_model_dir, run, "es", steps=3, checkpoint_every=1)),
        env_extra={"ESCOV_TEST_STOP_AT": "checkpoint-1"},
    )
    assert code == -signal.SIGKILL, err[-2000:]
    config = json.loads((run / rundir.CONFIG).read_text())
    assert config["es"]["sigma"] == 0.02
    config["es"]["sigma"] = 0.04
    (run / rundir.CONFIG).write_text(json.dumps(config))
    before = sorted((p.name, p.stat().st_size) for p in run.iterdir() if p.is_file() and p.name != rundir.LOCK)

    code, err = _train("--resume", str(run))
    line = _error_line(err)
    assert code != 0 and "es.sigma" in line and "0.04" in line and "0.02" in line and str(run / rundir.CONFIG) in line
    assert sorted((p.name, p.stat().st_size) for p in run.iterdir() if p.is_file() and p.name != rundir.LOCK) == before
    assert any(
        "config.json: differs from the settings" in p and "es.sigma 0.02 -> 0.04" in p for p in load_run(run).problems
    )

    code, err = _train("--resume", str(run), "--allow_config_change", "true")
    assert code == 0, err[-2000:]
    history = rundir.config_history(run)
    assert [r["changed"] for r in history] == [[], [{"setting": "es.sigma", "was": 0.02, "now": 0.04}]]
    assert history[1]["from_step"] == 1 and json.loads((run / rundir.CONFIG).read_text())["es"]["sigma"] == 0.04
    assert any("settings changed mid-run after step 1: es.sigma 0.02 -> 0.04" in p for p in load_run(run).problems)


# ----------------------------------------------------------------------------- every metrics row up to the checkpoint


def test_a_finished_run_that_lost_its_last_metrics_row_rebuilds_it_exactly(finished, copy_of):
    run = copy_of(finished)
    rows = _rows(run)
    lines = (run / rundir.METRICS).read_text().splitlines(keepends=True)
    (run / rundir.METRICS).write_text("".join(lines[:-1]))
    assert any("steps missing: 2" in p for p in load_run(run).problems)
    code, err = _train("--resume", str(run))
    assert code == 0, err[-2000:]
    assert "lacks rows up to checkpoint step-2" in err
    assert _rows(run) == rows  # step 2 re-run from checkpoint step-1: the same row
    assert load_run(run).problems == []


def test_resume_after_metrics_were_deleted_is_a_one_line_error_and_changes_nothing(finished, copy_of):
    run = copy_of(finished)
    (run / rundir.METRICS).unlink()
    code, err = _train("--resume", str(run))
    line = _error_line(err)
    assert code != 0 and str(run / rundir.METRICS) in line and "steps missing: 1" in line
    assert not (run / rundir.METRICS).exists() and sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "step-1",
        "step-2",
    ]


# ----------------------------------------------------------------------------- a full disk


def test_a_full_disk_is_a_one_line_error_naming_the_file(finished, copy_of):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full (a device whose writes fail with ENOSPC) on this system")
    run = copy_of(finished)
    (run / (rundir.CONFIG + ".tmp")).symlink_to("/dev/full")  # the next config.json written lands on a full disk
    code, err = _train("--resume", str(run), "--re_evaluate")  # a finished run writes again only when asked
    line = _error_line(err)
    assert code != 0 and f"{run / rundir.CONFIG}: cannot be written (No space left on device)" in line


def test_a_full_disk_while_appending_a_metrics_row_names_metrics_jsonl(finished, tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    (tmp_path / rundir.METRICS).symlink_to("/dev/full")
    row = json.loads((finished / rundir.METRICS).read_text().splitlines()[0])
    with pytest.raises(rundir.RunDirError, match=f"{tmp_path / rundir.METRICS}: cannot be written \\(No space left"):
        rundir.append_step(tmp_path, row)


# ----------------------------------------------------------------------------- what a reader checks


def test_a_reader_names_repeated_missing_and_extra_steps_of_a_run(finished, copy_of):
    run = copy_of(finished)
    assert load_run(run).problems == []
    text = (run / rundir.METRICS).read_text()
    (run / rundir.METRICS).write_text(text + text)  # two writers: every step twice
    assert any(f"{run / rundir.METRICS}: steps written more than once: 1-2" in p for p in load_run(run).problems)


@pytest.mark.parametrize(
    "steps, through, expected",
    [
        ([1, 2, 3], None, []),
        ([1, 2, 3], 3, []),
        ([], 0, []),
        ([1, 2, 3], 4, ["steps missing: 4"]),
        ([2, 3], None, ["steps missing: 1"]),
        ([], 2, ["steps missing: 1-2"]),
        ([1, 3, 5, 6], None, ["steps missing: 2, 4"]),
        ([1, 2, 1, 2], None, ["steps written more than once: 1-2"]),
        ([2, 1], None, ["steps out of order"]),
        ([1, 1, 3], None, ["steps written more than once: 1", "steps missing: 2"]),
    ],
)
def test_step_problems_at_and_around_each_case(steps, through, expected):
    assert rundir.step_problems(steps, through) == expected


def test_setting_changes_are_symmetric_and_ignore_free_settings():
    a = {"algo": "es", "out": "x", "es": {"sigma": 0.01, "alpha": 1}, "schedule": {"total_steps": 2}}
    b = {"algo": "es", "out": "y", "es": {"sigma": 0.02, "alpha": 1}, "schedule": {"total_steps": 3}, "new": 1}
    forward = rundir.setting_changes(a, b, ignore=rundir.FREE_SETTINGS)
    backward = rundir.setting_changes(b, a, ignore=rundir.FREE_SETTINGS)
    assert forward == [("es.sigma", 0.01, 0.02), ("new", None, 1)]
    assert backward == [(k, now, was) for k, was, now in forward]
    assert rundir.setting_changes(a, a) == [] and rundir.setting_changes(a, b)[-1] == ("out", "x", "y")
