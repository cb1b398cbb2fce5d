"""Coverage of the seeds x shared-prompts design (paper_checks/design.py) on data with a known truth.

Each replication draws a fresh task: a prompt effect b_p shared by every run, a seed effect a_s per
run, and binomial sampling of 32 completions per prompt at p = sigmoid(mu + a_s + b_p). The truth,
E over a and b of Pass@k, comes from Gauss-Hermite quadrature (independent of the code under test).
Nominal 95% intervals must cover it in at least 93% of replications at 2, 4 and 8 seeds, for one
method's Pass@k and for a paired difference. The naive interval (prompts resampled within each seed,
a percentile bootstrap over seeds) is run on the same data and must fall short, so the test can fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from escov.paper_checks.design import seed_level, seeds_by_prompts
from escov.theory.metrics import pass_at_k_counts

SAMPLES, PROMPTS, REPS = 32, 64, 600
MU, SEED_SD, PROMPT_SD, EFFECT = -1.0, 0.35, 1.0, 0.5  # logits
NODES, WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
WEIGHTS = WEIGHTS / WEIGHTS.sum()


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def true_pass_at_k(mu: float, k: int) -> float:
    """E[1 - (1 - p)^k] with logit p = mu + a + b, a + b ~ N(0, SEED_SD^2 + PROMPT_SD^2)."""
    p = _sigmoid(mu + np.hypot(SEED_SD, PROMPT_SD) * NODES)
    return float(np.sum(WEIGHTS * (1 - (1 - p) ** k)))


def _runs(rng, prompt_effect, seeds: int, shift: float, k: int) -> np.ndarray:
    seed_effect = rng.normal(0.0, SEED_SD, (seeds, 1))
    counts = rng.binomial(SAMPLES, _sigmoid(MU + shift + seed_effect + prompt_effect))
    return pass_at_k_counts(SAMPLES, counts, k)


def _naive(y, rng, n_boot=300) -> tuple[float, float]:
    """The old interval: seeds resampled, then prompts independently within each resampled seed."""
    s, p = y.shape
    seeds = rng.integers(0, s, (n_boot, s))
    prompts = rng.integers(0, p, (n_boot, s, p))
    boot = y[seeds[:, :, None], prompts].mean((1, 2))
    return tuple(np.percentile(boot, [2.5, 97.5]))


def coverage(seeds: int, paired: bool, k: int, rng) -> tuple[float, float]:
    truth = true_pass_at_k(MU + EFFECT, k) - true_pass_at_k(MU, k) if paired else true_pass_at_k(MU, k)
    ours = naive = 0
    for rep in range(REPS):
        prompt_effect = rng.normal(0.0, PROMPT_SD, PROMPTS)
        y = (
            _runs(rng, prompt_effect, seeds, EFFECT, k) - _runs(rng, prompt_effect, seeds, 0.0, k)
            if paired
            else _runs(rng, prompt_effect, seeds, 0.0, k)
        )
        assert y.std() > 0  # not a degenerate draw
        est = seeds_by_prompts(y, SAMPLES, n_boot=300, seed=rep)
        ours += est.lo <= truth <= est.hi
        lo, hi = _naive(y, rng)
        naive += lo <= truth <= hi
    return ours / REPS, naive / REPS


@pytest.mark.parametrize("paired,k", [(False, 4), (True, 1)], ids=["pass@4", "paired-diff-pass@1"])
def test_intervals_cover_the_truth_at_2_4_8_seeds(paired, k):
    rng = np.random.default_rng(12)
    assert true_pass_at_k(MU, k) > 0.1 and (not paired or true_pass_at_k(MU + EFFECT, k) - true_pass_at_k(MU, k) > 0.05)
    results = {seeds: coverage(seeds, paired, k, rng) for seeds in (2, 4, 8)}
    for seeds, (ours, naive) in results.items():
        assert ours >= 0.93, f"{seeds} seeds: coverage {ours:.3f} < 0.93 ({results})"
    assert results[2][1] < 0.90, f"the naive interval should undercover at 2 seeds: {results}"


def test_one_seed_gives_no_interval():
    y = np.random.default_rng(0).uniform(0, 1, (1, 10))
    est = seeds_by_prompts(y, SAMPLES)
    assert est.seeds == 1 and est.lo == -np.inf and est.hi == np.inf
    assert est.design == "1 seeds x 10 prompts x 32 samples"


def test_bad_shapes_are_errors():
    with pytest.raises(ValueError, match="seeds, prompts"):
        seeds_by_prompts(np.zeros(5), SAMPLES)
    with pytest.raises(ValueError, match="seeds, prompts"):
        seeds_by_prompts(np.full((2, 3), np.nan), SAMPLES)


def test_the_interval_equals_its_closed_form_on_a_small_array():
    """3 seeds x 4 prompts: v_s = Var(seed means) / S; the bootstrap variance of a mean of P prompts drawn
    with replacement is exactly Var_pop(prompt means) / P; the half-width joins each level's t quantile."""
    y = np.array([[0.1, 0.4, 0.3, 0.9], [0.2, 0.6, 0.2, 0.7], [0.0, 0.5, 0.5, 0.8]])
    n_seeds, n_prompts = y.shape
    v_s = np.var(y.mean(1), ddof=1) / n_seeds
    v_p = np.var(y.mean(0), ddof=0) / n_prompts
    half = math.hypot(st.t.ppf(0.975, n_seeds - 1) * math.sqrt(v_s), st.t.ppf(0.975, n_prompts - 1) * math.sqrt(v_p))
    est = seeds_by_prompts(y, 8, n_boot=200_000, seed=1)
    assert est.mean == pytest.approx(y.mean(), abs=1e-15)
    assert est.se == pytest.approx(math.sqrt(v_s + v_p), rel=0.01)
    assert (est.hi - est.lo) / 2 == pytest.approx(half, rel=0.01) and (est.lo + est.hi) / 2 == pytest.approx(y.mean())
    assert st.t.ppf(0.975, est.df) * est.se == pytest.approx(
        (est.hi - est.lo) / 2, rel=1e-6
    )  # df: the t whose quantile gives it
    power = st.nct.sf(
        st.t.ppf(0.975, est.df), est.df, est.detectable / est.se
    )  # the power line: 80% power (upper tail)
    assert power == pytest.approx(0.80, abs=0.005)
    assert (est.seeds, est.prompts, est.samples) == (3, 4, 8) and est.to_json()[
        "design"
    ] == "3 seeds x 4 prompts x 8 samples"
    flat = seeds_by_prompts(np.full((2, 3), 0.25), 8)  # every value the same: the mean is exact
    assert (flat.mean, flat.lo, flat.hi, flat.se, flat.df, flat.detectable) == (0.25, 0.25, 0.25, 0.0, np.inf, 0.0)
    assert (flat.seeds, flat.prompts, flat.samples) == (2, 3, 8)


def test_a_seed_level_summary_keeps_every_field_and_names_its_design():
    summary = {"mean": 2.0, "lo": -10.7, "hi": 14.7, "se": 1.0, "df": 1.0, "seeds": 2, "detectable": 8.0}
    est = seed_level(summary)
    assert (est.mean, est.lo, est.hi, est.se, est.df, est.seeds, est.detectable) == (2.0, -10.7, 14.7, 1.0, 1.0, 2, 8.0)
    assert est.design == "2 seeds" and est.prompts == 0


def test_the_array_needs_a_seed_and_two_prompts_and_the_bootstrap_seed_defaults_to_0():
    """The smallest arrays read: one seed (an infinite interval) and two prompts; fewer of either is
    refused; the default bootstrap seed is 0, so the same array gives the same interval."""
    for shape in ((0, 5), (3, 1), (3,)):
        with pytest.raises(ValueError, match=r"at least 2 prompts, got shape"):
            seeds_by_prompts(np.ones(shape), SAMPLES)
    one_seed = seeds_by_prompts([[0.0, 1.0]], SAMPLES)
    assert (one_seed.mean, one_seed.lo, one_seed.hi, one_seed.se, one_seed.df, one_seed.detectable) == (
        0.5,
        -np.inf,
        np.inf,
        np.inf,
        0.0,
        np.inf,
    )
    two = seeds_by_prompts([[0.0, 1.0], [0.5, 1.0]], SAMPLES)
    assert np.isfinite(two.lo) and two.lo < two.mean == 0.625 < two.hi
    y = np.random.default_rng(3).random((3, 5))
    assert seeds_by_prompts(y, SAMPLES) == seeds_by_prompts(y, SAMPLES, seed=0) != seeds_by_prompts(y, SAMPLES, seed=1)
