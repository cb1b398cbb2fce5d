"""The Lemma 1 grid: its statistics against hand computations, its decision rule on synthetic data with a
known truth, and one small grid on the tiny model."""

import json
import math
import re
import statistics

import numpy as np
import pytest
from scipy import stats as st

from escov.paper_checks.evidence import load_lemma_grid
from escov.paper_checks.lemma_grid import (
    TARGET_WIDTH,
    _n_factor,
    _slope,
    draws_for_width,
    draws_needed,
    lemma1_decision,
    pooled_ratio,
    row_statistics,
    summarize_grid,
)
from escov.paper_checks.reproduce.lemma_grid_measurement import GridDesign, _mean_ci, measure_grid
from escov.theory.decisions import FAILS, HOLDS, INCONCLUSIVE

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_row_statistics_by_hand():
    js = np.array([0.009, 0.010, 0.012, 0.010])
    q = np.array([0.010, 0.011, 0.012, 0.009])
    r = row_statistics(js, q)
    log_ratio = np.log(js / q)
    ratio = math.exp(log_ratio.mean())
    se = log_ratio.std(ddof=1) / 2
    half = st.t.ppf(0.975, 3) * se
    assert r["predicted"] == pytest.approx(q.mean()) and r["ratio"] == pytest.approx(ratio)
    assert r["ratio_of_means"] == pytest.approx(js.sum() / q.sum())
    assert r["ratio_se_log"] == pytest.approx(se) and r["ratio_df"] == 3
    assert r["ratio_ci"] == pytest.approx([ratio * math.exp(-half), ratio * math.exp(half)])
    assert r["ratios"] == pytest.approx((js / q).tolist())
    assert r["measured_se"] == pytest.approx(js.std(ddof=1) / 2)
    assert row_statistics(np.array([0.01, 0.0]), np.array([0.01, 0.01]))["ratio_ci"] == [-math.inf, math.inf]


ROW_KEYS = {
    "measured",
    "measured_se",
    "predicted",
    "predicted_se",
    "ratio",
    "ratio_ci",
    "ratio_df",
    "ratio_se_log",
    "ratio_of_means",
    "ratio_sd",
    "ratios",
}


def test_row_statistics_record_has_exactly_its_fields_each_by_hand():
    """Every field of the record against statistics/scipy on the same draws, and no other field."""
    js, q = [0.011, 0.010, 0.014, 0.012, 0.009], [0.010, 0.012, 0.011, 0.010, 0.010]
    r = row_statistics(js, q)
    assert set(r) == ROW_KEYS
    ratios = [a / b for a, b in zip(js, q)]
    logs = [math.log(x) for x in ratios]
    se = statistics.stdev(logs) / math.sqrt(5)
    half = st.t.ppf(0.975, 4) * se
    ratio = math.exp(statistics.fmean(logs))
    assert r["measured"] == pytest.approx(statistics.fmean(js), rel=1e-12)
    assert r["measured_se"] == pytest.approx(statistics.stdev(js) / math.sqrt(5), rel=1e-12)
    assert r["predicted"] == pytest.approx(statistics.fmean(q), rel=1e-12)
    assert r["predicted_se"] == pytest.approx(statistics.stdev(q) / math.sqrt(5), rel=1e-12)
    assert r["ratio"] == pytest.approx(ratio, rel=1e-12) and r["ratio_se_log"] == pytest.approx(se, rel=1e-12)
    assert r["ratio_ci"] == pytest.approx([ratio * math.exp(-half), ratio * math.exp(half)], rel=1e-12)
    assert r["ratio_df"] == 4.0 and r["ratio_of_means"] == pytest.approx(sum(js) / sum(q), rel=1e-12)
    assert r["ratio_sd"] == pytest.approx(statistics.stdev(ratios), rel=1e-12)
    assert r["ratios"] == pytest.approx(ratios, rel=1e-12)


def test_row_statistics_computes_float32_draws_in_double_precision():
    """Draws handed over as float32 (a tensor's numpy view) are read as doubles: every statistic equals the one
    computed in double precision from the same float32 values."""
    js = np.array([0.0091, 0.0102, 0.0123, 0.0101, 0.0097], dtype=np.float32)
    q = np.array([0.0103, 0.0111, 0.0117, 0.0093, 0.0099], dtype=np.float32)
    js64, q64 = [float(x) for x in js], [float(x) for x in q]
    for a, b in ((js, q), (js, q64), (js64, q)):
        r = row_statistics(a, b)
        assert r["measured"] == pytest.approx(statistics.fmean(js64), rel=1e-13, abs=0)
        assert r["measured_se"] == pytest.approx(statistics.stdev(js64) / math.sqrt(5), rel=1e-13, abs=0)
        assert r["predicted"] == pytest.approx(statistics.fmean(q64), rel=1e-13, abs=0)
        assert r["predicted_se"] == pytest.approx(statistics.stdev(q64) / math.sqrt(5), rel=1e-13, abs=0)
        assert r["ratio_of_means"] == pytest.approx(sum(js64) / sum(q64), rel=1e-13, abs=0)
        assert r["ratio"] == pytest.approx(
            math.exp(statistics.fmean([math.log(x / y) for x, y in zip(js64, q64)])), rel=1e-13, abs=0
        )


@pytest.mark.parametrize(
    "js, q, message",
    [
        ([0.01], [0.01], "row_statistics needs >= 2 draws of JSpol and of the prediction, got 1 and 1"),
        (
            [0.01, 0.02, 0.03],
            [0.01, 0.02],
            "row_statistics needs >= 2 draws of JSpol and of the prediction, got 3 and 2",
        ),
        (
            [0.01, 0.02],
            [0.01, 0.02, 0.03],
            "row_statistics needs >= 2 draws of JSpol and of the prediction, got 2 and 3",
        ),
    ],
)
def test_row_statistics_refuses_one_draw_or_unequal_counts_naming_both(js, q, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        row_statistics(js, q)


@pytest.mark.parametrize(
    "js, q",
    [
        ([0.01, 0.0, 0.012], [0.01, 0.011, 0.012]),  # a population with JSpol exactly 0
        ([0.01, 0.011, 0.012], [0.01, 0.0, 0.012]),  # a prediction exactly 0
        ([0.01, -0.001, 0.012], [0.01, 0.011, 0.012]),  # a negative estimate
    ],
)
def test_row_statistics_gives_no_ratio_when_a_draw_is_not_positive(js, q):
    """A ratio on the log scale needs every JSpol and Q > 0: otherwise the ratio is nan, its se infinite and its
    interval the whole line, while the plain means are still reported."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = row_statistics(js, q)
    assert math.isnan(r["ratio"]) and r["ratio_se_log"] == math.inf and r["ratio_ci"] == [-math.inf, math.inf]
    assert r["measured"] == pytest.approx(statistics.fmean(js)) and r["predicted"] == pytest.approx(statistics.fmean(q))


def test_mean_ci_is_the_mean_with_its_t_interval():
    v = [1.0, 2.0, 4.0, 7.0]
    mean, se = 3.5, statistics.stdev(v) / 2
    half = st.t.ppf(0.975, 3) * se
    r = _mean_ci(v)
    assert set(r) == {"mean", "ci"} and r["mean"] == pytest.approx(mean)
    assert r["ci"] == pytest.approx([mean - half, mean + half])


def _synthetic_row(rng, truth: float, cv: float, draws: int, sigma=2e-3, members=16, trace=5000.0, noise_cv=1.0):
    """A grid row from simulated populations: the prediction Q for the members drawn spreads widely with the noise
    (gamma, relative sd noise_cv, around (sigma^2/2)(1 - 1/N) tr I), and JSpol = truth x Q x (1 + cv x normal)."""
    mean_q = 0.5 * sigma**2 * (1 - 1 / members) * trace
    q = mean_q * rng.gamma(1 / noise_cv**2, noise_cv**2, size=draws)
    js = truth * q * np.exp(cv * rng.normal(size=draws))
    return row_statistics(js, q) | {
        "sigma": sigma,
        "members": members,
        "s_measured": 0.01,
        "draws": draws,
        "center_samples": 8,
    }


def test_decision_rule_on_synthetic_data_with_a_known_truth():
    """Sized by draws_for_width, the rule says "holds" at ratio 1 with power >= 80% and almost never "does not
    hold"; at ratio 1.2 it says "does not hold" with power >= 80% and almost never "holds"; at the margin
    (1.1) "holds" comes out no more often than the 2.5% a one-sided 95% bound allows (within noise). The noise's
    own spread of Q (relative sd 1, as at N = 2) does not enter: JSpol and Q move together."""
    rng = np.random.default_rng(7)
    cv, reps = 0.05, 400
    d = draws_for_width(cv)
    verdicts = {}
    for truth in (1.0, 1.1, 1.2):
        rows = [_synthetic_row(rng, truth, cv, d) for _ in range(reps)]
        verdicts[truth] = [lemma1_decision([r])["status"] for r in rows]
        if truth == 1.0:
            widths = [r["ratio_ci"][1] - r["ratio_ci"][0] for r in rows]
            assert np.mean(widths) <= TARGET_WIDTH * 1.05  # the design delivers the width it was sized for
            coverage = np.mean([r["ratio_ci"][0] <= 1.0 <= r["ratio_ci"][1] for r in rows])
            assert 0.92 <= coverage <= 0.98
    share = lambda truth, status: np.mean([v == status for v in verdicts[truth]])
    assert share(1.0, HOLDS) >= 0.8 and share(1.0, FAILS) <= 0.01
    assert share(1.2, FAILS) >= 0.8 and share(1.2, HOLDS) <= 0.01
    assert share(1.1, HOLDS) <= 0.05


def test_pooled_decision_of_several_rows_on_synthetic_data():
    """Rows of different precision pooled: coverage of the pooled interval at a known ratio, and the verdict."""
    rng = np.random.default_rng(11)
    for truth, want in ((1.0, HOLDS), (1.25, FAILS)):
        runs = [
            [
                _synthetic_row(rng, truth, cv, d, sigma=sg)
                for cv, d, sg in ((0.03, 4, 1e-3), (0.1, 12, 2e-3), (0.05, 6, 4e-3))
            ]
            for _ in range(300)
        ]
        pooled = [pooled_ratio(rows) for rows in runs]
        coverage = np.mean([p["ci"][0] <= truth <= p["ci"][1] for p in pooled])
        assert 0.92 <= coverage <= 0.985
        assert np.mean([lemma1_decision(rows)["status"] == want for rows in runs]) >= 0.9


def test_an_unsized_design_stays_inconclusive_rather_than_deciding():
    rng = np.random.default_rng(3)
    verdicts = [lemma1_decision([_synthetic_row(rng, 1.0, 0.3, 3)])["status"] for _ in range(200)]
    assert np.mean([v == INCONCLUSIVE for v in verdicts]) > 0.9


def test_draws_for_width_is_the_fewest_that_reach_the_width():
    d = draws_for_width(0.1)
    for dd, ok in ((d, True), (d - 1, False)):
        half = st.t.ppf(0.975, dd - 1) * 0.1 / math.sqrt(dd)
        assert (2 * math.sinh(half) <= TARGET_WIDTH) == ok
    assert draws_for_width(3.0, most=100) is None
    pilot = [_synthetic_row(np.random.default_rng(0), 1.0, 0.1, 5)]
    need = draws_needed(pilot)[0]
    assert need["population_cv"] == pytest.approx(pilot[0]["ratio_se_log"] * math.sqrt(5))
    assert need["draws"] == draws_for_width(need["population_cv"])


def _width(d: int, cv: float) -> float:
    """The ratio interval's width on d draws of log-scale sd cv: exp(h) - exp(-h) = 2 sinh(h),
    h = t_{d-1} cv / sqrt(d)."""
    return 2 * math.sinh(st.t.ppf(0.975, d - 1) * cv / math.sqrt(d))


def _cv_reaching(d: int, width: float = TARGET_WIDTH) -> float:
    """The population sd whose interval on d draws is exactly `width` wide."""
    return math.asinh(width / 2) * math.sqrt(d) / st.t.ppf(0.975, d - 1)


def test_draws_for_width_gives_each_small_draw_count_between_its_thresholds():
    """Halfway between the sd that d - 1 draws just reach and the one d draws just reach, d is the answer (2 for any
    sd below the two-draw threshold)."""
    for d in range(2, 9):
        cv = (_cv_reaching(d - 1) + _cv_reaching(d)) / 2 if d > 2 else _cv_reaching(2) / 2
        assert _width(d, cv) <= TARGET_WIDTH and (d == 2 or _width(d - 1, cv) > TARGET_WIDTH)
        assert draws_for_width(cv) == d


def test_draws_for_width_accepts_a_width_reached_exactly():
    h = st.t.ppf(0.975, 3) * 0.05 / math.sqrt(4)
    width = math.exp(h) - math.exp(-h)  # the width 4 draws give, to the last bit
    assert _width(3, 0.05) > width
    assert draws_for_width(0.05, width=width) == 4


def test_draws_for_width_tries_up_to_most_and_no_further():
    cv5, cv6 = (_cv_reaching(4) + _cv_reaching(5)) / 2, (_cv_reaching(5) + _cv_reaching(6)) / 2
    assert draws_for_width(cv5, most=5) == 5 and draws_for_width(cv6, most=5) is None
    assert draws_for_width(cv6, most=6) == 6
    # the default most is 10,000: an sd that needs exactly 10,001 draws gets None
    cv = (_cv_reaching(10_000) + _cv_reaching(10_001)) / 2
    assert _width(10_001, cv) <= TARGET_WIDTH < _width(10_000, cv)
    assert draws_for_width(cv) is None


def test_draws_needed_records_each_pilot_row_at_the_width_asked():
    pilot = [
        {"sigma": 2e-3, "members": 8, "s_measured": 0.02, "ratio_se_log": 0.03, "draws": 4, "ratio": 1.01},
        {"sigma": 4e-3, "members": 2, "s_measured": 0.07, "ratio_se_log": 0.01, "draws": 9, "ratio": 0.9},
    ]
    fewest = lambda cv, width: next(d for d in range(2, 10_000) if _width(d, cv) <= width)
    out = draws_needed(pilot, width=0.2)
    assert len(out) == 2
    for rec, (sigma, n, s, cv) in zip(out, ((2e-3, 8, 0.02, 0.06), (4e-3, 2, 0.07, 0.03))):
        assert set(rec) == {"sigma", "members", "s_measured", "population_cv", "draws"}
        assert (rec["sigma"], rec["members"], rec["s_measured"]) == (sigma, n, s)
        assert rec["population_cv"] == pytest.approx(cv)
        assert rec["draws"] == fewest(cv, 0.2) and fewest(cv, 0.2) < fewest(cv, TARGET_WIDTH)
    assert [r["draws"] for r in draws_needed(pilot)] == [fewest(0.06, TARGET_WIDTH), fewest(0.03, TARGET_WIDTH)]


def _row(s, lo, hi, draws=20):
    """A row whose interval is [lo, hi] (t on draws - 1 df, symmetric on the log scale)."""
    se = math.log(hi / lo) / 2 / st.t.ppf(0.975, draws - 1)
    return {
        "sigma": 1e-3,
        "members": 4,
        "s_measured": s,
        "ratio": math.sqrt(lo * hi),
        "ratio_ci": [lo, hi],
        "ratio_se_log": se,
        "ratio_df": float(draws - 1),
        "draws": draws,
        "center_samples": 8,
    }


def test_decision_pools_the_rows_inside_the_regime_and_fails_on_any_row_outside():
    assert lemma1_decision([_row(0.2, 0.5, 0.6)]) is None  # nothing inside the regime
    assert lemma1_decision([_row(0.01, 0.95, 1.05), _row(0.2, 0.5, 0.6)])["status"] == HOLDS
    # a wide row does not block the pooled decision of precise ones (it widens it: equal weights); a row wholly
    # outside the margin does
    assert (
        lemma1_decision([_row(0.01, 0.97, 1.03), _row(0.012, 0.97, 1.03), _row(0.04, 0.9, 1.12, draws=4)])["status"]
        == HOLDS
    )
    assert lemma1_decision([_row(0.01, 0.97, 1.03), _row(0.04, 0.8, 1.05, draws=4)])["status"] == INCONCLUSIVE
    assert lemma1_decision([_row(0.01, 0.95, 1.05), _row(0.05, 1.12, 1.2)])["status"] == FAILS
    assert lemma1_decision([_row(0.01, 0.7, 1.3, draws=3)])["status"] == INCONCLUSIVE
    # rows written before the paired design (no center_samples) decide nothing
    assert lemma1_decision([{k: v for k, v in _row(0.01, 0.95, 1.05).items() if k != "center_samples"}]) is None


@pytest.mark.parametrize("field", ["ratio", "ratio_se_log", "ratio_df", "center_samples"])
def test_decision_leaves_out_a_row_with_a_pooled_field_of_zero(field):
    """A row whose ratio, se_log, df or center_samples is 0 (all draws alike, a row without a paired prediction)
    decides nothing; beside a usable row it leaves that row's verdict alone."""
    bad = _row(0.01, 0.95, 1.05) | {field: 0.0, "sigma": 5e-3}
    assert lemma1_decision([bad]) is None
    d = lemma1_decision([_row(0.01, 0.97, 1.03), bad])
    assert d["rows"] == [{"sigma": 1e-3, "members": 4, "status": HOLDS}] and d["pooled"]["rows"] == 1


def test_decision_fails_on_a_row_wholly_below_the_margin_though_the_pool_holds():
    """Three precise rows at about 1 and one wholly below 0.9: pooled, the ratio lies inside 1 +- 10% (the plain mean of
    the logs, by hand below), but the low row alone says "does not hold"."""
    rows = [
        _row(0.01, 0.99, 1.01) | {"sigma": 1e-3},
        _row(0.01, 0.99, 1.01) | {"sigma": 2e-3},
        _row(0.01, 0.99, 1.01) | {"sigma": 3e-3},
        _row(0.02, 0.8, 0.88) | {"sigma": 4e-3},
    ]
    d = lemma1_decision(rows)
    se = [r["ratio_se_log"] for r in rows]
    log_mean = (3 * math.log(math.sqrt(0.99 * 1.01)) + math.log(math.sqrt(0.8 * 0.88))) / 4
    var = sum(x**2 for x in se) / 16
    df = var**2 / sum((x**2 / 16) ** 2 / 19 for x in se)
    half = st.t.ppf(0.975, df) * math.sqrt(var)
    lo, hi = math.exp(log_mean - half), math.exp(log_mean + half)
    assert 0.9 < lo < hi < 1.1 and d["pooled"]["ci"] == pytest.approx([lo, hi])
    assert d["pooled"]["status"] == HOLDS and d["status"] == FAILS
    assert d["rows"] == [
        {"sigma": 1e-3, "members": 4, "status": HOLDS},
        {"sigma": 2e-3, "members": 4, "status": HOLDS},
        {"sigma": 3e-3, "members": 4, "status": HOLDS},
        {"sigma": 4e-3, "members": 4, "status": FAILS},
    ]


def test_pooled_ratio_by_hand():
    rows = [_row(0.01, 0.98, 1.02, draws=11), _row(0.02, 1.03, 1.07, draws=6), _row(0.03, 1.08, 1.2, draws=4)]
    p = pooled_ratio(rows)
    se = np.array([r["ratio_se_log"] for r in rows])
    log_mean = (0.5 * math.log(0.98 * 1.02) + 0.5 * math.log(1.03 * 1.07) + 0.5 * math.log(1.08 * 1.2)) / 3
    c = se**2 / 9
    var = c.sum()
    df = var**2 / (c[0] ** 2 / 10 + c[1] ** 2 / 5 + c[2] ** 2 / 3)
    half = st.t.ppf(0.975, df) * math.sqrt(var)
    assert p["ratio"] == pytest.approx(math.exp(log_mean))
    assert p["ci"] == pytest.approx([math.exp(log_mean - half), math.exp(log_mean + half)]) and p[
        "df"
    ] == pytest.approx(df)


def test_pooled_ratio_record_names_its_rows():
    rows = [_row(0.01, 0.98, 1.02, draws=11), _row(0.02, 1.03, 1.07, draws=6)]
    p = pooled_ratio(rows)
    assert set(p) == {"ratio", "ci", "df", "rows"} and p["rows"] == 2


def _rows_with_known_scaling(exponent=2.0, n_power=1.0):
    """JSpol = sigma^exponent (1 - 1/N)^n_power x 100, its ratio to the prediction (sigma^2/2)(1 - 1/N) 200 measured
    to 1% from 10 draws."""
    rows = []
    for n in (2, 4, 32):
        for sigma in (1e-3, 2e-3, 4e-3, 2e-2):
            m = sigma**exponent * (1 - 1 / n) ** n_power * 100
            pred = 0.5 * sigma**2 * (1 - 1 / n) * 200
            s = 0.5 * sigma**2 * 200 * (1 + (sigma / 4e-3) ** 2)
            ratio = m / pred * (1 - (0.3 if sigma == 2e-2 else 0.0))
            rows.append(
                {
                    "sigma": sigma,
                    "members": n,
                    "draws": 10,
                    "measured": m,
                    "measured_se": 0.01 * m,
                    "ratio": ratio,
                    "ratio_ci": [ratio * 0.98, ratio * 1.02],
                    "ratio_se_log": 0.01,
                    "ratio_df": 9.0,
                    "s_measured": s,
                }
            )
    return rows


def test_summary_recovers_a_known_exponent_n_factor_and_departure():
    g = summarize_grid(_rows_with_known_scaling())
    assert g["exponent_in_regime"]["exponent"] == pytest.approx(2.0)
    lo, hi = g["exponent_in_regime"]["ci"]
    assert lo < 2.0 < hi and hi - lo < 0.2
    for n in ("2", "4"):
        assert g["n_factor"][n]["factor"] == pytest.approx(1.0) and g["n_factor"][n]["decision"] == HOLDS
    dep = g["departure"]["4"]
    assert dep["last_s_inside"] == pytest.approx(0.5 * 4e-3**2 * 200 * 2)
    assert dep["first_s_outside"] == pytest.approx(0.5 * 2e-2**2 * 200 * 26)
    # tr I over the grid: rows weighted by their Hutchinson probes, draws x (N - 1)
    traced = [r | {"fisher_trace": 100.0 * r["members"]} for r in _rows_with_known_scaling()]
    assert summarize_grid(traced)["fisher_trace"] == pytest.approx((1 * 200 + 3 * 400 + 31 * 3200) / 35)
    wrong = summarize_grid(_rows_with_known_scaling(exponent=1.5, n_power=0.5))
    assert wrong["exponent_in_regime"]["exponent"] == pytest.approx(1.5)
    assert wrong["n_factor"]["2"]["decision"] == FAILS  # (1 - 1/N)^0.5 instead of (1 - 1/N): 1.39 at N = 2


def _fit_row(sigma, members, ratio, se, df=9.0):
    return {"sigma": sigma, "members": members, "ratio": ratio, "ratio_se_log": se, "ratio_df": df}


def _wls_exponent(rows):
    """2 + the slope of log R on log sigma by weighted least squares with an intercept per N, solved as the normal
    equations of the full design (log sigma and one indicator per N; weights 1 / se^2); the slope's se from the
    inverse of X^T W X. A group with one row only fixes its own intercept, so it adds nothing to the slope."""
    groups = sorted({r["members"] for r in rows})
    x = np.array([[math.log(r["sigma"])] + [float(r["members"] == g) for g in groups] for r in rows])
    y = np.log([r["ratio"] for r in rows])
    w = np.array([r["ratio_se_log"] ** -2 for r in rows])
    cov = np.linalg.inv(x.T @ (w[:, None] * x))
    beta = cov @ (x.T @ (w * y))
    return 2 + beta[0], math.sqrt(cov[0, 0])


def test_slope_is_the_weighted_fit_with_an_intercept_per_n():
    """Unequal weights within each N (the weighted centring matters), a first N with one sigma only (skipped, and
    its df ignored), the smallest df of the rows used (in the first usable N, not the last) in the t interval."""
    rows = [
        _fit_row(3e-3, 2, 1.4, 0.05, df=1.0),
        _fit_row(1e-3, 4, 1.00, 0.01, df=3.0),
        _fit_row(2e-3, 4, 1.05, 0.04, df=9.0),
        _fit_row(4e-3, 4, 1.08, 0.02, df=9.0),
        _fit_row(1e-3, 8, 0.97, 0.03, df=9.0),
        _fit_row(3e-3, 8, 1.10, 0.01, df=9.0),
    ]
    g = _slope(rows)
    exponent, se = _wls_exponent(rows)
    half = st.t.ppf(0.975, 3) * se
    assert exponent > 2.05 and g["exponent"] == pytest.approx(exponent, rel=1e-12)
    assert g["ci"] == pytest.approx([exponent - half, exponent + half], rel=1e-12) and g["rows"] == 5
    assert _slope(rows[:1]) is None


@pytest.mark.parametrize(
    "bad",
    [
        {"ratio": 0.0},
        {"ratio": -1.0},
        {"ratio": math.nan},
        {"ratio_se_log": 0.0},
        {"ratio_se_log": math.inf},
        {"ratio_df": 0.0},
        {"ratio_df": math.nan},
    ],
)
def test_slope_and_n_factor_leave_out_a_row_without_a_usable_ratio(bad):
    """A row with a ratio, se_log or df that is not finite and > 0 enters neither the exponent nor the N factor."""
    good = [
        _fit_row(1e-3, 4, 1.00, 0.01),
        _fit_row(2e-3, 4, 1.05, 0.04),
        _fit_row(4e-3, 4, 1.08, 0.02),
        _fit_row(1e-3, 8, 1.01, 0.02),
        _fit_row(2e-3, 8, 1.02, 0.02),
    ]
    rows = good + [_fit_row(8e-3, 4, 0.7, 0.02) | bad, _fit_row(4e-3, 8, 0.6, 0.03) | bad]
    exponent, se = _wls_exponent(good)
    with np.errstate(divide="ignore", invalid="ignore"):
        g, f = _slope(rows), _n_factor(rows)
    assert g["exponent"] == pytest.approx(exponent, rel=1e-12) and g["rows"] == 5
    assert g["ci"] == pytest.approx([exponent - st.t.ppf(0.975, 9) * se, exponent + st.t.ppf(0.975, 9) * se], rel=1e-12)
    assert list(f) == ["4"] and f["4"]["sigmas"] == [1e-3, 2e-3]


def test_slope_uses_a_row_of_two_draws_with_its_one_df():
    rows = [_fit_row(1e-3, 4, 1.00, 0.01, df=1.0), _fit_row(2e-3, 4, 1.05, 0.04), _fit_row(4e-3, 4, 1.08, 0.02)]
    exponent, se = _wls_exponent(rows)
    g = _slope(rows)
    assert g["ci"] == pytest.approx([exponent - st.t.ppf(0.975, 1) * se, exponent + st.t.ppf(0.975, 1) * se], rel=1e-12)


def test_n_factor_compares_each_n_with_the_largest_at_the_sigmas_both_have():
    """N = 2 shares no sigma with the largest N (16): skipped, and N = 4 after it still compared; N = 4 lacks
    4e-3 and has 3e-3 the largest lacks, so only 1e-3 and 2e-3 enter: the geometric mean of R_4 / R_16 there, its
    se sqrt(sum of both rows' se^2) / 2, t on the smallest df."""
    rows = [
        _fit_row(5e-3, 2, 1.2, 0.02),
        _fit_row(1e-3, 4, 1.30, 0.02, df=5.0),
        _fit_row(2e-3, 4, 1.22, 0.03),
        _fit_row(3e-3, 4, 1.5, 0.02),
        _fit_row(1e-3, 16, 0.98, 0.01),
        _fit_row(2e-3, 16, 1.01, 0.02, df=7.0),
        _fit_row(4e-3, 16, 1.0, 0.01),
    ]
    f = _n_factor(rows)
    logs = [math.log(1.30 / 0.98), math.log(1.22 / 1.01)]
    mean, se = sum(logs) / 2, math.sqrt(0.02**2 + 0.01**2 + 0.03**2 + 0.02**2) / 2
    half = st.t.ppf(0.975, 5) * se
    lo, hi = math.exp(mean - half), math.exp(mean + half)
    assert list(f) == ["4"] and set(f["4"]) == {"against", "sigmas", "factor", "ci", "decision"}
    assert f["4"]["against"] == 16 and f["4"]["sigmas"] == [1e-3, 2e-3]
    assert f["4"]["factor"] == pytest.approx(math.exp(mean), rel=1e-12) and f["4"]["ci"] == pytest.approx(
        [lo, hi], rel=1e-12
    )
    assert lo - 1 >= 0.1 and f["4"]["decision"] == FAILS  # wholly above 1 + 10%
    assert _n_factor(rows[4:]) == {}  # one N: nothing to compare


def _ci_row(sigma, members, s, lo, hi, draws=10):
    return _row(s, lo, hi, draws) | {"sigma": sigma, "members": members}


def test_summary_per_n_reads_its_own_rows_inside_the_regime_and_which_sigmas_lie_within():
    """Per N: the exponent from that N's rows inside the regime only and over all its rows, and its sigmas whose
    interval lies inside 1 +- 10% (an interval reaching below 0.9 does not) and the others, in row order."""
    rows = [
        _ci_row(1e-3, 2, 0.01, 0.98, 1.02),
        _ci_row(2e-3, 2, 0.02, 0.85, 1.05),
        _ci_row(4e-3, 2, 0.2, 0.6, 0.7),
        _ci_row(1e-3, 4, 0.01, 0.95, 1.0),
        _ci_row(2e-3, 4, 0.03, 1.05, 1.15),
        _ci_row(8e-3, 4, 0.3, 1.3, 1.4),
    ]
    g = summarize_grid(rows)
    assert list(g["per_members"]) == ["2", "4"]
    for n, sub in (("2", rows[:3]), ("4", rows[3:])):
        p = g["per_members"][n]
        assert set(p) == {"exponent_in_regime", "exponent_all", "sigmas_within", "sigmas_not_within"}
        assert p["exponent_in_regime"]["exponent"] == pytest.approx(_wls_exponent(sub[:2])[0], rel=1e-12)
        assert p["exponent_all"]["exponent"] == pytest.approx(_wls_exponent(sub)[0], rel=1e-12)
    assert g["per_members"]["2"]["sigmas_within"] == [1e-3] and g["per_members"]["2"]["sigmas_not_within"] == [
        2e-3,
        4e-3,
    ]
    assert g["per_members"]["4"]["sigmas_within"] == [1e-3] and g["per_members"]["4"]["sigmas_not_within"] == [
        2e-3,
        8e-3,
    ]
    assert g["exponent_in_regime"]["exponent"] == pytest.approx(_wls_exponent(rows[:2] + rows[3:5])[0], rel=1e-12)
    # rows without tr I or the success side: no tr I, no data-processing share
    assert g["fisher_trace"] is None
    assert g["dpi"] == {
        "rows": 0,
        "rows_jssucc_below_0": 0,
        "rows_jssucc_above_jspol": 0,
        "share_of_populations_x_prompts": None,
    }


def test_summary_counts_data_processing_violations_only_when_the_interval_lies_below_zero():
    """JSsucc below 0 and JSsucc above JSpol are counted where the interval's upper end is below 0: an upper end of
    exactly 0 is not counted."""
    base = _ci_row(1e-3, 2, 0.01, 0.98, 1.02)
    rows = [
        base
        | {
            "jssucc": {"mean": -0.01, "ci": [-0.02, 0.0]},
            "jspol_minus_jssucc": {"mean": -0.01, "ci": [-0.02, 0.0]},
            "dpi_share": 0.5,
        },
        base
        | {
            "sigma": 2e-3,
            "jssucc": {"mean": -0.01, "ci": [-0.02, -1e-9]},
            "jspol_minus_jssucc": {"mean": 0.01, "ci": [0.0, 0.02]},
            "dpi_share": 0.75,
        },
        base
        | {
            "sigma": 4e-3,
            "jssucc": {"mean": 0.01, "ci": [0.0, 0.02]},
            "jspol_minus_jssucc": {"mean": -0.01, "ci": [-0.02, -1e-9]},
            "dpi_share": 1.0,
        },
    ]
    assert summarize_grid(rows)["dpi"] == {
        "rows": 3,
        "rows_jssucc_below_0": 1,
        "rows_jssucc_above_jspol": 1,
        "share_of_populations_x_prompts": pytest.approx(0.75),
    }


def test_grid_on_the_tiny_model_records_its_task_and_settings(tiny_model_dir, tmp_path):
    from escov.llm.tasks import get_task

    design = GridDesign(sigmas=(1e-3, 1e-2), members=(2,), draws={2: 3}, prompts=2, samples=2, center_samples=3)
    rows = measure_grid(
        tiny_model_dir,
        design,
        task=get_task("countdown3"),
        task_name="countdown3",
        temperature=0.6,
        max_new_tokens=6,
        progress=False,
    )
    assert [(r["sigma"], r["members"], r["draws"]) for r in rows] == [(1e-3, 2, 3), (1e-2, 2, 3)]
    for r in rows:
        assert (r["task"], r["temperature"], r["max_new_tokens"], r["prompts"], r["samples"], r["center_samples"]) == (
            "countdown3",
            0.6,
            6,
            2,
            2,
            3,
        )
        assert len(set(r["ratios"])) == 3  # each draw is its own population
        assert r["ratio_of_means"] == pytest.approx(r["measured"] / r["predicted"])
        assert r["ratio"] == pytest.approx(math.exp(np.mean(np.log(r["ratios"]))))
        assert r["in_regime"] == (r["s_measured"] <= 0.05)
        assert set(r["lemma2"]) == {"gap", "local", "gap_minus_local"} and 0 <= r["dpi_share"] <= 1
        # the prediction for N = 2 is (sigma^2 / 2) (1/2) (d^T I d) / 2 with d = eps_1 - eps_2,
        # tr I's estimate d^T I d / 2
        assert r["predicted"] == pytest.approx(0.25 * r["sigma"] ** 2 * r["fisher_trace"])
    assert rows[0]["ratios"] != rows[1]["ratios"]
    (tmp_path / "grid.json").write_text(json.dumps(rows))  # the report's reader accepts what the grid writes
    assert load_lemma_grid(tmp_path / "grid.json") == json.loads(json.dumps(rows))
    with pytest.raises(ValueError, match="draws"):
        GridDesign(sigmas=(1e-3,), members=(2,), draws={2: 1})
    with pytest.raises(ValueError, match="samples"):
        GridDesign(sigmas=(1e-3,), members=(2,), draws={2: 2}, samples=1)


_DESIGN = dict(sigmas=(1e-3,), members=(2,), draws={2: 2})


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(sigmas=()), "grid sigmas must be > 0, got []"),
        (dict(sigmas=(1e-3, -1e-3)), "grid sigmas must be > 0, got [0.001, -0.001]"),
        (dict(sigmas=(0.0,)), "grid sigmas must be > 0, got [0.0]"),
        (dict(members=()), "grid members must be integers >= 2, got []"),
        (dict(members=(2, 1), draws={2: 2, 1: 2}), "grid members must be integers >= 2, got [2, 1]"),
        (dict(members=(4.0,), draws={4: 2}), "grid members must be integers >= 2, got [4.0]"),
        (dict(members=(True,), draws={True: 2}), "grid members must be integers >= 2, got [True]"),
        (
            dict(draws={2: 1}),
            "grid draws for N = 2 must be an integer >= 2 (an interval over populations needs two), got 1",
        ),
        (
            dict(draws={2: 3.0}),
            "grid draws for N = 2 must be an integer >= 2 (an interval over populations needs two), got 3.0",
        ),
        (
            dict(draws={2: True}),
            "grid draws for N = 2 must be an integer >= 2 (an interval over populations needs two), got True",
        ),
        (
            dict(draws={4: 2}),
            "grid draws for N = 2 must be an integer >= 2 (an interval over populations needs two), got None",
        ),
        (dict(prompts=0), "grid prompts must be >= 1, got 0"),
        (dict(samples=0), "grid samples must be >= 1, got 0"),
        (dict(center_samples=0), "grid center_samples must be >= 1, got 0"),
        (dict(samples=1), "grid samples must be >= 2 (a population's JSpol needs its standard error), got 1"),
    ],
)
def test_grid_design_refuses_each_setting_naming_it_and_its_value(change, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        GridDesign(**(_DESIGN | change))


def test_grid_design_accepts_the_smallest_settings_and_lists_cells_n_major():
    """One prompt, two samples, one center sample and two draws are allowed; an N with its own sigmas
    (sigmas_of) uses them, the others all sigmas, in the order members are given."""
    assert GridDesign(**_DESIGN, prompts=1, samples=2, center_samples=1).cells() == [(1e-3, 2, 2)]
    design = GridDesign(sigmas=(1e-3, 2e-3), members=(4, 2, 8), draws={2: 3, 4: 5, 8: 2}, sigmas_of={4: (5e-3,)})
    assert design.cells() == [(5e-3, 4, 5), (1e-3, 2, 3), (2e-3, 2, 3), (1e-3, 8, 2), (2e-3, 8, 2)]
