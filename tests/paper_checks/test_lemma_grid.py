"""The Lemma 1 grid: its statistics against hand computations, its decision rule on synthetic data with a
known truth, and one small grid on the tiny model."""
import json
import math

import numpy as np
import pytest
from scipy import stats as st

from escov.paper_checks.evidence import load_lemma_grid
from escov.paper_checks.lemma_grid import (TARGET_WIDTH, FisherTrace, GridDesign, draws_for_width, lemma1_decision, pooled_ratio,
                                           measure_grid, row_statistics, summarize_grid)
from escov.theory.decisions import FAILS, HOLDS, INCONCLUSIVE

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_fisher_trace_error_is_the_within_prompt_sampling_error():
    sq = np.array([[1.0, 3.0, 5.0], [10.0, 10.0, 16.0]])
    f = FisherTrace.from_replicates(sq)
    assert f.mean == pytest.approx(45 / 6)
    # per-prompt means 3 and 12, their variances 4 and 12 over 3 samples: se of the mean of the two means
    assert f.se == pytest.approx(math.sqrt(4 / 3 + 12 / 3) / 2)
    assert f.df == 4


def test_row_statistics_by_hand():
    fisher = FisherTrace(mean=200.0, se=4.0, df=100.0)
    js = np.array([0.009, 0.010, 0.011, 0.010])
    r = row_statistics(js, fisher, sigma=0.01, members=4)
    predicted = 0.5 * 0.01 ** 2 * 0.75 * 200.0
    assert r["predicted"] == pytest.approx(predicted)
    assert r["ratio"] == pytest.approx(0.01 / predicted)
    a, b = js.var(ddof=1) / 4 / 0.01 ** 2, (4 / 200) ** 2
    df = (a + b) ** 2 / (a ** 2 / 3 + b ** 2 / 100)
    half = st.t.ppf(0.975, df) * math.sqrt(a + b)
    assert r["ratio_df"] == pytest.approx(df)
    assert r["ratio_ci"] == pytest.approx([r["ratio"] * math.exp(-half), r["ratio"] * math.exp(half)])
    assert r["ratios"] == pytest.approx((js / predicted).tolist())
    assert r["measured_se"] == pytest.approx(js.std(ddof=1) / 2)


def _synthetic_row(rng, truth: float, cv: float, draws: int, sigma=2e-3, members=16, trace=5000.0):
    """A grid row from simulated measurements: tr I from gamma-distributed squared score norms (8 prompts x 256
    samples, relative sd 0.8 each) and `draws` populations whose JSpol is truth x the prediction x (1 + noise)."""
    shape = 1 / 0.8 ** 2
    sq = rng.gamma(shape, trace / shape, size=(8, 256))
    js = truth * 0.5 * sigma ** 2 * (1 - 1 / members) * trace * rng.gamma(1 / cv ** 2, cv ** 2, size=draws)
    fisher = FisherTrace.from_replicates(sq)
    return row_statistics(js, fisher, sigma, members) | {"sigma": sigma, "members": members, "s_measured": 0.01, "draws": draws, "fisher_trace": fisher.mean,
                                                         "fisher_trace_se": fisher.se, "fisher_df": fisher.df}


def test_decision_rule_on_synthetic_data_with_a_known_truth():
    """Sized by draws_for_width, the rule says "holds" at ratio 1 with power >= 80% and almost never "does not
    hold"; at ratio 1.2 it says "does not hold" with power >= 80% and almost never "holds"; at the margin
    (1.1) "holds" comes out no more often than the 2.5% a one-sided 95% bound allows (within noise)."""
    rng = np.random.default_rng(7)
    cv, reps = 0.3, 400
    fisher_rel_se = 0.8 / math.sqrt(8 * 256)
    d = draws_for_width(cv, fisher_rel_se)
    verdicts = {}
    for truth in (1.0, 1.1, 1.2):
        rows = [_synthetic_row(rng, truth, cv, d) for _ in range(reps)]
        verdicts[truth] = [lemma1_decision([r])["status"] for r in rows]
        if truth == 1.0:
            widths = [r["ratio_ci"][1] - r["ratio_ci"][0] for r in rows]
            assert np.mean(widths) <= TARGET_WIDTH * 1.02  # the design delivers the width it was sized for
            coverage = np.mean([r["ratio_ci"][0] <= 1.0 <= r["ratio_ci"][1] for r in rows])
            assert 0.92 <= coverage <= 0.98
    share = lambda truth, status: np.mean([v == status for v in verdicts[truth]])
    assert share(1.0, HOLDS) >= 0.8 and share(1.0, FAILS) <= 0.01
    assert share(1.2, FAILS) >= 0.8 and share(1.2, HOLDS) <= 0.01
    assert share(1.1, HOLDS) <= 0.05


def test_an_unsized_design_stays_inconclusive_rather_than_deciding():
    rng = np.random.default_rng(3)
    verdicts = [lemma1_decision([_synthetic_row(rng, 1.0, 0.3, 3)])["status"] for _ in range(200)]
    assert np.mean([v == INCONCLUSIVE for v in verdicts]) > 0.9


def test_draws_for_width_is_the_fewest_that_reach_the_width():
    d = draws_for_width(0.3, 0.01)
    for dd, ok in ((d, True), (d - 1, False)):
        a, b = 0.09 / dd, 1e-4
        df = (a + b) ** 2 / (a ** 2 / (dd - 1))
        half = st.t.ppf(0.975, df) * math.sqrt(a + b)
        assert (2 * math.sinh(half) <= TARGET_WIDTH) == ok
    assert draws_for_width(0.3, 0.05) is None  # tr I's error alone is wider than the target


def _row(s, lo, hi, measured_cv=0.01, draws=20):
    return {"sigma": 1e-3, "members": 4, "s_measured": s, "ratio": math.sqrt(lo * hi), "ratio_ci": [lo, hi],
            "measured": 1.0, "measured_se": measured_cv, "draws": draws, "fisher_trace": 100.0, "fisher_trace_se": 1.0,
            "fisher_df": 1000.0}


def test_decision_pools_the_rows_inside_the_regime_and_fails_on_any_row_outside():
    assert lemma1_decision([_row(0.2, 0.5, 0.6)]) is None                       # nothing inside the regime
    assert lemma1_decision([_row(0.01, 0.95, 1.05), _row(0.2, 0.5, 0.6)])["status"] == HOLDS
    # a wide row does not block the pooled decision; a row wholly outside the margin does
    assert lemma1_decision([_row(0.01, 0.95, 1.05), _row(0.04, 0.8, 1.05, measured_cv=0.2)])["status"] == HOLDS
    assert lemma1_decision([_row(0.01, 0.95, 1.05), _row(0.05, 1.12, 1.2)])["status"] == FAILS
    assert lemma1_decision([_row(0.01, 0.7, 1.3, measured_cv=0.3, draws=3)])["status"] == INCONCLUSIVE


def test_pooled_ratio_by_hand():
    rows = [_row(0.01, 0.98, 1.02, measured_cv=0.01, draws=11), _row(0.02, 1.03, 1.07, measured_cv=0.02, draws=6)]
    p = pooled_ratio(rows)
    w = np.array([1e4, 2500.0])
    log_mean = (w[0] * 0.5 * math.log(0.98 * 1.02) + w[1] * 0.5 * math.log(1.03 * 1.07)) / w.sum()
    c = (w / w.sum()) ** 2 / w
    var = c.sum() + 1e-4
    df = var ** 2 / (c[0] ** 2 / 10 + c[1] ** 2 / 5 + 1e-8 / 1000)
    half = st.t.ppf(0.975, df) * math.sqrt(var)
    assert p["ratio"] == pytest.approx(math.exp(log_mean))
    assert p["ci"] == pytest.approx([math.exp(log_mean - half), math.exp(log_mean + half)]) and p["df"] == pytest.approx(df)


def _rows_with_known_scaling(exponent=2.0, n_power=1.0):
    """JSpol = sigma^exponent (1 - 1/N)^n_power x 100, measured to 1% from 10 draws; tr I = 200 so the
    prediction is (sigma^2/2)(1 - 1/N) 200."""
    rows = []
    for n in (2, 4, 32):
        for sigma in (1e-3, 2e-3, 4e-3, 2e-2):
            m = sigma ** exponent * (1 - 1 / n) ** n_power * 100
            pred = 0.5 * sigma ** 2 * (1 - 1 / n) * 200
            s = 0.5 * sigma ** 2 * 200 * (1 + (sigma / 4e-3) ** 2)
            ratio = m / pred * (1 - (0.3 if sigma == 2e-2 else 0.0))
            rows.append({"sigma": sigma, "members": n, "draws": 10, "measured": m, "measured_se": 0.01 * m,
                         "ratio": ratio, "ratio_ci": [ratio * 0.98, ratio * 1.02], "s_measured": s})
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
    wrong = summarize_grid(_rows_with_known_scaling(exponent=1.5, n_power=0.5))
    assert wrong["exponent_in_regime"]["exponent"] == pytest.approx(1.5)
    assert wrong["n_factor"]["2"]["decision"] == FAILS  # (1 - 1/N)^0.5 instead of (1 - 1/N): 1.39 at N = 2


def test_grid_on_the_tiny_model_records_its_task_and_settings(tiny_model_dir, tmp_path):
    from escov.llm.tasks import get_task
    design = GridDesign(sigmas=(1e-3, 1e-2), members=(2,), draws={2: 3}, prompts=2, samples=2, fisher_samples=4, fisher_batch=2)
    rows = measure_grid(tiny_model_dir, design, task=get_task("countdown3"), task_name="countdown3", temperature=0.6,
                        max_new_tokens=6, progress=False)
    assert [(r["sigma"], r["members"], r["draws"]) for r in rows] == [(1e-3, 2, 3), (1e-2, 2, 3)]
    for r in rows:
        assert (r["task"], r["temperature"], r["max_new_tokens"], r["prompts"], r["samples"]) == ("countdown3", 0.6, 6, 2, 2)
        assert len(set(r["ratios"])) == 3                         # each draw is its own population
        assert r["ratio"] == pytest.approx(np.mean(r["ratios"]))
        assert r["in_regime"] == (r["s_measured"] <= 0.05)
        assert set(r["lemma2"]) == {"gap", "local", "gap_minus_local"} and 0 <= r["dpi_share"] <= 1
    assert rows[0]["fisher_trace"] == rows[1]["fisher_trace"]      # one center, measured once
    assert rows[0]["ratios"] != rows[1]["ratios"]
    (tmp_path / "grid.json").write_text(json.dumps(rows))  # the report's reader accepts what the grid writes
    assert load_lemma_grid(tmp_path / "grid.json") == json.loads(json.dumps(rows))
    with pytest.raises(ValueError, match="draws"):
        GridDesign(sigmas=(1e-3,), members=(2,), draws={2: 1})
    with pytest.raises(ValueError, match="two batches"):
        GridDesign(sigmas=(1e-3,), members=(2,), draws={2: 2}, fisher_samples=16, fisher_batch=16)
