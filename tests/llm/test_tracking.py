"""Experiment tracking and kept completions on a real tiny run: TensorBoard event files read back
with TensorBoard's own EventAccumulator hold every number of metrics.jsonl, eval.json,
probe.json and curve.json at its step; completions.jsonl holds a bounded sample whose rewards
are the reward function's."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from escov.llm import rundir
from escov.llm.config import TrainConfig
from escov.llm.curve import evaluate_curve
from escov.llm.train import train

pytestmark = pytest.mark.usefixtures("one_torch_thread")
EventAccumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator").EventAccumulator

DIGITS = """
def digit_share(prompts, completions, **kwargs):
    return [sum(ch.isdigit() for ch in c) / len(c) if c else 0.0 for c in completions]
"""
KEPT = 2


def _digit_share(text: str) -> float:
    return sum(ch.isdigit() for ch in text) / len(text) if text else 0.0


def _events(run: Path):
    acc = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def _scalar(acc, tag: str) -> dict[int, float]:
    events = acc.Scalars(tag)
    steps = [e.step for e in events]
    assert len(steps) == len(set(steps)), f"{tag}: one value per step, got steps {steps}"
    return {e.step: e.value for e in events}


@pytest.fixture(scope="module")
def tracked_run(tiny_model_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tracked")
    (tmp / "digits.py").write_text(DIGITS)
    cfg = TrainConfig.from_dict(
        {
            "algo": "es",
            "model": str(tiny_model_dir),
            "out": str(tmp / "run"),
            "steps": 1,
            "batch_size": 2,
            "train_pool": 4,
            "threads": 1,
            "max_completion_length": 6,
            "checkpoint_every": 4,
            "probe_every": 4,
            "step_samples": 2,
            "probe_prompts": 1,
            "probe_members": 2,
            "probe_samples": 2,
            "probe_center_samples": 2,
            "eval_problems": 3,
            "eval_samples": 2,
            "eval_ks": [1, 2],
            "heldout_task": "",
            "threshold_keep": [50.0],
            "reward_function": f"{tmp / 'digits.py'}:digit_share",
            "report_to": "tensorboard",
            "completions_kept": KEPT,
            "completions_every": 3,
            "es": {"population_size": 4, "sigma": 0.02, "alpha": 0.01},
        }
    )
    return train(cfg, show_progress=False)


def test_every_step_metric_is_a_tensorboard_scalar_at_its_step(tracked_run):
    rows = rundir.read_steps(tracked_run)
    assert len(rows) >= 4
    acc = _events(tracked_run)
    numeric = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step"]
    assert {"reward_mean", "pass_at_1", "entropy", "drift_rel", "es_update_norm", "wall_seconds"} <= set(numeric)
    for key in numeric:
        logged = _scalar(acc, f"train/{key}")
        assert sorted(logged) == [r["step"] for r in rows], key
        np.testing.assert_allclose([logged[r["step"]] for r in rows], [r[key] for r in rows], rtol=1e-6, err_msg=key)
    for group in rows[0]["drift_layers"]:
        logged = _scalar(acc, f"train/drift_layers/{group}")
        np.testing.assert_allclose(
            [logged[r["step"]] for r in rows], [r["drift_layers"][group] for r in rows], rtol=1e-6
        )
    assert rows[-1]["reward_mean"] > 0, "the digit-share reward must reach the run"


def test_evaluations_and_population_measurements_are_scalars_when_measured(tracked_run):
    acc = _events(tracked_run)
    ev = rundir.read_eval(tracked_run)
    last = rundir.read_steps(tracked_run)[-1]["step"]
    for label, step in (("base", 0), ("base_greedy", 0), ("final", last), ("final_greedy", last)):
        for k, value in ev[label]["pass_at_k"].items():
            assert _scalar(acc, f"eval/{label}/pass_at_k/{k}") == pytest.approx({step: value}, rel=1e-6)
        assert _scalar(acc, f"eval/{label}/mean_token_entropy") == pytest.approx(
            {step: ev[label]["mean_token_entropy"]}, rel=1e-6
        )
    measurements = rundir.read_probe(tracked_run)["measurements"]
    assert [m["step"] for m in measurements] == [0, 4, last]
    assert _scalar(acc, "probe/lemma1_prediction") == pytest.approx(
        {m["step"]: m["lemma1_prediction"] for m in measurements}, rel=1e-6
    )
    assert _scalar(acc, "probe/jspol/mean") == pytest.approx(
        {m["step"]: m["jspol"]["mean"] for m in measurements}, rel=1e-6
    )
    assert not any(tag.endswith("/seed") or tag.endswith("/seconds") for tag in acc.Tags()["scalars"])


def test_completions_are_kept_bounded_with_their_rewards_and_shown_as_text(tracked_run):
    kept = [json.loads(line) for line in (tracked_run / "completions.jsonl").read_text().splitlines()]
    last = rundir.read_steps(tracked_run)[-1]["step"]
    by_source = {}
    for record in kept:
        by_source.setdefault((record["source"], record["step"]), []).append(record)
    expected = {("eval/base", 0), ("eval/base_greedy", 0), ("eval/final", last), ("eval/final_greedy", last)} | {
        ("train", s) for s in range(3, last + 1, 3)
    }
    assert set(by_source) == expected
    assert all(len(records) == KEPT for records in by_source.values())
    for record in kept:
        assert record["reward"] == pytest.approx(_digit_share(record["completion"]))
        assert "->" in record["prompt"]  # the Countdown prompt it answered
    acc = _events(tracked_run)
    text_tags = acc.Tags()["tensors"]
    assert "completions/eval/base/text_summary" in text_tags and "completions/train/text_summary" in text_tags
    shown = acc.Tensors("completions/eval/base/text_summary")[0].tensor_proto.string_val[0].decode()
    first = by_source[("eval/base", 0)][0]
    assert first["prompt"] in shown and f"{first['reward']:.4g}" in shown


def test_curve_points_are_scalars_when_measured(tracked_run):
    points = evaluate_curve(tracked_run, points=1, samples=32, n_problems=2)
    acc = _events(tracked_run)
    assert _scalar(acc, "curve/sampled/pass_at_k/32") == pytest.approx(
        {p["step"]: p["sampled"]["pass_at_k"]["32"] for p in points}, rel=1e-6
    )
    assert _scalar(acc, "curve/greedy/pass_at_k/1") == pytest.approx(
        {p["step"]: p["greedy"]["pass_at_k"]["1"] for p in points}, rel=1e-6
    )


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed here")
def test_a_missing_backend_is_one_line_naming_its_extra(tiny_model_dir, tmp_path):
    run = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "escov.llm",
            "train",
            "--model",
            str(tiny_model_dir),
            "--out",
            str(run),
            "--report_to",
            "wandb",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith("report_to 'wandb' needs the wandb package: pip install -e \".[wandb]\"")
    )
    assert not run.exists()


def test_the_documented_names_are_the_ones_written(tracked_run):
    """docs/run-directory.md's table of tracker names against the tags a real run (with a probe, evaluations, kept
    completions and a curve point) wrote: every tag falls under a documented name, every documented name is written."""
    import re

    evaluate_curve(tracked_run, points=1, samples=32, n_problems=2)  # the curve/ names (measured again: same points)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "run-directory.md").read_text()
    table = doc[doc.index("| name | what | at step |") :].split("\n\n")[0].splitlines()[2:]
    documented = {
        name.split("<")[0] for row in table for name in re.findall(r"`([a-z_]+(?:/[a-z_<>]*)*)`", row.split("|")[1])
    }
    acc = _events(tracked_run)
    # TensorBoard files a text under <name>/text_summary
    written = set(acc.Tags()["scalars"]) | {t.removesuffix("/text_summary") for t in acc.Tags()["tensors"]}
    assert written and documented >= {"train/", "eval/", "probe/", "completions/", "config"}, documented
    assert all(any(t == d or (d.endswith("/") and t.startswith(d)) for d in documented) for t in written), sorted(
        t for t in written if not any(t == d or (d.endswith("/") and t.startswith(d)) for d in documented)
    )
    assert all(any(t == d or t.startswith(d) for t in written) for d in documented), sorted(
        d for d in documented if not any(t == d or t.startswith(d) for t in written)
    )


def test_scalars_are_the_finite_numbers_by_path_without_flags_or_settings():
    """What a tracker receives of a record: finite ints and floats, nested names joined with "/", never a bool (a
    flag, not a measurement), a NaN or infinity, a list, or a key of NOT_MEASURED (settings and per-item lists)."""
    from escov.llm.tracking import NOT_MEASURED, completions_table, scalars

    record = {
        "reward": 0.5,
        "steps": 3,
        "es_zero_update": True,
        "bad": float("nan"),
        "huge": float("inf"),
        "ks": [1, 2],
        "pass_at_k": {"1": 0.25, "16": {"mean": 0.75}},
        "members": 8,
    }
    assert "members" in NOT_MEASURED
    assert scalars("train", record) == {
        "train/reward": 0.5,
        "train/steps": 3.0,
        "train/pass_at_k/1": 0.25,
        "train/pass_at_k/16/mean": 0.75,
    }
    table = completions_table([{"prompt": "a|b", "completion": "x\ny", "reward": 0.123456}])
    assert table.splitlines()[-1] == "| a\\|b | x<br>y | 0.1235 |"


def test_a_resumed_runs_tracker_hides_the_events_it_measures_again(tmp_path):
    """TensorBoard: a run stopped after logging step 3 and resumed from its step-2 checkpoint logs step 3 again; the
    resumed tracker (purge_from = 3) hides the first one, so each step holds one event, the resumed run's."""
    from escov.llm.tracking import open_tracker

    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    first = open_tracker("tensorboard", tmp_path, {"seed": 0})
    for step in (1, 2, 3):
        first.log({"train/reward_mean": float(step)}, step)
    first.close()
    resumed = open_tracker("tensorboard", tmp_path, {"seed": 0}, purge_from=3)
    resumed.log({"train/reward_mean": 30.0}, 3)
    resumed.close()
    events = accumulator.EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"scalars": 0})
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("train/reward_mean")] == [(1, 1.0), (2, 2.0), (3, 30.0)]
