"""The premise record's two attachments in REPORT.md: coverage to k = n at the endpoints, and the premise across
pretraining draws (written by the answer's stages, reproduce/answer_stages.py attach; read here, nothing computed
but what the attachments hold).

    pass_at_k_endpoints   (reproduce/endpoints.py) per temperature: the base, GRPO's plateau and ES's end, Pass@k on
                          the k grid 1, 2, 4, ..., n with problem-bootstrap intervals; the crossing budgets k* (the
                          first k at which one curve leads another, null when not up to n); the solvability sets at
                          k = n (prompts solved by both, gained, lost). Rendered as a table at K_SHOWN and n, the
                          crossings and the sets, and a plot (FILE: Pass@k against k on a log axis, a panel per
                          temperature, each model's interval as a band)
    base_draws            (reproduce/base_draws.py) each pretraining draw's positive control and the step-size
                          control: the verdict and Pass@32 plateau - base; the count that narrowed
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from escov.llm.plot_axes import label_k_axis, legend_beside  # noqa: E402
from escov.paper_checks.verdict import fmt_interval  # noqa: E402

FILE = "passk_to_n.png"
K_SHOWN = (1, 8, 32, 128)  # the table's columns besides n: Pass@1, the paper's Pass@32, and two budgets between
MODELS = {"base": "base", "grpo_plateau": "GRPO at its plateau", "es_end": "ES at its end"}
COLOURS = {"base": "0.4", "grpo_plateau": "tab:red", "es_end": "tab:blue"}
CROSSINGS = {
    "es_over_grpo": "ES first leads GRPO",
    "base_over_grpo": "the base first leads GRPO",
    "base_over_es": "the base first leads ES",
}
SETS = {"grpo_vs_base": "GRPO against the base", "es_vs_base": "ES against the base", "es_vs_grpo": "ES against GRPO"}


def _cell(entry: dict | None) -> str:
    if not entry or entry.get("mean") is None:
        return "-"
    return f"{100 * entry['mean']:.1f} [{100 * entry['lo']:.1f}, {100 * entry['hi']:.1f}]"


def _crossing(c: dict | None, n: int) -> str:
    """A crossing budget with its bootstrap interval; "not up to n" when it never happens on the grid."""
    if not c or c.get("k_star") is None:
        return f"not up to k = {n}"
    hi = "beyond n" if c.get("hi") is None else f"{c['hi']:g}"
    lo = "-" if c.get("lo") is None else f"{c['lo']:g}"
    return f"k* = {c['k_star']:g} [{lo}, {hi}]"


def _count(x: float) -> str:
    """A prompt count: whole, or averaged over seed pairs to one decimal."""
    return f"{x:g}" if float(x).is_integer() else f"{x:.1f}"


def _sets(s: dict) -> str:
    srr = "-" if s.get("srr") is None else f"{100 * s['srr']:.1f}%"
    return f"kept {_count(s['preserved'])}, gained {_count(s['gained'])}, lost {_count(s['lost'])} (retention {srr})"


def render_endpoints(att: dict) -> list[str]:
    """The coverage table, crossings and solvability sets of every temperature (module docstring)."""
    n, ks = att["samples"], [str(k) for k in att["ks"]]
    shown = [str(k) for k in K_SHOWN if str(k) in ks and k < n] + [str(n)]
    lines = [
        f"### Coverage to k = {n} at the endpoints",
        "",
        f"The base, GRPO's last checkpoint and ES's last checkpoint, {n} samples on each of the {att['prompts']} "
        f"test prompts ({len(att['seeds'])} seeds for GRPO and ES, averaged within a prompt), Pass@k in points with "
        f"95% problem-bootstrap intervals, each model's own (a difference between two models is paired by prompt and "
        f"tighter). Exploratory (registered as such). ![Pass@k to {n}]({FILE})",
        "",
    ]
    for t in (f"{t:g}" for t in att["temperatures"]):
        lines += [f"T = {t}:", "", "| model | " + " | ".join(f"Pass@{k}" for k in shown) + " |"]
        lines.append("| --- | " + " | ".join("---" for _ in shown) + " |")
        for name, label in MODELS.items():
            lines.append(f"| {label} | " + " | ".join(_cell(att[name].get(t, {}).get(k)) for k in shown) + " |")
        crossings = "; ".join(
            f"{label}: {_crossing(att['crossing'][key].get(t), n)}" for key, label in CROSSINGS.items()
        )
        sets = "; ".join(f"{label}: {_sets(att['solvability'][key][t])}" for key, label in SETS.items())
        lines += [
            "",
            f"- Crossing budgets: {crossings}.",
            f"- Prompts solved at k = {n} (solvability sets): {sets}.",
            "",
        ]
    return lines


def render_draws(att: dict) -> list[str]:
    """The premise's positive control on every pretraining draw and at the other GRPO step size."""
    lines = [
        "### The premise across pretraining draws",
        "",
        f"The positive control (GRPO to its plateau on validation prompts, the control's narrowed rule) on "
        f"{att['of']} bases and step sizes: **narrowed on {att['narrowed']} of {att['of']}**. Exploratory.",
        "",
        "| draw | GRPO | design | Pass@32 plateau - base | verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    for d in att["draws"]:
        e = d["pass32_plateau_minus_base"]
        interval = "-" if e.get("mean") is None else fmt_interval(e["mean"], e["lo"], e["hi"])
        mark = " (the answer's base)" if d.get("answer_base") else ""
        lr = d["grpo"].get("learning_rate")
        grpo = f"lr {'?' if lr is None else format(lr, 'g')}, G {d['grpo'].get('num_generations', '?')}"
        design = f"{len(d['seeds'])} seeds x {d['prompts']} prompts x {d['samples']} samples, {d['steps']} steps"
        lines.append(f"| {d['draw']}{mark} | {grpo} | {design} | {interval} | {d['verdict']} |")
    return lines + [""]


def plot_endpoints(att: dict, path: Path) -> Path:
    """FILE: Pass@k against k (log axis) of the three endpoints, a panel per temperature, intervals as bands."""
    temps = [f"{t:g}" for t in att["temperatures"]]
    fig, axes = plt.subplots(1, len(temps), figsize=(5.2 * len(temps) + 1.8, 3.8), squeeze=False)
    ks = [int(k) for k in att["ks"]]
    for ax, t in zip(axes[0], temps):
        for name, label in MODELS.items():
            rows = [att[name][t][str(k)] for k in ks]
            ax.plot(ks, [100 * r["mean"] for r in rows], color=COLOURS[name], label=label, marker=".")
            ax.fill_between(
                ks,
                [100 * r["lo"] for r in rows],
                [100 * r["hi"] for r in rows],
                color=COLOURS[name],
                alpha=0.15,
                linewidth=0,
            )
        ax.set_xscale("log", base=2)
        label_k_axis(ax, [k for k in ks if k in (1, 4, 16, 64, 256, 1024) or k == ks[-1]])
        ax.set_xlabel("k (samples)")
        ax.set_ylabel("Pass@k (points)")
        ax.set_title(f"T = {t}, {att['prompts']} test prompts")
        ax.grid(alpha=0.3)
    legend_beside(axes[0][-1])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def premise_section_end(text: str) -> int:
    """Where REPORT.md's premise section ends (the start of the next "## " heading after "## The premise"): where the
    attachments' sections go; the end of the text in a report without a premise section or nothing after it."""
    start = text.find("\n## The premise")
    end = text.find("\n## ", start + 1) if start >= 0 else -1
    return end + 1 if end >= 0 else len(text)


def _kept(entry: dict) -> str:
    """ "kept / lost (gained)" of one method's rare-only reading, in % of the base's solved ones."""
    if entry["kept"] is None:
        return f"- / - ({entry['gained']:.2g})"
    return f"{100 * entry['kept']:.0f}% / {100 * entry['lost']:.0f}% ({entry['gained']:.2g})"


def render_rare_only(att: dict) -> list[str]:
    """REPORT.md's lines for the rare-only prompts at the endpoints (reproduce/rare_only.py)."""
    temps = att["by_temperature"]
    n = next(iter(temps.values()))["n"]
    lines = [
        "### The rare-only test prompts at the endpoints",
        "",
        f"{att['rare_only_prompts']} of the {att['prompts']} test prompts are rare-only (every solution uses the rare "
        f"strategy of the base's corpus). Per temperature: how many the base solves in {n} samples (its Pass@{n} on "
        "them), and of those, the share GRPO's plateau and ES's end keep / lose (mean over seeds; in brackets the "
        "rare-only prompts the base never solved that they solve, per seed). Exploratory: no interval.",
        "",
        f"| T | solved by the base | base Pass@{n} | GRPO kept / lost (gained) | ES kept / lost (gained) |",
        "|---|---|---|---|---|",
    ]
    for t, e in temps.items():
        base = "-" if e["base_pass_at_n"] is None else f"{100 * e['base_pass_at_n']:.1f}%"
        lines.append(f"| {t} | {e['base_solved']} | {base} | {_kept(e['grpo_plateau'])} | {_kept(e['es_end'])} |")
    if all("solution_share_found" in e for e in temps.values()):
        lines += [
            "",
            f"The share of each test prompt's enumerated solution set found in {n} samples (mean over prompts, and "
            "seeds): "
            + "; ".join(
                f"T = {t}: base {100 * found['base']:.1f}%, GRPO {100 * found['grpo_plateau']:.1f}%, "
                f"ES {100 * found['es_end']:.1f}%"
                for t, found in ((t, e["solution_share_found"]) for t, e in temps.items())
            )
            + ".",
        ]
    return lines


def render(record: dict, report_dir: Path | None = None) -> list[str]:
    """REPORT.md's lines for the attachments a premise record holds (none without them); with report_dir, the plot
    is drawn there."""
    lines: list[str] = []
    if record.get("pass_at_k_endpoints"):
        if report_dir is not None:
            plot_endpoints(record["pass_at_k_endpoints"], Path(report_dir) / FILE)
        lines += render_endpoints(record["pass_at_k_endpoints"])
    if record.get("base_draws"):
        lines += render_draws(record["base_draws"])
    return lines
