"""The Pass@1-by-step plot (paper_checks/step_plot.py): one line per run with its curve's (or, without a curve, its
steps') Pass@1, a colour per method, a panel per algorithm on its own step axis, written with the report."""

import json

import numpy as np

from escov.paper_checks.report import build_report, collect
from escov.paper_checks.step_plot import FILE, pass1_by_step, pass1_series
from tests.paper_checks.test_paper_checks_verdicts import make_run


def test_every_run_is_a_line_of_its_methods_colour_in_its_algorithms_panel(tmp_path, figures):
    p = np.random.default_rng(0).uniform(0.05, 0.5, 40)

    def curve(gain):
        return [np.clip(p + gain * t / 4, 0, 1) for t in range(5)]

    dirs = [make_run(tmp_path / "runs", f"es{s}", "es", s, p, p + 0.1, curve_p=curve(0.1)) for s in range(2)]
    dirs += [make_run(tmp_path / "runs", f"grpo{s}", "grpo", s, p, p + 0.3, curve_p=curve(0.3)) for s in range(3)]
    dirs.append(make_run(tmp_path / "runs", "null0", "es", 0, p, p, es={"null_control": True}))  # no curve
    ev = collect(dirs)
    assert pass1_by_step(ev, tmp_path / "out") == FILE and (tmp_path / "out" / FILE).is_file()
    (fig,) = figures
    es_ax, grpo_ax = fig.axes[:2]
    assert "ES update" in es_ax.get_xlabel() and "GRPO step" in grpo_ax.get_xlabel()
    curve_points = json.loads((dirs[0] / "curve.json").read_text())["points"]
    es_lines = es_ax.get_lines()
    assert len(es_lines) == 3 and len(grpo_ax.get_lines()) == 3  # es x2 and es[null] x1; grpo x3
    first = es_lines[0]
    assert first.get_xdata().tolist() == [pt["step"] for pt in curve_points]
    assert first.get_ydata().tolist() == [pt["sampled"]["pass_at_k"]["1"] for pt in curve_points]
    assert first.get_color() == es_lines[1].get_color() != es_lines[2].get_color()  # a colour per method
    null = es_lines[2]
    assert null.get_linestyle() == "--" and null.get_ydata().tolist() == [0.3] * 10  # metrics.jsonl's pass_at_1
    labels = es_ax.get_legend_handles_labels()[1]
    assert labels == ["es (test prompts)", "es[null] (training batch)"]
    assert pass1_series(ev.runs[-1])[2] == "steps"


def test_the_report_writes_it(tmp_path):
    p = np.random.default_rng(1).uniform(0.05, 0.5, 40)
    dirs = [make_run(tmp_path / "runs", f"{a}0", a, 0, p, p + 0.1, curve_p=[p, p + 0.05]) for a in ("es", "grpo")]
    report = build_report(dirs, tmp_path / "report")
    assert report["plots"]["pass1_by_step"] == FILE and (tmp_path / "report" / FILE).is_file()
    md = (tmp_path / "report" / "REPORT.md").read_text()
    assert f"Pass@1 by step, every run: ![Pass@1 by step]({FILE})" in md
