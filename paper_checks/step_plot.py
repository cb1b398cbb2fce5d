"""The report's Pass@1-by-step plot (pass1_by_step.png): every run's Pass@1 along training, one line per run, a
colour per method (its variant, evidence.py), a panel per algorithm family (ES's updates and GRPO's steps are not
one axis: each method on its own step axis).

A run is drawn from its curve (llm/curve.py: sampled Pass@1 on the test prompts at its checkpoints, the base at
step 0) when it has one, else from metrics.jsonl's per-step pass_at_1 (the center's own samples on the training
batch: noisier, and on other prompts), drawn dashed; the legend says which. Whether a run was still rising or had
saturated is read here, not in any table.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from escov.llm.plot_axes import legend_beside, step_axis  # noqa: E402
from escov.paper_checks.evidence import Evidence, variant  # noqa: E402
from escov.paper_checks.rundir import Run  # noqa: E402

FILE = "pass1_by_step.png"


def family(name: str) -> str:
    """The panel a method is drawn in: its algorithm (the variant's part before any tag), e.g. es[null] -> es."""
    return name.split("[", 1)[0]


def pass1_series(run: Run) -> tuple[list[int], list[float], str] | None:
    """(steps, Pass@1, source) of a run: its curve's test-prompt Pass@1 ("curve"), else its per-step training-batch
    pass_at_1 ("steps"); None when it has neither."""
    points = [p for p in run.curve or [] if "1" in (p.get("sampled") or {}).get("pass_at_k", {})]
    if len(points) >= 2:
        return [int(p["step"]) for p in points], [float(p["sampled"]["pass_at_k"]["1"]) for p in points], "curve"
    rows = [r for r in run.metrics if isinstance(r.get("pass_at_1"), (int, float))]
    if len(rows) >= 2:
        return [int(r["step"]) for r in rows], [float(r["pass_at_1"]) for r in rows], "steps"
    return None


def pass1_by_step(ev: Evidence, out: Path) -> str | None:
    """Draw FILE into out; None when no run has a Pass@1 series."""
    series = [(variant(r.config), r, s) for r in ev.runs if (s := pass1_series(r)) is not None]
    if not series:
        return None
    methods = sorted({name for name, _, _ in series})
    colour = {name: f"C{i % 10}" for i, name in enumerate(methods)}
    panels = sorted({family(name) for name in methods})
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels) + 2, 4), sharey=True, squeeze=False)
    for ax, panel in zip(axes[0], panels):
        labelled: set[tuple[str, str]] = set()
        for name, run, (steps, pass1, source) in series:
            if family(name) != panel:
                continue
            key = (name, source)
            label = None if key in labelled else f"{name} ({'test prompts' if source == 'curve' else 'training batch'})"
            labelled.add(key)
            ax.plot(steps, pass1, "-" if source == "curve" else "--", color=colour[name], alpha=0.7, lw=1, label=label)
        ax.set_xlabel("ES update" if panel.startswith("es") else f"{panel.upper()} step")
        ax.set_title(f"{panel}: Pass@1 by step, one line per run")
        step_axis(ax)
        legend_beside(ax, fontsize="small")
    axes[0][0].set_ylabel("sampled Pass@1")
    out.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out / FILE, dpi=110)
    plt.close(fig)
    return FILE
