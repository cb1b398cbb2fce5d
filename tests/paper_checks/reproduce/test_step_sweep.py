"""The step-size sweep's rule (paper_checks/reproduce/step_sweep.py) on curves with a known answer, at and on both sides
of each boundary, and the sweep end to end on the tiny model: training-split curves only, a choice or the
conditions each pair missed."""

import json
from dataclasses import replace

import pytest

from escov.paper_checks.reproduce.budgets import ANSWER_SEEDS, BUDGETS
from escov.paper_checks.reproduce.step_sweep import (
    ENTROPY_DROP,
    MIN_POINTS,
    SETTINGS,
    SWEEP_SEED,
    Setting,
    Trace,
    choose,
    common_range,
    entropy_fall,
    judge,
    points_inside,
    run_sweep,
    sweep_runs,
)


def trace(name, pass1, entropy=None):
    entropy = entropy or [1.0] * len(pass1)
    return Trace(name, tuple(range(len(pass1))), tuple(pass1), tuple(entropy))


def test_a_curves_trace_reads_each_points_step_sampled_pass1_and_sampled_entropy():
    """Trace.of_curve: the sampled evaluation's Pass@1 and mean token entropy, never the greedy one's."""
    points = [
        {
            "step": s,
            "sampled": {"pass_at_k": {"1": p, "4": 0.9}, "mean_token_entropy": h},
            "greedy": {"pass_at_k": {"1": 1 - p}, "mean_token_entropy": 0.0},
        }
        for s, p, h in ((0, 0.25, 1.5), (5, 0.5, 1.25))
    ]
    assert Trace.of_curve("g", points) == Trace("g", (0, 5), (0.25, 0.5), (1.5, 1.25))


def test_entropy_falls_at_the_first_point_a_tenth_below_a_later_maximum():
    assert ENTROPY_DROP == 0.10
    t = trace("g", [0.1, 0.2, 0.3, 0.4, 0.5], [1.5, 2.0, 1.9, 1.8, 1.0])
    assert entropy_fall(t) == 0.4  # 1.8 = 0.9 x 2.0: at the boundary, a fall
    assert entropy_fall(trace("g", [0.1, 0.2, 0.3], [1.5, 2.0, 1.81])) is None  # just above it: none
    assert entropy_fall(trace("g", [0.1, 0.2, 0.3], [1.0, 0.5, 2.0])) is None  # a dip before the maximum is no fall
    assert entropy_fall(trace("g", [0.1, 0.2], [2.0, 1.0])) == 0.2  # a maximum at the base counts


def test_common_range_and_points_inside_are_inclusive():
    g, e = trace("g", [0.20, 0.30, 0.50, 0.45]), trace("e", [0.25, 0.28, 0.40])
    assert common_range(g, e) == (0.25, 0.40)
    assert points_inside(g, 0.25, 0.40) == 1 and points_inside(e, 0.25, 0.40) == 3
    assert points_inside(g, 0.30, 0.50) == 3  # both ends included
    lo, hi = common_range(trace("g", [0.5, 0.6]), trace("e", [0.1, 0.2]))
    assert lo > hi and points_inside(trace("g", [0.5, 0.6]), lo, hi) == 0


def rising(name, start, stop, n, entropy=None):
    return trace(name, [start + (stop - start) * i / (n - 1) for i in range(n)], entropy)


def test_a_pair_needs_enough_points_on_both_sides_and_a_range_reaching_the_entropy_fall():
    assert MIN_POINTS == 5
    grpo = trace("g", [0.20, 0.25, 0.30, 0.35, 0.40, 0.50, 0.60, 0.70], [2.0, 2.0, 2.0, 2.0, 1.8, 1.0, 1.0, 1.0])
    ok = judge(grpo, trace("e", [0.20, 0.25, 0.30, 0.35, 0.40]))  # the range ends where entropy falls
    assert ok.missed == () and (ok.lo, ok.hi, ok.fall, ok.grpo_points, ok.es_points) == (0.2, 0.4, 0.4, 5, 5)
    short = judge(grpo, trace("e", [0.20, 0.25, 0.30, 0.35, 0.39]))  # just before it: GRPO keeps 4 points too
    assert short.missed == (
        "GRPO has 4 points in the range",
        "the range ends at Pass@1 0.390, before GRPO's entropy falls (0.400)",
    )
    assert judge(grpo, trace("e", [0.20, 0.30, 0.35, 0.40])).missed == ("ES has 4 points in the range",)
    assert judge(grpo, trace("e", [0.20, 0.30, 0.35, 0.40]), min_points=4).missed == ()
    flat = judge(trace("g", grpo.pass1), trace("e", [0.20, 0.25, 0.30, 0.35, 0.40]))
    assert flat.missed == ("GRPO's entropy does not fall",)


# two learning rates and two alphas, a small and a big step each
STEPS = {
    "g-big": Setting("grpo", {"learning_rate": 1e-4}, ""),
    "g-small": Setting("grpo", {"learning_rate": 1e-5}, ""),
    "e-big": Setting("es", {"sigma": 0.01, "alpha": 0.02}, ""),
    "e-small": Setting("es", {"sigma": 0.01, "alpha": 0.005}, ""),
}


def test_choose_takes_the_widest_range_then_more_points_then_smaller_steps():
    fall = [2.0, 2.0] + [1.0] * 9
    traces = {
        "g-big": rising("g-big", 0.2, 0.7, 11, fall),
        "g-small": rising("g-small", 0.2, 0.5, 11, fall),
        "e-big": rising("e-big", 0.2, 0.6, 9),
        "e-small": rising("e-small", 0.2, 0.4, 9),
    }
    chosen, pairs = choose(traces, STEPS)
    assert len(pairs) == 4 and (chosen.grpo, chosen.es) == ("g-big", "e-big")  # the only range up to 0.6
    traces["g-small"] = rising("g-small", 0.2, 0.6, 21, [2.0, 2.0] + [1.0] * 19)  # the same range, more points
    chosen, _ = choose(traces, STEPS)
    assert (chosen.grpo, chosen.es) == ("g-small", "e-big")
    traces["g-small"] = Trace("g-small", traces["g-big"].steps, traces["g-big"].pass1, traces["g-big"].entropy)
    chosen, _ = choose(traces, STEPS)  # identical curves: the smaller learning rate
    assert (chosen.grpo, chosen.es) == ("g-small", "e-big")
    none, pairs = choose({"g-big": rising("g-big", 0.2, 0.7, 11), "e-big": rising("e-big", 0.2, 0.6, 9)}, STEPS)
    assert none is None and pairs[0].missed == ("GRPO's entropy does not fall",)


def test_a_tie_in_range_and_points_goes_to_the_smaller_learning_rate_before_the_smaller_alpha():
    fall = [2.0, 2.0] + [1.0] * 7
    # crossed ranges: each learning rate meets the other's alpha over 0.4 of Pass@1 (0.7 - 0.3 and 0.5 - 0.1, equal
    # but in their last bit), its own over 0.2
    traces = {
        "g-small": rising("g-small", 0.3, 0.7, 9, fall),
        "g-big": rising("g-big", 0.1, 0.5, 9, fall),
        "e-small": rising("e-small", 0.1, 0.5, 9),
        "e-big": rising("e-big", 0.3, 0.7, 9),
    }
    chosen, pairs = choose(traces, STEPS)
    widths = {(p.grpo, p.es): p.hi - p.lo for p in pairs}
    assert widths == pytest.approx(
        {("g-small", "e-big"): 0.4, ("g-big", "e-small"): 0.4, ("g-small", "e-small"): 0.2, ("g-big", "e-big"): 0.2}
    )
    tied = [p for p in pairs if p.hi - p.lo == pytest.approx(0.4)]
    assert {(p.grpo_points, p.es_points) for p in tied} == {(9, 9)}
    # the smaller learning rate decides first, with the larger alpha; alpha first would take (g-big, e-small)
    assert (chosen.grpo, chosen.es) == ("g-small", "e-big")


def test_the_sweep_runs_are_the_answer_shape_on_a_seed_of_their_own(tmp_path):
    runs = sweep_runs(tmp_path, 40, SETTINGS)
    assert SWEEP_SEED not in ANSWER_SEEDS and {r["seed"] for r in runs.values()} == {SWEEP_SEED}
    assert {r["algo"] for r in runs.values()} == {"grpo", "es"}
    for name, run in runs.items():
        params = SETTINGS[name].params
        assert all(run[SETTINGS[name].algo][k] == v for k, v in params.items())
        assert run["task"] == "countdown3" and run["steps"] == 40 and run["heldout_task"] == ""
    with pytest.raises(ValueError, match="--model .*: not a model directory"):
        run_sweep(tmp_path / "nowhere", tmp_path / "out")


def test_the_sweep_end_to_end_reads_only_training_split_curves(tiny_model_dir, tmp_path):
    settings = {
        "g": Setting("grpo", {"learning_rate": 3e-2}, "fast"),
        "e": Setting("es", {"sigma": 0.05, "alpha": 0.05}, "fast"),
    }
    curve = {"points": 2, "samples": 32, "temperature": 0.6, "resolution": 0.99, "max_points": 3}
    # the answer's budget with a 16-prompt training pool and no population probe (the sweep reads neither; generating
    # the pool's 512 problems and probing took most of the test's time)
    budget = replace(BUDGETS["answer"], common=BUDGETS["answer"].common | {"train_pool": 16, "probe": False})
    chosen = run_sweep(
        tiny_model_dir,
        tmp_path,
        jobs=1,
        steps=2,
        problems=3,
        settings=settings,
        curve=curve,
        budget=budget,
        log=lambda m: None,
    )
    assert json.loads((tmp_path / "runs" / "g" / "config.json").read_text())["train_pool"] == 16  # the budget given
    record = json.loads((tmp_path / "sweep.json").read_text())
    assert chosen is None and record["chosen"] is None  # 3 curve points each cannot hold 5 in a range
    assert record["split"] == "train" and set(record["curves"]) == {"g", "e"}
    for name in settings:
        points = json.loads((tmp_path / "runs" / name / "curve.json").read_text())["points"]
        assert [p["step"] for p in points] == [0, 1, 2] and all(p["split"] == "train" for p in points)
        assert record["curves"][name]["pass1"] == [p["sampled"]["pass_at_k"]["1"] for p in points]
    assert "ES has" in record["pairs"][0]["missed"][0] or "GRPO has" in record["pairs"][0]["missed"][0]
    assert (tmp_path / "sweep.png").stat().st_size > 0 and "Chosen: none" in (tmp_path / "sweep.md").read_text()


def test_the_sweep_record_names_its_base_without_its_path(tiny_model_dir, tmp_path):
    from escov.paper_checks.base_info import base_record

    record = base_record(tiny_model_dir)
    assert record["name"] == tiny_model_dir.name and str(tiny_model_dir.parent) not in json.dumps(record)
    assert record["preset"] == "test" and record["seed"] == 0
