"""The report over real tiny runs whose records were tampered with or written by older code (paper_checks/trust.py):
a run from before inputs.json (no inputs.json, no fingerprints) is read without a crash by the command line; a
same-seed GRPO eval.json stripped of its fingerprint and a same-seed GRPO curve.json placed in an ES run are each
left out with their reason; a curve point that measured other weights than the run's base is named."""

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
from escov.llm.train import train
from escov.paper_checks.report import collect

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parents[2]
RUN = dict(
    task="prompts",
    data="data/train.jsonl",
    test_data="data/test.jsonl",
    reward_function="rewards.py:exact",
    steps=2,
    checkpoint_every=1,
    batch_size=2,
    train_pool=8,
    threads=1,
    max_completion_length=4,
    step_samples=2,
    probe=False,
    eval_problems=2,
    eval_samples=2,
    eval_ks=(1,),
    heldout_task="",
    threshold_keep=(),
    completions_kept=0,
    grpo={"num_generations": 4},
    es={"population_size": 8, "sigma": 0.05, "alpha": 0.05, "member_samples": 2, "member_temperature": 1.0},
)
REWARDS = (
    "def exact(prompts, completions, answer, **kwargs):\n"
    "    return [float(c.strip() == a) + 0.01 * len(c) for c, a in zip(completions, answer)]\n"
)


@pytest.fixture(scope="module")
def project(tiny_model_dir, tmp_path_factory):
    """project/es and project/grpo: two-step runs of one seed from the same data, reward file and base, each with a
    curve.json (llm curve: the base and both checkpoints). Read-only: tests copy them."""
    from escov.llm.curve import evaluate_curve

    root = tmp_path_factory.mktemp("provenance")
    (root / "data").mkdir()
    for name, rows in (("train", range(10)), ("test", range(10, 14))):
        records = [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in rows]
        (root / "data" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / "rewards.py").write_text(REWARDS)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for algo in ("es", "grpo"):
            train(
                TrainConfig.from_dict(RUN | {"algo": algo, "model": str(tiny_model_dir), "out": algo}),
                show_progress=False,
            )
            evaluate_curve(root / algo, points=2, samples=32, n_problems=2)
    finally:
        os.chdir(cwd)
    return root


@pytest.fixture
def runs(project, tmp_path):
    target = tmp_path / "project"
    shutil.copytree(project, target)
    return target / "es", target / "grpo"


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_run_from_before_inputs_json_is_reported_by_the_command_line(runs, tmp_path):
    """Older code wrote no inputs.json, no fingerprint in eval.json or curve points, no settings hash in
    checkpoints; its config.json holds reward_function as a list (the report once crashed on it: unhashable list)."""
    for run in runs:
        (run / rundir.MANIFEST).unlink()
        _edit_json(run / rundir.EVAL, lambda ev: [ev.pop(k, None) for k in ("fingerprint", "base_fingerprint")])
        _edit_json(run / rundir.CURVE, lambda c: [p.pop("fingerprint", None) for p in c["points"]])
        for step in (1, 2):
            _edit_json(rundir.checkpoint_dir(run, step) / rundir.TRAINER_STATE, lambda s: s.pop("settings_sha256"))
    out = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-m", "escov.paper_checks", "report", *map(str, runs), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["excluded"] == []  # nothing to compare with: an older run's records are all read
    ev = collect(runs)
    assert [r.path for r in ev.runs] == list(runs) and all(r.eval and r.curve for r in ev.runs)


def test_a_same_seed_eval_json_without_its_fingerprint_is_left_out(runs):
    """GRPO's evaluation of the same seed, same evaluation settings, its fingerprints removed, put in the ES run:
    every setting it holds is the ES run's, only a fingerprint could tell; the ES run records its inputs."""
    es, grpo = runs
    ev = json.loads((grpo / rundir.EVAL).read_text())
    for key in ("fingerprint", "base_fingerprint"):
        ev.pop(key, None)
    (es / rundir.EVAL).write_text(json.dumps(ev))
    collected = collect(runs)
    [excluded] = collected.excluded
    assert excluded == {
        "what": str(es / rundir.EVAL),
        "reason": "has no fingerprint, though the run records its "
        "inputs (inputs.json): nothing tells it from another run's; left out (not this run's "
        "evaluation)",
    }
    assert next(r for r in collected.runs if r.path == es).eval is None


def test_a_same_seed_curve_json_of_another_run_is_left_out(runs):
    es, grpo = runs
    shutil.copy(grpo / rundir.CURVE, es / rundir.CURVE)
    [excluded] = collect(runs).excluded
    assert excluded["what"] == str(es / rundir.CURVE)
    assert excluded["reason"].startswith("step 0: measured with other settings (sha256 ")
    # without its fingerprints, it is left out all the same
    _edit_json(es / rundir.CURVE, lambda c: [p.pop("fingerprint") for p in c["points"]])
    [excluded] = collect(runs).excluded
    assert excluded["reason"].startswith("step 0: has no fingerprint, though the run records its inputs")


def test_a_curve_point_of_other_base_weights_is_named(runs):
    es, _ = runs
    _edit_json(es / rundir.CURVE, lambda c: c["points"][0]["fingerprint"].update(weights_sha256="ab" * 32))
    [excluded] = collect(runs).excluded
    assert excluded["reason"].startswith("step 0: measured other weights (sha256 abababababab) than the run's base ")


def test_records_that_contradict_their_witnesses_are_named_in_the_report(runs):
    """config.json and config_history.jsonl edited together: the checkpoints' settings hashes name it."""
    es, _ = runs
    _edit_json(es / rundir.CONFIG, lambda c: c["es"].update(sigma=0.07))
    [record] = rundir.config_history(es)
    record["config"]["es"]["sigma"] = 0.07
    (es / rundir.CONFIG_HISTORY).write_text(json.dumps(record) + "\n")
    [run] = [r for r in collect(runs).runs if r.path == es]
    state = rundir.checkpoint_dir(es, 1) / rundir.TRAINER_STATE
    assert any(p.startswith(f"{state}: checkpoint step-1 was trained with settings sha256") for p in run.problems)


def test_a_partial_copy_given_first_gives_way_to_the_complete_run(runs, tmp_path):
    """A copy of the ES run taken mid-run (one metrics row, no final evaluation, no curve) given before the run: the
    complete one counts, the partial copy is left out naming both."""
    es, grpo = runs
    partial = tmp_path / "es-partial"
    shutil.copytree(es, partial)
    (partial / rundir.METRICS).write_text((partial / rundir.METRICS).read_text().splitlines()[0] + "\n")
    for name in (rundir.EVAL, rundir.CURVE):
        (partial / name).unlink()
    collected = collect([partial, es, grpo])
    assert [r.path for r in collected.runs] == [es, grpo]
    held = len(rundir.read_steps(es)), len(rundir.read_curve(es))
    assert collected.excluded == [
        {
            "what": str(partial),
            "reason": (
                f"the same settings, seed (0) and inputs as {es}, which holds more of the run "
                f"(a final evaluation, {held[0]} "
                f"metrics rows, {held[1]} curve points, 0 probe measurements, here no final evaluation, "
                "1 metrics rows, 0 "
                "curve points, 0 probe measurements); counted once, as the more complete"
            ),
        }
    ]
    # given the other way round, the partial copy is the one left out, as any copy
    assert [e["what"] for e in collect([es, partial, grpo]).excluded] == [str(partial)]
