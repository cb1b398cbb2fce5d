"""What paper_checks tells its user: a report over runs evaluated without Pass@32 names the claims that
need it (no KeyError in REPORT.md), reproduce names the REPORT.md it wrote, and the report's plots are
readable (k values on the Pass@k axis, the frontier's legend clear of the data, zero updates said in words)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from escov.paper_checks import plots
from escov.paper_checks.cli import main as cli_main
from escov.paper_checks.report import build_report, collect
from escov.paper_checks.reproduce import reproduction
from escov.theory.metrics import pass_at_k_counts
from tests.paper_checks.test_paper_checks_verdicts import make_run


@pytest.fixture
def p_base():
    return np.random.default_rng(0).uniform(0.02, 0.5, 40)


def _renderer(fig):
    """A renderer of a saved (and closed) figure, drawn again."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _without_pass_at_32(run):
    ev = json.loads((run / "eval.json").read_text())
    for part in (ev["base"], ev["final"], ev["heldout"]["base"], ev["heldout"]["final"]):
        part["pass_at_k"].pop("32")
        part["ks"] = [1, 16]
    (run / "eval.json").write_text(json.dumps(ev))
    return run


def test_report_over_runs_without_k_32_names_the_claims_that_need_it(tmp_path, p_base):
    dirs = [
        _without_pass_at_32(make_run(tmp_path, f"{a}{s}", a, s, p_base, np.minimum(p_base + 0.1, 1)))
        for a in ("es", "grpo", "es-grpo")
        for s in (0, 1)
    ]
    report = build_report(dirs, tmp_path / "rep")
    text = (tmp_path / "rep" / "REPORT.md").read_text()
    assert "KeyError" not in text and "KeyError" not in json.dumps(report)
    real = {c["id"]: c["levels"]["real"] for c in report["claims"]}
    for claim in ("es_improves_over_base", "grpo_passk_below_base", "es_passk_above_grpo", "schedules_pareto"):
        assert real[claim]["status"] == "missing data" and "needs Pass@32" in real[claim]["note"], (claim, real[claim])
        assert "eval_ks including 32" in real[claim]["note"]
    assert real["grpo_raises_pass1"]["status"] != "missing data"  # Pass@1 is there: still decided
    mechanism = next(q for q in report["open_questions"] if q["id"] == "mechanism")
    assert "needs Pass@32" in mechanism["answer"] or "no greedy-vs-sampled" in mechanism["answer"]


def test_reproduce_names_the_report_it_wrote(tmp_path, p_base, monkeypatch, capsys):
    dirs = [make_run(tmp_path / "runs", f"{a}0", a, 0, p_base, p_base) for a in ("es", "grpo")]

    def report_only(budget, out, **kwargs):  # the training runs replaced by ready-made ones; the report is real
        return build_report(dirs, out / reproduction.REPORT_DIR)

    monkeypatch.setattr(reproduction, "reproduce", report_only)
    assert cli_main(["reproduce", "--budget", "small", "--out", str(tmp_path / "small")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    written = tmp_path / "small" / "report" / "REPORT.md"
    summary = json.loads((written.parent / "report.json").read_text())["summary"]
    assert lines[-len(summary) - 1] == f"wrote {written} and {written.parent / 'report.json'}" and written.exists()
    assert lines[-len(summary) :] == summary and f"Report: {written}" in summary  # the console ends on the summary


def test_passk_axis_names_each_k(tmp_path, p_base, figures):
    dirs = [make_run(tmp_path, f"{a}0", a, 0, p_base, p_base) for a in ("es", "grpo")]
    assert plots.passk_curves(collect(dirs), tmp_path) == "passk_curves.png"
    ax = figures[-1].axes[0]
    _renderer(figures[-1])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "16", "32"]


def test_frontier_legend_lies_outside_every_panel(tmp_path, p_base, figures):
    curve = [np.clip(p_base + 0.05 * t, 0, 1) for t in range(4)]
    dirs = [make_run(tmp_path, f"{a}{s}", a, s, p_base, p_base, curve_p=curve) for a in ("es", "grpo") for s in (0, 1)]
    assert plots.frontier(collect(dirs), tmp_path) == "frontier.png"
    fig = figures[-1]
    renderer = _renderer(fig)
    # one legend, in a cell of its own with no data (its axis off), clear of every data panel
    holders = [ax for ax in fig.axes if ax.get_legend() is not None]
    assert len(holders) == 1 and not holders[0].axison and not holders[0].lines and not fig.legends
    legend = holders[0].get_legend()
    box = legend.get_window_extent(renderer)
    assert {t.get_text() for t in legend.get_texts()} == {"es (2 seeds)", "grpo (2 seeds)", "base (mean over seeds)"}
    panels = [ax for ax in fig.axes if ax is not holders[0]]
    assert panels and not any(box.overlaps(ax.get_window_extent(renderer)) for ax in panels)


def test_zero_updates_are_said_in_words(tmp_path, p_base, figures):
    run = make_run(tmp_path, "es0", "es", 0, p_base, p_base)
    ev = json.loads((run / "eval.json").read_text())
    ev["update_analysis"]["histogram"] = {"edges": [0.0, 1.0], "counts": [0]}  # what llm.drift writes for no change
    (run / "eval.json").write_text(json.dumps(ev))
    assert plots.update_magnitudes(collect([run]), tmp_path) == "update_magnitudes.png"
    texts = [t.get_text() for t in figures[-1].axes[0].texts]
    assert any("no entry changed" in t for t in texts), texts


def test_the_frontiers_pooled_line_is_the_seeds_read_at_matched_pass1_and_dashed_where_unsupported(
    tmp_path, p_base, figures
):
    """Pooled over seeds at each Pass@1 level, each seed read where its curve first reaches the level (checked
    here against a hand interpolation); a level is drawn solid only where every seed has measured points within
    the resolution, so a seed measured only at its ends leaves the middle dashed."""
    from escov.theory.matched import RESOLUTION

    dense = [np.clip(p_base + 0.01 * t, 0, 1) for t in range(11)]
    dirs = [make_run(tmp_path, f"es{s}", "es", s, p_base, p_base, curve_p=dense) for s in (0, 1)]
    dirs += [
        make_run(tmp_path, "grpo0", "grpo", 0, p_base, p_base, curve_p=dense),
        make_run(tmp_path, "grpo1", "grpo", 1, p_base, p_base, curve_p=dense[::10]),
    ]
    plots.frontier(collect(dirs), tmp_path)
    ax = figures[-1].axes[0]  # Pass@32 against Pass@1
    solid = {line.get_label().split()[0]: line for line in ax.lines if line.get_label().endswith("(2 seeds)")}
    x, y = solid["es"].get_data()
    assert np.isfinite(y).all()  # ES: both seeds dense, every level supported
    # the pooled value at a level: the mean of the two seeds' Pass@32 interpolated at that Pass@1 by hand
    curves = [json.loads((d / "curve.json").read_text())["points"] for d in dirs[:2]]
    by_hand = []
    for points in curves:
        p1 = [pt["sampled"]["pass_at_k"]["1"] for pt in points]
        p32 = [
            np.mean([pass_at_k_counts(pt["sampled"]["n"], [q["correct"] for q in pt["sampled"]["per_problem"]], 32)])
            for pt in points
        ]
        by_hand.append(np.interp(x[5], p1, p32))  # rising curves: the first crossing is the interpolation
    assert y[5] == pytest.approx(np.mean(by_hand), abs=1e-12)
    x, y = solid["grpo"].get_data()
    assert dense[10].mean() - dense[0].mean() > RESOLUTION and np.isnan(y[1:-1]).all()  # seed 1 has its ends only


def test_the_frontiers_base_marker_is_the_mean_over_seeds_of_their_step_0_points(tmp_path, p_base, figures):
    """Two seeds whose base points differ (each seed samples its own base evaluation): the star of every panel sits
    at the mean of the two seeds' step-0 points, read here from their curve.json by hand."""
    dirs = [
        make_run(
            tmp_path,
            f"es{s}",
            "es",
            s,
            p_base,
            p_base,
            curve_p=[np.clip(scale * p_base + 0.05 * t, 0, 1) for t in range(4)],
        )
        for s, scale in ((0, 1.0), (1, 0.4))
    ]
    plots.frontier(collect(dirs), tmp_path)
    firsts = [json.loads((d / "curve.json").read_text())["points"][0]["sampled"] for d in dirs]
    assert firsts[0]["pass_at_k"]["1"] - firsts[1]["pass_at_k"]["1"] > 0.05  # the two bases differ
    by_hand = {
        "pass@32": [np.mean(pass_at_k_counts(f["n"], [q["correct"] for q in f["per_problem"]], 32)) for f in firsts],
        "entropy": [f["mean_token_entropy"] for f in firsts],
    }
    panels = {ax.get_ylabel(): ax for ax in figures[-1].axes}
    for key, ylabel in (("pass@32", "Pass@32"), ("entropy", "token entropy (nats)")):
        (star,) = [c for c in panels[ylabel].collections if c.get_label() == "base (mean over seeds)"]
        x, y = star.get_offsets()[0]
        assert x == pytest.approx(np.mean([f["pass_at_k"]["1"] for f in firsts]), abs=1e-12)
        assert y == pytest.approx(np.mean(by_hand[key]), abs=1e-12)
