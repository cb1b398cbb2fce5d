"""The matched-Pass@1 comparison on synthetic curves whose answer is known: a method that spreads its
success over prompts has the higher Pass@32 at the same Pass@1 (Pass@32 = 1 - (1 - p)^32 is concave
in p), in both directions; the same process for both methods must come out inconclusive; runs whose
Pass@1 ranges do not overlap are not compared."""
import numpy as np
import pytest

from paper_checks.design import seeds_by_prompts
from paper_checks.matched import MIN_RANGE, at_level, common_range, curve_of, matched_difference
from theory.matched import interior_levels
from theory.decisions import FAILS, HOLDS, INCONCLUSIVE, directional

N, PROMPTS, SEEDS = 32, 64, 4
STEPS = 8


def _points(p_by_step: np.ndarray, rng, entropy_by_step=None) -> list[dict]:
    """curve.json points from per-step, per-prompt success probabilities (binomial counts of N)."""
    points = []
    for t, p in enumerate(p_by_step):
        counts = rng.binomial(N, np.clip(p, 0, 1))
        points.append({"step": 10 * t,
                       "sampled": {"n": N, "pass_at_k": {"1": float(counts.mean() / N)},
                                   "mean_token_entropy": float(1.0 if entropy_by_step is None else entropy_by_step[t]),
                                   "per_problem": [{"id": f"p{i}", "correct": int(c)} for i, c in enumerate(counts)]},
                       "greedy": {"pass_at_k": {"1": float((p > 0.5).mean())}}})
    return points


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _spreading(base_logit, seed_shift, rng):
    """Every prompt's logit rises by the same amount: success spread over prompts."""
    shifts = np.linspace(0, 1.5, STEPS) + seed_shift
    return _points(_sigmoid(base_logit[None, :] + shifts[:, None]), rng)


def _sharpening(base_logit, seed_shift, rng):
    """Logits scaled away from a pivot: easy prompts get easier, hard ones harder (mass concentrates)."""
    scale = np.linspace(1, 3.0, STEPS) * (1 + seed_shift)
    return _points(_sigmoid((base_logit[None, :] + 2.0) * scale[:, None] - 2.0), rng)


def _curves(make_a, make_b, rng, base_logit):
    a = [curve_of(make_a(base_logit, rng.normal(0, 0.1), rng), s) for s in range(SEEDS)]
    b = [curve_of(make_b(base_logit, rng.normal(0, 0.1), rng), s) for s in range(SEEDS)]
    return a, b


def _true_difference(base_logit, levels) -> float:
    """Mean over levels of the exact Pass@32 of the spreading process minus the sharpening one, each
    read where its exact Pass@1 equals the level (a root of the closed form, no interpolation). The
    seed shifts move a run along its own path (shift, or scale), so the truth is the same for every seed."""
    from scipy.optimize import brentq
    pass32 = lambda p: float((1 - (1 - p) ** 32).mean())
    spread = lambda shift: _sigmoid(base_logit + shift)
    sharp = lambda scale: _sigmoid((base_logit + 2.0) * scale - 2.0)
    out = []
    for level in levels:
        shift = brentq(lambda x: spread(x).mean() - level, -5, 5)
        scale = brentq(lambda x: sharp(x).mean() - level, 0.2, 10)
        out.append(pass32(spread(shift)) - pass32(sharp(scale)))
    return float(np.mean(out))


@pytest.fixture
def base_logit():
    return np.random.default_rng(7).normal(-0.5, 1.5, PROMPTS)


def test_at_level_interpolates_between_the_neighbouring_points():
    pass1 = np.array([0.1, 0.2, 0.4])
    values = np.array([[0.0, 1.0], [1.0, 3.0], [3.0, 7.0]])
    np.testing.assert_allclose(at_level(pass1, values, 0.3), [2.0, 5.0])   # halfway between points 1 and 2
    np.testing.assert_allclose(at_level(pass1, values, 0.1), [0.0, 1.0])
    assert at_level(pass1, values, 0.5) is None


def test_spreading_method_has_higher_pass32_at_matched_pass1_both_ways(base_logit):
    rng = np.random.default_rng(0)
    spread, sharp = _curves(_spreading, _sharpening, rng, base_logit)
    lo, hi = common_range(spread + sharp)
    assert hi - lo > 0.1, "the synthetic curves must share a wide Pass@1 range"
    d, info = matched_difference(spread, sharp, "pass@32")
    assert info["pairs"] == SEEDS and d.seeds == SEEDS and d.prompts == PROMPTS
    truth = _true_difference(base_logit, info["levels"])
    assert truth > 0.02 and d.lo < truth < d.hi
    assert directional(d.lo, d.hi, +1) == HOLDS
    reverse, _ = matched_difference(sharp, spread, "pass@32")
    assert directional(reverse.lo, reverse.hi, +1) == FAILS
    assert reverse.mean == pytest.approx(-d.mean)
    no_correct, _ = matched_difference(spread, sharp, "no_correct")
    assert directional(no_correct.lo, no_correct.hi, -1) == HOLDS


def test_concavity_truth_at_one_level():
    """Independent check of the direction: at equal mean p, equal p's give a higher mean Pass@32 than
    a spread of p's (Jensen), computed in closed form."""
    p_equal = np.full(4, 0.25)
    p_spread = np.array([0.0, 0.0, 0.5, 0.5])
    f = lambda p: 1 - (1 - p) ** 32
    assert p_equal.mean() == p_spread.mean() and f(p_equal).mean() > f(p_spread).mean()


def test_same_process_for_both_methods_is_inconclusive(base_logit):
    """Zero true effect: decided in at most 3 of 20 replications (a 5% test; P(>= 4 of 20) < 2%)."""
    decided = 0
    for rep in range(20):
        rng = np.random.default_rng(100 + rep)
        a, b = _curves(_spreading, _spreading, rng, base_logit)
        d, _ = matched_difference(a, b, "pass@32")
        assert d is not None and np.isfinite(d.lo)
        decided += directional(d.lo, d.hi, +1) != INCONCLUSIVE
    assert decided <= 3


def test_no_common_range_is_not_compared(base_logit):
    rng = np.random.default_rng(1)
    flat = lambda b, s, r: _points(np.repeat(_sigmoid(b)[None, :], STEPS, 0), r)
    a, b = _curves(flat, _spreading, rng, base_logit)
    lo, hi = common_range(a + b)
    assert hi - lo < MIN_RANGE, "a flat curve leaves no common range beyond its own noise"
    d, info = matched_difference(a, b, "pass@32")
    assert d is None and "nothing to compare" in info["reason"]
    assert info["moved_b"] > 0.2 and abs(info["moved_a"]) < 0.05


def test_levels_exclude_the_range_ends():
    levels = interior_levels(0.2, 0.4, 3)
    np.testing.assert_allclose(levels, [0.25, 0.3, 0.35])


def test_one_seed_pair_gives_no_decision(base_logit):
    rng = np.random.default_rng(2)
    a, b = _curves(_spreading, _sharpening, rng, base_logit)
    d, _ = matched_difference(a[:1], b[:1], "pass@32")
    assert d.seeds == 1 and not np.isfinite(d.hi)
    assert seeds_by_prompts(np.zeros((1, 3)) + np.arange(3), N).seeds == 1
