"""Curve reuse and "done" across every split (llm/curve.py, paper_checks/reproduce/training_runs.py curve_done): a run
whose own evaluations were made exactly as the curve measures (prompts, samples, temperature, Pass@k, length) lends
them to its TEST curve only; a validation or train curve is measured on its own split's prompts (never a test prompt),
and a curve complete on one split is not complete on another. The `llm curve` command line runs in this process."""

import json
import shutil

import pytest

from escov.llm import rundir
from escov.llm.cli import main
from escov.llm.config import TrainConfig, load_config
from escov.llm.curve import evaluate_curve, evaluations_as_points
from escov.llm.problem_sets import split_set
from escov.llm.rollout import derive_seed
from escov.llm.train import train
from escov.paper_checks.reproduce.training_runs import curve_done

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RUN = dict(
    algo="grpo",
    steps=2,
    batch_size=2,
    train_pool=8,
    threads=1,
    max_completion_length=6,
    checkpoint_every=2,
    step_samples=2,
    probe_every=0,
    eval_problems=3,
    eval_samples=32,
    eval_ks=(1, 16, 32),
    eval_temperature=0.6,
    heldout_task="",
    threshold_keep=(),
    task="countdown3",
    grpo={"num_generations": 4, "learning_rate": 3e-2},
)
CURVE = {"points": 1, "samples": 32, "temperature": 0.6}


@pytest.fixture(scope="module")
def run(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("curve-splits") / "run"
    train(TrainConfig.from_dict(RUN | {"model": str(tiny_model_dir), "out": str(out)}), show_progress=False)
    return out


def test_every_split_is_measured_on_its_own_prompts_and_only_the_test_curve_reuses_eval_json(run, capsys):
    cfg = load_config(run)
    ids = {s: set(split_set(cfg, s, 3).ids) for s in ("test", "validation", "train")}
    assert not ids["test"] & (ids["validation"] | ids["train"]) and not ids["validation"] & ids["train"]
    for split in ("test", "validation", "train"):
        assert not curve_done(run, CURVE | {"split": split}), split  # eval.json's points are not in curve.json yet
    for split in ("validation", "train"):
        points = evaluate_curve(run, n_problems=3, split=split, **CURVE)
        assert [p["step"] for p in points] == [0, 2]
        for p in points:
            assert "source" not in p and p["split"] == split
            assert {r["id"] for r in p["sampled"]["per_problem"]} == ids[split]
            assert p["sampled"]["seed"] == derive_seed(0, p["step"], "curve") % 2**31
        assert curve_done(run, CURVE | {"split": split})
        assert not curve_done(run, CURVE | {"split": "test"}) and not curve_done(run, CURVE)
    assert not curve_done(run, CURVE | {"split": "validation", "samples": 33})
    # a curve on more prompts than the points were measured on is not done; the run's own count (3) is the default
    assert curve_done(run, CURVE | {"split": "train", "n_problems": 3})
    assert not curve_done(run, CURVE | {"split": "train", "n_problems": 4})
    assert not curve_done(run, CURVE | {"split": "train", "temperature": 1.0})
    assert curve_done(run, {"points": 1, "split": "train"})  # the run's eval_temperature 0.6, 32 samples
    # the test curve, through the command line: both points are the run's own evaluations
    assert (
        main(
            [
                "curve",
                str(run),
                "--points",
                "1",
                "--samples",
                "32",
                "--temperature",
                "0.6",
                "--problems",
                "3",
                "--no-progress",
            ]
        )
        == 0
    )
    assert "step     2" in capsys.readouterr().out
    evals = rundir.read_eval(run)
    test_points = [p for p in rundir.read_curve(run) if "split" not in p]
    assert [(p["step"], p["source"]) for p in test_points] == [(0, "eval.json base"), (2, "eval.json final")]
    assert [p["sampled"]["per_problem"] for p in test_points] == [
        evals["base"]["per_problem"],
        evals["final"]["per_problem"],
    ]
    assert all({r["id"] for r in p["sampled"]["per_problem"]} == ids["test"] for p in test_points)
    assert curve_done(run, CURVE) and curve_done(run, CURVE | {"split": "test"})
    # curve.json holds one point per step: the test points replaced the others, which are no longer complete
    assert [p.get("split", "test") for p in rundir.read_curve(run)] == ["test", "test"]
    for split in ("validation", "train"):
        assert not curve_done(run, CURVE | {"split": split})


def test_the_curve_command_line_takes_its_split(run, capsys):
    assert (
        main(
            [
                "curve",
                str(run),
                "--points",
                "1",
                "--samples",
                "32",
                "--temperature",
                "0.6",
                "--problems",
                "3",
                "--split",
                "validation",
                "--no-progress",
            ]
        )
        == 0
    )
    validation = [p for p in rundir.read_curve(run) if p.get("split") == "validation"]
    assert len(validation) == 2 and all("source" not in p for p in validation)
    assert curve_done(run, CURVE | {"split": "validation"}) and not curve_done(run, CURVE)


@pytest.mark.parametrize(
    "field, value",
    [("num_problems", 4), ("n", 33), ("temperature", 0.7), ("ks", [1, 16]), ("max_new_tokens", 5), ("greedy", None)],
)
@pytest.mark.parametrize("label", ["base", "final"])
def test_an_evaluation_lends_its_point_only_when_measured_as_the_curve_measures(run, tmp_path, label, field, value):
    """eval.json's base (step 0) and final (the last step) are test-curve points when their prompts, samples,
    temperature, Pass@k (1, 16, 32 at least) and completion length are the curve's, with their greedy twins; one field
    off, that evaluation lends nothing and the other still does."""
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    cfg = load_config(copy)
    steps = rundir.checkpoint_steps(copy)[0]
    lent = evaluations_as_points(copy, cfg, steps, 3, 32, 0.6)
    assert [(p["step"], p["source"]) for p in lent] == [(0, "eval.json base"), (2, "eval.json final")]
    assert evaluations_as_points(copy, cfg, [s for s in steps if s != 2], 3, 32, 0.6)[-1]["step"] == 0  # no last
    assert evaluations_as_points(copy, cfg, [1], 3, 32, 0.6)[-1]["step"] == 0  # checkpoints that stop before it
    evals = json.loads((copy / rundir.EVAL).read_text())
    if field == "greedy":
        del evals[f"{label}_greedy"]
    else:
        evals[label][field] = value
    (copy / rundir.EVAL).write_text(json.dumps(evals))
    other = {"base": (2, "eval.json final"), "final": (0, "eval.json base")}[label]
    assert [(p["step"], p["source"]) for p in evaluations_as_points(copy, cfg, steps, 3, 32, 0.6)] == [other]


def test_a_greedy_twin_of_other_prompts_lends_nothing(run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    evals = json.loads((copy / rundir.EVAL).read_text())
    evals["final_greedy"]["num_problems"] = 4
    (copy / rundir.EVAL).write_text(json.dumps(evals))
    cfg = load_config(copy)
    assert [p["step"] for p in evaluations_as_points(copy, cfg, rundir.checkpoint_steps(copy)[0], 3, 32, 0.6)] == [0]


def test_a_lent_point_is_its_evaluation_without_the_completions_it_kept(run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    evals = json.loads((copy / rundir.EVAL).read_text())
    kept = [{"prompt": "1,2,3 -> 6", "completion": "1+2+3", "reward": 1.0}]
    for label in ("base", "final_greedy"):
        evals[label]["kept"] = kept
    (copy / rundir.EVAL).write_text(json.dumps(evals))
    base, final = evaluations_as_points(copy, load_config(copy), rundir.checkpoint_steps(copy)[0], 3, 32, 0.6)
    assert base["sampled"] | {"kept": kept} == evals["base"] and base["greedy"] == evals["base_greedy"]
    assert final["sampled"] == evals["final"] and final["greedy"] | {"kept": kept} == evals["final_greedy"]
    assert "kept" not in base["sampled"] and "kept" not in final["greedy"]


def test_the_curve_command_line_passes_each_of_its_settings_to_the_curve(tiny_model_dir, tmp_path, capsys):
    """`llm curve` off every default at once: checkpoints 1-4; --points 3 spreads over 1, 3, 4 (curve_steps) and
    --max_points 2 keeps the base and step 1; each point measures --eval_problems prompts of --split with
    --eval_samples samples at --eval_temperature; the printed line is the point's record (no-correct = 1 - solved).
    Then --points 1 alone: the base and the last checkpoint."""
    out = tmp_path / "run"
    train(
        TrainConfig.from_dict(RUN | {"steps": 4, "checkpoint_every": 1, "model": str(tiny_model_dir), "out": str(out)}),
        show_progress=False,
    )
    flags = ["--eval_problems", "2", "--eval_samples", "33", "--eval_temperature", "0.9", "--split", "validation"]
    assert main(["curve", str(out), "--points", "3", "--max_points", "2", "--resolution", "0.5", *flags]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step")]
    points = [p for p in rundir.read_curve(out) if p.get("split") == "validation"]
    assert [p["step"] for p in points] == [0, 1]
    ids = set(split_set(load_config(out), "validation", 2).ids)
    for p, line in zip(points, printed):
        s = p["sampled"]
        assert (s["n"], s["temperature"], {r["id"] for r in s["per_problem"]}) == (33, 0.9, ids)
        assert line == (
            f"step {p['step']:5d}  Pass@1 {s['pass_at_k']['1']:.3f}  Pass@32 {s['pass_at_k']['32']:.3f}  "
            f"greedy {p['greedy']['pass_at_k']['1']:.3f}  no-correct {1 - s['solved_fraction']:.3f}"
        )
    assert main(["curve", str(out), "--points", "1", "--resolution", "0.999", *flags]) == 0
    assert [p["step"] for p in rundir.read_curve(out) if p.get("split") == "validation"] == [0, 4]
    # a stored point whose weights' fingerprint is not its checkpoint's is measured again, not reused
    stale = next(p for p in rundir.read_curve(out) if p["step"] == 4)
    marker = stale | {"fingerprint": stale["fingerprint"] | {"weights_sha256": "0" * 64}, "marker": True}
    rundir.record_curve_point(out, marker)
    evaluate_curve(out, points=1, resolution=0.999, samples=33, temperature=0.9, n_problems=2, split="validation")
    again = next(p for p in rundir.read_curve(out) if p["step"] == 4)
    assert "marker" not in again and again["fingerprint"] == stale["fingerprint"]
    # --resolution reaches the layout: a gap outside (0, 1) is refused naming the value given
    with pytest.raises(SystemExit) as refused:
        main(["curve", str(out), "--resolution", "1.5", *flags])
    assert refused.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith("resolution must be a Pass@1 gap in (0, 1), got 1.5")
