"""PNG plots of Lemma 1: measured E[JSpol_N] against the prediction (sigma^2 / 2)(1 - 1/N) tr I.

Each plot reads the result items of `python -m escov.theory` (names lemma1/sigma/..., lemma1/N/...,
lemma1/fisher/...) and draws measured points (with 2 standard-error bars; hollow where s is
outside the claimed range) against the predicted line, on log-log axes.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


def _series(results: list[dict], prefix: str, x_key: str) -> dict[str, list[dict]]:
    """Items under `prefix`, grouped by toy policy and sorted by x_key."""
    groups: dict[str, list[dict]] = {}
    for item in results:
        if item["name"].startswith(prefix):
            groups.setdefault(item["policy"], []).append(item)
    return {k: sorted(v, key=lambda it: it[x_key]) for k, v in groups.items()}


def _plot(results: list[dict], prefix: str, x_key: str, xlabel: str, title: str, path: Path) -> Path | None:
    """One log-log plot; title may use the keys of the first item (e.g. {sigma}, {n})."""
    series = _series(results, prefix, x_key)
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for i, (policy, items) in enumerate(series.items()):
        color = f"C{i}"
        x = [it[x_key] for it in items]
        ax.plot(x, [it["predicted"] for it in items], "--", color=color, label=f"{policy}: predicted")
        for it in items:
            claimed = "regime" not in it
            ax.errorbar(
                it[x_key],
                it["measured"],
                yerr=2 * it.get("stderr", 0.0),
                fmt="o",
                color=color,
                mfc=color if claimed else "none",
                capsize=2,
            )
        ax.plot([], [], "o", color=color, label=f"{policy}: measured")
    ax.plot([], [], "o", color="gray", mfc="none", label="outside claimed range (large s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("E[JSpol_N]")
    first = next(iter(series.values()))[0]
    ax.set_title(title.format(**first))
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_plots(results: list[dict], out_dir) -> list[Path]:
    """Write sigma_scaling.png, n_scaling.png and fisher_trace_scaling.png into out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    made = [
        _plot(
            results, "lemma1/sigma/", "sigma", "sigma", "Lemma 1: sigma-scaling (N = {n})", out / "sigma_scaling.png"
        ),
        _plot(
            results,
            "lemma1/N/",
            "n",
            "population size N",
            "Lemma 1: N-scaling (sigma = {sigma:g})",
            out / "n_scaling.png",
        ),
        _plot(
            results,
            "lemma1/fisher/",
            "fisher_trace",
            "tr I(theta)",
            "Lemma 1: Fisher-trace scaling (sigma = {sigma:g}, N = {n})",
            out / "fisher_trace_scaling.png",
        ),
    ]
    return [p for p in made if p is not None]
