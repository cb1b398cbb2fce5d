"""Build the report: every claim at every level, the open questions, plots; REPORT.md + report.json.

    build_report(run_dirs, out, theory_json=None, simulate_summary=None, lemma_grid=None) -> dict
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from paper_checks.claims import CLAIMS, OPEN_QUESTIONS
from paper_checks.evidence import Evidence, load_simulate_summary, load_theory_json, variant
from paper_checks.lemma_grid import summarize_grid
from paper_checks.level_checks import simulate_verdict, theory_verdict
from paper_checks.open_questions import ANSWERS
from paper_checks.plots import PLOTS
from paper_checks.real_checks import REAL_CHECKS
from paper_checks.rundir import load_runs
from paper_checks.verdict import MISSING, NOT_TESTABLE, Verdict

CLAIM_PLOTS = {"entropy_collapse": ["entropy"], "es_improves_over_base": ["passk_curves"],
               "es_passk_above_grpo": ["passk_curves"], "grpo_passk_below_base": ["passk_curves"],
               "schedules_pareto": ["pareto"], "drift_ratio": ["drift_per_layer"],
               "update_sparsity": ["update_magnitudes"], "thresholded_pass1": ["update_magnitudes"],
               "lemma1": ["js"]}


def real_verdict(claim, ev: Evidence) -> Verdict:
    if not claim.real:
        return Verdict(claim.id, NOT_TESTABLE, "n/a", note="checked exactly by theory and along training by simulate")
    if not ev.runs:
        return Verdict(claim.id, MISSING, "n/a", note="no run directories given")
    try:
        return REAL_CHECKS[claim.id](ev)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:  # a partial run: mark, do not crash
        return Verdict(claim.id, MISSING, "n/a", note=f"run data incomplete for this check: {type(err).__name__}: {err}")


def collect(run_dirs, theory_json=None, simulate_summary=None) -> Evidence:
    runs, problems = load_runs(run_dirs)
    ev = Evidence(runs=runs, problems=problems)
    for path, loader, attr in ((theory_json, load_theory_json, "theory"), (simulate_summary, load_simulate_summary, "simulate")):
        if path is None:
            continue
        try:
            setattr(ev, attr, loader(path))
        except (OSError, ValueError) as err:
            ev.problems.append(f"{path}: {err}")
    return ev


def build_report(run_dirs, out, theory_json=None, simulate_summary=None, lemma_grid: list[dict] | None = None) -> dict:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ev = collect(run_dirs, theory_json, simulate_summary)
    plots = {}
    for key, fn in PLOTS.items():
        name = fn(ev, out, lemma_grid) if key == "js" else fn(ev, out)
        if name:
            plots[key] = name
    claims = []
    for c in CLAIMS:
        levels = {"theory": theory_verdict(c, ev), "simulate": simulate_verdict(c, ev), "real": real_verdict(c, ev)}
        levels["real"].plots = [plots[k] for k in CLAIM_PLOTS.get(c.id, []) if k in plots]
        if simulate_summary is not None:  # simulate plots sit beside its summary.json
            levels["simulate"].plots = [os.path.relpath(Path(simulate_summary).parent / p, out) for p in levels["simulate"].plots]
        claims.append({"id": c.id, "statement": c.statement, "paper": c.paper, "test": c.test.describe(), "untestable": c.untestable,
                       "levels": {k: v.to_json() for k, v in levels.items()}})
    questions = [{"id": qid, "question": q, **ANSWERS[qid](ev)} for qid, q in OPEN_QUESTIONS]
    report = {"runs": [{"path": str(r.path), "variant": variant(r.config), "seed": r.seed, "model": r.config.get("model")}
                       for r in ev.runs],
              "input_problems": ev.problems, "claims": claims, "open_questions": questions, "plots": plots,
              "lemma_grid": lemma_grid or []}
    (out / "report.json").write_text(json.dumps(report, indent=1, default=float))
    (out / "REPORT.md").write_text(render_markdown(report))
    return report


def _cell(level: dict) -> str:
    return f"**{level['status']}**: {level['ours']}" if level["ours"] != "n/a" else level["status"]


def render_markdown(report: dict) -> str:
    lines = ["# ES vs GRPO: the paper's claims, checked", "",
             "Verdicts come from the data of this report's inputs: `theory` (exact checks on toy policies), "
             "`simulate` (bandit analogues, over seeds) and `real` (training runs of causal LMs). "
             "Each claim states its test: directional (the 95% interval of a difference lies on the claimed side), "
             "equivalence (the whole interval inside a stated margin), ratio (against the paper's figure), or "
             "identity (true for every input: shown, never counted as evidence). Real-run intervals come from one "
             "design, seeds x test prompts shared by every run (resampled jointly, so differences are paired by "
             "prompt) x samples, with Student t over seeds; per-run numbers use t over seeds. Beside each interval: "
             "its design and the smallest difference it detects at 80% power, next to the paper's effect. "
             "Pass@k in points (x100).", ""]
    if report["runs"]:
        by = {}
        for r in report["runs"]:
            by.setdefault(r["variant"], []).append(r["seed"])
        lines += ["Runs: " + ", ".join(f"`{v}` x{len(s)}" for v, s in sorted(by.items())), ""]
    if report["input_problems"]:
        lines += ["**Input problems** (claims that needed these are marked 'missing data'):", ""]
        lines += [f"- {p}" for p in report["input_problems"]] + [""]
    lines += ["## All claims", "", "| claim | paper | test | theory | simulate | real runs | real design |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for c in report["claims"]:
        lv = c["levels"]
        lines.append(f"| [{c['statement']}](#{c['id']}) | {c['paper']} | {c['test']} | {lv['theory']['status']} | "
                     f"{lv['simulate']['status']} | {_cell(lv['real'])} | {lv['real'].get('design', '')} |")
    lines += ["", "## Open questions", ""]
    for q in report["open_questions"]:
        lines += [f"### {q['question']}", "", q["answer"], ""]
        if q["table"]:
            keys = list(q["table"][0])
            lines += ["| " + " | ".join(keys) + " |", "| " + " | ".join("---" for _ in keys) + " |"]
            lines += ["| " + " | ".join(_fmt(row.get(k)) for k in keys) + " |" for row in q["table"][:40]]
            lines.append("")
    if report["lemma_grid"]:
        lines += ["## Lemma 1 on the real model over a grid of sigma and N", "",
                  "Each point: independent populations (own noise seed per point and draw); the ratio's interval is "
                  "Student t over draws; 'one population sd' is the spread a single population's ratio has.", "",
                  "| sigma | N | draws | measured JSpol | predicted | ratio [95%] | one population sd | s measured |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for g in report["lemma_grid"]:
            lines.append(f"| {g['sigma']:.2g} | {g['members']} | {g.get('draws', 1)} | {g['measured']:.3g} | {g['predicted']:.3g} | "
                         f"{g['ratio']:.3f} [{g['ratio_ci'][0]:.3f}, {g['ratio_ci'][1]:.3f}] | {_fmt(g.get('ratio_sd'))} | "
                         f"{g['s_measured']:.3g} |")
        lines.append("")
        for n, g in summarize_grid(report["lemma_grid"]).items():
            lines.append(f"- N = {n}: measured JSpol grows like sigma^{g['sigma_exponent']:.2f} (Lemma 1: sigma^2); "
                         f"ratio interval within 1 +- 10% at sigma = {g['sigmas_within_10pct'] or 'none'}, "
                         f"outside at sigma = {g['sigmas_outside'] or 'none'}")
        lines.append("")
    lines += ["## Claims one by one", ""]
    for c in report["claims"]:
        lines += [f"### {c['statement']}", f'<a id="{c["id"]}"></a>', "", f"Paper: {c['paper']}.", ""]
        if c["untestable"]:
            lines += [f"Limit of our miniature: {c['untestable']}.", ""]
        for level in ("theory", "simulate", "real"):
            v = c["levels"][level]
            note = f" ({v['note']})" if v["note"] else ""
            lines.append(f"- {level}: **{v['status']}**: {v['ours']}{note}")
            for key in ("test", "design", "power"):
                if v.get(key):
                    lines.append(f"  - {key}: {v[key]}")
        for plot in c["levels"]["real"]["plots"] + c["levels"]["simulate"]["plots"]:
            lines.append(f"\n![{plot}]({plot})")
        lines.append("")
    return "\n".join(lines) + "\n"


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)
