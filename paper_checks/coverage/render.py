"""The report for people: a short text table (the report itself is measure.py's dict, written as JSON)."""

from __future__ import annotations


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:5.1f}"


def _interval(entry: dict) -> str:
    return f"{_pct(entry['mean'])} [{_pct(entry['lo'])}, {_pct(entry['hi'])}]"


def _k(value) -> str:
    return "beyond n" if value is None else f"{value:.3g}"


def text_table(report: dict) -> list[str]:
    """Pass@k at a few budgets (percent, 95% problem-bootstrap intervals), k*, the solvability sets at k = n."""
    n, ks = report["n"], report["ks"]
    shown = sorted({ks[0], *[k for k in ks if k in (8, 64, 1024)], ks[-1]})
    width = max(len(m) for m in report["models"]) + 2
    conf = round(100 * report["confidence"])
    lines = [
        f"{report['prompts']} prompts x {n} samples; reference {report['reference']!r}; "
        f"Pass@k in % with {conf}% problem-bootstrap intervals ({report['replicates']} replicates)",
        "model".ljust(width) + "".join(f"Pass@{k}".ljust(24) for k in shown),
    ]
    for name, entry in report["models"].items():
        lines.append(name.ljust(width) + "".join(_interval(entry["pass_at_k"][str(k)]).ljust(24) for k in shown))
    for name, entry in report["models"].items():
        if "crossing" not in entry:
            continue
        c, s = entry["crossing"], entry["solvability"]
        star = "no crossing up to n" if c["k_star"] is None else f"k* = {c['k_star']:.0f}"
        lines.append(
            f"{name} vs {report['reference']}: {star} [{_k(c['lo'])}, {_k(c['hi'])}] "
            f"(no crossing in {100 * c['no_crossing_share']:.0f}% of replicates); at k = {n}: "
            f"preserved {s['preserved']:g}, gained {s['gained']:g}, lost {s['lost']:g}, "
            f"SRR {_pct(s['srr']).strip()}%, NDR {_pct(s['ndr']).strip()}%, NSCR {_pct(s['nscr']).strip()}%"
        )
    return lines
