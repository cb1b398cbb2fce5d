"""The analyzer's problem-bootstrap intervals on 1000 simulated data sets whose true population Pass@k,
Cover@tau and k* are known (computed by quadrature over the prompt distribution, not by the analyzer).

Prompts: the reference's success rate p ~ Beta(0.5, 2); the model sharpens each prompt with
probability 1/2 (p -> 1 - (1 - p)^4) and loses it otherwise (p -> p / 10), the pattern of Yue et al.
2025; the population truths are integrals over p, averaged over the two fates."""

import numpy as np
import pytest
from scipy import integrate, stats

from escov.paper_checks.coverage.measure import bootstrap_weights
from escov.theory.coverage import cover_at_tau, crossing_k, k_grid, pass_at_k_table, percentile_interval

A, B = 0.5, 2.0
PROMPTS, N, REPLICATES, DATASETS = 200, 32, 500, 1000
TAU = 0.5
KS = k_grid(N)


def sharpen(p):
    return 1 - (1 - p) ** 4


def lose(p):
    return p / 10


def population(f_of_p) -> float:
    """E over the prompt distribution of f(p), p ~ Beta(A, B), by quadrature."""
    return integrate.quad(lambda p: f_of_p(p) * stats.beta.pdf(p, A, B), 0, 1, limit=200)[0]


def truths():
    def passk(rate, k):
        return population(lambda p: 1 - (1 - rate(p)) ** k)

    def cover(rate):
        need = int(np.ceil(TAU * N))
        return population(lambda p: stats.binom.sf(need - 1, N, rate(p)))

    ref = np.array([passk(lambda p: p, k) for k in KS])
    model = np.array([(passk(sharpen, k) + passk(lose, k)) / 2 for k in KS])
    return {
        "ref": ref,
        "model": model,
        "k_star": float(crossing_k(KS, model, ref)),
        "k_star_interpolated": float(crossing_k(KS, model, ref, interpolate=True)),
        "cover_ref": cover(lambda p: p),
        "cover_model": (cover(sharpen) + cover(lose)) / 2,
    }


def simulate(truth, datasets=DATASETS, seed=0):
    """Per data set: does each interval hold its truth? -> dict of hit arrays."""
    rng = np.random.default_rng(seed)
    hits = {"ref": [], "model": [], "cover_ref": [], "cover_model": [], "k_star": [], "k_star_interpolated": []}
    for d in range(datasets):
        p = rng.beta(A, B, PROMPTS)
        pm = np.where(rng.random(PROMPTS) < 0.5, sharpen(p), lose(p))  # each prompt sharpened or lost, at random
        c_ref, c_model = rng.binomial(N, p), rng.binomial(N, pm)
        w = bootstrap_weights(PROMPTS, REPLICATES, seed=d)
        reps = {}
        for key, c in (("ref", c_ref), ("model", c_model)):
            reps[key] = w @ pass_at_k_table(c, N, KS) / PROMPTS
            lo, hi = np.quantile(reps[key], [0.025, 0.975], axis=0)
            hits[key].append((lo <= truth[key]) & (truth[key] <= hi))
            lo, hi = percentile_interval(w @ cover_at_tau(c, N, TAU) / PROMPTS)
            hits["cover_" + key].append(lo <= truth["cover_" + key] <= hi)
        for key, interpolate in (("k_star", False), ("k_star_interpolated", True)):
            stars = crossing_k(KS, reps["model"], reps["ref"], interpolate=interpolate)
            lo, hi = np.quantile(np.where(np.isnan(stars), np.inf, stars), [0.025, 0.975], method="inverted_cdf")
            hits[key].append(lo <= truth[key] <= hi)
    return {k: np.array(v) for k, v in hits.items()}


@pytest.fixture(scope="module")
def calibration():
    truth = truths()
    assert 1 < truth["k_star"] < N  # the design has a crossing inside the grid
    return truth, simulate(truth)


def test_pass_at_k_intervals_hold_the_truth_95_percent_of_the_time(calibration):
    _, hits = calibration
    for key in ("ref", "model"):
        rates = hits[key].mean(axis=0)
        print(key, dict(zip(KS, np.round(rates, 3))))
        assert np.all(np.abs(rates - 0.95) <= 0.02), (key, rates)


def test_cover_at_tau_intervals_hold_the_truth_95_percent_of_the_time(calibration):
    _, hits = calibration
    for key in ("cover_ref", "cover_model"):
        print(key, hits[key].mean())
        assert abs(hits[key].mean() - 0.95) <= 0.02


def test_k_star_interval_coverage_is_reported(calibration):
    """k* is a ratio-like functional of two curves: its percentile interval is reported, not promised at 95%."""
    truth, hits = calibration
    for key in ("k_star", "k_star_interpolated"):
        rate = hits[key].mean()
        print(f"true {key} {truth[key]:.3f}: interval coverage {rate:.3f} over {DATASETS} data sets")
        assert rate >= 0.85
