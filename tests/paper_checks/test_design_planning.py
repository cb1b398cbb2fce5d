"""Planning a design (paper_checks/design.py): variance components recovered from data with known components,
the planned detectable difference checked against the power seeds_by_prompts actually has on synthetic designs
whose true mean is that difference, the fewest seeds for a target found exactly, and the seeds read back from
an estimate (seeds_to_detect)."""

import math

import numpy as np
import pytest
from scipy import stats as st

from escov.paper_checks.design import (
    Components,
    planned_detectable,
    seeds_by_prompts,
    seeds_needed,
    seeds_to_detect,
    variance_components,
)
from escov.theory.decisions import detectable, effective_df, over_seeds

TRUE = {"seed": 4e-4, "prompt": 1e-4, "residual": 2e-3}


def draw(rng, seeds, prompts, mean=0.0, seed=TRUE["seed"], prompt=TRUE["prompt"], residual=TRUE["residual"]):
    return (
        mean
        + rng.normal(0, seed**0.5, (seeds, 1))
        + rng.normal(0, prompt**0.5, (1, prompts))
        + rng.normal(0, residual**0.5, (seeds, prompts))
    )


def test_components_are_recovered_on_average():
    rng = np.random.default_rng(1)
    est = np.array([[getattr(variance_components(draw(rng, 20, 100)), k) for k in TRUE] for _ in range(300)])
    # each estimate is unbiased before truncation at 0 (never reached here): the mean of 300 within 4 standard errors
    for j, k in enumerate(TRUE):
        se = est[:, j].std(ddof=1) / len(est) ** 0.5
        assert abs(est[:, j].mean() - TRUE[k]) < 4 * se, (k, est[:, j].mean(), TRUE[k])


def test_components_of_a_hand_computed_array():
    y = np.array([[1.0, 2.0, 6.0], [3.0, 4.0, 5.0]])
    # rows 3, 4; columns 2, 3, 5.5; grand 3.5; residuals y - row - col + grand:
    # [[-0.5, -0.5, 1.0], [0.5, 0.5, -1.0]] -> sum of squares 3.0 over (2-1)(3-1) = 2 df
    c = variance_components(y)
    assert c.residual == pytest.approx(1.5)
    assert c.seed == pytest.approx(max(0.0, (3 * 0.5 - 1.5) / 3))  # MS_seed = 3 x Var(3, 4) = 1.5
    assert c.prompt == pytest.approx((2 * np.var([2, 3, 5.5], ddof=1) - 1.5) / 2)
    shares = c.shares()
    assert sum(shares.values()) == pytest.approx(1.0) and shares["seeds"] == 0.0
    with pytest.raises(ValueError, match="at least 2 of each"):
        variance_components([[1.0, 2.0]])


@pytest.mark.parametrize("seeds, prompts", [(3, 32), (6, 64), (12, 128)])
def test_the_planned_detectable_difference_is_found_80_percent_of_the_time(seeds, prompts):
    """A true mean equal to the planned detectable difference is declared nonzero (the interval excludes 0) in
    about 80% of 400 synthetic designs: 0.72-0.88 is about 4 binomial standard errors."""
    rng = np.random.default_rng(seeds)
    c = Components(**TRUE, seeds=8, prompts=64)
    d = planned_detectable(c, seeds, prompts)
    found = np.mean(
        [
            (lambda e: e.lo > 0 or e.hi < 0)(
                seeds_by_prompts(draw(rng, seeds, prompts, mean=d), 32, n_boot=300, seed=i)
            )
            for i in range(400)
        ]
    )
    assert 0.72 <= found <= 0.88, (d, found)
    # and a true mean of zero is declared nonzero about 5% of the time, never near 80%
    false = np.mean(
        [
            (lambda e: e.lo > 0 or e.hi < 0)(seeds_by_prompts(draw(rng, seeds, prompts), 32, n_boot=300, seed=i))
            for i in range(200)
        ]
    )
    assert false <= 0.12


def test_seeds_needed_is_the_first_design_that_reaches_the_target():
    c = Components(**TRUE, seeds=8, prompts=64)
    n = seeds_needed(c, 0.02, 64)
    assert planned_detectable(c, n, 64) <= 0.02 < planned_detectable(c, n - 1, 64)
    assert seeds_needed(c, 0.02, 256) < n  # more prompts, fewer seeds
    # the prompt component alone sets a floor no number of seeds goes below
    floor_bound = 2.8 * (TRUE["prompt"] / 64) ** 0.5
    assert seeds_needed(c, 0.9 * floor_bound, 64) is None
    assert planned_detectable(Components(0.0, 0.0, 0.0, 2, 2), 4, 4) == 0.0


def test_an_estimate_is_its_own_design_at_its_seeds():
    """seeds_to_detect splits an estimate's variance back into its seed and prompt parts: at its own seeds it
    detects exactly its own detectable difference, one seed fewer does not."""
    rng = np.random.default_rng(3)
    y = rng.normal(0, 0.05, (5, 1)) + rng.normal(0, 0.2, (1, 40)) + rng.normal(0, 0.1, (5, 40))
    for est in (seeds_by_prompts(y, 32).to_json(), over_seeds(rng.normal(0.1, 0.05, 6)) | {"design": "6 seeds"}):
        d = est["detectable"]
        assert seeds_to_detect(est, d * (1 + 1e-9)) == est["seeds"]
        assert seeds_to_detect(est, d * (1 - 1e-3)) > est["seeds"]
        assert seeds_to_detect(est, d * 10) < est["seeds"] or est["seeds"] == 2


def test_seeds_to_detect_reads_the_recorded_split_and_needs_it_when_seeds_equal_prompts():
    """With as many seeds as prompts t_{S-1} = t_{P-1}, and the half-width cannot split se^2 into its seed and prompt
    parts: the recorded v_seeds does (the seed means' variance / S, computed here by hand); without it, no count."""
    rng = np.random.default_rng(5)
    y = rng.normal(0, 0.05, (6, 1)) + rng.normal(0, 0.1, (1, 6)) + rng.normal(0, 0.1, (6, 6))
    est = seeds_by_prompts(y, 32).to_json()
    assert est["v_seeds"] == pytest.approx(y.mean(1).var(ddof=1) / 6, rel=1e-12)
    d = est["detectable"]
    assert seeds_to_detect(est, d * (1 + 1e-9)) == 6 and seeds_to_detect(est, d * (1 - 1e-3)) > 6
    assert seeds_to_detect({k: v for k, v in est.items() if k != "v_seeds"}, d) is None
    # an estimate written before v_seeds was recorded (S != P) reads the same count from its half-width
    wide = seeds_by_prompts(np.hstack([y, y[:, :2]]), 32).to_json()
    assert seeds_to_detect(
        {k: v for k, v in wide.items() if k != "v_seeds"}, wide["detectable"] * 0.5
    ) == seeds_to_detect(wide, wide["detectable"] * 0.5)


def test_seeds_to_detect_reads_the_design_a_known_truth_needs():
    """On designs drawn from known variance components, the seeds seeds_to_detect reads from a 4-seed estimate
    are close to those planned_detectable gives from the true components (median over draws)."""
    truth = Components(seed=0.004, prompt=0.01, residual=0.02, seeds=4, prompts=64)
    target = planned_detectable(truth, 12, 64)  # the truth needs 12 seeds for this effect
    rng = np.random.default_rng(7)
    found = []
    for _ in range(40):
        y = (
            rng.normal(0, np.sqrt(truth.seed), (4, 1))
            + rng.normal(0, np.sqrt(truth.prompt), (1, 64))
            + rng.normal(0, np.sqrt(truth.residual), (4, 64))
        )
        assert variance_components(y).seeds == 4
        found.append(seeds_to_detect(seeds_by_prompts(y, 32).to_json(), target, most=200) or 201)
    assert 8 <= np.median(found) <= 18, sorted(found)


def test_shares_of_hand_computed_components():
    """Var(mean Y) at (S, P) = seed / S + prompt / P + residual / (S P), each part's share of it."""
    c = Components(seed=0.4, prompt=0.2, residual=1.2, seeds=4, prompts=6)
    parts = [0.4 / 4, 0.2 / 6, 1.2 / 24]
    assert c.shares() == pytest.approx(dict(zip(("seeds", "prompts", "residual"), np.divide(parts, sum(parts)))))
    assert c.shares(8, 3) == pytest.approx({"seeds": 0.3, "prompts": 0.4, "residual": 0.3})  # 0.05, 0.2/3, 0.05
    assert Components(0.0, 0.0, 0.0, 4, 6).shares() == {"seeds": 0.0, "prompts": 0.0, "residual": 0.0}


def test_seeds_needed_equals_the_first_design_found_by_counting_up():
    c = Components(**TRUE, seeds=8, prompts=64)
    planned = {n: planned_detectable(c, n, 64) for n in range(2, 41)}
    for k in range(2, 41):  # a target exactly at a design's value: that design is the first to reach it
        assert seeds_needed(c, planned[k], 64, most=40) == k
    for target in np.linspace(planned[40], planned[2] * 1.1, 23):
        first = min((n for n in planned if planned[n] <= target), default=None)
        found = seeds_needed(c, float(target), 64, most=40)
        assert found == first and isinstance(found, int)
    assert seeds_needed(c, planned[40] * (1 - 1e-9), 64, most=40) is None
    assert seeds_needed(c, planned_detectable(c, 1000, 64), 64) == 1000  # 2..1000 by default
    assert seeds_needed(c, planned_detectable(c, 1001, 64), 64) is None


def _half(v_s, v_p, seeds, prompts):
    """The half-width of seeds_by_prompts' interval from its two variances (scipy's t quantiles)."""
    return math.hypot(st.t.ppf(0.975, seeds - 1) * math.sqrt(v_s), st.t.ppf(0.975, prompts - 1) * math.sqrt(v_p))


@pytest.mark.parametrize(
    "seeds, prompts, v_s, v_p", [(4, 64, 4e-4, 1e-4), (2, 3, 1e-3, 3e-4), (3, 2, 1e-3, 3e-4), (6, 16, 1e-4, 0.0)]
)
def test_seeds_to_detect_rescales_the_seed_variance_of_a_seeds_by_prompts_estimate(seeds, prompts, v_s, v_p):
    """An estimate written from known variances v_s (falls as 1/S) and v_p (kept): at n seeds its detectable
    difference is that of se^2 = v_s S / n + v_p with the half-width's effective df; seeds_to_detect finds each n."""
    se = math.sqrt(v_s + v_p)
    half = _half(v_s, v_p, seeds, prompts)
    est = {"seeds": seeds, "prompts": prompts, "se": se, "lo": 0.1 - half, "hi": 0.1 + half}
    at = {}
    for n in range(2, 31):
        se_n = math.sqrt(v_s * seeds / n + v_p)
        at[n] = detectable(se_n, effective_df(se_n, _half(v_s * seeds / n, v_p, n, prompts)))
    for n in (2, 3, 4, 5, 7, 10, 16, 23, 29, 30):  # each call counts up from 2: the ends and a spread between
        assert seeds_to_detect(est, at[n] * (1 + 1e-7), most=30) == n
        assert seeds_to_detect(est, at[n] * (1 - 1e-7), most=30) == (n + 1 if n < 30 else None)
    if v_p > 0:  # the prompts' part is a floor that no number of seeds goes below
        assert seeds_to_detect(est, 2.8 * math.sqrt(v_p) * 0.99, most=64) is None


@pytest.mark.parametrize("se", [1.0, 0.3])
def test_seeds_to_detect_of_a_seed_level_estimate(se):
    """A seed-level estimate (S = 4 seeds, Welch df 5.2) is all seed variance: at n seeds se sqrt(S / n),
    df 5.2 (n - 1) / 3."""
    est = {"seeds": 4, "se": se, "df": 5.2}
    at = {n: detectable(se * math.sqrt(4 / n), 5.2 * (n - 1) / 3) for n in range(2, 21)}
    for n in range(2, 21):
        assert seeds_to_detect(est, at[n] * (1 + 1e-7), most=20) == n
        assert seeds_to_detect(est, at[n] * (1 - 1e-7), most=20) == (n + 1 if n < 20 else None)
    assert seeds_to_detect({"seeds": 2, "se": se, "df": 1.0}, detectable(se / 2, 7.0) * (1 + 1e-7)) == 8  # df 1 x 7
    at_most = {n: detectable(se * math.sqrt(4 / n), 5.2 * (n - 1) / 3) * (1 + 1e-7) for n in (64, 65)}
    assert seeds_to_detect(est, at_most[64]) == 64 and seeds_to_detect(est, at_most[65]) is None  # 2..64 by default


def test_seeds_to_detect_refuses_what_it_cannot_read():
    for est in (
        {"seeds": 1, "se": 0.1, "df": 1.0},
        {"seeds": 4, "se": None, "df": 3.0},
        {"seeds": 4, "se": math.inf, "df": 3.0},
        {"seeds": 4, "se": math.nan, "df": 3.0},
    ):
        assert seeds_to_detect(est, 0.1) is None
    assert seeds_to_detect({"seeds": 4, "se": 0.0, "df": 3.0}, 0.0) is None  # no effect to detect
    assert seeds_to_detect({"seeds": 4, "se": 0.0, "df": 3.0}, 0.1) == 2  # no variance: the fewest seeds
