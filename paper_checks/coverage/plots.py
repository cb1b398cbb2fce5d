"""Coverage plots (PNG, Agg backend): Pass@k curves on a log-k axis with their bands and each model's
crossing with the reference marked; the solvability sets at k = n as bars."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from escov.llm.plot_axes import label_k_axis, legend_beside  # noqa: E402

PASSK_PNG = "coverage_passk.png"
SOLVABILITY_PNG = "coverage_solvability.png"


def passk_curves(report: dict, out: Path) -> Path:
    """Every model's Pass@k (mean and interval band) against k, log2 axis; a dotted line at each k*."""
    ks = report["ks"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, entry in report["models"].items():
        rows = [entry["pass_at_k"][str(k)] for k in ks]
        (line,) = ax.plot(
            ks, [r["mean"] for r in rows], marker="o", ms=3, label=name, lw=2.5 if name == report["reference"] else 1.5
        )
        ax.fill_between(ks, [r["lo"] for r in rows], [r["hi"] for r in rows], color=line.get_color(), alpha=0.2)
        star = entry.get("crossing", {}).get("k_star")
        if star is not None:
            ax.axvline(star, color=line.get_color(), ls=":", lw=1.2)
            ax.annotate(
                f"k* {star:.3g}",
                (star, 0.02),
                color=line.get_color(),
                fontsize=10,
                rotation=90,
                xycoords=("data", "axes fraction"),
            )
    ax.set_xscale("log", base=2)
    label_k_axis(ax, ks)
    ax.set_xlabel("k (samples)")
    ax.set_ylabel("Pass@k")
    ax.set_title(
        f"Pass@k, {round(100 * report['confidence'])}% problem-bootstrap bands; dotted: where "
        f"{report['reference']} overtakes",
        fontsize=11,
    )
    legend_beside(ax)
    fig.tight_layout()
    fig.savefig(out / PASSK_PNG, dpi=110)
    plt.close(fig)
    return out / PASSK_PNG


def solvability_bars(report: dict, out: Path) -> Path | None:
    """Preserved / gained / lost prompts at k = n of each model against the reference, as stacked bars."""
    names = [m for m, e in report["models"].items() if "solvability" in e]
    if not names:
        return None
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.6 * len(names)))
    left = [0.0] * len(names)
    for key, color in (("preserved", "tab:blue"), ("gained", "tab:green"), ("lost", "tab:red")):
        values = [report["models"][m]["solvability"][key] for m in names]
        ax.barh(names, values, left=left, color=color, label=key)
        left = [a + b for a, b in zip(left, values)]
    ax.set_xlabel(f"prompts solved by either model at k = {report['n']} (of {report['prompts']})")
    ax.set_title(f"solvability against {report['reference']}", fontsize=11)
    legend_beside(ax)
    fig.tight_layout()
    fig.savefig(out / SOLVABILITY_PNG, dpi=110)
    plt.close(fig)
    return out / SOLVABILITY_PNG
