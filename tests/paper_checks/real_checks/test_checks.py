"""The real-run checks (paper_checks.real_checks) on runs written by hand in memory: each verdict's status, numbers,
texts and evidence against values computed here by hand (a t interval over seeds, Welch's interval through
scipy.stats.ttest_ind, Phi through math.erf), and each check's answer for want of data."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from escov.paper_checks.evidence import Evidence
from escov.paper_checks.real_checks import REAL_CHECKS, analytic_tiny_share
from escov.paper_checks.rundir import Run
from escov.paper_checks.verdict import FAILS, HOLDS, INCONCLUSIVE, MISSING
from escov.theory.claims import BY_ID

ES = {
    "population_size": 4,
    "sigma": 1e-3,
    "alpha": 1e-3,
    "member_temperature": 0.0,
    "zscore": True,
    "antithetic": False,
    "null_control": False,
    "inplace_bf16": False,
}


def run(
    name: str,
    algo: str = "es",
    seed: int = 0,
    *,
    es: dict | None = None,
    metrics=(),
    ev: dict | None = None,
    model: str = "base",
    **config,
) -> Run:
    """A run as paper_checks reads it, built in memory."""
    cfg = {"algo": algo, "model": model, "task": "countdown", "seed": seed, "es": ES | (es or {})} | config
    return Run(path=Path(name), config=cfg, metrics=list(metrics), eval=ev)


def t_interval(values) -> tuple[float, float, float]:
    """mean and its 95% Student t interval over seeds, by hand."""
    v = np.asarray(values, dtype=float)
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return v.mean(), v.mean() - half, v.mean() + half


def welch_interval(a, b) -> tuple[float, float, float]:
    """mean(a) - mean(b) and Welch's 95% interval (scipy's own implementation)."""
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    return float(np.mean(a) - np.mean(b)), float(ci.low), float(ci.high)


def phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def missing(v, claim_id: str, what: str, needs: list) -> None:
    """A verdict for want of data, as every check gives it."""
    assert (v.claim_id, v.status, v.ours) == (claim_id, MISSING, "n/a")
    assert v.note == f"needs {what}" and v.evidence == {"needs": needs}
    assert v.test == BY_ID[claim_id].describe_test() and v.interval is None


# ----------------------------------------------------------------------------- update_sparsity


def analysed(share: float) -> dict:
    return {"update_analysis": {"entries": 1000, "share_nonzero_le_tau": {"0.0015": share}}}


def norms(*values):
    return [{"step": i + 1, "es_update_norm": v} for i, v in enumerate(values)]


@pytest.mark.parametrize(
    "values, tau, alpha, n, steps",
    [
        ((1.0, 0.0, 2.0, 1.0, 3.0), 1.5e-3, 1e-3, 4, 4),  # a step that did not update is not counted
        ((0.5, 0.5), 1e-3, 2e-3, 8, 2),  # norms under 1 count
        ((1.0,), 3e-4, 1e-3, 16, 1),
    ],
)
def test_analytic_tiny_share_is_the_normal_share_within_tau(values, tau, alpha, n, steps):
    """T updating steps of N(0, alpha^2 / N) per entry: a N(0, alpha^2 T / N) entry, within tau with probability
    2 Phi(tau / (alpha sqrt(T / N))) - 1; rows without a norm are not steps."""
    r = run("es0", es={"alpha": alpha, "population_size": n}, metrics=[*norms(*values), {"step": 99}])
    assert analytic_tiny_share(r, tau) == pytest.approx(2 * phi(tau / (alpha * math.sqrt(steps / n))) - 1, rel=1e-9)


@pytest.mark.parametrize(
    "es, values",
    [
        ({}, (0.0, 0.0)),
        ({"alpha": 0.0}, (1.0,)),
        ({"alpha": None}, (1.0,)),
        ({"population_size": 0}, (1.0,)),
        ({"population_size": None}, (1.0,)),
    ],
)
def test_analytic_tiny_share_needs_an_update_an_alpha_and_a_population(es, values):
    assert analytic_tiny_share(run("es0", es=es, metrics=norms(*values)), 1.5e-3) is None
    assert analytic_tiny_share(Run(Path("bare"), {"algo": "es"}, metrics=norms(1.0)), 1.5e-3) is None


def sparsity_runs(es_shares: dict, null_shares: dict, es_steps: dict | None = None) -> list[Run]:
    es_steps = es_steps or {}
    runs = [
        run(f"es{s}", seed=s, ev=analysed(x), metrics=norms(*[1.0] * es_steps.get(s, 4), 0.0))
        for s, x in es_shares.items()
    ]
    runs += [
        run(f"null{s}", seed=s, es={"null_control": True}, ev=analysed(x), metrics=norms(1.0))
        for s, x in null_shares.items()
    ]
    return runs


def test_update_sparsity_pairs_es_and_its_null_by_seed():
    """ES's tiny-entry share minus its null's, per seed shared by both (seed 3 has no null run): 20, 25, 25 points,
    a t interval over the three; the note gives each side's mean over its runs, the analytic share and the paper's."""
    runs = sparsity_runs({0: 0.5, 1: 0.6, 2: 0.7, 3: 0.9}, {0: 0.3, 1: 0.35, 2: 0.45}, es_steps={3: 1})
    v = REAL_CHECKS["update_sparsity"](Evidence(runs=runs))
    mean, lo, hi = t_interval([20.0, 25.0, 25.0])
    assert (v.claim_id, v.status) == ("update_sparsity", HOLDS) and v.interval == pytest.approx((lo, hi))
    assert v.ours == f"ES - null share {mean:+.2f} pts [{lo:+.2f}, {hi:+.2f}]"
    assert v.evidence["es"] == pytest.approx({0: 50.0, 1: 60.0, 2: 70.0, 3: 90.0})
    assert v.evidence["null"] == pytest.approx({0: 30.0, 1: 35.0, 2: 45.0})
    # alpha 1e-3, N = 4: four updating steps give an entry sd of 1e-3, one step 5e-4
    analytic = [2 * phi(1.5) - 1] * 3 + [2 * phi(3.0) - 1]
    assert v.evidence["analytic"] == pytest.approx(analytic)
    assert v.evidence["paper_range"] == [77.61, 93.02]  # Table 4's middle share over its four models
    assert v.note == (
        f"share <= 1.5e-3: ES 67.5%, null 36.7%, analytic 2 Phi(tau / (alpha sqrt(T/N))) - 1 = "
        f"{100 * np.mean(analytic):.1f}%; paper 77.61%-93.02%; paired by seed"
    )
    assert v.design == "3 seeds" and v.test == "directional: difference > 0"
    assert v.power.startswith("ES - null share: detectable at 80% power: ") and v.power.endswith(
        " pts; paper: not reported against a null"
    )
    assert v.evidence["ES - null share"]["mean"] == pytest.approx(mean)


def test_update_sparsity_fails_when_the_null_has_more_tiny_entries_and_omits_an_analytic_share_it_cannot_compute():
    runs = sparsity_runs({0: 0.3, 1: 0.35, 2: 0.45}, {0: 0.5, 1: 0.6, 2: 0.7}, es_steps={0: 0, 1: 0, 2: 0})
    v = REAL_CHECKS["update_sparsity"](Evidence(runs=runs))
    assert v.status == FAILS and v.evidence["analytic"] == []
    assert v.note == "share <= 1.5e-3: ES 36.7%, null 60.0%; paper 77.61%-93.02%; paired by seed"


def test_update_sparsity_without_both_sides_of_a_seed_is_missing_data():
    needs = [["es", ""], ["es[null]", ""]]
    for runs in (
        sparsity_runs({0: 0.5}, {}),
        sparsity_runs({}, {0: 0.5}),
        [run("es0", ev={"final": {}}), *sparsity_runs({}, {0: 0.5})],
    ):
        missing(
            REAL_CHECKS["update_sparsity"](Evidence(runs=runs)),
            "update_sparsity",
            "es and es[null] runs with update_analysis in eval.json",
            needs,
        )
    missing(
        REAL_CHECKS["update_sparsity"](Evidence(runs=sparsity_runs({0: 0.5, 1: 0.6}, {2: 0.3}))),
        "update_sparsity",
        "es and es[null] runs with the same seeds",
        needs,
    )


# ----------------------------------------------------------------------------- drift_ratio


def drifts(*values, then_none: bool = True):
    """metrics rows whose drift_rel ends at values[-1] (and a last row without one)."""
    rows = [{"step": i + 1, "drift_rel": v} for i, v in enumerate(values)]
    return rows + ([{"step": len(values) + 1, "reward_mean": 0.1}] if then_none else [])


def drift_runs(es: list[float], grpo: list[float], null: list[float] = ()) -> list[Run]:
    runs = [run(f"es{s}", seed=s, metrics=drifts(9.0, x)) for s, x in enumerate(es)]
    runs += [run(f"grpo{s}", "grpo", seed=s, metrics=drifts(9.0, x)) for s, x in enumerate(grpo)]
    runs += [run(f"null{s}", seed=s, es={"null_control": True}, metrics=drifts(9.0, x)) for s, x in enumerate(null)]
    return runs


def test_drift_ratio_is_the_geometric_mean_ratio_with_welchs_interval_of_its_log():
    """ES / GRPO final drift: exp of the mean log difference, Welch's interval on the log scale taken back; the
    null's drift relative to ES beside it. A run whose drift ends at 0 (or that has none) is left out."""
    es, grpo, null = [0.40, 0.50, 0.45], [0.010, 0.011, 0.012], [0.2, 0.22, 0.25]
    runs = drift_runs(es, grpo + [0.0], null) + [run("es9", seed=9, metrics=[{"step": 1}])]
    v = REAL_CHECKS["drift_ratio"](Evidence(runs=runs))
    mean, lo, hi = welch_interval(np.log(es), np.log(grpo))
    assert (v.claim_id, v.status) == ("drift_ratio", HOLDS)  # about 41x: within the paper's 40.7-44.1x x2
    assert v.interval == pytest.approx((math.exp(lo), math.exp(hi)))
    n_mean, n_lo, n_hi = welch_interval(np.log(null), np.log(es))
    assert v.ours == (
        f"ES/GRPO drift ratio {math.exp(mean):.1f}x [{math.exp(lo):.1f}, {math.exp(hi):.1f}]; random-z null "
        f"/ real ES drift {math.exp(n_mean):.2f}x [{math.exp(n_lo):.2f}, {math.exp(n_hi):.2f}]"
    )
    assert v.evidence == {"es": es, "grpo": grpo, "null": null}
    assert v.note == "geometric mean over seeds; Welch t interval of the log ratio"
    assert v.test == BY_ID["drift_ratio"].test.describe() and v.design == "3 seeds"
    assert v.power == f"interval width on the log scale {hi - lo:.2f}; paper: 40.7-44.1x"


@pytest.mark.parametrize(
    "es, grpo, status",
    [
        ([0.05, 0.06, 0.055], [0.010, 0.011, 0.012], FAILS),  # about 5x
        ([0.010, 0.012, 0.011], [0.011, 0.010, 0.012], FAILS),  # about 1x, from under 1
        ([0.40, 0.50, 0.45], [0.001, 0.0011, 0.0012], FAILS),  # about 410x
        ([0.40, 0.05, 0.45], [0.010, 0.011, 0.012], INCONCLUSIVE),
    ],
)
def test_drift_ratio_outside_the_papers_band_does_not_hold(es, grpo, status):
    v = REAL_CHECKS["drift_ratio"](Evidence(runs=drift_runs(es, grpo)))
    mean, lo, hi = welch_interval(np.log(es), np.log(grpo))
    assert v.status == status and v.interval == pytest.approx((math.exp(lo), math.exp(hi)))
    assert v.ours == f"ES/GRPO drift ratio {math.exp(mean):.1f}x [{math.exp(lo):.1f}, {math.exp(hi):.1f}]"


def test_drift_ratio_of_one_seed_a_side_is_not_decided():
    v = REAL_CHECKS["drift_ratio"](Evidence(runs=drift_runs([0.4], [0.01], [0.2])))
    assert v.status == INCONCLUSIVE and v.interval == (0.0, math.inf)
    assert v.ours == "ES/GRPO drift ratio 40.0x [0.0, inf]; random-z null / real ES drift 0.50x [0.00, inf]"
    assert v.design == "1 seeds" and v.power.startswith("interval width on the log scale inf;")


def test_drift_ratio_without_a_positive_drift_on_each_side_is_missing_data():
    needs = [["es", ""], ["grpo", ""]]
    for runs in (drift_runs([0.4], []), drift_runs([], [0.01]), drift_runs([0.0], [0.01]), drift_runs([0.4], [0.0])):
        missing(
            REAL_CHECKS["drift_ratio"](Evidence(runs=runs)),
            "drift_ratio",
            "es and grpo runs with drift_rel in metrics.jsonl",
            needs,
        )


# ----------------------------------------------------------------------------- population_size


def rewards(step2: float, tail: float, steps: int = 10, filler: float = 0.1):
    """reward_mean rows: `filler` everywhere but step 2 and the last fifth (steps 9-10 of 10)."""
    r = [filler] * steps
    r[1] = step2
    r[-2:] = [tail, tail]
    return [{"step": i + 1, "reward_mean": x} for i, x in enumerate(r)]


def sweep_run(model: str, size: int | None, n: int, seed: int, step2: float, tail: float) -> Run:
    return run(
        f"{model}-N{n}-s{seed}",
        seed=seed,
        es={"population_size": n},
        model=model,
        metrics=rewards(step2, tail),
        ev={"update_analysis": {"entries": size}} if size else {},
    )


# (model, size) -> N -> per seed (reward at step 2, smoothed reward: the mean of steps 9-10)
SWEEP = {
    ("large", 1000): {
        8: {0: (0.1, 0.30), 1: (0.1, 0.31), 2: (0.1, 0.29)},
        32: {0: (0.28, 0.35), 1: (0.30, 0.37), 2: (0.29, 0.33)},
    },
    ("small", 300): {
        8: {0: (0.1, 0.20), 1: (0.1, 0.22), 2: (0.1, 0.21), 3: (0.1, 0.9)},  # seed 3: no N = 32 run
        16: {0: (0.9, 0.9)},  # between the ends: not read
        32: {0: (0.25, 0.40), 1: (0.26, 0.45), 2: (0.24, 0.41)},
    },
}


def sweep_runs(sweep=SWEEP) -> list[Run]:
    return [
        sweep_run(model, size, n, seed, *r)
        for (model, size), by_n in sweep.items()
        for n, by_seed in by_n.items()
        for seed, r in by_seed.items()
    ]


def test_population_size_compares_the_gains_of_the_smallest_to_the_largest_n_across_models():
    """Per model, the smoothed reward at the largest N minus the smallest's, paired by seed: the small model gains
    0.20, 0.23, 0.20, the large 0.05, 0.06, 0.04; Welch's interval of the difference. Equal FLOPs: N = 32 read after
    10 * 8 // 32 = 2 steps (its reward at step 2, the last fifth of 2 steps being 1 step)."""
    extra = [
        sweep_run("large", None, 64, 0, 0.9, 0.9),  # no update analysis: no model size, left out
        run("small-bare", seed=0, es={"population_size": 64}, model="small", ev={"update_analysis": {"entries": 300}}),
    ]
    v = REAL_CHECKS["population_size"](Evidence(runs=sweep_runs() + extra))
    small, large = [0.20, 0.23, 0.20], [0.05, 0.06, 0.04]
    mean, lo, hi = welch_interval(small, large)
    assert (v.claim_id, v.status) == ("population_size", HOLDS) and v.interval == pytest.approx((lo, hi))
    assert v.evidence["gains"] == {"small": pytest.approx(small), "large": pytest.approx(large)}
    flops = {"small": [0.25 - 0.20, 0.26 - 0.22, 0.24 - 0.21], "large": [0.28 - 0.30, 0.30 - 0.31, 0.29 - 0.29]}
    assert v.evidence["equal_flops_gains"] == {m: pytest.approx(g) for m, g in flops.items()}
    assert v.evidence["model_sizes"] == {"small": 300, "large": 1000}
    assert 0.01 < hi - lo < 0.1  # two significant digits of the width: three decimals
    assert v.ours == (
        f"300 params: gain N=8->32 {np.mean(small):+.3f} (equal FLOPs {np.mean(flops['small']):+.3f}); "
        f"1,000 params: gain N=8->32 {np.mean(large):+.3f} (equal FLOPs {np.mean(flops['large']):+.3f}); "
        f"gain difference, smaller - larger model {mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"
    )
    assert v.note == "Table 6 protocol: equal updates; two tiny models stand in for 0.5B-3B"
    assert v.design == "3 seeds" and v.test == "directional: difference > 0"


def test_population_size_fails_when_the_larger_model_gains_more():
    swapped = {("large", 1000): SWEEP[("small", 300)], ("small", 300): SWEEP[("large", 1000)]}
    v = REAL_CHECKS["population_size"](Evidence(runs=sweep_runs(swapped)))
    assert v.status == FAILS and v.ours.startswith(
        "300 params: gain N=8->32 +0.050 (equal FLOPs -0.010); 1,000 params: "
    )


def test_population_size_needs_two_models_each_at_two_population_sizes_on_shared_seeds():
    needs = [["es", "the population sweep"]]
    what = "ES runs at two or more population sizes (same seeds) for two or more models"
    one_model = {k: v for k, v in SWEEP.items() if k[0] == "small"}
    one_n = {("large", 1000): {8: SWEEP[("large", 1000)][8]}, ("small", 300): SWEEP[("small", 300)]}
    no_shared_seed = {("large", 1000): {8: {0: (0.1, 0.3)}, 32: {1: (0.1, 0.3)}}, ("small", 300): SWEEP[("small", 300)]}
    for sweep in (one_model, one_n, no_shared_seed):
        missing(REAL_CHECKS["population_size"](Evidence(runs=sweep_runs(sweep))), "population_size", what, needs)


# ----------------------------------------------------------------------------- at matched Pass@1


def test_a_matched_reading_without_a_comparison_says_why_by_its_status():
    """Not testable (no supported level), inconclusive (a common range but nothing compared), or missing runs (no
    pairs: the curves it needs named); the movement of each method's Pass@1 after the reason when it is known."""
    from escov.paper_checks.real_checks import CURVE
    from escov.paper_checks.real_checks.at_matched import _matched_missing

    v = _matched_missing(BY_ID["matched_entropy"], {"pairs": 0, "reason": "no runs of both methods"})
    assert (v.claim_id, v.status, v.ours, v.note) == ("matched_entropy", MISSING, "n/a", "no runs of both methods")
    assert v.evidence == {
        "matched": {"pairs": 0, "reason": "no runs of both methods"},
        "needs": [["es", CURVE], ["grpo", CURVE]],
    }
    assert v.test == BY_ID["matched_entropy"].test.describe() and v.interval is None
    info = {"range": [0.2, 0.21], "reason": "too narrow", "moved_a": 0.123, "moved_b": -0.05, "not_testable": False}
    v = _matched_missing(BY_ID["matched_no_correct"], info)
    assert (v.status, v.note, v.evidence) == (
        INCONCLUSIVE,
        "too narrow; Pass@1 moved ES +12.3 pts, GRPO -5.0 pts",
        {"matched": info},
    )
    assert v.test == BY_ID["matched_no_correct"].test.describe()
    v = _matched_missing(BY_ID["matched_passk_above_grpo"], info | {"not_testable": True, "reason": "too few points"})
    assert (v.status, v.note) == ("not testable here", "too few points; Pass@1 moved ES +12.3 pts, GRPO -5.0 pts")
    assert "needs" not in v.evidence
    assert _matched_missing(BY_ID["matched_entropy"], {"range": [0, 1]}).note == ""


def test_the_range_note_says_the_levels_the_points_and_the_movement():
    from escov.paper_checks.real_checks.at_matched import _range_note

    info = {
        "range": [0.2, 0.455],
        "levels": [0.22, 0.26, 0.30, 0.34],
        "compared_levels": [0.22, 0.30],
        "resolution": 0.025,
        "points_in_range_a": [3, 4],
        "points_in_range_b": [5, 6],
        "moved_a": 0.3,
        "moved_b": -0.1,
    }
    tail = "; measured points in the range per run: ES [3, 4], GRPO [5, 6]; Pass@1 moved ES +30.0, GRPO -10.0 pts"
    assert _range_note(info) == (
        "mean over 2 Pass@1 levels in the common range 20.0-45.5 pts (2 left out: a measured gap "
        "wider than 2.5 pts)" + tail
    )
    assert (
        _range_note(info | {"compared_levels": info["levels"]})
        == "mean over 4 Pass@1 levels in the common range 20.0-45.5 pts" + tail
    )


def test_the_bias_control_text_names_the_thinned_side_and_its_interval():
    from escov.paper_checks.real_checks.at_matched import _bias_text

    info = {"bias": {"thinned": "GRPO", "to_layout_of": "ES", "estimate": {"mean": 0.01, "lo": -0.02, "hi": 0.04}}}
    assert _bias_text(info) == " (bias control, GRPO thinned to ES's layout against itself: +1.00 pts [-2.00, +4.00])"
    assert (
        _bias_text(info, 1.0, " nats")
        == " (bias control, GRPO thinned to ES's layout against itself: +0.010 nats [-0.020, +0.040])"
    )


def curve_run(
    name: str, algo: str, seed: int, never_solved: int, entropy: float, n: int = 64, bend: float = 0.0
) -> Run:
    """A run whose curve (n samples a prompt, 40 prompts, 11 points) rises in Pass@1 by 2 / 64 of the solved prompts a
    point while `never_solved` prompts stay at 0 correct and the token entropy stays at `entropy` (as
    test_report_rendering's, in memory)."""
    from escov.theory.metrics import pass_at_k_counts

    points = []
    for t in range(11):
        counts = np.array([0] * never_solved + [round((4 + 2 * t) * n / 64)] * (40 - never_solved))
        sampled = {
            "n": n,
            "ks": [1, 16, 32],
            "temperature": 0.6,
            "mean_token_entropy": entropy + bend * t * t,
            "pass_at_k": {str(k): float(pass_at_k_counts(n, counts, k).mean()) for k in (1, 16, 32)},
            "per_problem": [{"id": f"p{i}", "correct": int(c)} for i, c in enumerate(counts)],
        }
        points.append({"step": 5 * t, "sampled": sampled, "greedy": {"n": 1, "ks": [1], "pass_at_k": {"1": 0.0}}})
    r = run(name, algo, seed)
    r.curve = points
    return r


def curve_runs(n: int = 64, es_entropy=(1.05, 1.05, 1.05)) -> Evidence:
    """ES keeps every prompt solvable, GRPO leaves 8 of 40 never solved (no-correct share 0.2) at entropy 1.00."""
    return Evidence(
        runs=[curve_run(f"es{s}", "es", s, 0, h, n) for s, h in enumerate(es_entropy)]
        + [curve_run(f"grpo{s}", "grpo", s, 8, 1.00, n) for s in range(3)]
    )


@pytest.mark.parametrize("n", [33, 64])
def test_matched_no_correct_is_decided_with_more_samples_than_the_largest_k(n):
    from escov.paper_checks.real_checks.at_matched import _range_note

    v = REAL_CHECKS["matched_no_correct"](curve_runs(n))
    assert (v.claim_id, v.status) == ("matched_no_correct", HOLDS)  # -20 points at every level: fewer under ES
    assert v.ours.startswith("ES - GRPO no-correct share at matched Pass@1 -20.00 pts [")
    assert v.ours.endswith(" (bias control, GRPO thinned to ES's layout against itself: +0.00 pts [+0.00, +0.00])")
    info = v.evidence["matched"]
    assert v.note == _range_note(info) and v.design == f"3 seeds x 40 prompts x {n} samples"
    assert v.evidence["ES - GRPO no-correct share at matched Pass@1"]["mean"] == pytest.approx(-0.2)


def test_matched_no_correct_with_at_most_32_samples_is_the_pass_at_n_reading_again():
    """With n <= 32 samples a prompt, the no-correct share is 1 - Pass@n: not a second result."""
    v = REAL_CHECKS["matched_no_correct"](curve_runs(32))
    assert (v.claim_id, v.status, v.ours, v.interval) == ("matched_no_correct", "not testable here", "n/a", None)
    assert v.note == (
        "with 32 samples per prompt the no-correct share is exactly 1 - Pass@32: the same measurement as "
        "matched_passk_above_grpo @32, not a second result; it needs curves measured with more than 32 "
        "samples per prompt"
    )
    assert v.design == "3 seeds x 40 prompts x 32 samples" and v.test == BY_ID["matched_no_correct"].test.describe()
    assert set(v.evidence) == {"matched"} and v.evidence["matched"]["compared_levels"]


def test_matched_entropy_is_a_t_interval_over_the_seeds_mean_differences():
    """ES's entropy 1.05, 1.07, 1.06 by seed against GRPO's 1.00, constant along training: per seed 0.05, 0.07, 0.06 at
    every level; a t interval over the three; the bias control of a constant series is exactly 0."""
    from escov.paper_checks.real_checks.at_matched import _range_note

    v = REAL_CHECKS["matched_entropy"](curve_runs(64, (1.05, 1.07, 1.06)))
    mean, lo, hi = t_interval([0.05, 0.07, 0.06])
    assert (v.claim_id, v.status) == ("matched_entropy", HOLDS) and v.interval == pytest.approx((lo, hi))
    assert v.evidence["per_seed"] == pytest.approx([0.05, 0.07, 0.06])
    assert v.ours == (
        f"ES - GRPO token entropy at matched Pass@1 (nats) {mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        " (bias control, GRPO thinned to ES's layout against itself: +0.00 [+0.00, +0.00])"
    )
    info = v.evidence["matched"]
    assert info["bias"]["per_seed"] == [0.0, 0.0, 0.0]
    assert {k: info["bias"]["estimate"][k] for k in ("mean", "lo", "hi", "seeds")} == {
        "mean": 0.0,
        "lo": 0.0,
        "hi": 0.0,
        "seeds": 3,
    }
    assert v.note == (
        "per seed, mean over the compared Pass@1 levels; an interval over seeds only (these curves carry no "
        "per-prompt entropy, so the prompts are not a random effect and the interval is too narrow when prompts "
        "differ); " + _range_note(info)
    )
    assert v.design == "3 seeds" and v.power.startswith(
        "ES - GRPO token entropy at matched Pass@1 (nats): detectable at 80% power: "
    )


def test_matched_checks_without_curves_of_both_methods_are_missing_data():
    from escov.paper_checks.real_checks import CURVE

    only_es = Evidence(runs=[curve_run(f"es{s}", "es", s, 0, 1.0) for s in range(2)] + [run("grpo0", "grpo")])
    for cid in ("matched_no_correct", "matched_entropy", "matched_passk_above_grpo"):
        v = REAL_CHECKS[cid](only_es)
        assert (v.status, v.note) == (MISSING, "no runs of both methods on the same seeds and prompts"), cid
        assert v.evidence["needs"] == [["es", CURVE], ["grpo", CURVE]]


# ----------------------------------------------------------------------------- Pass@1 comparisons of variants


def pass1(*counts, n: int = 4) -> dict:
    """An evaluation of len(counts) prompts at Pass@1 (correct counts of n samples)."""
    return {
        "n": n,
        "ks": [1],
        "pass_at_k": {"1": sum(counts) / (n * len(counts))},
        "per_problem": [{"id": f"p{i}", "correct": c} for i, c in enumerate(counts)],
    }


def final_runs(name: str, es: dict, counts, seeds=(0, 1, 2)) -> list[Run]:
    return [run(f"{name}{s}", seed=s, es=es, ev={"final": pass1(*counts)}) for s in seeds]


def test_zscore_essential_decides_at_the_rescaled_alpha_and_shows_the_same_alpha_beside():
    """Every prompt of every seed: z-scored ES 3 of 4 correct, centered at the rescaled alpha 1 of 4 (+50 points,
    decided), centered at the same alpha 2 of 4 (+25 points, shown): no spread, so each interval is its mean."""
    runs = final_runs("es", {}, (3, 3, 3)) + final_runs("rescaled", {"zscore": False, "center_scale": 30.0}, (1, 1, 1))
    same = final_runs("centered", {"zscore": False}, (2, 2, 2))
    v = REAL_CHECKS["zscore_essential"](Evidence(runs=runs + same))
    assert (v.claim_id, v.status, v.interval) == ("zscore_essential", HOLDS, (0.5, 0.5))
    assert v.ours == "z-scored - centered at rescaled alpha @1 +50.00 pts [+50.00, +50.00]"
    shown = re.fullmatch(
        r"the effect of z-scoring at equal update norm; at the same alpha \(step size effect, not "
        r"decided\): ([-+.\d]+) pts \[([-+.\d]+), ([-+.\d]+)\]",
        v.note,
    )
    assert shown and [float(x) for x in shown.groups()] == pytest.approx([25.0] * 3)
    assert v.evidence["same_alpha"]["mean"] == pytest.approx(0.25) and v.evidence["same_alpha"]["seeds"] == 3
    assert v.design == "3 seeds x 3 prompts x 4 samples"
    alone = REAL_CHECKS["zscore_essential"](Evidence(runs=runs))
    assert alone.note == "the effect of z-scoring at equal update norm" and alone.evidence["same_alpha"] is None
    assert alone.ours == v.ours
    missing(
        REAL_CHECKS["zscore_essential"](Evidence(runs=final_runs("es", {}, (3, 3)) + same)),
        "zscore_essential",
        "es and es[no-zscore,rescaled] runs with the same seeds",
        [["es", ""], ["es[no-zscore,rescaled]", ""]],
    )


def test_one_point_against_two_point_allows_a_loss_of_two_points():
    """One-point minus two-point ES on every prompt of every seed (100 samples a prompt): 1 point lower holds (above
    -2), 25 points lower does not."""
    es = [run(f"es{s}", seed=s, ev={"final": pass1(50, 50, 50, n=100)}) for s in (0, 1)]
    two = lambda c: [
        run(f"two{s}", seed=s, es={"antithetic": True}, ev={"final": pass1(c, c, c, n=100)}) for s in (0, 1)
    ]
    close = REAL_CHECKS["one_point_vs_two_point"](Evidence(runs=es + two(51)))
    assert (close.status, close.ours) == (HOLDS, "one-point - two-point @1 -1.00 pts [-1.00, -1.00]")
    far = REAL_CHECKS["one_point_vs_two_point"](Evidence(runs=es + two(75)))
    assert far.status == FAILS and far.interval == pytest.approx((-0.25, -0.25))
    assert far.note == "holds when one-point loses at most 2 points, with the whole interval"
    missing(
        REAL_CHECKS["one_point_vs_two_point"](Evidence(runs=es)),
        "one_point_vs_two_point",
        "es and es[two-point] runs with the same seeds",
        [["es", ""], ["es[two-point]", ""]],
    )


# ----------------------------------------------------------------------------- what the checks need


def test_a_runs_config_provides_its_variant_and_the_measurements_it_asks_for():
    from escov.paper_checks.real_checks import CURVE, HELDOUT, PROBE, SWEEP, describe_need, provided, thresholded

    config = {"algo": "es", "es": ES, "threshold_keep": [22.0, 50.0], "heldout_task": "gsm8k", "probe": True}
    assert provided(config) == {
        ("es", ""),
        ("es", "a checkpoint thresholded at 78% sparsity"),
        ("es", "a checkpoint thresholded at 50% sparsity"),
        ("es", HELDOUT),
        ("es", PROBE),
    }
    assert provided(config, curve=True, sweep=True) == provided(config) | {("es", CURVE), ("es", SWEEP)}
    bare = {"algo": "grpo", "threshold_keep": None, "heldout_task": "", "probe": False}
    assert provided(bare) == {("grpo", "")} and provided({"algo": "grpo"}, curve=True) == {
        ("grpo", ""),
        ("grpo", CURVE),
    }
    assert thresholded(12.5) == "a checkpoint thresholded at 12.5% sparsity"
    assert (
        describe_need(("es", "")) == "es runs"
        and describe_need(("es[null]", PROBE)) == "es[null] runs with the Lemma 1 probe"
    )


# ------------------------------------------------------------------------- Lemma 1 and Lemma 2 on the runs' populations


def probed(name: str, seed: int, measurements: list[dict], algo: str = "es", sigma: float = 1e-3) -> Run:
    r = run(name, algo, seed, es={"sigma": sigma}, temperature=0.7)
    r.probe = {"measurements": measurements}
    return r


def measurement(
    step: int, s: float, jspol: float = 1e-4, prediction: float | None = 1e-4, sigma: float = 1e-3, **more
) -> dict:
    m = {"step": step, "sigma": sigma, "members": 4, "jspol": {"mean": jspol}, "validity": {"measured": {"mean": s}}}
    return m | ({"lemma1_prediction": prediction} if prediction is not None else {}) | more


def test_the_training_populations_give_one_ratio_per_run_and_every_measured_s():
    from escov.paper_checks.real_checks import training_populations, training_summary

    runs = [
        probed(
            "es0",
            0,
            [
                measurement(10, 0.01, 2e-4),
                measurement(20, 0.03, 3e-4),
                measurement(30, 9.0, 1e-4, None),
                measurement(40, 9.0, 1e-4, 0.0),
            ],
        ),
        probed("es1", 1, [measurement(10, 0.02, 1e-4)]),
        probed("es2", 2, []),
        probed("grpo0", 0, [measurement(10, 5.0, 5e-4)], algo="grpo"),
    ]
    got = training_populations(Evidence(runs=runs))
    assert got == {
        "sigma": 1e-3,
        "temperature": 0.7,
        "ratios": pytest.approx([2.5, 1.0]),
        "s": [0.01, 0.03, 0.02],
        "s_median": pytest.approx(0.02),
    }
    assert training_populations(Evidence(runs=runs[2:])) is None
    unprobed = probed("es3", 3, [])
    unprobed.probe = {}  # a probe file without measurements
    assert training_populations(Evidence(runs=[unprobed])) is None
    one = training_populations(Evidence(runs=[probed("es1", 1, [measurement(10, 0.02, 1e-4)]), unprobed]))
    assert (one["sigma"], one["temperature"], one["ratios"]) == (1e-3, 0.7, [1.0])
    no_es_settings = Run(Path("es0"), {"algo": "es", "seed": 0}, probe={"measurements": [measurement(10, 0.02, 1e-4)]})
    assert training_populations(Evidence(runs=[no_es_settings]))["sigma"] is None
    assert training_summary([1.0], [], None, None) == {
        "sigma": None,
        "temperature": None,
        "ratios": [1.0],
        "s": [],
        "s_median": None,
    }


def training(ratios, s, sigma=1e-3) -> dict:
    return {"sigma": sigma, "temperature": 0.7, "ratios": ratios, "s": s, "s_median": float(np.median(s))}


def test_lemma1_from_the_training_runs_is_decided_only_inside_the_regime():
    from escov.paper_checks.real_checks import lemma1_verdict
    from escov.paper_checks.verdict import OUTSIDE_REGIME

    ratios = [1.02, 0.98, 1.01]
    mean, lo, hi = t_interval(np.array(ratios) - 1)
    assert 0.1 <= hi - lo < 1  # two decimals
    label = f"JSpol / prediction - 1 {mean:+.2f} [{lo:+.2f}, {hi:+.2f}]"
    inside = lemma1_verdict([], training(ratios, [0.01, 0.05, 0.06]))  # a median s at the limit 0.05 is inside
    assert (inside.claim_id, inside.status, inside.ours) == ("lemma1", HOLDS, label)
    assert inside.interval == pytest.approx((lo, hi))
    assert inside.note == "s = 0.05; holds when the whole interval lies within +-0.1"
    assert inside.evidence["ratios"] == ratios and inside.evidence["s"] == [0.01, 0.05, 0.06]
    assert inside.evidence["training"]["s_median"] == 0.05
    far = lemma1_verdict([], training([1.3, 1.4, 1.35], [0.01, 0.02, 0.03]))
    assert far.status == FAILS
    outside = lemma1_verdict([], training(ratios, [0.19, 0.06, 0.3]))
    assert (outside.status, outside.ours) == (OUTSIDE_REGIME, "s = 0.19 > 0.05; " + label)
    assert outside.note == (
        "measured s = 0.19 (median over the runs' population measurements) is above the lemma's "
        "regime s <= 0.05: the ratio is shown, not decided; no sigma x N grid given"
    )
    beside = lemma1_verdict([grid_row(4, 1e-3, 1.0, s=0.2)], training(ratios, [0.19, 0.06, 0.3]))
    assert beside.status == OUTSIDE_REGIME and beside.note.endswith(
        "not decided; the grid has no row inside the regime"
    )
    missing(
        lemma1_verdict([], None),
        "lemma1",
        "a Lemma 1 grid (lemma_grid.json) or probe.json with jspol and lemma1_prediction",
        [],
    )


def test_lemma1_real_reads_the_evidences_grid_and_training_populations():
    ev = Evidence(
        runs=[probed(f"es{s}", s, [measurement(10, 0.01, r * 1e-4)]) for s, r in enumerate((1.02, 0.98, 1.01))]
    )
    v = REAL_CHECKS["lemma1"](ev)
    assert v.status == HOLDS and v.evidence["ratios"] == pytest.approx([1.02, 0.98, 1.01])
    ev.lemma_grid = [grid_row(4, 1e-3, 1.5, ci=(1.4, 1.6))]
    assert REAL_CHECKS["lemma1"](ev).status == FAILS and "grid_decision" in REAL_CHECKS["lemma1"](ev).evidence


def test_the_training_text_says_where_the_runs_populations_sit():
    from escov.paper_checks.real_checks.lemmas import _training_text

    mean, lo, hi = t_interval([0.5, 0.7, 0.6])
    assert 0.1 <= hi - lo < 1
    tail = f"JSpol / prediction - 1 {mean:+.2f} [{lo:+.2f}, {hi:+.2f}] over 3 runs, not decided"
    assert _training_text(training([1.5, 1.7, 1.6], [0.2, 0.3, 0.25, 0.4])) == (
        "the training runs' own populations (sigma = 0.001, T = 0.7: s = 0.28, median of 4) sit outside the regime: "
        + tail
    )
    assert _training_text(training([1.5, 1.7, 1.6], [0.2], sigma=None)) == (
        "the training runs' own populations (s = 0.2, median of 1) sit outside the regime: " + tail
    )


def grid_row(members: int, sigma: float, ratio: float, *, s: float = 0.01, ci=None, se_log: float = 0.01) -> dict:
    lo, hi = ci or (ratio - 0.02, ratio + 0.02)
    return {
        "task": "countdown",
        "temperature": 0.7,
        "sigma": sigma,
        "members": members,
        "s_measured": s,
        "ratio": ratio,
        "ratio_ci": [lo, hi],
        "ratio_se_log": se_log,
        "ratio_df": 10.0,
        "center_samples": 32,
        "draws": 16,
        "prompts": 8,
        "samples": 4,
        "measured": 1e-4 * ratio,
        "predicted": 1e-4,
        "ratios": [ratio],
    }


def test_lemma1_from_the_grid_pools_the_rows_inside_the_regime():
    """Two rows inside s <= 0.05 (ratios 1.00 and 1.02, log se 0.01, 10 df each) and one outside: the pooled ratio is
    the
    geometric mean with a t interval on (se1^2 + se2^2) / 4 at Welch-Satterthwaite df 20; N sorted as numbers."""
    from escov.paper_checks.real_checks import lemma1_verdict

    unpooled = grid_row(4, 2e-3, 1.5, ci=(1.4, 1.6)) | {"center_samples": 0}  # inside by s, but not a paired row
    grid = [grid_row(16, 2e-3, 1.02), grid_row(4, 1e-3, 1.0, s=0.05), grid_row(8, 1e-2, 1.5, s=0.2), unpooled]
    v = lemma1_verdict(grid, None)
    ratio = math.sqrt(1.02)
    half = stats.t.ppf(0.975, 20) * math.sqrt(2 * 0.01**2 / 4)
    lo, hi = ratio * math.exp(-half), ratio * math.exp(half)
    assert (v.claim_id, v.status) == ("lemma1", HOLDS) and v.interval == pytest.approx((lo - 1, hi - 1))
    assert v.ours == (
        f"implementation check and regime boundary: grid on countdown at T = 0.7, 2 rows with s <= 0.05: pooled "
        f"JSpol / prediction {ratio:.3f} "
        f"[{lo:.3f}, {hi:.3f}]; N=16 sigma=0.002: 1.020 [1.000, 1.040], N=4 sigma=0.001: 1.000 [0.980, 1.020]"
    )
    assert v.note == "holds when the pooled interval lies within 1 +- 0.1 and no in-regime row lies wholly outside it"
    assert v.design == (
        "grid: 2 of 4 rows inside s <= 0.05; per row N=4: 16 antithetic pairs of populations, N=16: 16 "
        "antithetic pairs of populations x 8 prompts x 4 samples per member, each pair against the "
        "prediction for its own members from 32 center completions per prompt"
    )
    assert v.power == (
        f"pooled interval width {hi - lo:.3f}; rows' widths 0.040-0.040 (margin +-0.1); "
        f"paper: ratio 1, exact up to O(sigma^4)"
    )
    assert v.test == BY_ID["lemma1"].test.describe() and v.evidence["training"] is None
    assert v.evidence["grid_decision"]["status"] == HOLDS and len(v.evidence["grid_decision"]["rows"]) == 2
    out = lemma1_verdict(
        [
            grid_row(4, 1e-3, 1.0),
            grid_row(16, 2e-3, 1.3, ci=(1.2, 1.4), se_log=0.05),
            grid_row(8, 1e-3, 0.7, ci=(0.6, 0.8)),
        ],
        training([1.5, 1.7, 1.6], [0.2, 0.3, 0.25]),
    )
    assert out.status == FAILS
    assert out.power.startswith("pooled interval width ") and "; rows' widths 0.040-0.200 (margin" in out.power
    assert out.ours.endswith(", N=8 sigma=0.001: 0.700 [0.600, 0.800]")
    from escov.paper_checks.real_checks.lemmas import _training_text

    assert out.note == (
        "holds when the pooled interval lies within 1 +- 0.1 and no in-regime row lies wholly outside it; "
        "rows wholly outside: N=16 sigma=0.002, N=8 sigma=0.001; "
        + _training_text(training([1.5, 1.7, 1.6], [0.2, 0.3, 0.25]))
    )
    assert out.evidence["training"]["ratios"] == [1.5, 1.7, 1.6]
    bare = {
        k: v
        for k, v in grid_row(4, 1e-3, 1.0).items()
        if k not in ("task", "temperature", "prompts", "samples", "center_samples")
    }
    v = lemma1_verdict([bare | {"center_samples": 32}], None)
    assert v.ours.startswith("implementation check and regime boundary: grid on ? at T = ?, 1 rows with s <= 0.05: ")
    assert (
        " x ? prompts x ? samples per member, each pair against the prediction for its own members from 32 center"
        in v.design
    )


def test_lemma2_on_the_members_is_shown_as_an_identity():
    """P_pop - P_same from each ES run's last probed step (distinct members' pass against the same policy's)."""
    from escov.paper_checks.real_checks import PROBE
    from escov.paper_checks.verdict import IDENTITY

    gaps = lambda distinct, same: {"lemma2": {"distinct_members_pass": distinct, "same_policy_pass": same}}
    runs = [
        probed(
            "es0",
            0,
            [measurement(10, 0.01, **gaps([0.9], [0.1])), measurement(20, 0.01, **gaps([0.5, 0.6], [0.45, 0.6]))],
        ),
        probed("es1", 1, [measurement(10, 0.01, **gaps([0.9], [0.1])), measurement(20, 0.01)]),
        probed("es2", 2, [measurement(10, 0.01, **gaps([0.3], [0.1]))]),
        probed("es3", 3, []),
        probed("grpo0", 0, [measurement(10, 0.01, **gaps([0.9], [0.0]))], algo="grpo"),
    ]
    v = REAL_CHECKS["lemma2"](Evidence(runs=runs))
    assert (v.claim_id, v.status) == ("lemma2", IDENTITY)
    assert v.evidence == {"gaps": pytest.approx([0.05, 0.0, 0.2])}
    assert v.ours == f"P_pop - P_same: min 0, mean {0.25 / 3:.3g}"
    assert v.note == "true for any success rates (Maclaurin's inequality): shown, not evidence for the paper"
    assert v.test == BY_ID["lemma2"].test.describe()
    missing(
        REAL_CHECKS["lemma2"](Evidence(runs=runs[1:2] + runs[3:])),
        "lemma2",
        "probe.json with lemma2 estimates",
        [["es", PROBE]],
    )


def test_es_regime_reads_the_members_divergence_at_the_training_sigma():
    """Measurements at another sigma, or without a validity estimate, or of GRPO runs, are not ES's regime."""
    from escov.paper_checks.real_checks import es_regime, es_regime_line

    runs = [
        probed(
            "es0",
            0,
            [
                measurement(10, 0.01),
                measurement(20, 0.3),
                measurement(20, 5.0, sigma=1e-2),
                {"step": 30, "sigma": 1e-3},
            ],
        ),
        probed("es1", 1, [measurement(10, 1.7), measurement(30, 0.05)]),
        probed("grpo0", 0, [measurement(10, 9.0)], algo="grpo"),
    ]
    regime = es_regime(Evidence(runs=runs))
    assert regime == {
        "measured": True,
        "s_limit": 0.05,
        "sigma": 1e-3,
        "temperature": 0.7,
        "runs": 2,
        "steps": [10, 20, 30],
        "s": [0.01, 0.3, 1.7, 0.05],
        "s_median": pytest.approx(0.175),
        "s_min": 0.01,
        "s_max": 1.7,
        "inside": 2,
    }
    assert es_regime_line(regime) == (
        "**ES's regime.** The ES members' measured divergence s = E KL(pi_member || pi_center) at the training sigma "
        "0.001 (sequences sampled at T = 0.7): median 0.17, range 0.01-1.7 over 4 measurements of 2 runs "
        "(steps 10-30); "
        "2 of 4 inside Lemma 1's regime s <= 0.05, where the lemma and its grid's verdict apply."
    )
    one = es_regime(Evidence(runs=[probed("es0", 0, [measurement(10, 0.02)]), probed("es1", 1, [])]))
    assert (one["sigma"], one["temperature"], one["runs"], one["steps"], one["s"]) == (1e-3, 0.7, 1, [10], [0.02])
    unprobed = probed("es2", 2, [])
    unprobed.probe = {}  # a probe file without measurements
    no_es_settings = Run(Path("es0"), {"algo": "es", "seed": 0}, probe={"measurements": [measurement(10, 0.02)]})
    for unmeasured in (runs[2:], [unprobed], [no_es_settings]):
        assert es_regime(Evidence(runs=unmeasured)) == {"measured": False, "s_limit": 0.05}
    bare = es_regime(Evidence(runs=runs[2:]))
    assert es_regime_line(bare) == (
        "**ES's regime.** The ES members' divergence s = E KL(pi_member || pi_center) at the training sigma: "
        "not measured "
        "(no main ES run has a Lemma 1 probe, probe.json; `--budget answer` probes its runs). "
        "Lemma 1's regime: s <= 0.05."
    )


# -------------------------------------------------------------------------- Pass@k against the base and between methods


def passk(counts, n: int = 32, ks=(1, 16, 32)) -> dict:
    """An evaluation whose prompts have these correct counts of n samples."""
    return {
        "n": n,
        "ks": list(ks),
        "pass_at_k": {str(k): 0.0 for k in ks},
        "per_problem": [{"id": f"p{i}", "correct": c} for i, c in enumerate(counts)],
    }


def evaluated(name: str, algo: str, seed: int, base, final, **kw) -> Run:
    return run(name, algo, seed, ev={"base": passk(base, **kw), "final": passk(final, **kw)})


def test_a_method_over_its_base_reads_every_k_of_the_claim():
    """Every prompt from 0 of 32 correct to all 32: +100 points at each k, exactly, on every seed."""
    ev = Evidence(
        runs=[evaluated(f"es{s}", "es", s, [0] * 4, [32] * 4) for s in range(2)]
        + [evaluated(f"grpo{s}", "grpo", s, [32] * 4, [0] * 4) for s in range(2)]
    )
    v = REAL_CHECKS["es_improves_over_base"](ev)
    assert (v.claim_id, v.status, v.interval) == ("es_improves_over_base", HOLDS, None)
    assert v.ours == "; ".join(f"@{k} +100.00 pts [+100.00, +100.00]" for k in (1, 16, 32))
    assert v.note == "es final minus base" and v.design == "2 seeds x 4 prompts x 32 samples"
    assert v.test == "directional: difference > 0" and v.power.count("detectable at 80% power") == 3
    below = REAL_CHECKS["grpo_passk_below_base"](ev)
    assert (below.claim_id, below.status, below.note) == ("grpo_passk_below_base", HOLDS, "grpo final minus base")
    assert below.ours == "@16 -100.00 pts [-100.00, -100.00]; @32 -100.00 pts [-100.00, -100.00]"
    raises = REAL_CHECKS["grpo_raises_pass1"](ev)
    assert (raises.claim_id, raises.status, raises.interval) == ("grpo_raises_pass1", FAILS, (-1.0, -1.0))
    only_pass1 = Evidence(runs=[evaluated("es0", "es", 0, [0] * 4, [32] * 4, ks=(1,))])
    missing(
        REAL_CHECKS["es_improves_over_base"](only_pass1),
        "es_improves_over_base",
        "es runs with base and final evaluations on the same prompts (Pass@16)",
        [["es", ""]],
    )
    missing(
        REAL_CHECKS["grpo_raises_pass1"](Evidence(runs=[])),
        "grpo_raises_pass1",
        "grpo runs with base and final evaluations on the same prompts (Pass@1)",
        [["grpo", ""]],
    )


def test_methods_compared_at_the_end_are_paired_by_seed():
    """ES solves every prompt in all 32 samples, GRPO in none (seed 1's GRPO run is missing: seed 0 alone is read)."""
    runs = [evaluated(f"es{s}", "es", s, [0] * 4, [32] * 4) for s in range(2)] + [
        evaluated("grpo0", "grpo", 0, [0] * 4, [0] * 4)
    ]
    v = REAL_CHECKS["es_passk_above_grpo"](Evidence(runs=runs))
    assert (v.claim_id, v.status, v.design) == ("es_passk_above_grpo", INCONCLUSIVE, "1 seeds x 4 prompts x 32 samples")
    assert v.ours == "ES - GRPO @16 +100.00 pts [-inf, +inf]; ES - GRPO @32 +100.00 pts [-inf, +inf]"
    runs.append(evaluated("grpo1", "grpo", 1, [0] * 4, [0] * 4))
    assert REAL_CHECKS["es_passk_above_grpo"](Evidence(runs=runs)).status == HOLDS
    missing(
        REAL_CHECKS["es_passk_above_grpo"](Evidence(runs=runs[:2])),
        "es_passk_above_grpo",
        "es and grpo runs with the same seeds and test prompts",
        [["es", ""], ["grpo", ""]],
    )


def test_the_es_grpo_schedule_must_be_above_every_other_method():
    top = [evaluated(f"esgrpo{s}", "es-grpo", s, [0] * 4, [32] * 4) for s in range(2)]
    others = {
        name: [evaluated(f"{name}{s}", name, s, [0] * 4, [0] * 4) for s in range(2)]
        for name in ("es", "grpo", "grpo-es")
    }
    v = REAL_CHECKS["schedules_pareto"](Evidence(runs=top + [r for rs in others.values() for r in rs]))
    assert v.status == HOLDS and v.note == "holds when ES->GRPO is above every other method"
    assert v.ours == "; ".join(f"ES->GRPO - {o} @32 +100.00 pts [+100.00, +100.00]" for o in ("es", "grpo", "grpo-es"))
    tie = [evaluated(f"grpoes{s}", "grpo-es", s, [0] * 4, [32] * 4) for s in range(2)]
    assert (
        REAL_CHECKS["schedules_pareto"](Evidence(runs=top + others["es"] + others["grpo"] + tie)).status == INCONCLUSIVE
    )
    missing(
        REAL_CHECKS["schedules_pareto"](Evidence(runs=top + others["es"] + others["grpo-es"])),
        "schedules_pareto",
        "es-grpo and grpo runs with the same seeds and test prompts",
        [["es-grpo", ""], ["grpo", ""]],
    )


def heldout(name: str, algo: str, seed: int, before: int, after: int) -> Run:
    ev = {"heldout": {"base": pass1(*[before] * 3, n=64), "final": pass1(*[after] * 3, n=64)}}
    return run(name, algo, seed, ev=ev)


def test_no_forgetting_reads_the_held_out_change_of_es_and_of_grpo():
    """Held-out Pass@1 after minus before on every prompt (64 samples): ES 1/64 lower (no loss beyond 2 points),
    GRPO 1/64 or 19/64 lower."""
    es = [heldout(f"es{s}", "es", s, 38, 37) for s in range(2)]
    v = REAL_CHECKS["no_forgetting"](Evidence(runs=es + [heldout(f"grpo{s}", "grpo", s, 38, 37) for s in range(2)]))
    assert v.status == HOLDS
    assert v.ours == "ES held-out @1 -1.56 pts [-1.56, -1.56]; GRPO held-out @1 -1.56 pts [-1.56, -1.56]"
    assert v.design == "2 seeds x 3 prompts x 64 samples"
    forgets = REAL_CHECKS["no_forgetting"](
        Evidence(runs=es + [heldout(f"grpo{s}", "grpo", s, 38, 19) for s in range(2)])
    )
    assert forgets.status == FAILS and forgets.ours.endswith("GRPO held-out @1 -29.69 pts [-29.69, -29.69]")
    from escov.paper_checks.real_checks import HELDOUT

    half = run("grpo0", "grpo", 0, ev={"heldout": {"base": pass1(1, 1, n=4)}})
    missing(
        REAL_CHECKS["no_forgetting"](Evidence(runs=es + [half])),
        "no_forgetting",
        "grpo runs with held-out evaluations before and after",
        [["grpo", HELDOUT]],
    )
    missing(
        REAL_CHECKS["no_forgetting"](Evidence(runs=[])),
        "no_forgetting",
        "es runs with held-out evaluations before and after",
        [["es", HELDOUT]],
    )


# ----------------------------------------------------------------------------- per-run numbers


def entropies(*values):
    return [{"step": i + 1, "entropy": h} for i, h in enumerate(values)]


def test_entropy_collapse_needs_grpos_fall_and_es_kept_within_its_margin():
    """Relative changes by hand (first step against the last fifth, here the last step of 5): GRPO -50, -40, -45%,
    ES +1, -2, 0%."""
    grpo = [run(f"grpo{s}", "grpo", s, metrics=entropies(1.0, 1, 1, 1, h)) for s, h in enumerate((0.5, 0.6, 0.55))]
    es = [run(f"es{s}", "es", s, metrics=entropies(2.0, 1, 1, 1, h)) for s, h in enumerate((2.02, 1.96, 2.0))]
    v = REAL_CHECKS["entropy_collapse"](Evidence(runs=grpo + es + [run("es9", "es", 9, metrics=entropies(0.0, 1.0))]))
    (fall, _), (kept, _) = BY_ID["entropy_collapse"].parts
    f_mean, f_lo, f_hi = t_interval([50.0, 40.0, 45.0])
    k_mean, k_lo, k_hi = t_interval([1.0, -2.0, 0.0])
    assert v.status == HOLDS and v.interval is None
    assert (
        v.ours == f"{fall} {f_mean:+.2f}% [{f_lo:+.2f}, {f_hi:+.2f}]; {kept} {k_mean:+.2f}% [{k_lo:+.2f}, {k_hi:+.2f}]"
    )
    assert v.evidence["grpo_relative_change"] == pytest.approx([-0.5, -0.4, -0.45])
    assert v.evidence["es_relative_change"] == pytest.approx([0.01, -0.02, 0.0])
    assert v.note == (
        "relative change of per-step token entropy, first step vs the last fifth of steps; ES keeps its "
        "entropy when its change's interval lies within +-10%"
    )
    assert v.test == BY_ID["entropy_collapse"].describe_test()
    fall_power, kept_power = v.power.split(" | ")  # each part's power line with its own test's paper effect
    assert fall_power.startswith(f"{fall}: detectable at 80% power: ") and fall_power.endswith("%; paper: qualitative")
    assert kept_power.startswith(f"{kept}: detectable at 80% power: ") and kept_power.endswith(
        "%; paper: qualitative (kept)"
    )
    missing(
        REAL_CHECKS["entropy_collapse"](Evidence(runs=es)),
        "entropy_collapse",
        "grpo runs with per-step entropy in metrics.jsonl",
        [["grpo", ""]],
    )
    missing(
        REAL_CHECKS["entropy_collapse"](Evidence(runs=grpo + [run("es0", metrics=entropies(1.0))])),
        "entropy_collapse",
        "es runs with per-step entropy in metrics.jsonl",
        [["es", ""]],
    )


def test_a_runs_smoothed_reward_size_and_final_drift_by_hand():
    from escov.paper_checks.real_checks import final_drift, model_size, smoothed_reward

    r = run(
        "es0",
        metrics=[{"step": i + 1, "reward_mean": x, "drift_rel": x / 10} for i, x in enumerate(range(1, 11))]
        + [{"step": 11, "reward_mean": None}],
    )
    assert smoothed_reward(r) == pytest.approx(9.5)  # the last 2 of 10 steps
    assert smoothed_reward(r, tail=0.5) == pytest.approx(8.0)  # the last 5
    assert smoothed_reward(r, steps=4) == pytest.approx(4.0)  # of the first 4: the last max(1, 0) = 1
    assert smoothed_reward(run("es1")) is None and final_drift(run("es1")) is None
    assert final_drift(r) == pytest.approx(1.0)
    assert model_size(run("es0", ev={"update_analysis": {"entries": 1234}})) == 1234
    assert model_size(run("es0", ev={})) is None and model_size(run("es0")) is None


def test_thresholded_pass1_reads_the_named_sparsity_only():
    """Pass@1 at 78% sparsity minus the final's, per seed (a row at 50% is not read): +0.4, -0.2, +0.1 points."""
    from escov.paper_checks.real_checks import thresholded
    from escov.theory.claims import THRESHOLDED_PERCENT

    def es_run(seed, change, sparsities=(50.0, THRESHOLDED_PERCENT + 1e-9)):
        rows = [
            {"sparsity_percent": p, "pass_at_1": 0.5 + (change if abs(p - THRESHOLDED_PERCENT) < 1e-3 else -0.3)}
            for p in sparsities
        ]
        return run(f"es{seed}", seed=seed, ev={"final": {"pass_at_k": {"1": 0.5}}, "thresholded": rows})

    changes = [0.004, -0.002, 0.001]
    v = REAL_CHECKS["thresholded_pass1"](
        Evidence(
            runs=[es_run(s, c) for s, c in enumerate(changes)]
            + [run("es9", seed=9, ev={"thresholded": [{"sparsity_percent": 78.0, "pass_at_1": 0.0}]})]
        )
    )
    mean, lo, hi = t_interval(changes)
    assert v.status == HOLDS and v.interval == pytest.approx((lo, hi))
    assert v.evidence["diffs"] == pytest.approx(changes)
    assert v.ours == f"Pass@1 change at 78% sparsity {100 * mean:+.2f} pts [{100 * lo:+.2f}, {100 * hi:+.2f}]"
    assert v.note == "interval over seeds" and v.design == "3 seeds"
    need = [["es", thresholded(THRESHOLDED_PERCENT)]]
    elsewhere = [es_run(0, 0.0, (90.0, 50.0)), es_run(1, 0.0, (50.0,)), es_run(2, 0.0, (THRESHOLDED_PERCENT + 2e-6,))]
    missing(
        REAL_CHECKS["thresholded_pass1"](Evidence(runs=elsewhere)),
        "thresholded_pass1",
        "es runs with a 78%-sparsity thresholded checkpoint evaluated; these runs thresholded ES at 50%, 78%, 90% "
        "sparsity only",
        need,
    )
    missing(
        REAL_CHECKS["thresholded_pass1"](Evidence(runs=[run("es0", ev={"final": {"pass_at_k": {"1": 0.5}}})])),
        "thresholded_pass1",
        "es runs with a 78%-sparsity thresholded checkpoint evaluated",
        need,
    )


def test_matched_passk_reads_both_ks_each_with_its_bias_control_and_the_pass32_plan():
    """GRPO never solves 8 of 40 prompts, ES solves them all: above at matched Pass@1 for k = 16 and 32. Each k's text
    is its estimate and its own bias control; the note is the range's and Pass@32's plan."""
    from escov.paper_checks.design import plan_text
    from escov.paper_checks.real_checks.at_matched import _bias_text, _range_note
    from escov.paper_checks.verdict import fmt_interval

    v = REAL_CHECKS["matched_passk_above_grpo"](curve_runs(64))
    assert (v.claim_id, v.status, v.interval) == ("matched_passk_above_grpo", HOLDS, None)
    infos = v.evidence["matched"]
    assert set(infos) == {"pass@16", "pass@32"}
    labels = [f"ES - GRPO @{k} at matched Pass@1" for k in (16, 32)]
    for label in labels:  # 8 of 40 prompts from 0 to a Pass@k near 1: about +20 points
        assert 0.15 < v.evidence[label]["mean"] < 0.2 + 1e-9
    assert v.ours == "; ".join(
        f"{label} {fmt_interval(v.evidence[label]['mean'], v.evidence[label]['lo'], v.evidence[label]['hi'])}"
        f"{_bias_text(infos[f'pass@{k}'])}"
        for label, k in zip(labels, (16, 32))
    )
    assert infos["pass@16"]["bias"]["estimate"] != infos["pass@32"]["bias"]["estimate"]  # each k's own control
    assert v.ours.count(" (bias control, GRPO thinned to ES's layout against itself: ") == 2
    planned = plan_text(infos["pass@32"]["plan"])
    assert planned and v.note == _range_note(infos["pass@32"]) + "; Pass@32: " + planned
    assert v.design == "3 seeds x 40 prompts x 64 samples"
    assert v.power.count("detectable at 80% power") == 2


def test_population_size_at_equal_flops_reads_at_least_one_step():
    """N = 2 against N = 32 over 10 steps: 10 * 2 // 32 = 0 steps of the largest N at equal FLOPs, read as its first
    step (the filler 0.1)."""
    sweep = {key: {2: by_n[8], 32: by_n[32]} for key, by_n in SWEEP.items()}
    v = REAL_CHECKS["population_size"](Evidence(runs=sweep_runs(sweep)))
    assert v.evidence["equal_flops_gains"] == {
        "small": pytest.approx([0.1 - 0.20, 0.1 - 0.22, 0.1 - 0.21]),
        "large": pytest.approx([0.1 - 0.30, 0.1 - 0.31, 0.1 - 0.29]),
    }
    assert "gain N=2->32" in v.ours


def test_population_size_without_a_reward_signal_in_either_model_names_both():
    flat = {key: {n: {s: (0.1, 0.1) for s in range(3)} for n in (8, 32)} for key in SWEEP}
    v = REAL_CHECKS["population_size"](Evidence(runs=sweep_runs(flat)))
    assert v.status == INCONCLUSIVE
    assert v.note == (
        "Table 6 protocol: equal updates; two tiny models stand in for 0.5B-3B; 300-parameter model, "
        "1,000-parameter model: the same training reward at every step of every run (no reward signal), "
        "so no decision"
    )


def test_no_forgetting_of_one_seed_a_side_is_not_decided():
    v = REAL_CHECKS["no_forgetting"](
        Evidence(runs=[heldout("es0", "es", 0, 38, 37), heldout("grpo0", "grpo", 0, 38, 19)])
    )
    assert v.status == INCONCLUSIVE and v.design == "1 seeds x 3 prompts x 64 samples"
    assert v.note == "one seed: no run-to-run variance, so no decision"


def test_a_verdict_with_any_part_of_one_seed_says_so():
    """decided() combines parts that may rest on different designs: one part measured on one seed is enough for the
    note, and its infinite interval keeps the verdict from holding (the other part holds)."""
    from escov.paper_checks.design import Estimate
    from escov.paper_checks.real_checks.decide import decided
    from escov.theory.claims import BY_ID

    holds = Estimate(0.1, 0.05, 0.15, 0.02, 4.0, 5)
    single = Estimate(0.1, -math.inf, math.inf, math.inf, 0.0, 1)
    v = decided(BY_ID["grpo_raises_pass1"], [("@1", holds), ("@16", single)])
    assert v.status == INCONCLUSIVE and v.note == "one seed: no run-to-run variance, so no decision"
    assert decided(BY_ID["grpo_raises_pass1"], [("@1", holds)]).note == ""


def test_a_run_without_its_base_or_final_evaluation_is_not_compared_with_its_base():
    from escov.paper_checks.real_checks import diff_vs_base

    whole = evaluated("es0", "es", 0, [0] * 4, [32] * 4)
    no_base = run("es1", seed=1, ev={"final": passk([0] * 4)})
    no_final = run("es2", seed=2, ev={"base": passk([32] * 4)})
    assert diff_vs_base([no_base, no_final], 1) is None
    assert diff_vs_base([no_base, whole, no_final], 1).seeds == 1


def test_a_drift_ratio_whose_lower_end_underflows_is_still_a_verdict():
    """Log ratios -545, -400, -255 against GRPO's 0: the interval's lower end exp(-760) is 0.0 in floating point, its
    upper end exp(-40) is not; the test of a ratio needs a positive lower end, so the check must not hand it 0."""
    es = [math.exp(-545), math.exp(-400), math.exp(-255)]
    v = REAL_CHECKS["drift_ratio"](Evidence(runs=drift_runs(es, [1.0, 1.0, 1.0])))
    assert v.interval[0] == 0.0 and 0 < v.interval[1] < 1e-10 and v.status in (INCONCLUSIVE, FAILS)


def test_matched_entropy_prints_its_bias_control_in_nats():
    """GRPO's entropy bends along training (1 + 0.01 t^2): thinning its curve to ES's layout moves it, so the bias
    control is not 0, and it is printed in nats (scale 1), as the estimate beside it."""
    from escov.paper_checks.real_checks.at_matched import _bias_text

    ev = Evidence(
        runs=[curve_run(f"es{s}", "es", s, 0, 1.05) for s in range(3)]
        + [curve_run(f"grpo{s}", "grpo", s, 8, 1.0, bend=0.01 * (1 + s)) for s in range(3)]
    )
    v = REAL_CHECKS["matched_entropy"](ev)
    info = v.evidence["matched"]
    assert abs(info["bias"]["estimate"]["mean"]) > 1e-3
    assert v.ours.endswith(_bias_text(info, 1.0, "")) and v.ours.count(" (bias control, ") == 1


def test_methods_evaluated_with_other_sample_counts_are_described_by_the_first_methods():
    runs = [run(f"es{s}", seed=s, ev={"final": pass1(50, 50, 50, n=100)}) for s in (0, 1)]
    runs += [run(f"two{s}", seed=s, es={"antithetic": True}, ev={"final": pass1(25, 25, 25, n=50)}) for s in (0, 1)]
    assert REAL_CHECKS["one_point_vs_two_point"](Evidence(runs=runs)).design == "2 seeds x 3 prompts x 100 samples"


def test_matched_passk_of_one_seed_has_no_plan_to_state():
    """A design plan needs two seeds: with one, the note is the range's alone."""
    from escov.paper_checks.real_checks.at_matched import _range_note

    v = REAL_CHECKS["matched_passk_above_grpo"](
        Evidence(runs=[curve_run("es0", "es", 0, 0, 1.0), curve_run("grpo0", "grpo", 0, 8, 1.0)])
    )
    assert (
        v.evidence["matched"]["pass@32"]["plan"] == {}
        and v.note
        == _range_note(v.evidence["matched"]["pass@32"]) + "; one seed: no run-to-run variance, so no decision"
    )


def test_matched_curves_are_paired_by_their_runs_seeds():
    """GRPO's entropy 1.00, 1.01, 1.02 for seeds 0, 1, 2 against ES's 1.05: per seed 0.05, 0.04, 0.03."""
    ev = Evidence(
        runs=[curve_run(f"es{s}", "es", s, 0, 1.05) for s in range(3)]
        + [curve_run(f"grpo{s}", "grpo", s, 8, 1.0 + 0.01 * s) for s in range(3)]
    )
    assert REAL_CHECKS["matched_entropy"](ev).evidence["per_seed"] == pytest.approx([0.05, 0.04, 0.03])


def test_two_methods_are_compared_at_k_only_on_the_seeds_whose_runs_both_measured_k():
    """diff_between pairs runs by seed among those whose evaluation holds Pass@k: a run that did not measure k (its
    eval_ks differ) is left out with its pair, though its counts could give it."""
    from escov.paper_checks.real_checks.passk import diff_between

    def run(name, seed, ks, counts):
        final = {
            "n": 32,
            "pass_at_k": {str(k): 0.5 for k in ks},
            "per_problem": [{"id": f"p{i}", "correct": c} for i, c in enumerate(counts)],
        }
        return Run(path=Path(name), config={"algo": "es", "seed": seed}, eval={"final": final})

    a = [run("a0", 0, (1, 32), [4, 0, 9]), run("a1", 1, (1,), [8, 2, 1])]
    b = [run("b0", 0, (1, 32), [2, 1, 3]), run("b1", 1, (1, 32), [0, 0, 5])]
    got = diff_between(a, b, 32)
    assert got.seeds == 1 and got.prompts == 3
    assert diff_between(a, b, 1).seeds == 2
