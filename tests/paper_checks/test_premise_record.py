"""The report's premise record (paper_checks/premise_record.py) on curves with counts chosen here: every endpoint
against its value computed by hand from the counts (math.comb for Pass@32), the readings at their thresholds, and
the record inside a report built from run directories."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from escov.llm.config import TrainConfig, saved_config
from escov.llm.problem_sets import split_set
from escov.paper_checks.evidence import Evidence
from escov.paper_checks.premise_record import MARGIN, _pm, _reading_b, premise_record, render
from escov.paper_checks.reproduce.bases import shipped_base_dir
from escov.paper_checks.reproduce.budgets import PREMISE_BASE
from escov.paper_checks.rundir import Run

if TYPE_CHECKING:
    from escov.paper_checks.matched import Curve

N, PROMPTS, SEEDS, STEPS = 64, 12, (0, 1, 2), 30
BASE = shipped_base_dir("paper", PREMISE_BASE)


def pass32(c: int) -> float:
    return 1 - math.comb(N - c, 32) / math.comb(N, 32)


def config(algo: str, seed: int, **es) -> dict:
    """A run's config.json as llm train writes it: every setting, and the schedule beside them."""
    cfg = TrainConfig.from_dict(
        {
            "algo": algo,
            "model": str(BASE),
            "task": "countdown3",
            "seed": seed,
            "out": f"runs/{algo}-{seed}",
            "eval_problems": PROMPTS,
            "es": {"population_size": 32, "sigma": 0.02, "alpha": 0.01} | es,
        }
    )
    return cfg.to_dict() | {"schedule": [{"algo": algo, "start": 0, "steps": STEPS}]}


def curve(counts: np.ndarray, ids: list[str], distinct: np.ndarray) -> list[dict]:
    """curve.json points from (T, P) correct counts, one checkpoint every step."""
    return [
        {
            "step": t,
            "sampled": {
                "n": N,
                "pass_at_k": {"1": float(c.mean() / N)},
                "mean_token_entropy": 1.0,
                "per_problem": [
                    {"id": i, "correct": int(k), "distinct_correct_answers": float(d)} for i, k, d in zip(ids, c, dd)
                ],
            },
            "greedy": {"pass_at_k": {"1": 0.0}},
        }
        for t, (c, dd) in enumerate(zip(counts, distinct))
    ]


def path(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """(STEPS + 1, P) counts moving in a straight line from start to end (Pass@1 steps well inside the resolution)."""
    w = np.linspace(0, 1, STEPS + 1)[:, None]
    return np.rint((1 - w) * start + w * end).astype(int)


@pytest.fixture(scope="module")
def runs():
    if not (BASE / "config.json").exists():
        pytest.skip("the answer's shipped base is not built for this torch and code")
    ids = [p.id for p in split_set(saved_config(config("grpo", 0)), "test", PROMPTS).problems]
    rng = np.random.default_rng(0)
    base = rng.integers(1, 30, size=PROMPTS)
    out, counts = [], {}
    for seed in SEEDS:
        # GRPO sharpens: half the prompts near certain, the other half lost entirely; ES rises less and loses none
        grpo_end = np.where(np.arange(PROMPTS) < PROMPTS // 2, np.minimum(base + 30 + seed, N), 0)
        es_end = base + 10 + seed
        small_end = base + 2
        for algo, end, es in (
            ("grpo", grpo_end, {}),
            ("es", es_end, {}),
            ("es", small_end, {"sigma": 0.002, "tag": "small-sigma"}),
        ):
            c = path(base, end)
            distinct = np.where(c > 0, 1.0 + (algo == "es"), 0.0)
            counts[(algo, bool(es), seed)] = c
            out.append(
                Run(
                    Path(f"runs/{algo}{'-small' if es else ''}-{seed}"),
                    config(algo, seed, **es),
                    curve=curve(c, ids, distinct),
                )
            )
    return out, counts


def test_each_endpoint_equals_its_value_from_the_counts(runs):
    run_list, counts = runs
    grid = [{"sigma": 0.002, "s_measured": s} for s in (0.01, 0.06, 0.02)] + [
        {"sigma": 0.02, "s_measured": 3.0}
    ]  # median 0.02, mean 0.03
    control = {
        "split": "validation",
        "verdict": "narrowed",
        "base": {"name": "b"},
        "seeds": [300, 301],
        "prompts": 128,
        "samples": 128,
        "steps": 300,
        "plateau": {"a": {"reached": True}, "b": {"reached": False}},
        "endpoints": {
            "pass@32": {"mean": -0.07, "lo": -0.12, "hi": -0.02},
            "no_correct": {"mean": 0.06},
            "distinct": {"mean": -0.9},
            "families": {"rare-only": {"lost": 0}, "other": {"lost": 29}},
        },
    }
    record = premise_record(Evidence(runs=run_list), control, grid)
    assert (record["selection_split"], record["test_split"]) == ("validation", "test")
    assert (
        record["positive_control"]["plateau_reached"] == 1
        and record["positive_control"]["lost_by_family"]["other"] == 29
    )

    g0 = np.stack([counts[("grpo", False, s)][0] for s in SEEDS])
    g1 = np.stack([counts[("grpo", False, s)][-1] for s in SEEDS])
    e1 = np.stack([counts[("es", False, s)][-1] for s in SEEDS])
    a = record["grpo_plateau_minus_base"]
    by_hand = np.mean([pass32(y) - pass32(x) for x, y in zip(g0.ravel(), g1.ravel())])
    assert a["pass@32"]["mean"] == pytest.approx(by_hand, abs=1e-12) and a["pass@32"]["hi"] < 0
    assert a["no_correct"]["mean"] == pytest.approx(np.mean((g1 == 0).astype(float) - (g0 == 0)), abs=1e-12)
    assert a["verdict"] == "narrowed"
    assert sum(f["lost"] for f in a["families"].values()) == int(((g0 > 0) & (g1 == 0)).sum()) == 18
    assert sum(f["prompts"] for f in a["families"].values()) == PROMPTS
    assert set(a["plateau"]) == {f"seed {s}" for s in SEEDS}
    # (c): the last checkpoints
    end = record["es_minus_grpo_end"]
    assert end["mean"] == pytest.approx(
        np.mean([pass32(x) - pass32(y) for x, y in zip(e1.ravel(), g1.ravel())]), abs=1e-12
    )
    assert end["steps"] == [STEPS]
    assert end["pass1"]["mean"] == pytest.approx(np.mean(e1 - g1) / N, abs=1e-12)
    # (b): the highest level both reach, below the lowest ES end (GRPO passes it on the way up); the matched
    # reading itself is checked against a closed form in test_matched.py
    b = record["es_minus_grpo_top_level"]
    assert (
        counts[("grpo", False, 0)][0].mean() / N
        < b["level"]
        <= min(counts[("es", False, s)][-1].mean() / N for s in SEEDS)
    )
    assert b["reading"] == _reading_b(b) and b["lo"] <= b["mean"] <= b["hi"]
    from escov.paper_checks.matched import matched_difference
    from escov.paper_checks.real_checks import curves_of

    ev = Evidence(runs=run_list)
    _, every = matched_difference(curves_of(ev.by_variant("es")), curves_of(ev.by_variant("grpo")), "pass@32")
    assert len(every["compared_levels"]) > 1 and b["level"] == max(every["compared_levels"])  # the top level alone
    # (d): GRPO's distinct count is 1 wherever solved, ES's 2: GRPO's plateau - base is 0 over the prompts both
    # solve, and ES - GRPO at (b)'s level is 1 on every prompt both solve there (all but a few GRPO is losing)
    d = record["distinct_correct"]
    assert d["grpo_plateau_minus_base"]["mean"] == pytest.approx(0.0, abs=1e-12)
    assert d["grpo_plateau_minus_base"]["prompts"] == PROMPTS // 2
    assert 0.9 < d["es_minus_grpo_top_level"]["mean"] <= 2.0
    # read at (b)'s level alone, as (b) is: the mean over every supported level differs on these curves
    es_curves, grpo_curves = curves_of(ev.by_variant("es")), curves_of(ev.by_variant("grpo"))
    top, _ = matched_difference(es_curves, grpo_curves, "distinct", at="top")
    over_levels, _ = matched_difference(es_curves, grpo_curves, "distinct")
    assert d["es_minus_grpo_top_level"]["mean"] == top.mean != pytest.approx(over_levels.mean, abs=1e-3)
    # ES at the small sigma: its Pass@1 gain and the grid's median s at that sigma
    s = record["es_small_sigma"]
    gain = np.mean([(counts[("es", True, k)][-1] - counts[("es", True, k)][0]) / N for k in SEEDS])
    assert s["pass1_gain"]["mean"] == pytest.approx(gain, abs=1e-12) and s["learned"]
    assert (s["sigma"], s["s_measured_median"], s["runs"]) == (0.002, 0.02, 3)
    text = "\n".join(render(record))
    assert "**narrowed**" in text and f"**{b['reading']}**" in text and "learned" in text


@pytest.mark.parametrize(
    "lo,hi,reading",
    [
        (0.001, 0.05, "es_above"),
        (-0.03, MARGIN - 1e-9, "no_es_advantage_of_2_points"),
        (-0.03, MARGIN, "inconclusive"),
        (0.0, 0.01, "no_es_advantage_of_2_points"),
    ],
)
def test_the_top_level_reading_is_the_registered_test_then_the_margin(lo, hi, reading):
    assert _reading_b({"lo": lo, "hi": hi}) == reading


def test_a_record_without_grpo_curves_says_so(runs):
    run_list, _ = runs
    record = premise_record(Evidence(runs=[r for r in run_list if r.algo == "es"]), None)
    assert record["reason"] == "fewer than 2 GRPO runs with curves" and record["selection_split"] is None
    assert "fewer than 2 GRPO runs" in "\n".join(render(record))


def _curve(seed: int, counts: list[list[int]]) -> "Curve":
    from escov.paper_checks.matched import Curve

    c = np.array(counts)
    return Curve(
        seed=seed,
        steps=np.arange(len(c)) * 10,
        pass1=c.mean(1) / N,
        counts=c,
        n=N,
        entropy=np.zeros(len(c)),
        greedy=np.zeros(len(c)),
        ids=("p0", "p1"),
        distinct=np.minimum(c, 1.0),
    )


def test_the_end_difference_reads_the_last_points_of_two_seeds():
    from escov.paper_checks.premise_record import end_difference

    es = [_curve(0, [[1, 1], [2, 0], [4, 9]]), _curve(1, [[1, 1], [0, 0], [3, 0]])]
    grpo = [_curve(0, [[1, 1], [40, 40], [9, 9], [5, 0]]), _curve(1, [[1, 1], [40, 40], [9, 9], [0, 2]])]
    got = end_difference(es, grpo)
    last = [(4, 5), (9, 0), (3, 0), (0, 2)]  # (ES at step 20, GRPO at step 30), seed by seed, prompt by prompt
    assert got["steps"] == [20, 30]  # each method's last step, both named
    assert got["mean"] == pytest.approx(np.mean([pass32(a) - pass32(b) for a, b in last]), abs=1e-12)
    assert got["pass1"]["mean"] == pytest.approx(np.mean([(a - b) / N for a, b in last]), abs=1e-12)
    assert end_difference(es[:1], grpo[:1]) is None


def test_es_at_the_small_sigma_reads_its_last_point_against_its_base_and_needs_a_gain_above_zero(runs):
    from escov.paper_checks.premise_record import small_sigma

    run_list, counts = runs
    small = [r for r in run_list if r.config["es"].get("tag")]
    # the last point, not the one before it: a curve whose last point falls back to the base has no gain
    flat = [Run(r.path, r.config, curve=r.curve[:-1] + [r.curve[0] | {"step": STEPS}]) for r in small]
    got = small_sigma(Evidence(runs=flat), [{"sigma": 0.02, "s_measured": 3.0}])
    assert got["pass1_gain"]["mean"] == 0.0 and got["pass1_gain"]["lo"] == 0.0 and got["learned"] is False
    assert got["s_measured_median"] is None and got["runs"] == 3
    assert (
        small_sigma(Evidence(runs=flat[:2]), None)["runs"] == 2 and small_sigma(Evidence(runs=flat[:1]), None) is None
    )


def test_an_interval_keeps_its_mean_bounds_design_and_detectable_difference():
    from escov.paper_checks.design import seeds_by_prompts
    from escov.paper_checks.premise_record import _interval

    est = seeds_by_prompts(np.array([[0.1, 0.3, 0.2], [0.2, 0.4, 0.1]]), 32)
    assert _interval(None) is None
    assert _interval(est) == {
        "mean": est.mean,
        "lo": est.lo,
        "hi": est.hi,
        "design": "2 seeds x 3 prompts x 32 samples",
        "detectable": est.detectable,
    }


def test_the_record_from_two_seeds_its_fixed_fields_and_a_comparison_that_cannot_be_made(runs):
    run_list, _ = runs
    two = [r for r in run_list if r.seed in (0, 1)]
    control = {
        "split": "validation",
        "verdict": "narrowed",
        "base": {"name": "b0"},
        "seeds": [1, 2],
        "prompts": 4,
        "samples": 8,
        "steps": 3,
        "plateau": {"a": {"reached": True}},
        "endpoints": {
            "pass@32": {"mean": -0.1},
            "no_correct": {"mean": 0.1},
            "distinct": {"mean": -1.0},
            "families": {"other": {"lost": 3}},
        },
    }
    record = premise_record(Evidence(runs=two), control)
    assert record["registered"]["where"] == "docs/answer-budget.md, 'The premise'" and record["margin"] == MARGIN
    assert record["positive_control"] == {
        "verdict": "narrowed",
        "base": "b0",
        "seeds": [1, 2],
        "prompts": 4,
        "samples": 8,
        "steps": 3,
        "plateau_reached": 1,
        "runs": 1,
        "pass@32": {"mean": -0.1},
        "no_correct": {"mean": 0.1},
        "distinct": {"mean": -1.0},
        "lost_by_family": {"other": 3},
    }
    split = {"lost": {"pairs": 3}, "kept": {"pairs": 5}}  # a control measured since the split was recorded
    control["endpoints"]["lost_vs_kept"] = split
    assert premise_record(Evidence(runs=two), control)["positive_control"]["lost_vs_kept"] == split
    assert set(record["grpo_plateau_minus_base"]["plateau"]) == {"seed 0", "seed 1"}
    # ES curves that never reach GRPO's Pass@1 range: nothing to compare, the reason says why
    low = [
        Run(r.path, r.config, curve=[p | {"sampled": p["sampled"] | {"pass_at_k": {"1": 0.0}}} for p in r.curve])
        if r.algo == "es"
        else r
        for r in two
    ]
    record = premise_record(Evidence(runs=low), None)
    reason = record["es_minus_grpo_top_level"]["reason"]
    assert set(record["es_minus_grpo_top_level"]) == {"reason"} and "nothing to compare" in reason
    assert record["distinct_correct"]["es_minus_grpo_top_level"] is None


def test_the_families_are_those_of_the_test_problems_on_the_runs_base(runs):
    from escov.llm.tinymodel import preset_with
    from escov.paper_checks.premise import family_of
    from escov.paper_checks.premise_record import _families

    run_list, _ = runs
    grpo = [r for r in run_list if r.algo == "grpo"]
    # the curve's prompts, not the run's eval_problems, set how many test problems are read
    wide = [Run(r.path, r.config | {"eval_problems": 2}, curve=r.curve) for r in grpo]
    ids = tuple(p["id"] for p in grpo[0].curve[0]["sampled"]["per_problem"])
    problems = split_set(saved_config(grpo[0].config), "test", PROMPTS).problems
    preset = preset_with("paper", dict(PREMISE_BASE))
    want = [family_of(p.meta["numbers"], p.meta["target"], preset) for p in problems]
    assert "rare-only" in want and "other" in want
    assert _families(Evidence(runs=wide), ids) == want


def test_the_premise_section_reads_as_written():
    record = {
        "selection_split": "validation",
        "test_split": "test",
        "registered": "R",
        "margin": 0.02,
        "positive_control": {
            "seeds": [1, 2],
            "prompts": 4,
            "samples": 8,
            "steps": 3,
            "verdict": "narrowed",
            "pass@32": {"mean": -0.05, "lo": -0.08, "hi": -0.02},
            "no_correct": {"mean": 0.04, "lo": None, "hi": None},
            "plateau_reached": 1,
            "runs": 2,
        },
        "grpo_plateau_minus_base": {
            "pass@32": {"mean": -0.03, "lo": -0.05, "hi": -0.01},
            "no_correct": {"mean": 0.02, "lo": 0.0, "hi": 0.04},
            "verdict": "narrowed",
            "plateau": {"seed 0": {"reached": True}, "seed 1": {"reached": False}},
            "families": {"rare-only": {"lost": 0}, "other": {"lost": 5}},
            "lost_vs_kept": {
                "lost": {"pairs": 5, "base_pass1": 0.0812, "base_distinct": 1.2},
                "kept": {"pairs": 40, "base_pass1": 0.6, "base_distinct": 1.75},
            },
        },
        "es_minus_grpo_top_level": {"mean": 0.001, "lo": -0.01, "hi": 0.012, "level": 0.4, "reading": "inconclusive"},
        "es_minus_grpo_end": {"mean": 0.03, "lo": 0.01, "hi": 0.05, "pass1": {"mean": -0.1, "lo": -0.2, "hi": 0.0}},
        "distinct_correct": {
            "grpo_plateau_minus_base": {
                "mean": -0.5,
                "lo": -0.7,
                "hi": -0.3,
                "base": 2.0,
                "plateau": 1.5,
                "prompts": 9,
            },
            "es_minus_grpo_top_level": None,
        },
        "es_small_sigma": {
            "sigma": 0.002,
            "s_measured_median": None,
            "pass1_gain": {"mean": 0.0, "lo": -0.01, "hi": 0.01},
            "learned": False,
        },
    }
    assert render(record) == [
        "## The premise: does GRPO narrow here, and what does ES keep?",
        "",
        "Settings chosen on validation prompts; the endpoints below read the test prompts, "
        "registered before the run (R). "
        "Pass@32 and shares in points.",
        "",
        "- Positive control (2 seeds x 4 validation prompts x 8 samples, GRPO 3 steps): **narrowed**; "
        "Pass@32 plateau - base "
        "-5.00 [-8.00, -2.00], no-correct share +4.00 (no interval); plateau reached on 1 of 2 runs.",
        "- (a) GRPO at its last checkpoint - base: Pass@32 -3.00 [-5.00, -1.00], "
        "no-correct share +2.00 [+0.00, +4.00]: "
        "**narrowed** (plateau rule met on 1 of 2 runs); lost seed x prompt: rare-only 0, other 5. At the base the "
        "lost pairs were solved by 8.1% of samples (1.20 distinct correct solutions), the kept ones by 60.0% (1.75).",
        "- (b) ES - GRPO Pass@32 at the highest Pass@1 both reach (40.0 points): +0.10 [-1.00, +1.20] "
        "(**inconclusive**; "
        "margin 2 points).",
        "- (c) ES - GRPO Pass@32 at the end of equal budgets: +3.00 [+1.00, +5.00], where ES - GRPO Pass@1 is -10.00 "
        "[-20.00, +0.00].",
        "- (d) Distinct correct solutions: GRPO plateau - base -0.50 [-0.70, -0.30] (2.00 -> 1.50 per solved prompt, 9 "
        "prompts); ES - GRPO per prompt at (b)'s level not measured.",
        "- ES at sigma 0.002 (members' s not measured, Lemma 1's regime s <= 0.05): Pass@1 gain over the base +0.00 "
        "[-1.00, +1.00]: no gain detected.",
        "",
    ]
    without = {k: v for k, v in record.items() if k not in ("positive_control", "grpo_plateau_minus_base")} | {
        "reason": "why"
    }
    assert render(without)[-2:] == ["- why", ""]


def test_the_premise_section_reads_as_written_without_a_level_an_end_or_counts():
    """The other side of each optional part: (b) not testable (its reason, no level, no reading), no end difference,
    distinct counts without their base and plateau, a measured s and a learning small sigma; a 2.5-point margin."""
    record = {
        "selection_split": "validation",
        "test_split": "test",
        "registered": "R",
        "margin": 0.025,
        "grpo_plateau_minus_base": {
            "pass@32": {"mean": -0.03, "lo": -0.05, "hi": -0.01},
            "no_correct": {"mean": None, "reason": "no prompts"},
            "verdict": "narrowed",
            "plateau": {"seed 0": {"reached": True}},
            "families": {"other": {"lost": 1}},
        },
        "es_minus_grpo_top_level": {"reason": "nothing to compare"},
        "es_minus_grpo_end": None,
        "distinct_correct": {
            "grpo_plateau_minus_base": {"mean": None, "reason": "fewer than 2 prompts solved"},
            "es_minus_grpo_top_level": {"mean": 0.06, "lo": -0.07, "hi": 0.18},
        },
        "es_small_sigma": {
            "sigma": 0.002,
            "s_measured_median": 0.0091,
            "pass1_gain": {"mean": 0.167, "lo": 0.114, "hi": 0.219},
            "learned": True,
        },
    }
    assert render(record)[4:] == [
        "- (a) GRPO at its last checkpoint - base: Pass@32 -3.00 [-5.00, -1.00], no-correct share no prompts: "
        "**narrowed** (plateau rule met on 1 of 1 runs); lost seed x prompt: other 1.",
        "- (b) ES - GRPO Pass@32 at the highest Pass@1 both reach: nothing to compare.",
        "- (c) ES - GRPO Pass@32 at the end of equal budgets: not measured.",
        "- (d) Distinct correct solutions: GRPO plateau - base fewer than 2 prompts solved; ES - GRPO per prompt at "
        "(b)'s level +0.06 [-0.07, +0.18].",
        "- ES at sigma 0.002 (members' s 0.009, Lemma 1's regime s <= 0.05): Pass@1 gain over the base +16.70 "
        "[+11.40, +21.90]: learned.",
        "",
    ]
    with_reading = record | {
        "es_minus_grpo_top_level": {"mean": 0.001, "lo": -0.01, "hi": 0.012, "level": 0.4, "reading": "inconclusive"}
    }
    assert render(with_reading)[5].endswith("(40.0 points): +0.10 [-1.00, +1.20] (**inconclusive**; margin 2 points).")


def test_an_estimate_is_written_in_points_with_its_interval_or_why_it_has_none():
    assert _pm(None) == _pm({}) == "not measured"
    assert _pm({"mean": None, "reason": "too few points"}) == "too few points"
    assert _pm({"mean": None}) == "no interval"
    assert _pm({"mean": 0.0123, "lo": None, "hi": None}) == "+1.23 (no interval)"
    assert _pm({"mean": -0.0123, "lo": -0.03, "hi": 0.005}) == "-1.23 [-3.00, +0.50]"
    assert _pm({"mean": 0.5, "lo": 0.25, "hi": 0.75}, 1.0) == "+0.50 [+0.25, +0.75]"


def test_a_reading_with_too_few_measured_points_names_each_methods_points(runs):
    # each run measured only at its base and its end: ES's one segment spans more Pass@1 than the resolution
    run_list, _ = runs
    sparse = [Run(r.path, r.config, curve=[r.curve[0], r.curve[-1]]) for r in run_list if not r.config["es"].get("tag")]
    record = premise_record(Evidence(runs=sparse), None)
    reason = record["es_minus_grpo_top_level"]["reason"]
    assert reason.startswith("not testable here") and "per run: ES [" in reason and ", GRPO [" in reason
    assert record["distinct_correct"]["es_minus_grpo_top_level"] is None


def test_es_at_the_small_sigma_gains_from_its_base_not_its_second_point(runs):
    from escov.paper_checks.premise_record import small_sigma

    run_list, counts = runs
    small = [r for r in run_list if r.config["es"].get("tag")]
    # a second point far above the base: the gain is last - base, whatever lies between
    high = [
        Run(
            r.path,
            r.config,
            curve=[
                r.curve[0],
                curve(
                    np.full((1, PROMPTS), N),
                    [p["id"] for p in r.curve[0]["sampled"]["per_problem"]],
                    np.ones((1, PROMPTS)),
                )[0]
                | {"step": 1},
                *r.curve[2:],
            ],
        )
        for r in small
    ]
    got = small_sigma(Evidence(runs=high), None)
    want = np.mean([(counts[("es", True, s)][-1] - counts[("es", True, s)][0]) / N for s in SEEDS])
    assert got["pass1_gain"]["mean"] == pytest.approx(want, abs=1e-12)


def test_es_at_the_small_sigma_has_learned_only_when_its_whole_interval_lies_above_zero(runs):
    """Gains of +6, 0 and -1 correct of N on every prompt, seed by seed: a mean above zero whose 95% interval over
    three seeds (t on 2 df) reaches below it is no evidence of learning."""
    from escov.paper_checks.premise_record import small_sigma

    run_list, _ = runs
    small = [r for r in run_list if r.config["es"].get("tag")]

    def moved(r, d):
        first = r.curve[0]
        rows = [row | {"correct": row["correct"] + d} for row in first["sampled"]["per_problem"]]
        pass1 = {"1": float(np.mean([row["correct"] for row in rows]) / N)}
        return Run(
            r.path,
            r.config,
            curve=[
                first,
                first | {"step": STEPS, "sampled": first["sampled"] | {"per_problem": rows, "pass_at_k": pass1}},
            ],
        )

    got = small_sigma(Evidence(runs=[moved(r, d) for r, d in zip(small, (6, 0, -1))]), None)
    gain = got["pass1_gain"]
    assert gain["mean"] == pytest.approx(5 / 3 / N, abs=1e-12) and gain["lo"] < 0 < gain["mean"]
    assert got["learned"] is False


def test_the_endpoints_at_grpos_plateau_and_the_registered_family_in_the_record(runs):
    """(e) from the counts by hand; (b'), (d'), (f) and (c)'s residual present; the family's p-values are those of
    the record's own intervals (theory.decisions.t_p_value), and the rest is listed as exploratory."""
    from escov.theory.decisions import t_p_value

    run_list, counts = runs
    record = premise_record(Evidence(runs=run_list), None)
    e0 = np.stack([counts[("es", False, s)][0] for s in SEEDS])
    e1 = np.stack([counts[("es", False, s)][-1] for s in SEEDS])
    e = record["es_minus_base_end"]
    by_hand = np.mean([pass32(y) - pass32(x) for x, y in zip(e0.ravel(), e1.ravel())])
    assert e["pass@32"]["mean"] == pytest.approx(by_hand, abs=1e-12) and e["steps"] == [STEPS]
    assert e["pass1"] == pytest.approx(e1.mean() / N, abs=1e-12)
    assert e["verdict"] == ("widened" if e["pass@32"]["lo"] > 0 else "no_change_detected")  # ES loses no prompt
    b = record["es_at_grpo_plateau"]
    # L*: the highest Pass@1 every run reaches (not (b)'s top interior level, which lies below it)
    top = min(counts[key][:, :].mean(axis=1).max() / N for key in counts if key[0] in ("es", "grpo") and not key[1])
    assert b["level"] == pytest.approx(top, abs=1e-12) == record["distinct_at_grpo_plateau"]["level"]
    assert b["level"] >= record["es_minus_grpo_top_level"]["level"]
    f = record["es_plateau_outcome"]
    grpo_top = np.mean([counts[("grpo", False, s)][-1].mean() / N for s in SEEDS])
    assert f["grpo_plateau_pass1"] == pytest.approx(grpo_top, abs=1e-12) and f["reached"]  # ES ends above GRPO
    reg = record["registered"]
    a = record["grpo_plateau_minus_base"]["pass@32"]
    assert reg["holm"]["grpo_plateau_minus_base"]["p"] == pytest.approx(
        min(1.0, 2 * t_p_value(a["mean"], a["se"], a["df"], -1)), rel=1e-12
    )
    assert set(reg["holm"]) | set(reg["not_readable"]) == set(reg["family"]) and reg["commit"] is None
    assert record["exploratory"] == [
        "es_minus_grpo_top_level",
        "es_minus_grpo_end",
        "es_minus_grpo_at_es_end_level",
        "distinct_correct",
        "es_small_sigma",
        "es_null",  # ES's held-out change and drift beside its null arm (here: no null runs, ES and GRPO alone)
    ]
    text = "\n".join(render(record))
    assert "- (b') ES - GRPO Pass@32 at the highest Pass@1 every run reaches (Pass@1 " in text and "- (e) ES at" in text
    assert "Registered family, Holm at family-wise 0.05" in text


PLATEAU_RECORD = {
    "es_at_grpo_plateau": {
        "grpo_plateau_pass1": 0.65,
        "es_reaches_grpo_plateau": False,
        "level": 0.487,
        "grpo_fall": {"mean": 0.004, "lo": -0.01, "hi": 0.018},
        "min_fall": 0.02,
        "margin": 0.002,
        "difference": {"mean": -0.0024, "lo": -0.0125, "hi": 0.0077},
        "reading": "not_readable",
    },
    "distinct_at_grpo_plateau": {"mean": 0.06, "lo": -0.07, "hi": 0.18, "level": 0.487},
    "es_minus_base_end": {
        "pass@32": {"mean": -0.01, "lo": -0.03, "hi": 0.01},
        "no_correct": {"mean": 0.0, "lo": -0.01, "hi": 0.01},
        "verdict": "no_change_detected",
        "pass1": 0.551,
        "steps": [450],
    },
    "es_plateau_outcome": {
        "grpo_plateau_pass1": 0.65,
        "reached": False,
        "finding": "es_never_reaches_grpo_plateau_by_cap",
        "cap": [450],
        "es_last_pass1": {"mean": 0.551, "lo": 0.53, "hi": 0.572},
        "still_rising": 2,
        "runs": 8,
        "pass32_minus_base": {"mean": -0.01, "lo": -0.03, "hi": 0.01},
        "grpo_runs_crossing": 7,
        "grpo_runs": 8,
    },
    "es_minus_grpo_at_es_end_level": {
        "mean": 0.012,
        "lo": -0.004,
        "hi": 0.028,
        "levels": {"seed 0": 0.54, "seed 1": 0.562},
        "dropped_seeds": [3],
    },
    "registered": {
        "where": "R",
        "commit": "0123456789abcdef",
        "alpha": 0.05,
        "holm": {
            "grpo_plateau_minus_base": {"p": 0.001, "p_adjusted": 0.003, "rejects": True},
            "distinct_at_grpo_plateau": {"p": 0.36, "p_adjusted": 0.72, "rejects": False},
            "es_minus_base_end": {"p": 0.33, "p_adjusted": 0.72, "rejects": False},
        },
        "not_readable": ["es_at_grpo_plateau"],
    },
    "exploratory": ["es_minus_grpo_top_level", "es_minus_grpo_end", "es_minus_grpo_at_es_end_level"],
}


def test_the_endpoints_at_grpos_plateau_read_as_written_each_at_its_pass1_with_its_caveat():
    from escov.paper_checks.premise_record import render_at_plateau

    assert render_at_plateau({"registered": "R"}) == []  # a record published before these endpoints
    assert render_at_plateau(PLATEAU_RECORD) == [
        "- (b') ES - GRPO Pass@32 at the highest Pass@1 every run reaches (Pass@1 48.7), "
        "GRPO's plateau 65.0 (not reached by ES): GRPO's fall there (base - GRPO) +0.40 [-1.00, +1.80], under the "
        "2-point validity condition: **not readable** (GRPO has not narrowed where both methods are; ES - GRPO there "
        "-0.24 [-1.25, +0.77] decides nothing).",
        "- (d') Distinct correct solutions, ES - GRPO per prompt (Pass@1 48.7): +0.06 [-0.07, +0.18].",
        "- (e) ES at its last checkpoint (step 450, Pass@1 55.1) - base: Pass@32 -1.00 [-3.00, +1.00], no-correct "
        "share +0.00 [-1.00, +1.00]: **no_change_detected**.",
        "- (f) **ES never reaches GRPO's plateau Pass@1 65.0 by the cap** (step 450): its last Pass@1 55.10 [53.00, "
        "57.20], still rising on 2 of 8 runs; Pass@32 there - base -1.00 [-3.00, +1.00]; GRPO's own runs cross that "
        "level on 7 of 8.",
        "- (c') exploratory residual, ES - GRPO Pass@32 with GRPO read at each ES seed's final Pass@1 (54.0-56.2): "
        "+1.20 [-0.40, +2.80]; 1 seeds dropped (GRPO never crosses).",
        "- Registered family (runs at commit 0123456789ab), Holm at family-wise 0.05 over its readable members: (a) p "
        "0.001, adjusted 0.003: rejected; (d') p 0.36, adjusted 0.72: not rejected; (e) p 0.33, adjusted 0.72: not "
        "rejected; not readable: (b').",
        "- Exploratory (no adjustment): (b), (c), (c').",
    ]
    readable = PLATEAU_RECORD | {
        "es_at_grpo_plateau": PLATEAU_RECORD["es_at_grpo_plateau"]
        | {
            "es_reaches_grpo_plateau": True,
            "level": 0.62,
            "grpo_fall": {"mean": 0.05, "lo": 0.02, "hi": 0.08},
            "margin": 0.025,
            "difference": {"mean": 0.031, "lo": 0.012, "hi": 0.05},
            "reading": "es_above",
        },
        "es_plateau_outcome": {
            "grpo_plateau_pass1": 0.65,
            "reached": True,
            "crossing_step": {"seed 0": 212.4, "seed 1": 301.0},
            "cap": [450],
        },
    }
    lines = render_at_plateau(readable)
    assert lines[0] == (
        "- (b') ES - GRPO Pass@32 at the highest Pass@1 every run reaches (Pass@1 62.0), "
        "GRPO's plateau 65.0 (reached by ES): GRPO's fall there (base - GRPO) +5.00 [+2.00, +8.00]; ES - GRPO +3.10 "
        "[+1.20, +5.00]: **es_above** (registered test > 0; margin half GRPO's fall, 2.50 points)."
    )
    assert lines[3] == (
        "- (f) ES reaches GRPO's plateau Pass@1 65.0 on every seed (first crossing at steps 212, 301; cap 450)."
    )


def test_the_nulls_test_prompt_endpoints_are_its_last_point_against_its_base_and_against_es(runs):
    """The null (es[null]) on two seeds: every prompt's count falls by 10 from the base; ES on those seeds rose by
    10 + seed. Hand-computed: the null's Pass@1 change is -10 / N on every (seed, prompt); ES - null at both last
    points is (10 + seed + 10) / N per prompt, mean (20 + 20.5) / N over seeds 0 and 1; Pass@32 from the counts."""
    from escov.paper_checks.premise_record import null_on_test, render_null_on_test

    run_list, counts = runs
    ids = [p["id"] for p in run_list[0].curve[0]["sampled"]["per_problem"]]
    base = counts[("es", False, 0)][0]
    nulls = []
    for seed in (0, 1):
        c = path(base, np.maximum(base - 10, 0))
        nulls.append(
            Run(Path(f"runs/es-null-{seed}"), config("es", seed, null_control=True), curve=curve(c, ids, c > 0))
        )
    ev = Evidence(runs=run_list + nulls)
    es = [r for r in run_list if r.config["algo"] == "es" and not r.config["es"].get("tag")]
    from escov.paper_checks.real_checks import curves_of

    got = null_on_test(ev, curves_of(es))["test"]
    end = np.maximum(base - 10, 0)
    n = got["null_minus_base_end"]
    assert n["pass1"]["mean"] == pytest.approx(float((end - base).mean() / N)) and n["runs"] == 2
    assert n["pass@32"]["mean"] == pytest.approx(float(np.mean([pass32(e) - pass32(b) for e, b in zip(end, base)])))
    assert n["pass@32"]["hi"] < 0 and n["verdict"] == "narrowed"  # every prompt loses 10 of its correct samples
    d = got["es_minus_null_end"]
    es_end = {s: counts[("es", False, s)][-1] for s in (0, 1)}
    assert d["pass1"]["mean"] == pytest.approx(float(np.mean([(es_end[s] - end).mean() / N for s in (0, 1)])))
    assert d["mean"] == pytest.approx(
        float(np.mean([[pass32(a) - pass32(b) for a, b in zip(es_end[s], end)] for s in (0, 1)]))
    )
    line = render_null_on_test({"es_null": {"test": got}})[0]
    assert line.startswith("- The null on the test prompts (2 runs, exploratory): its last checkpoint - base, Pass@32 ")
    assert f"Pass@1 {_pm(d['pass1'])}." in line
    assert null_on_test(Evidence(runs=run_list + nulls[:1]), curves_of(es)) == {
        "test": {"reason": "fewer than 2 es[null] runs with curves"}
    }
    assert render_null_on_test({}) == []
