"""The Lemma 1 grid: its statistics against hand computations, its decision rule on synthetic data with a
known truth, and one small grid on the tiny model."""
import json
import math

import numpy as np
import pytest
from scipy import stats as st

from escov.paper_checks.evidence import load_lemma_grid
from escov.paper_checks.lemma_grid import (TARGET_WIDTH, GridDesign, draws_for_width, draws_needed, lemma1_decision,
                                           measure_grid, pooled_ratio, row_statistics, summarize_grid)
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


def _synthetic_row(rng, truth: float, cv: float, draws: int, sigma=2e-3, members=16, trace=5000.0, noise_cv=1.0):
    """A grid row from simulated populations: the prediction Q for the members drawn spreads widely with the noise
    (gamma, relative sd noise_cv, around (sigma^2/2)(1 - 1/N) tr I), and JSpol = truth x Q x (1 + cv x normal)."""
    mean_q = 0.5 * sigma ** 2 * (1 - 1 / members) * trace
    q = mean_q * rng.gamma(1 / noise_cv ** 2, noise_cv ** 2, size=draws)
    js = truth * q * np.exp(cv * rng.normal(size=draws))
    return row_statistics(js, q) | {"sigma": sigma, "members": members, "s_measured": 0.01, "draws": draws,
                                    "center_samples": 8}


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
        runs = [[_synthetic_row(rng, truth, cv, d, sigma=sg) for cv, d, sg in ((0.03, 4, 1e-3), (0.1, 12, 2e-3), (0.05, 6, 4e-3))]
                for _ in range(300)]
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


def _row(s, lo, hi, draws=20):
    """A row whose interval is [lo, hi] (t on draws - 1 df, symmetric on the log scale)."""
    se = math.log(hi / lo) / 2 / st.t.ppf(0.975, draws - 1)
    return {"sigma": 1e-3, "members": 4, "s_measured": s, "ratio": math.sqrt(lo * hi), "ratio_ci": [lo, hi],
            "ratio_se_log": se, "ratio_df": float(draws - 1), "draws": draws, "center_samples": 8}


def test_decision_pools_the_rows_inside_the_regime_and_fails_on_any_row_outside():
    assert lemma1_decision([_row(0.2, 0.5, 0.6)]) is None                       # nothing inside the regime
    assert lemma1_decision([_row(0.01, 0.95, 1.05), _row(0.2, 0.5, 0.6)])["status"] == HOLDS
    # a wide row does not block the pooled decision of precise ones (it widens it: equal weights); a row wholly
    # outside the margin does
    assert lemma1_decision([_row(0.01, 0.97, 1.03), _row(0.012, 0.97, 1.03), _row(0.04, 0.9, 1.12, draws=4)])["status"] == HOLDS
    assert lemma1_decision([_row(0.01, 0.97, 1.03), _row(0.04, 0.8, 1.05, draws=4)])["status"] == INCONCLUSIVE
    assert lemma1_decision([_row(0.01, 0.95, 1.05), _row(0.05, 1.12, 1.2)])["status"] == FAILS
    assert lemma1_decision([_row(0.01, 0.7, 1.3, draws=3)])["status"] == INCONCLUSIVE
    # rows written before the paired design (no center_samples) decide nothing
    assert lemma1_decision([{k: v for k, v in _row(0.01, 0.95, 1.05).items() if k != "center_samples"}]) is None


def test_pooled_ratio_by_hand():
    rows = [_row(0.01, 0.98, 1.02, draws=11), _row(0.02, 1.03, 1.07, draws=6), _row(0.03, 1.08, 1.2, draws=4)]
    p = pooled_ratio(rows)
    se = np.array([r["ratio_se_log"] for r in rows])
    log_mean = (0.5 * math.log(0.98 * 1.02) + 0.5 * math.log(1.03 * 1.07) + 0.5 * math.log(1.08 * 1.2)) / 3
    c = se ** 2 / 9
    var = c.sum()
    df = var ** 2 / (c[0] ** 2 / 10 + c[1] ** 2 / 5 + c[2] ** 2 / 3)
    half = st.t.ppf(0.975, df) * math.sqrt(var)
    assert p["ratio"] == pytest.approx(math.exp(log_mean))
    assert p["ci"] == pytest.approx([math.exp(log_mean - half), math.exp(log_mean + half)]) and p["df"] == pytest.approx(df)


def _rows_with_known_scaling(exponent=2.0, n_power=1.0):
    """JSpol = sigma^exponent (1 - 1/N)^n_power x 100, its ratio to the prediction (sigma^2/2)(1 - 1/N) 200 measured
    to 1% from 10 draws."""
    rows = []
    for n in (2, 4, 32):
        for sigma in (1e-3, 2e-3, 4e-3, 2e-2):
            m = sigma ** exponent * (1 - 1 / n) ** n_power * 100
            pred = 0.5 * sigma ** 2 * (1 - 1 / n) * 200
            s = 0.5 * sigma ** 2 * 200 * (1 + (sigma / 4e-3) ** 2)
            ratio = m / pred * (1 - (0.3 if sigma == 2e-2 else 0.0))
            rows.append({"sigma": sigma, "members": n, "draws": 10, "measured": m, "measured_se": 0.01 * m, "ratio": ratio,
                         "ratio_ci": [ratio * 0.98, ratio * 1.02], "ratio_se_log": 0.01, "ratio_df": 9.0, "s_measured": s})
    return rows


def test_summary_recovers_a_known_exponent_n_factor_and_departure():
    g = summarize_grid(_rows_with_known_scaling())
    assert g["exponent_in_regime"]["exponent"] == pytest.approx(2.0)
    lo, hi = g["exponent_in_regime"]["ci"]
    assert lo < 2.0 < hi and hi - lo < 0.2
    for n in ("2", "4"):
        assert g["n_factor"][n]["factor"] == pytest.approx(1.0) and g["n_factor"][n]["decision"] == HOLDS
    dep = g["departure"]["4"]
    assert dep["last_s_inside"] == pytest.approx(0.5 * 4e-3 ** 2 * 200 * 2)
    assert dep["first_s_outside"] == pytest.approx(0.5 * 2e-2 ** 2 * 200 * 26)
    # tr I over the grid: rows weighted by their Hutchinson probes, draws x (N - 1)
    traced = [r | {"fisher_trace": 100.0 * r["members"]} for r in _rows_with_known_scaling()]
    assert summarize_grid(traced)["fisher_trace"] == pytest.approx((1 * 200 + 3 * 400 + 31 * 3200) / 35)
    wrong = summarize_grid(_rows_with_known_scaling(exponent=1.5, n_power=0.5))
    assert wrong["exponent_in_regime"]["exponent"] == pytest.approx(1.5)
    assert wrong["n_factor"]["2"]["decision"] == FAILS  # (1 - 1/N)^0.5 instead of (1 - 1/N): 1.39 at N = 2


def test_grid_on_the_tiny_model_records_its_task_and_settings(tiny_model_dir, tmp_path):
    from escov.llm.tasks import get_task
    design = GridDesign(sigmas=(1e-3, 1e-2), members=(2,), draws={2: 3}, prompts=2, samples=2, center_samples=3)
    rows = measure_grid(tiny_model_dir, design, task=get_task("countdown3"), task_name="countdown3", temperature=0.6,
                        max_new_tokens=6, progress=False)
    assert [(r["sigma"], r["members"], r["draws"]) for r in rows] == [(1e-3, 2, 3), (1e-2, 2, 3)]
    for r in rows:
        assert (r["task"], r["temperature"], r["max_new_tokens"], r["prompts"], r["samples"], r["center_samples"]) == (
            "countdown3", 0.6, 6, 2, 2, 3)
        assert len(set(r["ratios"])) == 3                         # each draw is its own population
        assert r["ratio_of_means"] == pytest.approx(r["measured"] / r["predicted"])
        assert r["ratio"] == pytest.approx(math.exp(np.mean(np.log(r["ratios"]))))
        assert r["in_regime"] == (r["s_measured"] <= 0.05)
        assert set(r["lemma2"]) == {"gap", "local", "gap_minus_local"} and 0 <= r["dpi_share"] <= 1
        # the prediction for N = 2 is (sigma^2 / 2) (1/2) (d^T I d) / 2 with d = eps_1 - eps_2, tr I's estimate d^T I d / 2
        assert r["predicted"] == pytest.approx(0.25 * r["sigma"] ** 2 * r["fisher_trace"])
    assert rows[0]["ratios"] != rows[1]["ratios"]
    (tmp_path / "grid.json").write_text(json.dumps(rows))  # the report's reader accepts what the grid writes
    assert load_lemma_grid(tmp_path / "grid.json") == json.loads(json.dumps(rows))
    with pytest.raises(ValueError, match="draws"):
        GridDesign(sigmas=(1e-3,), members=(2,), draws={2: 1})
    with pytest.raises(ValueError, match="samples"):
        GridDesign(sigmas=(1e-3,), members=(2,), draws={2: 2}, samples=1)
