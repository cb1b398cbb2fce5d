"""The Lemma 1 grid on the tiny model: independent draws per point, t intervals over draws."""
import json

import numpy as np
import pytest
from scipy import stats as st

from escov.paper_checks.evidence import load_lemma_grid
from escov.paper_checks.lemma_grid import measure_grid, summarize_grid

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_grid_points_have_independent_draws_and_t_intervals(tiny_model_dir, tmp_path):
    rows = measure_grid(tiny_model_dir, (1e-3, 1e-2), (2,), draws=3, probe_prompts=2, samples=2, center_samples=4,
                        max_new_tokens=6, progress=False)
    assert [(r["sigma"], r["members"], r["draws"]) for r in rows] == [(1e-3, 2, 3), (1e-2, 2, 3)]
    for r in rows:
        ratios = np.array(r["ratios"])
        assert len(set(ratios.tolist())) == 3          # each draw is its own population
        lo, hi = st.t.interval(0.95, 2, loc=ratios.mean(), scale=st.sem(ratios))
        assert r["ratio"] == pytest.approx(ratios.mean())
        assert r["ratio_ci"] == pytest.approx([lo, hi]) and r["ratio_sd"] == pytest.approx(ratios.std(ddof=1))
    assert rows[0]["ratios"] != rows[1]["ratios"]
    (tmp_path / "grid.json").write_text(json.dumps(rows))  # the report's reader accepts what the grid writes
    assert load_lemma_grid(tmp_path / "grid.json") == json.loads(json.dumps(rows))
    with pytest.raises(ValueError, match="draws"):
        measure_grid(tiny_model_dir, (1e-3,), (2,), draws=1)


def test_summary_counts_a_sigma_only_when_its_whole_interval_is_within_10_percent():
    rows = [{"sigma": 1e-3, "members": 4, "measured": 1e-6, "ratio": 1.0, "ratio_ci": [0.95, 1.05]},
            {"sigma": 1e-2, "members": 4, "measured": 1e-4, "ratio": 1.0, "ratio_ci": [0.7, 1.3]},   # wide: not counted
            {"sigma": 1e-1, "members": 4, "measured": 1e-2, "ratio": 0.5, "ratio_ci": [0.4, 0.6]}]
    g = summarize_grid(rows)["4"]
    assert g["sigmas_within_10pct"] == [1e-3] and g["sigmas_outside"] == [1e-2, 1e-1]
    assert g["sigma_exponent"] == pytest.approx(2.0)


def test_report_renders_the_grid_with_its_draws(tmp_path):
    from escov.paper_checks.report import build_report
    from test_paper_checks_verdicts import make_run  # a report needs at least one usable run directory
    rows = [{"sigma": sg, "members": 4, "draws": 3, "measured": 1e-3 * sg, "predicted": 1e-3 * sg, "ratio": 1.0,
             "ratio_ci": [0.9, 1.1], "ratio_sd": 0.05, "ratios": [0.95, 1.0, 1.05], "s_measured": 0.01, "s_predicted": 0.01,
             "fisher_trace": 1.0} for sg in (1e-3, 1e-2)]
    run = make_run(tmp_path / "runs", "es-s0", "es", 0, np.full(8, 0.3), np.full(8, 0.3))
    build_report([run], tmp_path / "report", lemma_grid=rows)
    text = (tmp_path / "report" / "REPORT.md").read_text()
    assert "| 0.001 | 4 | 3 |" in text and "one population sd" in text
    assert (tmp_path / "report" / "js_measured_vs_predicted.png").exists()
