"""`llm replay` (llm/replay.py) and replay.jsonl (llm/replay_log.py): every checkpoint of a short ES run rebuilt
bit for bit from the base model and the log alone (the run's checkpoints removed first), the log's size per
iteration, and one clear line when the log is missing or cut off, when the base or a coefficient differs."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from escov.llm import replay_log
from escov.llm.cli import main
from escov.llm.rundir import RunDirError
from tests.llm.es.ray_cluster import REPO

STEPS = 3
FLAGS = [
    "--algo",
    "es",
    "--task",
    "countdown",
    "--steps",
    str(STEPS),
    "--batch_size",
    "2",
    "--train_pool",
    "8",
    "--threads",
    "1",
    "--max_completion_length",
    "6",
    "--checkpoint_every",
    "1",
    "--step_samples",
    "1",
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
    "50",
    "--format_reward",
    "0.1",
    "--es.population_size",
    "32",
    "--es.sigma",
    "0.02",
    "--es.alpha",
    "0.01",
    "--es.member_temperature",
    "1.0",
    "--es.member_samples",
    "1",
    "--es.antithetic",
    "true",
    "--population.batched",
    "true",
    "--no-progress",
]


@pytest.fixture(scope="module")
def run(tiny_model_dir, tmp_path_factory):
    """A 3-step ES run (N = 32 in antithetic pairs), checkpoints after every step, moved aside to `kept`."""
    root = tmp_path_factory.mktemp("replay")
    out = root / "run"
    subprocess.run(
        [sys.executable, "-m", "escov.llm", "train", "--model", str(tiny_model_dir), "--out", str(out), *FLAGS],
        check=True,
        capture_output=True,
        env={"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "TQDM_DISABLE": "1"},
    )
    (out / "checkpoints").rename(root / "kept")
    return out


def test_every_step_is_rebuilt_bit_for_bit_from_the_base_and_the_log(run, tmp_path, capsys):
    kept = run.parent / "kept"
    records = replay_log.read_records(run)
    assert records[0] == {"start_step": 0, "center_sha256": records[0]["center_sha256"]}
    assert [r["step"] for r in records[1:]] == [1, 2, 3]
    assert all(len(r["coefficients"]) == 16 for r in records[1:])  # N = 32 in pairs: 16 directions
    # the settings each update was made with, as the flags gave them
    assert {(r["sigma"], r["alpha"], r["population_size"]) for r in records[1:]} == {(0.02, 0.01, 32)}
    assert any(c != 0 for r in records[1:] for c in r["coefficients"]), "zero updates would test nothing"
    sizes = [len(line) + 1 for line in (run / replay_log.REPLAY).read_text().splitlines()[1:]]
    assert max(sizes) < 700  # a few hundred bytes per iteration at N = 32
    for step in (1, 2, 3):
        out = tmp_path / f"step-{step}"
        assert main(["replay", str(run), "--step", str(step), "--out", str(out)]) == 0
        assert (out / "model.safetensors").read_bytes() == (kept / f"step-{step}" / "model.safetensors").read_bytes()
    assert "eval.json final_weights_sha256" in capsys.readouterr().out  # the last step: the run's final weights
    assert main(["replay", str(run), "--step", "0", "--out", str(tmp_path / "base")]) == 0
    base = load_file(tmp_path / "base" / "model.safetensors")
    assert not all(torch.equal(base[n], t) for n, t in load_file(kept / "step-1" / "model.safetensors").items())


def _refused(capsys, *args) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(["replay", *map(str, args)])
    assert exit_.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_a_missing_or_cut_log_a_changed_base_or_coefficient_is_one_clear_line(run, tiny_model_dir, tmp_path, capsys):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    log = copy / replay_log.REPLAY
    text = log.read_text()
    lines = text.splitlines(keepends=True)
    log.write_text("".join(lines[:-1]) + lines[-1][:40])  # the last record cut off by a kill
    assert "the log ends at step 2" in _refused(capsys, copy, "--step", 3, "--out", tmp_path / "a")
    assert main(["replay", str(copy), "--step", "2", "--out", str(tmp_path / "b")]) == 0
    record = json.loads(lines[2])
    record["coefficients"][0] += 1e-4  # step 2's first coefficient off (1e-12 would vanish in fp32 arithmetic)
    log.write_text("".join(lines[:2]) + json.dumps(record) + "\n" + "".join(lines[3:]))
    message = _refused(capsys, copy, "--step", 3, "--out", tmp_path / "c")
    assert "step 2: the rebuilt center's SHA-256 differs" in message
    log.unlink()
    assert "replay.jsonl: missing" in _refused(capsys, copy, "--step", 1, "--out", tmp_path / "d")
    other = tmp_path / "other-base"
    shutil.copytree(tiny_model_dir, other)
    weights = load_file(other / "model.safetensors")
    name = sorted(weights)[0]
    weights[name] = weights[name] + 1e-3
    save_file(weights, other / "model.safetensors", metadata={"format": "pt"})
    message = _refused(capsys, run, "--step", 1, "--out", tmp_path / "e", "--model", other)
    assert "its weights differ from those the run started ES from" in message and str(other) in message
    assert not any((tmp_path / x).exists() for x in "acde")  # nothing written by a refused replay


def test_reading_a_damaged_line_names_the_file_and_line(run, tmp_path):
    copy = tmp_path / "run"
    copy.mkdir()
    lines = (run / replay_log.REPLAY).read_text().splitlines(keepends=True)
    (copy / replay_log.REPLAY).write_text(lines[0] + "{not json\n" + "".join(lines[1:]))
    with pytest.raises(RunDirError, match=r"replay.jsonl: line 2: not a JSON record"):
        replay_log.read_records(copy)


def test_an_es_phase_after_grpo_is_rebuilt_from_the_checkpoint_it_started_from(tiny_model_dir, tmp_path, capsys):
    """grpo-es: the ES phase starts from the GRPO phase's last checkpoint (PhaseStart start_step > 0), which replay
    reads, and the step before it is refused (GRPO steps are not in the log)."""
    run = tmp_path / "run"
    flags = [f for f in FLAGS if f not in ("es",)]
    flags[flags.index("--algo") + 1 : flags.index("--algo") + 1] = ["grpo-es"]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "escov.llm",
            "train",
            "--model",
            str(tiny_model_dir),
            "--out",
            str(run),
            *flags,
            "--switch_step",
            "1",
            "--grpo.num_generations",
            "4",
            "--grpo.learning_rate",
            "3e-3",
        ],
        check=True,
        capture_output=True,
        env={"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "TQDM_DISABLE": "1"},
    )
    records = replay_log.read_records(run)
    start = records[0]["start_step"]
    assert start > 0 and "step" not in records[0]
    last = records[-1]["step"]
    assert main(["replay", str(run), "--step", str(last), "--out", str(tmp_path / "last")]) == 0
    assert (tmp_path / "last" / "model.safetensors").read_bytes() == (
        run / "checkpoints" / f"step-{last}" / "model.safetensors"
    ).read_bytes()
    assert "no ES phase starts at or before step" in _refused(capsys, run, "--step", start - 1, "--out", tmp_path / "x")


def test_a_step_is_rebuilt_from_the_last_phase_that_starts_at_or_before_it():
    """A resumed ES run logs a PhaseStart at each start: step 5 is rebuilt from the start at step 3 with the updates of
    steps 4 and 5, never from the first start (whose updates stop at the resume)."""
    from escov.llm.replay import _phase_records

    records = [{"start_step": 0}, {"step": 1}, {"step": 2}, {"step": 3}, {"start_step": 3}, {"step": 4}, {"step": 5}]
    start, updates = _phase_records(records, 5, Path("r"))
    assert start == {"start_step": 3} and [u["step"] for u in updates] == [4, 5]
    start, updates = _phase_records(records, 3, Path("r"))
    assert start == {"start_step": 3} and updates == []
    start, updates = _phase_records(records, 2, Path("r"))
    assert start == {"start_step": 0} and [u["step"] for u in updates] == [1, 2]
    ends = r"^r: the log ends at step 5 \(cut off, or the run has not reached step 6\)$"
    with pytest.raises(RunDirError, match=ends):
        _phase_records(records, 6, Path("r"))


def test_the_rebuilt_model_goes_only_into_an_empty_or_new_folder(tmp_path):
    from escov.llm.replay import write_model

    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match=f"^--out {full}: exists and is not an empty folder$"):
        write_model(full, tmp_path, 1, {}, {})
    assert (full / "keep.txt").read_text() == "mine"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(ValueError, match=f"^--out {a_file}: exists and is not an empty folder$"):
        write_model(a_file, tmp_path, 1, {}, {})
