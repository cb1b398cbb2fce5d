"""The matched-Pass@1 comparison against a known truth.

Known frontier (known_frontier.py): per-prompt success rates from a Beta family with a never-solved
share, where Pass@k at every Pass@1 is a closed form. Runs are laid out as the first answer run was
(checkpoints every 5 of 40 steps: GRPO's first measured point past the top of the compared range)
or as the answer budget plans them now (a checkpoint after each of the first 10 steps, llm curve
refining wide Pass@1 jumps). Checked, by replication:

- both methods on one frontier: the old reading (no support rule) on the old layout finds ES above
  (the chord under a concave frontier) and its bias control shows the same shift; with the support
  rule that layout is not testable; on the planned layout no 'holds' and no part above zero beyond
  the nominal 2.5%;
- a real gap of about 3 points between two frontiers: found in most replications, its interval
  holding the closed-form truth;
- synthetic curves whose direction is known (spreading success over prompts against concentrating
  it), both ways; runs whose Pass@1 ranges do not overlap are not compared.
"""

from typing import TYPE_CHECKING

import numpy as np
import pytest

from escov.paper_checks.design import plan, seeds_by_prompts
from escov.paper_checks.matched import MIN_RANGE, curve_of, matched_difference, matched_seed_values, paired, thinned
from escov.theory.claims import BY_ID
from escov.theory.decisions import FAILS, HOLDS, INCONCLUSIVE, combine, directional
from escov.theory.matched import RESOLUTION
from tests.paper_checks import known_frontier as kf

if TYPE_CHECKING:
    from escov.paper_checks.matched import Curve

TEST = BY_ID["matched_passk_above_grpo"].test
KS = (16, 32)
_replication = kf.replication


def _compare(es, grpo, resolution=RESOLUTION):
    return {k: matched_difference(es, grpo, f"pass@{k}", resolution=resolution, names=("ES", "GRPO")) for k in KS}


def _truth(info: dict, k: int, es_concentration: float) -> float:
    """The closed-form ES - GRPO Pass@k, mean over the levels compared."""
    levels = np.array(info["compared_levels"])
    return float(np.mean(kf.exact_pass_at(k, levels, es_concentration) - kf.exact_pass_at(k, levels)))


def test_closed_form_matches_enumeration():
    """The frontier's Pass@k against the mean of 1 - (1 - p)^k over a fine quantile grid of the family."""
    u = (np.arange(200_000) + 0.5) / 200_000
    for level in (0.15, 0.3):
        p = kf.rates(u, level)
        assert p.mean() == pytest.approx(level, abs=1e-4)
        for k in (1, 16, 32):
            assert np.mean(1 - (1 - p) ** k) == pytest.approx(kf.exact_pass_at(k, level), abs=1e-3)


def test_old_layout_reads_a_difference_that_is_not_there_and_the_support_rule_refuses_it():
    """One frontier for both: the old reading (no support rule, GRPO read along a chord across the whole
    range) finds ES above at Pass@16 and Pass@32, its bias control shows the same shift; with the
    support rule the comparison is not testable, naming each method's measured points in the range."""
    old, bias, reverse = {k: [] for k in KS}, {k: [] for k in KS}, []
    for rep in range(6):
        es, grpo = _replication(rep, planned=False)
        d, info = matched_difference(grpo, es, "pass@16", resolution=1.0, names=("GRPO", "ES"))  # the dense one second
        assert info["bias"]["thinned"] == "ES" and info["bias"]["to_layout_of"] == "GRPO"
        reverse.append((d.mean, info["bias"]["estimate"]["mean"]))
        for k, (d, info) in _compare(es, grpo, resolution=1.0).items():
            old[k].append(d.mean)
            bias[k].append(info["bias"]["estimate"]["mean"])
            assert info["bias"]["thinned"] == "ES" and info["bias"]["to_layout_of"] == "GRPO"
        for k, (d, info) in _compare(es, grpo).items():
            assert d is None and info["not_testable"], info
            assert "not testable here" in info["reason"] and f"GRPO {info['points_in_range_b']}" in info["reason"]
            assert max(info["points_in_range_b"]) <= 2 < min(info["points_in_range_a"])
    for k in KS:
        assert np.mean(old[k]) > 0.015, (k, old[k])  # a bias of about 2-3 points, no real difference
        assert abs(np.mean(bias[k]) - np.mean(old[k])) < 0.01, (k, bias[k], old[k])
    estimate, shift = np.mean(reverse, axis=0)  # GRPO - ES: the bias control is signed as a shift of GRPO - ES
    assert estimate < -0.015 and abs(shift - estimate) < 0.01, reverse


def test_planned_layout_one_frontier_no_false_holds():
    """One frontier for both, GRPO measured more sparsely than ES in the range: over 24 replications
    no 'holds', and each part's interval above zero at no more than the nominal 2.5% rate (at most 5 of
    48 parts: P(>= 6) < 0.3% at 2.5%); the bias control is under half a point on average."""
    holds, above, compared, bias = 0, 0, 0, []
    for rep in range(24):
        es, grpo = _replication(100 + rep, planned=True)
        result = _compare(es, grpo)
        if any(d is None for d, _ in result.values()):
            continue
        compared += 1
        parts = [TEST.decide(d.lo, d.hi) for d, _ in result.values()]
        holds += combine(parts) == HOLDS
        above += sum(d.lo > 0 for d, _ in result.values())
        for d, info in result.values():
            bias.append(info["bias"]["estimate"]["mean"])
            assert np.mean(info["points_in_range_b"]) < np.mean(info["points_in_range_a"])  # GRPO the sparser
    assert compared >= 20
    assert holds == 0 and above <= 5
    assert abs(np.mean(bias)) < 0.005 and np.max(np.abs(bias)) < 0.02


def test_planned_layout_finds_a_real_three_point_gap():
    """ES on a more concentrated frontier (about +3 points of Pass@16 and Pass@32 in the range): the
    claim holds in most of 16 replications (a replication that is not testable counts as a miss) and
    the intervals hold the closed-form truth."""
    c_es = kf.GAP_CONCENTRATION
    holds, covered, truths = 0, 0, []
    for rep in range(16):
        es, grpo = _replication(200 + rep, planned=True, es_concentration=c_es)
        result = _compare(es, grpo)
        if any(d is None for d, _ in result.values()):  # not testable here: counts as not found
            continue
        holds += combine([TEST.decide(d.lo, d.hi) for d, _ in result.values()]) == HOLDS
        for k, (d, info) in result.items():
            truths.append(_truth(info, k, c_es))
            covered += d.lo <= truths[-1] <= d.hi
    assert 0.025 < np.mean(truths) < 0.035 and min(truths) > 0.015
    assert holds >= 9, holds  # more than half (about 60% over 40 replications)
    assert covered >= 0.85 * len(truths)


def test_bias_control_is_zero_on_identical_layouts_and_thins_to_the_other_layout():
    rng = np.random.default_rng(5)
    u = rng.uniform(size=kf.PROMPTS)
    run = kf.Run(kf.slow(), u, rng)
    dense = curve_of(run.curve(range(0, 41, 2)), 0)
    sparse = curve_of(run.curve(range(0, 41, 10)), 0)
    thin = thinned(dense, sparse.pass1)
    assert thin.steps.tolist() == [0, 10, 20, 30, 40]  # the dense curve kept where the sparse one was measured
    d, info = matched_difference([dense], [dense], "pass@16")
    assert d.mean == 0 and info["bias"]["estimate"]["mean"] == 0.0


def _points(p_by_step: np.ndarray, rng) -> list[dict]:
    """curve.json points from per-step, per-prompt success probabilities (binomial counts of 32)."""
    points = []
    for t, p in enumerate(p_by_step):
        counts = rng.binomial(kf.N_SAMPLES, np.clip(p, 0, 1))
        points.append(
            {
                "step": 10 * t,
                "sampled": {
                    "n": kf.N_SAMPLES,
                    "pass_at_k": {"1": float(counts.mean() / kf.N_SAMPLES)},
                    "mean_token_entropy": float(1.0 + 0.1 * t),
                    "per_problem": [{"id": f"p{i}", "correct": int(c)} for i, c in enumerate(counts)],
                },
                "greedy": {"pass_at_k": {"1": float((p > 0.5).mean())}},
            }
        )
    return points


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


DENSE_STEPS = 24


def _spreading(base_logit, seed_shift, rng):
    """Every prompt's logit rises by the same amount: success spread over prompts."""
    shifts = np.linspace(0, 1.5, DENSE_STEPS) + seed_shift
    return _points(_sigmoid(base_logit[None, :] + shifts[:, None]), rng)


def _sharpening(base_logit, seed_shift, rng):
    """Logits scaled away from a pivot: easy prompts get easier, hard ones harder (mass concentrates)."""
    scale = np.linspace(1, 3.0, DENSE_STEPS) * (1 + seed_shift)
    return _points(_sigmoid((base_logit[None, :] + 2.0) * scale[:, None] - 2.0), rng)


@pytest.fixture
def base_logit():
    return np.random.default_rng(7).normal(-0.5, 1.5, kf.PROMPTS)


def _curves(make_a, make_b, rng, base_logit, seeds=4):
    a = [curve_of(make_a(base_logit, rng.normal(0, 0.1), rng), s) for s in range(seeds)]
    b = [curve_of(make_b(base_logit, rng.normal(0, 0.1), rng), s) for s in range(seeds)]
    return a, b


def test_spreading_method_has_higher_pass32_at_matched_pass1_both_ways(base_logit):
    rng = np.random.default_rng(0)
    spread, sharp = _curves(_spreading, _sharpening, rng, base_logit)
    d, info = matched_difference(spread, sharp, "pass@32")
    assert info["pairs"] == 4 and d.seeds == 4 and d.prompts == kf.PROMPTS and info["compared_levels"]
    assert directional(d.lo, d.hi, +1) == HOLDS
    reverse, _ = matched_difference(sharp, spread, "pass@32")
    assert directional(reverse.lo, reverse.hi, +1) == FAILS
    assert reverse.mean == pytest.approx(-d.mean)
    no_correct, _ = matched_difference(spread, sharp, "no_correct")
    assert directional(no_correct.lo, no_correct.hi, -1) == HOLDS
    entropy, _ = matched_seed_values(spread, sharp, "entropy")
    assert len(entropy) == 4


def test_the_top_reading_is_the_highest_supported_level_alone_read_at_each_runs_first_crossing(base_logit):
    """at="top": one level, the highest the levels reading supports; its value per (seed, prompt) spelled here
    independently (linear interpolation of the per-prompt Pass@32 between the two points around the first
    crossing of the level)."""
    from escov.theory.metrics import pass_at_k_counts

    rng = np.random.default_rng(0)
    spread, sharp = _curves(_spreading, _sharpening, rng, base_logit)
    _, every = matched_difference(spread, sharp, "pass@32")
    top, info = matched_difference(spread, sharp, "pass@32", at="top")
    level = max(every["compared_levels"])
    assert info["compared_levels"] == [level] and len(every["compared_levels"]) > 1

    def read(curve):
        i = int(np.argmax(curve.pass1 >= level))
        f = (level - curve.pass1[i - 1]) / (curve.pass1[i] - curve.pass1[i - 1])
        rows = [pass_at_k_counts(curve.n, curve.counts[j], 32) for j in (i - 1, i)]
        return rows[0] + f * (rows[1] - rows[0])

    values = np.array([read(a) - read(b) for a, b in zip(spread, sharp)])  # [seed, prompt]
    assert top.mean == pytest.approx(values.mean())
    # the design's plan is read from the same (seed, prompt) values (paper_checks/design.py)
    planned = plan(values)
    got, want = info["plan"]["components"], planned["components"]
    assert got.keys() == want.keys() and got.pop("shares") == pytest.approx(want.pop("shares"))
    assert got == pytest.approx(want)
    assert info["plan"]["seeds_needed"] == planned["seeds_needed"] and info["plan"]["target"] == planned["target"]
    with pytest.raises(ValueError, match="at must be 'levels' or 'top'"):
        matched_difference(spread, sharp, "pass@32", at="highest")


def test_no_common_range_is_not_compared(base_logit):
    rng = np.random.default_rng(1)
    flat = lambda b, s, r: _points(np.repeat(_sigmoid(b)[None, :], DENSE_STEPS, 0), r)
    a, b = _curves(flat, _spreading, rng, base_logit)
    d, info = matched_difference(a, b, "pass@32")
    assert d is None and "nothing to compare" in info["reason"] and not info["not_testable"]
    assert info["range"][1] - info["range"][0] < MIN_RANGE
    assert info["moved_b"] > 0.2 and abs(info["moved_a"]) < 0.05
    assert matched_difference(a, [], "pass@32")[1]["pairs"] == 0 and paired(a, []) == []


def test_one_seed_pair_gives_no_decision(base_logit):
    rng = np.random.default_rng(2)
    a, b = _curves(_spreading, _sharpening, rng, base_logit)
    d, _ = matched_difference(a[:1], b[:1], "pass@32")
    assert d.seeds == 1 and not np.isfinite(d.hi)
    assert TEST.decide(d.lo, d.hi) == INCONCLUSIVE
    assert seeds_by_prompts(np.zeros((1, 3)) + np.arange(3), kf.N_SAMPLES).seeds == 1


# ----------------------------------------------------------------------------- a curve's parts, by hand


def _curve(pass1, seed=0, n=4) -> "Curve":
    from escov.paper_checks.matched import Curve

    t = len(pass1)
    counts = np.array([[0, 1], [4, 0], [2, 2], [1, 3], [0, 0], [3, 1], [4, 4]][:t])
    return Curve(
        seed=seed,
        steps=np.arange(t) * 10,
        pass1=np.asarray(pass1, dtype=float),
        counts=counts,
        n=n,
        entropy=np.arange(t) * 0.5,
        greedy=np.arange(t) * 0.25,
        ids=("p0", "p1"),
    )


def test_a_curves_metrics_subsets_and_thinning_by_hand():
    c = _curve([0.2, 0.1, 0.3, 0.5, 0.9, 0.6, 0.7])
    assert c.metric("no_correct").tolist() == [[1, 0], [0, 1], [0, 0], [0, 0], [1, 1], [0, 0], [0, 0]]
    assert c.metric("pass@1")[1].tolist() == [1.0, 0.0] and c.metric("pass@4")[0].tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="metric must be pass@K, no_correct, distinct or entropy"):
        c.metric("pass_at_1")
    with pytest.raises(ValueError, match="seed 0: a curve point lacks per-prompt mean_token_entropy"):
        c.metric("entropy")
    with pytest.raises(ValueError, match="seed 0: a curve point lacks per-prompt distinct_correct_answers"):
        c.metric("distinct")
    # distinct solutions count only where a sample is correct (a stale count on an unsolved prompt reads 0)
    from dataclasses import replace

    d = replace(c, distinct=np.full((7, 2), 2.0)).metric("distinct")
    assert d.tolist() == [[0, 2], [2, 0], [2, 2], [2, 2], [0, 0], [2, 2], [2, 2]]
    assert replace(c, distinct=np.arange(14.0).reshape(7, 2)).subset([4, 1]).distinct.tolist() == [[2, 3], [8, 9]]
    per_prompt = replace(c, prompt_entropy=np.arange(14.0).reshape(7, 2))
    assert per_prompt.metric("entropy").tolist() == np.arange(14.0).reshape(7, 2).tolist()
    assert per_prompt.subset([4, 1]).prompt_entropy.tolist() == [[2, 3], [8, 9]]
    sub = c.subset([4, 1, 1])
    assert (sub.steps.tolist(), sub.pass1.tolist(), sub.entropy.tolist(), sub.greedy.tolist()) == (
        [10, 40],
        [0.1, 0.9],
        [0.5, 2.0],
        [0.25, 1.0],
    )
    assert sub.counts.tolist() == [[4, 0], [0, 0]]
    # first (0), last (6), lowest (1), highest (4) and the nearest to 0.31 (2)
    assert thinned(c, [0.31]).steps.tolist() == [0, 10, 20, 40, 60]


def test_the_bias_control_thins_the_denser_layout_and_names_both_sides():
    from escov.paper_checks.matched import _bias

    dense = _curve([0.10, 0.13, 0.16, 0.19, 0.22, 0.25, 0.28])  # points 3 pts apart: every level supported
    sparse = _curve([0.10, 0.15, 0.20, 0.25, 0.28])
    levels = np.array([0.15, 0.2, 0.25])
    assert _bias([(dense, dense)], lambda c: c.entropy, levels, 0.1, 0.28)[0] == "a"  # a tie: a is thinned
    assert _bias([(sparse, dense)], lambda c: c.entropy, levels, 0.1, 0.28)[0] == "b"
    values, info = matched_seed_values([dense], [dense], "entropy", names=("es", "grpo"))
    assert values == [0.0] and info["bias"] == {"thinned": "es", "to_layout_of": "grpo", "per_seed": [0.0]}
    values, info = matched_seed_values([sparse], [dense], "entropy", names=("es", "grpo"))
    assert (info["bias"]["thinned"], info["bias"]["to_layout_of"], len(info["bias"]["per_seed"])) == ("grpo", "es", 1)


def test_runs_pair_by_seed_on_the_prompts_of_the_first_run_of_a():
    from dataclasses import replace

    a = [replace(_curve([0.1, 0.2], seed=s), ids=ids) for s, ids in ((0, ("p0", "p1")), (1, ("p0", "p1")), (2, ("q",)))]
    b = [
        replace(_curve([0.1, 0.2], seed=s), ids=ids)
        for s, ids in ((0, ("q",)), (1, ("p0", "p1")), (2, ("q",)), (3, ("p0", "p1")))
    ]
    assert [(ca.seed, cb.seed) for ca, cb in paired(a, b)] == [(1, 1)]


def test_the_layout_records_each_methods_movement_and_points_in_range_by_hand():
    from escov.paper_checks.matched import _layout

    ca = _curve([0.13, 0.10, 0.16, 0.19, 0.22, 0.25, 0.28])  # moved: highest - first = 0.15 (not - lowest)
    cb = _curve([0.15, 0.12, 0.20, 0.25, 0.30])  # moved 0.15; its points in a's range [0.12, 0.28]: 4
    info = _layout([(ca, cb)], 0.06)
    assert info["range"] == pytest.approx([0.12, 0.28]) and info["pairs"] == 1 and info["resolution"] == 0.06
    assert info["moved_a"] == pytest.approx(0.15) and info["moved_b"] == pytest.approx(0.15)
    assert info["points_in_range_a"] == [6] and info["points_in_range_b"] == [4]
    assert set(info) >= {"levels", "supported", "compared_levels"} and len(info["levels"]) == len(info["supported"])
    assert info["compared_levels"] == [lv for lv, ok in zip(info["levels"], info["supported"]) if ok]


def test_a_curve_needs_two_points_on_the_same_prompts():
    def point(step, ids=("p0", "p1"), n=4):
        per_problem = [{"id": i, "correct": 1} for i in ids]
        sampled = {"pass_at_k": {"1": 0.25}, "n": n, "mean_token_entropy": 0.5, "per_problem": per_problem}
        return {"step": step, "sampled": sampled, "greedy": {"pass_at_k": {"1": 0.5}}}

    assert curve_of([], 0) is None and curve_of([point(0)], 0) is None
    c = curve_of([point(0), point(10)], 3)
    assert (c.ids, c.seed, c.n, c.steps.tolist(), c.counts.tolist()) == (("p0", "p1"), 3, 4, [0, 10], [[1, 1], [1, 1]])
    assert curve_of([point(0), point(10, ids=("p0", "p2"))], 3) is None


def test_a_reading_refused_for_too_few_points_names_each_methods_points():
    coarse = _curve([0.1, 0.2, 0.3, 0.4, 0.5])  # points 10 pts apart: no level is within 6 pts of a point on both sides
    values, info = matched_seed_values([coarse], [coarse], "entropy", names=("es", "grpo"))
    assert values is None and info["not_testable"] is True
    assert info["reason"].endswith("measured points in the range per run: es [5], grpo [5]")


def test_why_nothing_is_compared_is_said_with_the_figures_at_each_edge():
    from escov.paper_checks.matched import _not_compared

    names = ("es", "grpo")
    narrow = {"range": [0.5, 0.5195]}  # 1.95 pts (1.9499...: printed 1.9)
    assert _not_compared(narrow, names) == (
        "the Pass@1 range every run reaches is 1.9 pts wide (under 2): nothing to compare at matched Pass@1"
    )
    assert _not_compared({"range": [0.3, 0.25]}, names).startswith("the Pass@1 range every run reaches is 0.0 pts wide")
    edge = {"range": [0.0, MIN_RANGE], "compared_levels": [0.01]}  # exactly the smallest range compared
    assert _not_compared(edge, names) is None
    sparse = {
        "range": [0.25, 0.5],
        "compared_levels": [],
        "resolution": 0.0625,
        "points_in_range_a": [2, 3],
        "points_in_range_b": [4, 1],
    }
    assert _not_compared(sparse, names) == (
        "not testable here: too few measured points in the range 25.0-50.0 pts (no level has measured points within "
        "6.25 pts on both sides in every run); measured points in the range per run: es [2, 3], grpo [4, 1]"
    )
    _, info = matched_seed_values([_curve([0.1, 0.2])], [_curve([0.1, 0.2], seed=1)], "entropy")
    assert info == {"pairs": 0, "reason": "no runs of both methods on the same seeds and prompts"}


def test_a_matched_difference_reads_its_samples_from_a_and_its_levels_by_level():
    from dataclasses import replace

    a = _curve([0.10, 0.13, 0.16, 0.19, 0.22, 0.25, 0.28])
    b = replace(a, n=8, counts=a.counts * 2)  # the same runs, twice the samples per prompt
    d, info = matched_difference([a], [b], "no_correct")
    assert d.samples == 4 and info["bias"]["estimate"]["design"].endswith("x 4 samples")
    levels = info["compared_levels"]
    assert len(levels) > 1 and len(info["per_level_mean"]) == len(levels) == len(info["bias"]["per_level_mean"])
    assert info["per_level_mean"] == [0.0] * len(levels) and info["bias"]["per_level_mean"] == [0.0] * len(levels)


def test_a_curve_reads_each_points_distinct_correct_counts_as_floats_or_none_when_one_is_missing():
    """curve.json's per-prompt distinct_correct_answers, as written (integers here), become the curve's (points x
    prompts) float array, which its "distinct" metric reads; a curve any of whose rows lacks the count has none."""

    def point(step, correct, distinct):
        rows = [
            {"id": f"p{i}", "correct": c} | ({} if d is None else {"distinct_correct_answers": d})
            for i, (c, d) in enumerate(zip(correct, distinct))
        ]
        return {
            "step": step,
            "sampled": {"n": 8, "pass_at_k": {"1": sum(correct) / 16}, "mean_token_entropy": 1.0, "per_problem": rows},
            "greedy": {"pass_at_k": {"1": 0.0}},
        }

    c = curve_of([point(0, [1, 0], [1, 0]), point(5, [4, 2], [3, 2])], 0)
    assert c.distinct.dtype == np.float64 and c.distinct.tolist() == [[1.0, 0.0], [3.0, 2.0]]
    assert c.metric("distinct").tolist() == [[1.0, 0.0], [3.0, 2.0]]
    assert curve_of([point(0, [1, 0], [1, 0]), point(5, [4, 2], [3, None])], 0).distinct is None


def test_a_curve_reads_each_prompts_entropy_or_none_when_a_point_lacks_it():
    """curve.json's per-prompt mean_token_entropy (llm/evaluate.py) becomes the curve's (points x prompts) array, its
    "entropy" metric; a curve any of whose rows lacks it (measured before it was recorded) has none."""

    def point(step, entropy):
        rows = [
            {"id": f"p{i}", "correct": 1} | ({} if h is None else {"mean_token_entropy": h})
            for i, h in enumerate(entropy)
        ]
        return {
            "step": step,
            "sampled": {"n": 8, "pass_at_k": {"1": 0.125}, "mean_token_entropy": 1.0, "per_problem": rows},
            "greedy": {"pass_at_k": {"1": 0.0}},
        }

    c = curve_of([point(0, [0.5, 1.5]), point(5, [0.25, 2.0])], 0)
    assert c.metric("entropy").tolist() == [[0.5, 1.5], [0.25, 2.0]] and c.entropy.tolist() == [1.0, 1.0]
    assert curve_of([point(0, [0.5, 1.5]), point(5, [0.25, None])], 0).prompt_entropy is None
