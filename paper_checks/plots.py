"""The report's plots, each drawn from run directories (PNG, Agg backend). Each function returns the
file name it wrote, or None when the runs hold no data for it."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from escov.llm.plot_axes import label_k_axis, legend_beside, step_axis  # noqa: E402
from escov.paper_checks.evidence import Evidence, eval_of, variant  # noqa: E402
from escov.paper_checks.step_plot import pass1_by_step  # noqa: E402
from escov.theory.matched import common_range, read_at, supported  # noqa: E402
from escov.theory.paper import PAPER_TAUS  # noqa: E402

MAIN = ("grpo", "es", "es-grpo", "grpo-es", "es[sampled]", "es[small-sigma]")


def _save(fig, out: Path, name: str) -> str:
    out.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def _label(ax, xlabel: str, ylabel: str, title: str) -> None:
    """Axis labels, legend (beside the data) and title of one panel; a step axis ticked at whole steps."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    legend_beside(ax)
    ax.set_title(title)
    if xlabel == "step":
        step_axis(ax)


def _base_eval(ev: Evidence) -> dict | None:
    for run in ev.by_variant("es") + ev.by_variant("grpo"):
        if eval_of(run, "base"):
            return eval_of(run, "base")
    return None


def passk_curves(ev: Evidence, out: Path) -> str | None:
    """Pass@k against k (log axis) for the base and the final model of each method (mean over seeds)."""
    fig, ax = plt.subplots(figsize=(5.5, 4))
    drawn = False
    base = _base_eval(ev)
    if base:
        ks = sorted(base["pass_at_k"], key=int)
        ax.plot([int(k) for k in ks], [base["pass_at_k"][k] for k in ks], "k--o", label="base")
    for name in MAIN:
        runs = [r for r in ev.by_variant(name) if eval_of(r, "final")]
        ks = ev.common_ks(runs)  # runs of different eval_ks: the ks they share (the others named in the report)
        if ks:
            ax.plot(
                [int(k) for k in ks],
                [np.mean([eval_of(r, "final")["pass_at_k"][k] for r in runs]) for k in ks],
                "-o",
                label=name,
            )
            drawn = True
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xscale("log", base=2)
    label_k_axis(ax, {int(k) for line in ax.get_lines() for k in line.get_xdata()})
    _label(ax, "k", "Pass@k (test prompts)", "Pass@k after training")
    return _save(fig, out, "passk_curves.png")


def entropy_curves(ev: Evidence, out: Path) -> str | None:
    fig, ax = plt.subplots(figsize=(5.5, 4))
    colors: dict[str, str] = {}
    for run in ev.runs:
        rows = [r for r in run.metrics if "entropy" in r]
        if not rows:
            continue
        name = variant(run.config)
        first = name not in colors
        color = colors.setdefault(name, f"C{len(colors)}")
        ax.plot(
            [r["step"] for r in rows],
            [r["entropy"] for r in rows],
            color=color,
            alpha=0.8,
            label=name if first else None,
        )
    if not colors:
        plt.close(fig)
        return None
    _label(ax, "step", "mean token entropy (nats)", "Entropy over training")
    return _save(fig, out, "entropy.png")


def pareto_front(ev: Evidence, out: Path) -> str | None:
    fig, ax = plt.subplots(figsize=(5.5, 4))
    base = _base_eval(ev)
    drawn = False
    if base and "32" in base["pass_at_k"]:
        ax.scatter(base["pass_at_k"]["1"], base["pass_at_k"]["32"], c="k", marker="*", s=120, label="base")
    for i, name in enumerate(MAIN):
        pts = [
            (e["pass_at_k"]["1"], e["pass_at_k"]["32"])
            for e in (eval_of(r, "final") for r in ev.by_variant(name))
            if e and "32" in e["pass_at_k"]
        ]
        if pts:
            x, y = np.array(pts).T
            ax.scatter(x, y, color=f"C{i}", alpha=0.5)
            ax.scatter(x.mean(), y.mean(), color=f"C{i}", s=90, edgecolor="k", label=name)
            drawn = True
    if not drawn:
        plt.close(fig)
        return None
    _label(ax, "Pass@1", "Pass@32", "Pass@1 - Pass@32 front (dots: seeds, large: mean)")
    return _save(fig, out, "pareto.png")


FRONTIER_PANELS = (
    ("pass@32", "Pass@32"),
    ("pass@16", "Pass@16"),
    ("no_correct", "prompts with no correct sample"),
    ("entropy", "token entropy (nats)"),
    ("greedy", "greedy accuracy"),
)


POOLED_LEVELS = 12


def panel_values(curve, key: str) -> np.ndarray:
    """A frontier panel's value at each point of a curve: the mean over prompts of Pass@k or the no-correct share,
    else the curve's own series (entropy, greedy accuracy)."""
    return curve.metric(key).mean(1) if key.startswith("pass@") or key == "no_correct" else getattr(curve, key)


def base_point(curves: dict[str, list], key: str) -> tuple[float, float]:
    """The base's (Pass@1, panel value): each seed's step-0 point (the mean over its runs' curves: the runs of one
    seed share their base evaluation), then the mean over seeds."""
    by_seed: dict[int, list[tuple[float, float]]] = {}
    for cs in curves.values():
        for c in cs:
            at0 = np.flatnonzero(c.steps == 0)
            if at0.size:
                by_seed.setdefault(c.seed, []).append((c.pass1[at0[0]], panel_values(c, key)[at0[0]]))
    per_seed = np.array([np.mean(points, axis=0) for points in by_seed.values()])
    return float(per_seed[:, 0].mean()), float(per_seed[:, 1].mean())


def frontier(ev: Evidence, out: Path) -> str | None:
    """Along training (llm/curve.py): Pass@32, Pass@16, no-correct share, entropy and greedy accuracy
    against sampled Pass@1, the base as a star (base_point: the mean over seeds of their step-0 points), per seed
    (thin) and pooled over seeds (thick: at POOLED_LEVELS Pass@1 levels of the
    range every seed's curve spans, the mean over seeds of each curve read where it first reaches the level, the
    reading of the matched claims; solid where every seed is supported there, dashed where not; a picture, not a
    test)."""
    from escov.paper_checks.matched import curve_of

    curves = {
        name: [c for c in (curve_of(r.curve or [], r.seed or 0) for r in ev.by_variant(name)) if c is not None]
        for name in MAIN
    }
    curves = {name: cs for name, cs in curves.items() if cs}
    if not curves:
        return None
    fig, grid = plt.subplots(2, 3, figsize=(12, 7.5))  # five panels and, in the sixth cell, the legend
    axes, legend_cell = grid.flat[: len(FRONTIER_PANELS)], grid.flat[-1]
    for ax, (key, ylabel) in zip(axes, FRONTIER_PANELS):
        for i, (name, cs) in enumerate(curves.items()):
            ys = [panel_values(c, key) for c in cs]
            for c, y in zip(cs, ys):
                ax.plot(c.pass1, y, color=f"C{i}", alpha=0.3, lw=0.8)
            lo, hi = common_range([c.pass1 for c in cs])
            levels = np.linspace(lo, hi, POOLED_LEVELS) if hi > lo else np.array([])
            # pooled: each seed read where its curve first reaches the level (theory.matched.read_at), averaged
            pooled = np.array([np.mean([read_at(c.pass1, y, level) for c, y in zip(cs, ys)]) for level in levels])
            # solid where every seed has measured points within RESOLUTION of the level (the matched claims'
            # support rule), dashed where some seed's reading runs along a wider gap
            solid = np.array([all(supported(c.pass1, level) for c in cs) for level in levels], dtype=bool)
            ax.plot(levels, pooled, "--", color=f"C{i}", lw=1.2)
            ax.plot(
                levels, np.where(solid, pooled, np.nan), "-", color=f"C{i}", lw=2.2, label=f"{name} ({len(cs)} seeds)"
            )
        if any((c.steps == 0).any() for cs in curves.values() for c in cs):
            ax.scatter(*base_point(curves, key), c="k", marker="*", s=100, label="base (mean over seeds)", zorder=5)
        ax.set(xlabel="sampled Pass@1", ylabel=ylabel, title=ylabel.split(" (")[0])
    legend_cell.axis("off")
    legend_cell.legend(
        *axes[0].get_legend_handles_labels(),
        loc="upper left",
        frameon=False,
        title="thin: each seed\nthick: pooled over seeds\nat matched Pass@1 (dashed: a\nseed's "
        "measured points are\nfurther apart there than\nthe matched claims read)",
    )
    fig.tight_layout()
    fig.savefig(out / "frontier.png", dpi=110)
    plt.close(fig)
    return "frontier.png"


def js_vs_prediction(ev: Evidence, out: Path, grid: list[dict] | None = None) -> str | None:
    """Lemma 1 on the real model: with a grid, lemma1_grid_plot; without one, measured JSpol_N against
    (sigma^2/2)(1 - 1/N) tr I_x per probe prompt of the runs' populations, log-log."""
    from escov.paper_checks.real_checks import training_populations

    if grid:
        return lemma1_grid_plot(grid, training_populations(ev), out)
    pts = []
    for run in ev.runs:
        for m in (run.probe or {}).get("measurements", []):
            pts += [
                (r["lemma1_prediction"], r["jspol"], m["sigma"])
                for r in m.get("per_prompt", [])
                if r["lemma1_prediction"] > 0 and r["jspol"] > 0
            ]
    if not pts:
        return None
    pred, meas, sig = np.array(pts).T
    fig, ax = plt.subplots(figsize=(5, 4.5))
    sc = ax.scatter(pred, meas, c=np.log10(sig), cmap="viridis", s=14)
    fig.colorbar(sc, ax=ax, label="log10 sigma")
    lims = [min(pred.min(), meas.min()), max(pred.max(), meas.max())]
    ax.plot(lims, lims, "k--", lw=1, label="measured = predicted")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _label(ax, "Lemma 1 prediction (sigma^2/2)(1-1/N) tr I_x", "measured JSpol_N", "Lemma 1 on the real model")
    return _save(fig, out, "js_measured_vs_predicted.png")


def lemma1_grid_plot(grid: list[dict], training: dict | None, out: Path) -> str | None:
    """Left: measured JSpol_N (mean over populations, 95% interval) and the prediction (sigma^2/2)(1 - 1/N) tr I
    against sigma, log-log, per N; the sigmas whose measured s lies in Lemma 1's regime shaded, the training
    sigma marked. Right: measured / predicted against measured s, with 1 +- 10% and the regime s <= 0.05; the
    training runs' s marked."""
    from escov.paper_checks.lemma_grid import TOLERANCE
    from escov.theory.paper import LEMMA1_S_LIMIT

    finite = lambda x: isinstance(x, (int, float)) and np.isfinite(x)
    rows = [
        r
        for r in grid
        if finite(r.get("measured"))
        and r["measured"] > 0
        and finite(r.get("ratio"))
        and finite(r.get("s_measured"))
        and r["s_measured"] > 0
        and all(finite(x) for x in r.get("ratio_ci") or [None])
    ]
    if not rows:
        return None
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 5))
    sigmas = np.array(sorted({r["sigma"] for r in rows}))
    inside = [r["sigma"] for r in rows if r["s_measured"] <= LEMMA1_S_LIMIT]
    if inside:
        ax.axvspan(
            sigmas.min() / 1.3, max(inside) * 1.15, color="C2", alpha=0.12, label=f"rows with s <= {LEMMA1_S_LIMIT}"
        )
    line = np.geomspace(sigmas.min() / 1.3, sigmas.max() * 1.3, 50)
    for i, n in enumerate(sorted({r["members"] for r in rows})):
        sub = sorted((r for r in rows if r["members"] == n), key=lambda r: r["sigma"])
        x = np.array([r["sigma"] for r in sub])
        y = np.array([r["measured"] for r in sub])
        err = 1.96 * np.array([r.get("measured_se") or 0.0 for r in sub])
        ax.errorbar(
            x,
            y,
            yerr=[np.minimum(err, 0.999 * y), err],
            fmt="o",
            color=f"C{i}",
            ms=4,
            capsize=2,
            label=f"measured N = {n}",
        )
        if finite(sub[0].get("fisher_trace")):
            ax.plot(line, 0.5 * line**2 * (1 - 1 / n) * sub[0]["fisher_trace"], "--", color=f"C{i}", lw=1)
        s = np.array([r["s_measured"] for r in sub])
        lo = np.array([r["ratio"] - r["ratio_ci"][0] for r in sub])
        hi = np.array([r["ratio_ci"][1] - r["ratio"] for r in sub])
        ax2.errorbar(
            s * (1 + 0.04 * (i - 1.5)),
            [r["ratio"] for r in sub],
            yerr=[lo, hi],
            fmt="o-",
            color=f"C{i}",
            ms=4,
            capsize=2,
            lw=0.8,
            label=f"N = {n}",
        )
    ax.plot([], [], "k--", lw=1, label="prediction (sigma^2/2)(1-1/N) tr I")
    if training and training.get("sigma"):
        ax.axvline(training["sigma"], color="C3", ls=":", lw=1.5, label=f"training sigma = {training['sigma']:g}")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="sigma",
        ylabel="JSpol_N (mean over populations, 95% interval)",
        title=f"Lemma 1 on {rows[0].get('task', 'the task')} at T = {rows[0].get('temperature', '?')}",
    )
    ax.legend(fontsize=8)
    ax2.axhspan(1 - TOLERANCE, 1 + TOLERANCE, color="0.85", label=f"1 +- {TOLERANCE:g}")
    ax2.axvspan(
        min(r["s_measured"] for r in rows) / 1.5,
        LEMMA1_S_LIMIT,
        color="C2",
        alpha=0.12,
        label=f"regime s <= {LEMMA1_S_LIMIT}",
    )
    ax2.axhline(1.0, color="k", lw=0.8)
    if training and training.get("s_median") is not None:
        ax2.axvline(
            training["s_median"],
            color="C3",
            ls=":",
            lw=1.5,
            label=f"training runs' s = {training['s_median']:.2g} (T = {training.get('temperature')})",
        )
    ax2.set(
        xscale="log",
        xlabel="measured s = E KL(pi_member || pi_center)",
        ylabel="measured / predicted JSpol (95% interval)",
        title="where the O(sigma^4) term takes over",
    )
    ax2.legend(fontsize=8)
    return _save(fig, out, "js_measured_vs_predicted.png")


def update_magnitudes(ev: Evidence, out: Path) -> str | None:
    """Histogram of |theta - theta_0| entries (ES, its null, GRPO) and Pass@1 of thresholded checkpoints."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    drawn, changed = False, 0
    for i, name in enumerate(("es", "es[null]", "es[bf16]", "grpo")):
        runs = [r for r in ev.by_variant(name) if (r.eval or {}).get("update_analysis")]
        if not runs:
            continue
        h = runs[0].eval["update_analysis"]["histogram"]
        edges = np.array(h["edges"])
        ax.stairs(h["counts"], edges, label=name, color=f"C{i}")
        changed += sum(h["counts"])
        drawn = True
        th = runs[0].eval.get("thresholded") or []
        if th and eval_of(runs[0], "final"):
            xs = [0.0] + [t["sparsity_percent"] for t in th]
            ys = [eval_of(runs[0], "final")["pass_at_k"]["1"]] + [t["pass_at_1"] for t in th]
            order = np.argsort(xs)
            ax2.plot(np.array(xs)[order], np.array(ys)[order], "-o", color=f"C{i}", label=name)
    if not drawn:
        plt.close(fig)
        return None
    if changed == 0:  # every update is zero: an empty log axis would show nothing, so say it
        ax.text(
            0.5, 0.5, "no entry changed in any run\n(zero updates)", ha="center", va="center", transform=ax.transAxes
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    _label(ax, "|delta| of an update entry", "entries", "Update magnitudes (first seed)")
    for paper_tau in PAPER_TAUS:
        ax.axvline(paper_tau, color="gray", lw=0.6, ls=":")
    _label(ax2, "sparsity (% of update entries reverted)", "Pass@1", "Magnitude-thresholded checkpoints")
    return _save(fig, out, "update_magnitudes.png")


def drift_per_layer(ev: Evidence, out: Path) -> str | None:
    rows = {}
    for name in ("es", "es[null]", "grpo"):
        runs = [r for r in ev.by_variant(name) if r.metrics and "drift_layers" in r.metrics[-1]]
        if runs:
            rows[name] = runs[0].metrics[-1]["drift_layers"]
    if not rows:
        return None
    groups = sorted({g for layers in rows.values() for g in layers})
    fig, ax = plt.subplots(figsize=(max(5.5, 0.6 * len(groups)), 4))
    width = 0.8 / len(rows)
    for i, (name, layers) in enumerate(rows.items()):
        ax.bar(np.arange(len(groups)) + i * width, [layers.get(g, np.nan) for g in groups], width, label=name)
    ax.set_xticks(np.arange(len(groups)) + 0.4 - width / 2, groups, rotation=45, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("relative drift ||theta - theta_0|| / ||theta_0||")
    legend_beside(ax)
    ax.set_title("Drift per layer at the end (first seed)")
    return _save(fig, out, "drift_per_layer.png")


def premise_control_plot(
    pairs: list[tuple[dict, dict]], families: list[str], curves: dict[str, list[dict]], out: Path
) -> str:
    """The premise's positive control (premise.py): left, each prompt's success rate (correct / samples, mean over
    the seeds) at the base and at GRPO's plateau, stacked by family; right, Pass@1 and Pass@32 along training per
    run. Returns the file name (control.png)."""
    fam = np.array(families)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    bins = np.linspace(0, 1, 11)
    for offset, (label, which) in enumerate((("base", 0), ("plateau", 1))):
        rates = np.mean(
            [
                [r["correct"] / pair[which]["sampled"]["n"] for r in pair[which]["sampled"]["per_problem"]]
                for pair in pairs
            ],
            axis=0,
        )
        width = (bins[1] - bins[0]) / 2.2
        bottom = np.zeros(len(bins) - 1)
        for i, name in enumerate(sorted(set(families))):
            counts, _ = np.histogram(rates[fam == name], bins=bins)
            left.bar(
                bins[:-1] + offset * width,
                counts,
                width=width,
                bottom=bottom,
                align="edge",
                color=f"C{2 * offset + i}",
                label=f"{label}: {name}",
            )
            bottom += counts
    left.set_xlabel("per-prompt success rate (mean over seeds)")
    left.set_ylabel("prompts")
    left.set_title("prompts by success rate, base vs plateau")
    left.legend(fontsize=8)
    for i, (name, points) in enumerate(curves.items()):
        steps = [p["step"] for p in points]
        right.plot(steps, [p["pass1"] for p in points], color=f"C{i}", label=f"{name} Pass@1")
        right.plot(steps, [p["pass32"] for p in points], "--", color=f"C{i}", label=f"{name} Pass@32")
    _label(right, "step", "validation Pass@k", "GRPO to its plateau")
    return _save(fig, out, "control.png")


PLOTS = {
    "frontier": frontier,
    "passk_curves": passk_curves,
    "entropy": entropy_curves,
    "pareto": pareto_front,
    "js": js_vs_prediction,
    "update_magnitudes": update_magnitudes,
    "drift_per_layer": drift_per_layer,
    "pass1_by_step": pass1_by_step,  # paper_checks/step_plot.py
}


def es_pilot_plot(record: dict, path: Path) -> str:
    """The ES pilot (reproduce/es_pilot.py): Pass@1 (left) and Pass@32 (right) by ES update for every run, a colour
    per setting, GRPO's plateau Pass@1 L drawn on the left. Returns the file name."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for i, (name, runs) in enumerate(record["curves"].items()):
        for j, points in enumerate(runs.values()):
            steps = [p["step"] for p in points]
            left.plot(steps, [p["pass1"] for p in points], color=f"C{i}", label=name if j == 0 else None)
            right.plot(steps, [p["pass32"] for p in points], color=f"C{i}", label=name if j == 0 else None)
    left.axhline(record["level"], color="k", ls=":", label="GRPO's plateau Pass@1 (control)")
    _label(left, "ES update", "validation Pass@1", "ES toward GRPO's plateau")
    _label(right, "ES update", "validation Pass@32", "coverage along the way")
    return _save(fig, path.parent, path.name)
