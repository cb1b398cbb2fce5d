"""Every standard error and interval of paper_checks/lemma_grid.py on synthetic data with a known truth, checked for
coverage (near 95%) AND width (the mean squared standard error against the estimator's variance, from its closed form
or from its spread over the replications): an interval too wide is as wrong as one too narrow. Each at a small and a
larger design, so that an error growing with the draws, rows or sigmas shows."""

import math

import numpy as np
import pytest
from scipy import stats

from escov.paper_checks.lemma_grid import _n_factor, _slope, pooled_ratio, row_statistics

REPS = 1500


def _half_log(ci) -> float:
    return math.log(ci[1] / ci[0]) / 2


@pytest.mark.parametrize("draws", [3, 25])
def test_a_rows_ratio_interval_covers_the_true_ratio_with_the_width_of_its_log_ratios_spread(draws):
    """Q spread widely (gamma), JSpol = R Q exp(s Z): log(JSpol / Q) ~ N(log R, s^2), whose mean has variance
    s^2 / D; the t interval on D - 1 df covers R 95% of the time."""
    rng = np.random.default_rng(draws)
    truth, s = 1.07, 0.3
    covered, se_sq = 0, []
    for _ in range(REPS):
        q = rng.gamma(1.0, 2e-3, size=draws)
        r = row_statistics(truth * q * np.exp(s * rng.normal(size=draws)), q)
        covered += r["ratio_ci"][0] <= truth <= r["ratio_ci"][1]
        se_sq.append(r["ratio_se_log"] ** 2)
        assert _half_log(r["ratio_ci"]) == pytest.approx(stats.t.ppf(0.975, draws - 1) * r["ratio_se_log"])
        assert r["ratio_df"] == draws - 1
    assert 0.93 <= covered / REPS <= 0.97
    assert np.mean(se_sq) / (s**2 / draws) == pytest.approx(1.0, abs=0.08)


@pytest.mark.parametrize("draws", [3, 25])
def test_a_rows_measured_and_predicted_standard_errors_are_those_of_their_means(draws):
    """JSpol ~ N(0.02, 0.004^2) and Q ~ N(0.01, 0.001^2) per draw: mean +- t_{D-1} se covers each true mean 95% of the
    time, and E se^2 = sd^2 / D."""
    rng = np.random.default_rng(100 + draws)
    truths = {"measured": (0.02, 0.004), "predicted": (0.01, 0.001)}
    t = stats.t.ppf(0.975, draws - 1)
    covered = {k: 0 for k in truths}
    se_sq = {k: [] for k in truths}
    for _ in range(REPS):
        js = 0.02 + 0.004 * rng.normal(size=draws)
        q = 0.01 + 0.001 * rng.normal(size=draws)
        r = row_statistics(js, q)
        for key, (mu, _) in truths.items():
            covered[key] += abs(r[key] - mu) <= t * r[f"{key}_se"]
            se_sq[key].append(r[f"{key}_se"] ** 2)
    for key, (_, sd) in truths.items():
        assert 0.93 <= covered[key] / REPS <= 0.97, key
        assert np.mean(se_sq[key]) / (sd**2 / draws) == pytest.approx(1.0, abs=0.08), key


def _row(rng, truth: float, s: float, draws: int, **fields) -> dict:
    q = rng.gamma(2.0, 1e-3, size=draws)
    return row_statistics(truth * q * np.exp(s * rng.normal(size=draws)), q) | fields


@pytest.mark.parametrize("design", [((0.2, 4), (0.05, 6)), ((0.2, 4), (0.05, 6), (0.1, 12), (0.3, 5), (0.15, 8))])
def test_the_pooled_ratio_covers_the_common_ratio_with_the_width_of_its_mean_log_ratio(design):
    """Rows of unequal precision (s, D) at one true ratio: the plain mean of their log ratios has variance
    sum_i (s_i^2 / D_i) / R^2 (R rows); its interval, t on the Welch-Satterthwaite df, covers 95%."""
    rng = np.random.default_rng(len(design))
    truth = 0.95
    true_var = sum(s**2 / d for s, d in design) / len(design) ** 2
    covered, var_hat, logs = 0, [], []
    for _ in range(REPS):
        p = pooled_ratio([_row(rng, truth, s, d) for s, d in design])
        covered += p["ci"][0] <= truth <= p["ci"][1]
        var_hat.append((_half_log(p["ci"]) / stats.t.ppf(0.975, p["df"])) ** 2)
        logs.append(math.log(p["ratio"]))
        assert p["rows"] == len(design)
    assert 0.93 <= covered / REPS <= 0.975
    assert np.mean(var_hat) / true_var == pytest.approx(1.0, abs=0.08)
    assert np.var(logs) / true_var == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("sigmas", [(1e-3, 4e-3), (1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2)])
def test_the_exponents_interval_covers_the_true_exponent_with_the_width_of_the_fits_spread(sigmas):
    """Rows at N = 4 and 16, JSpol / Q = c_N sigma^(b - 2) exp(s Z) with b = 2.3: the weighted slope's interval covers
    b about 95% of the time (the weights are the rows' estimated errors, so a little above is allowed) and its
    standard error matches the spread of the fitted exponent over the replications."""
    rng = np.random.default_rng(len(sigmas))
    b, s, draws = 2.3, 0.2, 20
    covered, se_sq, fits = 0, [], []
    for _ in range(REPS // 3):
        rows = [
            _row(rng, c * sg ** (b - 2), s, draws, sigma=sg, members=n)
            for n, c in ((4, 0.9), (16, 1.1))
            for sg in sigmas
        ]
        fit = _slope(rows)
        covered += fit["ci"][0] <= b <= fit["ci"][1]
        half = (fit["ci"][1] - fit["ci"][0]) / 2
        se_sq.append((half / stats.t.ppf(0.975, draws - 1)) ** 2)
        fits.append(fit["exponent"])
        assert fit["rows"] == 2 * len(sigmas)
    assert 0.93 <= covered / (REPS // 3) <= 0.985
    x = np.log(sigmas)
    true_var = s**2 / draws / (2 * np.sum((x - x.mean()) ** 2))  # equal weights within each N: OLS's variance
    assert np.mean(se_sq) / true_var == pytest.approx(1.0, abs=0.15)
    assert np.var(fits) / true_var == pytest.approx(1.0, abs=0.2)
    assert np.mean(fits) == pytest.approx(b, abs=0.02)


@pytest.mark.parametrize("sigmas", [(1e-3,), (1e-3, 2e-3, 4e-3, 8e-3)])
def test_the_n_factors_interval_covers_the_true_factor_with_the_width_of_its_mean_log_ratio(sigmas):
    """Rows at N = 2 and 8 at each sigma, the N = 2 ratio a factor 1.15 above the N = 8 one: the factor's interval
    (the mean over sigmas of log R_2 - log R_8, variance sum of both rows' s^2 / D over K sigmas, / K^2) covers 1.15
    at about 95% (t on the smallest df: a little above) and its se^2 averages to that variance."""
    rng = np.random.default_rng(10 + len(sigmas))
    factor, s2, s8, d2, d8 = 1.15, 0.25, 0.1, 6, 10
    k = len(sigmas)
    true_var = k * (s2**2 / d2 + s8**2 / d8) / k**2
    df = min(d2, d8) - 1
    covered, var_hat = 0, []
    for _ in range(REPS):
        rows = [_row(rng, factor, s2, d2, sigma=sg, members=2) for sg in sigmas]
        rows += [_row(rng, 1.0, s8, d8, sigma=sg, members=8) for sg in sigmas]
        f = _n_factor(rows)["2"]
        assert f["against"] == 8 and f["sigmas"] == list(sigmas)
        covered += f["ci"][0] <= factor <= f["ci"][1]
        var_hat.append((_half_log(f["ci"]) / stats.t.ppf(0.975, df)) ** 2)
    assert 0.94 <= covered / REPS <= 0.99
    assert np.mean(var_hat) / true_var == pytest.approx(1.0, abs=0.08)
