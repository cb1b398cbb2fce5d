"""The llm level's plots say what they show: eval.png ticks its log k axis at the k values, and a
zero update's drift_hist.png says so in words instead of drawing empty axes."""

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg

from escov.llm import drift
from escov.llm.evaluate import plot


def test_eval_plot_labels_each_k(tmp_path, figures):
    result = {
        "task": "countdown",
        "temperature": 1.0,
        "n": 32,
        "pass_at_k": {"1": 0.1, "16": 0.5, "32": 0.6},
        "maj_at_k": {"1": 0.1, "16": 0.2, "32": 0.2},
        "per_problem": [{"correct": 3}, {"correct": 0}],
    }
    plot(result, tmp_path / "eval.png")
    FigureCanvasAgg(figures[-1]).draw()
    ax = figures[-1].axes[0]
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["1", "16", "32"]
    assert ax.xaxis.get_minorticklocs().size == 0


def test_zero_update_histogram_says_so(tmp_path, figures):
    base = {"w": torch.ones(4, 3)}
    analysis = drift.update_analysis({"w": base["w"].clone()}, base, alpha=1e-3)
    assert sum(analysis["histogram"]["counts"]) == 0
    drift.plot_histogram(analysis, tmp_path / "drift_hist.png", "es: update magnitudes")
    ax = figures[-1].axes[0]
    assert any("no entry changed" in t.get_text() for t in ax.texts) and not ax.patches  # no bars, no axes of nothing
    moved = drift.update_analysis({"w": base["w"] + torch.linspace(1e-4, 1e-2, 12).reshape(4, 3)}, base, alpha=1e-3)
    drift.plot_histogram(moved, tmp_path / "drift_moved.png", "es")
    assert figures[-1].axes[0].patches and not figures[-1].axes[0].texts and np.sum(moved["histogram"]["counts"]) == 12


# ----------------------------------------------------------------------------- step axes, legends, text size


def _check_readable(fig):
    """Every text of the figure is at least MIN_SHOWN_TEXT_PX high when the figure is shown SHOWN_WIDTH_PX wide, and
    no legend covers an axes that draws data."""
    from escov.llm.plot_axes import MIN_SHOWN_TEXT_PX, shown_text_px

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.canvas.draw()
    texts = [
        t
        for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
        if t.get_visible() and t.get_text().strip()
    ]
    small = [
        (t.get_text(), t.get_fontsize()) for t in texts if shown_text_px(t.get_fontsize(), fig) < MIN_SHOWN_TEXT_PX
    ]
    assert not small, small
    data_axes = [ax for ax in fig.axes if ax.axison and (ax.lines or ax.collections or ax.patches)]
    for legend in [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends):
        box = legend.get_window_extent(renderer)
        for ax in data_axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), (
                f"a legend covers the axes titled {ax.get_title()!r}"
            )


def _ticks_are_whole(ax):
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


def _point(step, p1, k32, greedy, ids):
    per = [{"id": i, "correct": c} for i, c in zip(ids, k32)]
    return {
        "step": step,
        "sampled": {
            "pass_at_k": {"1": p1, "16": p1 + 0.1, "32": p1 + 0.2},
            "n": 32,
            "temperature": 1.0,
            "per_problem": per,
            "mean_token_entropy": 1.0 - p1,
        },
        "greedy": {"pass_at_k": {"1": greedy}},
    }


def test_curve_plot_ticks_whole_steps_with_its_legend_beside(tmp_path, figures):
    from escov.llm.curve import plot_curve

    plot_curve([_point(s, 0.1 * s, [s, 2], 0.2, ["a", "b"]) for s in (1, 2, 3)], tmp_path / "curve.png")
    fig = figures[-1]
    _ticks_are_whole(fig.axes[0])
    _check_readable(fig)


def test_training_curves_tick_whole_steps(tmp_path, figures, monkeypatch):
    from escov.llm.train import plot_curves

    rows = [
        {"step": s, "reward_mean": 0.1 * s, "pass_at_1": 0.1, "entropy": 1.0, "drift_rel": 1e-3 * s} for s in (1, 2, 3)
    ]
    from escov.llm import rundir

    monkeypatch.setattr(rundir, "read_steps", lambda run: rows)  # the plot's input, without a whole StepMetrics record
    plot_curves(tmp_path)
    fig = figures[-1]
    for ax in fig.axes:
        _ticks_are_whole(ax)
    _check_readable(fig)


def test_report_plots_legends_beside_the_data_and_readable(tmp_path, figures):
    """paper_checks' entropy (a step axis) and frontier plots on runs built in memory: whole steps, legends clear of
    every panel's data, text readable at the width a report shows them."""
    from pathlib import Path

    from escov.paper_checks.evidence import Evidence
    from escov.paper_checks.plots import entropy_curves, frontier
    from escov.paper_checks.rundir import Run

    runs = []
    for algo, shift in (("grpo", 0.0), ("es", 0.05)):
        for seed in (0, 1):
            curve = [
                _point(s, 0.1 * s + shift + 0.01 * seed, [s, s + 1, 2], 0.1 * s, ["a", "b", "c"]) for s in (1, 2, 3, 4)
            ]
            runs.append(
                Run(
                    path=Path(f"{algo}-s{seed}"),
                    config={"algo": algo, "model": "m", "seed": seed},
                    metrics=[{"step": s, "entropy": 1.0 - 0.1 * s} for s in (1, 2, 3)],
                    curve=curve,
                )
            )
    ev = Evidence(runs=runs)
    assert entropy_curves(ev, tmp_path)
    _ticks_are_whole(figures[-1].axes[0])
    _check_readable(figures[-1])
    assert frontier(ev, tmp_path)
    _check_readable(figures[-1])
