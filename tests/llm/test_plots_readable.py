"""The llm level's plots say what they show: eval.png ticks its log k axis at the k values, and a
zero update's drift_hist.png says so in words instead of drawing empty axes."""
import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg

from escov.llm import drift
from escov.llm.evaluate import plot


def test_eval_plot_labels_each_k(tmp_path, figures):
    result = {"task": "countdown", "temperature": 1.0, "n": 32, "pass_at_k": {"1": 0.1, "16": 0.5, "32": 0.6},
              "maj_at_k": {"1": 0.1, "16": 0.2, "32": 0.2}, "per_problem": [{"correct": 3}, {"correct": 0}]}
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
