"""llm.curve on a real tiny run: the base and the checkpoints evaluated on the run's test prompts,
the base point equal to an independent evaluation of the base model, records in curve.json, an
interrupted curve continued without re-measuring its points, only the current layout's points kept
after a run is resumed; and the layout placed by Pass@1 (refined where a jump exceeds the resolution
and a checkpoint lies inside it)."""

import json
import re
from pathlib import Path

import pytest
import torch

from escov.llm import rundir
from escov.llm.config import TrainConfig
from escov.llm.curve import curve_steps, evaluate_curve, layout, refinement
from escov.llm.engines import make_engine
from escov.llm.evaluate import evaluate
from escov.llm.problem_sets import EVAL_PROBLEM_SEED, eval_set
from escov.llm.rollout import derive_seed
from escov.llm.tasks import get_task
from escov.llm.tasks.base import split_of
from escov.llm.train import train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RUN = dict(
    algo="grpo",
    steps=4,
    batch_size=2,
    train_pool=8,
    threads=1,
    max_completion_length=6,
    checkpoint_every=2,
    step_samples=2,
    probe_prompts=1,
    probe_members=2,
    probe_samples=2,
    probe_center_samples=2,
    eval_problems=3,
    eval_samples=2,
    eval_ks=(1,),
    heldout_task="",
    threshold_keep=(50.0,),
    task="countdown3",
    grpo={"num_generations": 4, "learning_rate": 3e-2},
)


def test_curve_steps_spread_and_keep_the_last():
    assert curve_steps([40, 10, 20, 30], 8) == [0, 10, 20, 30, 40]
    assert curve_steps(list(range(5, 101, 5)), 4) == [0, 5, 35, 70, 100]
    assert curve_steps([10, 20, 30], 1) == [0, 30]  # one point: the end, as a base-and-end curve needs
    with pytest.raises(ValueError, match="points"):
        curve_steps([10], 0)


def test_layout_refines_wide_pass1_jumps_where_a_checkpoint_lies_inside():
    """A run whose Pass@1 jumps 0.10 -> 0.40 over its first 4 steps, then creeps. The first spread,
    0 1 3 8 16, leaves jumps of 16 points (1 -> 3) and 9 points (3 -> 8): steps 2, then 4 are measured,
    widest first; 0 -> 1 (7 points) has no checkpoint inside, and the slow part (8 -> 16) is left alone."""
    pass1 = {0: 0.10, 1: 0.17, 2: 0.25, 3: 0.33, 4: 0.40, 8: 0.42, 12: 0.44, 16: 0.45}
    measured = []

    def pass1_at(step):
        measured.append(step)
        return pass1[step]

    assert curve_steps([1, 2, 3, 4, 8, 12, 16], 4) == [0, 1, 3, 8, 16]
    assert layout([1, 2, 3, 4, 8, 12, 16], pass1_at, points=4, resolution=0.05) == [0, 1, 2, 3, 4, 8, 16]
    assert measured == [0, 1, 3, 8, 16, 2, 4]
    # the widest jump first, the checkpoint nearest its middle
    assert refinement({0: 0.1, 4: 0.4, 16: 0.45}, [1, 2, 3, 4, 8, 12, 16], 0.05) == 2
    assert refinement({0: 0.1, 4: 0.12, 16: 0.45}, [1, 2, 3, 4, 8, 12, 16], 0.05) == 8  # ties: the earlier step
    # a jump with no checkpoint inside cannot be refined; a jump within the resolution is left alone
    assert refinement({0: 0.1, 1: 0.4}, [1], 0.05) is None
    assert refinement({0: 0.1, 4: 0.14}, [1, 2, 3, 4], 0.05) is None
    # a falling segment is a jump too
    assert refinement({0: 0.4, 4: 0.1}, [1, 2, 3, 4], 0.05) == 2
    # at most max_points points, the base included
    assert len(layout(list(range(1, 17)), lambda s: s / 16, points=4, resolution=0.01, max_points=7)) == 7
    with pytest.raises(ValueError, match="resolution"):
        layout([1], lambda s: 0.0, resolution=0.0)


def test_curve_of_a_real_run(tiny_model_dir, tmp_path):
    run = tmp_path / "run"
    train(TrainConfig.from_dict(RUN | {"model": str(tiny_model_dir), "out": str(run)}), show_progress=False)
    points = evaluate_curve(run, points=8, samples=32, temperature=0.6)
    assert [p["step"] for p in points] == [0, 2, 4]
    stored = rundir.read_curve(run)
    assert stored == json.loads((run / rundir.CURVE).read_text())["points"] == points
    task = get_task("countdown3")
    problems = task.problems("test", 3, seed=EVAL_PROBLEM_SEED)
    assert all(len(p.prompt.split("->")[0].split(",")) == 3 for p in problems), "countdown3 has 3 numbers"
    # the base point is the base model evaluated directly with the same prompts and seed
    engine = make_engine("hf", tiny_model_dir, dtype=torch.float32)
    direct = evaluate(
        engine,
        task,
        problems,
        n=32,
        ks=[1, 16, 32],
        temperature=0.6,
        max_new_tokens=6,
        seed=derive_seed(0, 0, "curve") % 2**31,
        progress=False,
    )
    assert points[0]["sampled"]["per_problem"] == direct["per_problem"]
    assert [p["id"] for p in points[-1]["sampled"]["per_problem"]] == [p.id for p in problems]
    run_ids = [p["id"] for p in json.loads((run / rundir.EVAL).read_text())["final"]["per_problem"]]
    assert run_ids == eval_set(TrainConfig(task="countdown3", eval_problems=3)).ids
    assert all([p["id"] for p in pt[kind]["per_problem"]] == run_ids for pt in points for kind in ("sampled", "greedy"))
    assert all(pt["greedy"]["n"] == 1 and pt["greedy"]["temperature"] == 0.0 for pt in points)
    # the trained weights differ from the base: the last point is not the base measured again
    assert (
        points[-1]["sampled"]["per_problem"] != points[0]["sampled"]["per_problem"]
        or points[-1]["sampled"]["mean_token_entropy"] != points[0]["sampled"]["mean_token_entropy"]
    )
    # continue an interrupted curve: only the missing point is measured
    kept = [p for p in stored if p["step"] != 2]
    rundir.write_json(run / rundir.CURVE, {"points": kept})
    again = evaluate_curve(run, points=8, samples=32, temperature=0.6)
    assert [p["step"] for p in again] == [0, 2, 4]
    assert again[0] == points[0] and again[1]["sampled"]["per_problem"] == points[1]["sampled"]["per_problem"]


def test_damaged_curve_is_named(tmp_path):
    (tmp_path / rundir.CURVE).write_text('{"points": [{"step": 1}]}')
    with pytest.raises(rundir.RunDirError, match="curve.json.*lacks the field 'sampled'"):
        rundir.read_curve(tmp_path)
    (tmp_path / rundir.CURVE).write_text('{"points": [{"step": "one"}]}')
    problems = []  # a partial reader skips a point of the wrong type and names it
    assert rundir.read_curve(tmp_path, problems) == [] and "curve.json" in problems[0] and "'step'" in problems[0]


def test_resumed_run_keeps_only_the_current_layout(tiny_model_dir, tmp_path):
    """--points 4 on a partial run (checkpoints 1-3), then on the finished run (checkpoints 1-6): the curve
    holds the 5 points of the new layout, not those 5 plus the partial layout's stale ones."""
    run = tmp_path / "run"
    train(
        TrainConfig.from_dict(RUN | {"model": str(tiny_model_dir), "out": str(run), "steps": 6, "checkpoint_every": 1}),
        show_progress=False,
    )
    later = tmp_path / "later"
    later.mkdir()
    for step in (4, 5, 6):  # the run as it stood after 3 steps
        rundir.checkpoint_dir(run, step).rename(later / f"step-{step}")
    partial = evaluate_curve(run, points=4, samples=32, temperature=0.6, resolution=0.99)
    assert [p["step"] for p in partial] == [0, 1, 2, 3]
    for step in (4, 5, 6):  # resumed and finished
        (later / f"step-{step}").rename(rundir.checkpoint_dir(run, step))
    final = evaluate_curve(run, points=4, samples=32, temperature=0.6, resolution=0.99)
    assert [p["step"] for p in final] == curve_steps([1, 2, 3, 4, 5, 6], 4) == [0, 1, 3, 4, 6]
    assert [p["step"] for p in rundir.read_curve(run)] == [0, 1, 3, 4, 6]  # step 2 (stale) dropped
    assert final[2] == partial[3], "a point of both layouts is reused, not re-measured"
    # at most 3 points: the first three of the layout, the later checkpoints' points dropped (nothing measured)
    fewer = evaluate_curve(run, points=4, samples=32, temperature=0.6, resolution=0.99, max_points=3)
    assert [p["step"] for p in fewer] == [p["step"] for p in rundir.read_curve(run)] == [0, 1, 3]
    assert fewer == final[:3]
    # fewer samples than Pass@32 needs: refused before anything is measured
    with pytest.raises(ValueError, match=r"^samples must be >= 32 \(Pass@32\), got 31$"):
        evaluate_curve(run, points=4, samples=31, temperature=0.6)
    assert [p["step"] for p in rundir.read_curve(run)] == [0, 1, 3]


def test_curve_of_a_run_trained_on_a_data_file_evaluates_the_runs_own_test_records(tiny_model_dir, tmp_path):
    """A run trained on a countdown.json-style file with the paper's split (records 0-199 train, the rest
    test) is evaluated along training on the file's test records, not on generated problems."""
    sample = json.loads((Path(__file__).parents[1] / "data" / "countdown_sample.json").read_text())
    records = [dict(sample[i % len(sample)], id=i) for i in range(206)]  # 200 train records, 6 test records
    data = tmp_path / "countdown.json"
    data.write_text(json.dumps(records))
    run = tmp_path / "run"
    cfg = RUN | {
        "model": str(tiny_model_dir),
        "out": str(run),
        "task": "countdown",
        "data": str(data),
        "data_split": "paper",
        "steps": 2,
    }
    train(TrainConfig.from_dict(cfg), show_progress=False)
    points = evaluate_curve(run, points=2, samples=32, temperature=0.6)
    final = json.loads((run / rundir.EVAL).read_text())["final"]["per_problem"]
    for point in points:
        ids = [p["id"] for p in point["sampled"]["per_problem"]]
        assert all(re.fullmatch(r"countdown/test/20[0-5]", i) for i in ids), ids
        assert ids == [p["id"] for p in final]  # the problems of the run's own final evaluation


def test_a_training_split_curve_never_reads_a_test_prompt_and_is_not_read_as_one(tiny_model_dir, tmp_path):
    """--split train (what a sweep that chooses settings reads): the points are measured on training-split
    prompts, none of them a test prompt; measured again on the test split they are replaced, not reused; and
    the report's reader refuses a training-split curve, naming it."""
    from escov.paper_checks.rundir import load_run

    run = tmp_path / "run"
    train(TrainConfig.from_dict(RUN | {"model": str(tiny_model_dir), "out": str(run), "steps": 2}), show_progress=False)
    on_train = evaluate_curve(run, points=2, samples=32, temperature=0.6, n_problems=6, split="train")
    test_ids = {p.id for p in get_task("countdown3").problems("test", 6, seed=EVAL_PROBLEM_SEED)}
    train_ids = [p["id"] for p in on_train[0]["sampled"]["per_problem"]]
    numbers = [re.fullmatch(r"countdown/([\d,]+)=\d+", i).group(1).split(",") for i in train_ids]
    assert len(set(train_ids)) == 6 and all(split_of(",".join(sorted(ns, key=int))) == "train" for ns in numbers)
    assert not set(train_ids) & test_ids
    assert all(p["split"] == "train" for p in rundir.read_curve(run))
    loaded = load_run(run)
    assert loaded.curve is None and any("training split" in p and "curve.json" in p for p in loaded.problems)
    on_test = evaluate_curve(run, points=2, samples=32, temperature=0.6, n_problems=6)
    assert {p["id"] for p in on_test[0]["sampled"]["per_problem"]} == test_ids
    assert all("split" not in p for p in rundir.read_curve(run)) and load_run(run).curve == on_test
    on_validation = evaluate_curve(run, points=2, samples=32, temperature=0.6, n_problems=6, split="validation")
    validation_ids = [p["id"] for p in on_validation[0]["sampled"]["per_problem"]]
    assert validation_ids == [p.id for p in get_task("countdown3").problems("validation", 6, seed=EVAL_PROBLEM_SEED)]
    assert not set(validation_ids) & (test_ids | set(train_ids))
    assert all(p["split"] == "validation" for p in rundir.read_curve(run)) and load_run(run).curve is None
    with pytest.raises(ValueError, match="split must be one of test, validation, train"):
        evaluate_curve(run, split="heldout")


def test_a_curve_reuses_a_point_only_at_its_own_temperature_and_sample_count(tiny_model_dir, tmp_path):
    """The curve's temperature (default: the run's eval_temperature), samples and prompts shape each point;
    a stored point is reused when they are the same (its marked value comes back) and measured again at
    another temperature or sample count."""
    run = tmp_path / "run"
    train(
        TrainConfig.from_dict(
            RUN | {"model": str(tiny_model_dir), "out": str(run), "steps": 2, "eval_temperature": 0.8}
        ),
        show_progress=False,
    )
    first = evaluate_curve(run, points=1, samples=33, n_problems=2)
    assert [p["step"] for p in first] == [0, 2]
    assert all(
        (p["sampled"]["temperature"], p["sampled"]["n"], p["sampled"]["num_problems"]) == (0.8, 33, 2) for p in first
    )
    marked = [p | {"sampled": p["sampled"] | {"mean_token_entropy": -1.0}} for p in first]
    rundir.write_json(run / rundir.CURVE, {"points": marked})
    reused = evaluate_curve(run, points=1, samples=33, n_problems=2, temperature=0.8)
    assert [p["sampled"]["mean_token_entropy"] for p in reused] == [-1.0, -1.0]
    for other in ({"temperature": 0.5}, {"samples": 34}):
        again = evaluate_curve(run, points=1, **{"samples": 33, "n_problems": 2, "temperature": 0.8} | other)
        assert all(p["sampled"]["mean_token_entropy"] >= 0 for p in again), other
        assert all(
            p["sampled"]["temperature"] == other.get("temperature", 0.8)
            and p["sampled"]["n"] == other.get("samples", 33)
            for p in again
        )


def test_the_base_and_final_points_are_the_runs_own_evaluations_when_measured_alike(tiny_model_dir, tmp_path):
    """A run evaluated with the curve's prompts, samples, temperature, Pass@k and completion length: the curve's
    step 0 and last point are eval.json's base and final (with their greedy twins), marked as such, and only the
    checkpoints between are measured; a curve with other settings measures every point itself."""
    run = tmp_path / "run"
    train(
        TrainConfig.from_dict(
            RUN
            | {
                "model": str(tiny_model_dir),
                "out": str(run),
                "eval_samples": 32,
                "eval_ks": (1, 16, 32),
                "eval_temperature": 0.6,
            }
        ),
        show_progress=False,
    )
    evals = json.loads((run / rundir.EVAL).read_text())
    points = evaluate_curve(run, points=8, samples=32, temperature=0.6)
    assert [p["step"] for p in points] == [0, 2, 4]
    for point, label in ((points[0], "base"), (points[-1], "final")):
        assert point["source"] == f"eval.json {label}"
        assert point["sampled"]["per_problem"] == evals[label]["per_problem"]
        assert point["greedy"]["per_problem"] == evals[f"{label}_greedy"]["per_problem"]
    assert "source" not in points[1]
    # the middle point is the step-2 checkpoint measured with the curve's own seed
    task, problems = get_task("countdown3"), eval_set(TrainConfig(task="countdown3", eval_problems=3)).problems
    engine = make_engine("hf", rundir.checkpoint_dir(run, 2), dtype=torch.float32)
    direct = evaluate(
        engine,
        task,
        problems,
        n=32,
        ks=[1, 16, 32],
        temperature=0.6,
        max_new_tokens=6,
        seed=derive_seed(0, 2, "curve") % 2**31,
        progress=False,
    )
    assert points[1]["sampled"]["per_problem"] == direct["per_problem"]
    assert rundir.read_curve(run) == points
    other = evaluate_curve(run, points=8, samples=33, temperature=0.6)
    assert all("source" not in p and p["sampled"]["n"] == 33 for p in other)
    assert other[0]["sampled"]["seed"] == derive_seed(0, 0, "curve") % 2**31
