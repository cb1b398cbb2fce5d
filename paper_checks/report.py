"""Build the report: every claim at every level, the open questions, plots; REPORT.md + report.json.

    build_report(run_dirs, out, theory_json=None, simulate_summary=None, lemma_grid=None) -> dict

report.json holds no NaN or infinity: a value that is not finite (a statistic of too few runs) is
written as null and its path listed under "non_finite".
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from escov.llm.rundir import dumps
from escov.paper_checks.evidence import Evidence, load_simulate_summary, load_theory_json, variant
from escov.paper_checks.finite import without_non_finite
from escov.paper_checks.lemma_as_stated import lemma_as_stated_record
from escov.paper_checks.lemma_as_stated import report_lines as lemma_as_stated_lines
from escov.paper_checks.lemma_grid import GRID_ROLE, summarize_grid
from escov.paper_checks.level_checks import simulate_verdict, theory_verdict
from escov.paper_checks.open_questions import ANSWERS, OPEN_QUESTIONS, QUESTION_NEEDS
from escov.paper_checks.own_runs import is_own_run, own_runs_section
from escov.paper_checks.own_runs import render as render_own
from escov.paper_checks.plots import PLOTS
from escov.paper_checks.premise_record import premise_record
from escov.paper_checks.premise_record import render as render_premise
from escov.paper_checks.provenance import provenance
from escov.paper_checks.provenance import render as render_provenance
from escov.paper_checks.real_checks import REAL_CHECKS, describe_need, es_regime, es_regime_line
from escov.paper_checks.rundir import RunDirError, load_runs
from escov.paper_checks.summary import PUBLISHED, summary_lines, undecided_markdown
from escov.paper_checks.trust import screen
from escov.paper_checks.verdict import MISSING, NOT_RUN, NOT_TESTABLE, Verdict
from escov.theory.claims import CLAIMS, RegistryError


def ks_missing(ev: Evidence, ks) -> list[int]:
    """The k among ks that some run's base or final evaluation does not hold."""
    parts = [r.eval[part] for r in ev.runs if r.eval for part in ("base", "final") if part in r.eval]
    return [k for k in ks if any(str(k) not in p.get("pass_at_k", {}) for p in parts)]


def needs_ks_note(ks: list[int]) -> str:
    return (f"needs Pass@{', Pass@'.join(map(str, ks))}, which these runs' evaluations do not hold "
            f"(train with eval_ks including {', '.join(map(str, ks))} and eval_samples >= {max(ks)})")


def real_verdict(claim, ev: Evidence, planned: set[tuple[str, str]] | None = None) -> Verdict:
    """The claim's real-run verdict. planned: the needs (real_checks.provided) of the runs the reproduction's budget
    plans (None: no budget says); a check without data whose needs the budget does not plan is "not run in this
    budget", one whose planned runs lack the data (absent, cut off, damaged) stays "missing data"."""
    if not claim.real:
        return Verdict(claim.id, NOT_TESTABLE, "n/a", note="checked exactly by theory and along training by simulate")
    check = REAL_CHECKS.get(claim.id)
    if check is None:
        raise RegistryError(f"claim {claim.id!r} says a real-run check exists, but paper_checks.real_checks has none")
    if not ev.runs:
        return Verdict(claim.id, MISSING, "n/a", note="no run directories given")
    verdict = not_run(_real_verdict(claim, check, ev), planned)
    changed = [f"{r.name} ({c})" for r in ev.runs for c in r.changed]
    if changed:  # the claim rests on runs whose settings or code changed mid-run
        verdict.note = (verdict.note + "; " if verdict.note else "") + "inputs changed mid-run: " + "; ".join(changed)
    return verdict


def not_run(verdict: Verdict, planned: set[tuple[str, str]] | None) -> Verdict:
    """verdict, or "not run in this budget" when it lacks data that the budget's planned runs never give."""
    unplanned = [n for n in verdict.evidence.get("needs", []) if planned is not None and tuple(n) not in planned]
    if verdict.status == MISSING and unplanned:
        verdict.status = NOT_RUN
        verdict.note = f"this budget plans no {'; no '.join(map(describe_need, unplanned))} ({verdict.note})"
    return verdict


def _real_verdict(claim, check, ev: Evidence) -> Verdict:
    missing = ks_missing(ev, claim.pass_at_k)  # the Pass@k the check reads (eval.json; llm train's eval_ks)
    if missing:
        return Verdict(claim.id, MISSING, "n/a", note=needs_ks_note(missing))
    try:
        return check(ev)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:  # a partial run: mark, do not crash
        return Verdict(claim.id, MISSING, "n/a",
                       note=f"run data incomplete for this check: {type(err).__name__}: {err}")


def answer(qid: str, ev: Evidence, planned: set[tuple[str, str]] | None = None) -> dict:
    """An open question's answer; a run that lacks what it needs gives a 'missing data' answer, not a crash, and
    a question whose runs the budget does not plan (planned, as in real_verdict) says so first."""
    unplanned = [n for n in QUESTION_NEEDS.get(qid, ()) if planned is not None and n not in planned]
    if unplanned:
        found = answer(qid, ev)
        return found | {"answer": f"{NOT_RUN} (this budget plans no {'; no '.join(map(describe_need, unplanned))}): "
                                  f"{found['answer']}"}
    try:
        return ANSWERS[qid](ev)
    except KeyError as err:
        if err.args and str(err.args[0]).isdigit():  # a Pass@k the runs were not evaluated at
            return {"answer": f"{MISSING}: {needs_ks_note([int(err.args[0])])}", "table": []}
        return {"answer": f"{MISSING}: run data incomplete for this question ({type(err).__name__}: {err})",
                "table": []}
    except (TypeError, ValueError, ZeroDivisionError, IndexError) as err:
        return {"answer": f"{MISSING}: run data incomplete for this question ({type(err).__name__}: {err})",
                "table": []}


def collect(run_dirs, theory_json=None, simulate_summary=None) -> Evidence:
    """The evidence of the inputs; RunDirError when no run directory among them is usable (a config
    and at least metrics or an evaluation), ValueError naming the file when a theory or simulate
    file is missing or malformed."""
    runs, problems = load_runs(run_dirs)
    runs, excluded = screen(runs)  # duplicates, and evaluations that are not their run's (paper_checks/trust.py)
    if not any(r.metrics or r.eval for r in runs):
        raise RunDirError(f"no usable run directory among the {len(list(run_dirs))} given "
                          f"(none has a readable config.json with metrics or evaluations): "
                          + "; ".join(problems)[:1500])
    ev = Evidence(runs=runs, problems=problems, excluded=excluded)
    for path, loader, attr in ((theory_json, load_theory_json, "theory"),
                               (simulate_summary, load_simulate_summary, "simulate")):
        if path is not None:  # a file given explicitly must be usable: ValueError naming it otherwise
            setattr(ev, attr, loader(path))
    return ev


def build_report(run_dirs, out, theory_json=None, simulate_summary=None, lemma_grid: list[dict] | None = None,
                 purpose: str = "", published: dict | None = None, planned: set[tuple[str, str]] | None = None,
                 premise_control: dict | None = None, claims: bool | None = None,
                 published_at: Path | str = PUBLISHED, lemma_as_stated: dict | None = None) -> dict:
    """Write REPORT.md, report.json and the plots into out. Everything is built in a temporary folder
    beside out and moved in only when complete, so a failure leaves no partial report. purpose: what
    the reproduction's budget can decide, stated under the title ("" for none). published: the published
    answer's report.json (summary.load_published), set beside this report's figures in its summary
    (report["summary"], which REPORT.md opens with) and its table of what would decide the rest; published_at: the
    file it was read from, named in the summary (default summary.PUBLISHED, results/report.json). planned: the
    needs the reproduction's budget plans (reproduce.plan.planned_needs; None: no budget, as `paper_checks report`), so
    that a claim whose runs the budget never plans reads "not run in this budget", not "missing data". premise_control:
    the premise's positive control (premise.py control.json); with it the report holds the record "premise"
    (premise_record.py) and REPORT.md its section. claims: whether the paper's claims are checked (None: unless a
    run is on the user's own data or rewards, paper_checks/own_runs.py, whose report compares the runs' groups).
    lemma_as_stated: the measurement of Lemma 1 as stated (reproduce/lemma_as_stated_measurement.py's JSON); with it
    the report holds the record "lemma_as_stated" (paper_checks/lemma_as_stated.py), which decides the lemma1 claim."""
    out, run_dirs = Path(out), list(run_dirs)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a directory")
    ev = collect(run_dirs, theory_json, simulate_summary)
    ev.lemma_grid = lemma_grid
    ev.lemma_as_stated = lemma_as_stated_record(lemma_as_stated) if lemma_as_stated else None
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        own = any(is_own_run(r.config) for r in ev.runs)
        if own and claims is not True:
            report = _build_own(ev, tmp, out)
        else:
            report = _build(ev, tmp, out, simulate_summary, lemma_grid, purpose, published, planned, premise_control,
                            published_at)
            if own:
                report["own_runs"] = own_runs_section(ev.runs, shown_path)
                (tmp / "report.json").write_text(dumps(without_non_finite(report)[0], str(out / "report.json"),
                                                       indent=1), encoding="utf-8")
                with open(tmp / "REPORT.md", "a", encoding="utf-8") as md:
                    md.write("\n".join(render_own(report["own_runs"])) + "\n")
        out.mkdir(exist_ok=True)
        for f in tmp.iterdir():
            os.replace(f, out / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report


def _build_own(ev: Evidence, tmp: Path, out: Path) -> dict:
    """The report of runs on the user's own data or rewards: their groups and each group's base -> final, without
    the paper's claims (build_report(..., claims=True) adds them)."""
    report = {"excluded": ev.excluded, "input_problems": ev.problems, "own_runs": own_runs_section(ev.runs, shown_path)}
    report, non_finite = without_non_finite(report)
    report["non_finite"] = non_finite
    groups = report["own_runs"]["groups"]
    listed = "; ".join(f"{g['name']} x{len(g['runs'])}" for g in groups)
    report["summary"] = [f"Your runs: {len(ev.runs)} in {len(groups)} group{'s' * (len(groups) != 1)} ({listed}); "
                         f"base -> final per group: {out / 'REPORT.md'} (the paper's claims: --claims)"]
    (tmp / "report.json").write_text(dumps(report, str(out / "report.json"), indent=1), encoding="utf-8")
    lines = ["# Your runs, compared", ""]
    if report["excluded"]:
        lines += [f"**Left out of this report** ({len(report['excluded'])}, each with the reason):", ""]
        lines += [f"- `{e['what']}`: {e['reason']}" for e in report["excluded"]] + [""]
    if report["input_problems"]:
        lines += ["**Input problems:**", ""] + [f"- {p}" for p in report["input_problems"]] + [""]
    (tmp / "REPORT.md").write_text("\n".join(lines + render_own(report["own_runs"])) + "\n", encoding="utf-8")
    return report


def shown_path(path) -> str | None:
    """A path as a report writes it: relative to the working folder when it lies inside it (run configs hold
    absolute paths; a published report names no machine's folders), else as given."""
    if path is None:
        return None
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve())) if p.is_absolute() else str(p)
    except ValueError:
        return str(p)


def bases_of(ev: Evidence) -> list[dict]:
    """Each base model as its runs measured it (eval.json's "base"), per (model, task, sampling): Pass@k
    and the share of prompts with no correct sample, the mean over the seeds' evaluations (runs of one
    seed share theirs; each seed samples its own completions), with each seed's values beside it."""
    groups: dict[tuple, dict[int, dict]] = {}
    for run in ev.runs:
        base = (run.eval or {}).get("base")
        if not base or "pass_at_k" not in base:
            continue
        key = (shown_path(run.config.get("model")), run.task, base.get("temperature"), base.get("n"),
               base.get("num_problems"))
        groups.setdefault(key, {}).setdefault(run.seed, base)
    out = []
    for (model, task, temperature, n, problems), by_seed in sorted(groups.items(), key=lambda g: str(g[0])):
        evals = [by_seed[s] for s in sorted(by_seed, key=str)]
        ks = sorted({k for e in evals for k in e["pass_at_k"]}, key=int)
        per_seed = [{"seed": s, "pass_at_k": by_seed[s]["pass_at_k"], "no_correct_share": _no_correct(by_seed[s])}
                    for s in sorted(by_seed, key=str)]
        out.append({"model": model, "task": task, "temperature": temperature, "samples": n, "problems": problems,
                    "seeds": len(evals),
                    "pass_at_k": {k: float(np.mean([e["pass_at_k"][k] for e in evals if k in e["pass_at_k"]]))
                                  for k in ks},
                    "no_correct_share": float(np.mean([p["no_correct_share"] for p in per_seed])),
                    "per_seed": per_seed})
    return out


def _no_correct(evaluation: dict) -> float:
    """Share of an evaluation's prompts with no correct sample (NaN without per-problem counts)."""
    rows = evaluation.get("per_problem") or []
    return float(np.mean([r["correct"] == 0 for r in rows])) if rows else float("nan")


def _build(ev: Evidence, tmp: Path, out: Path, simulate_summary, lemma_grid, purpose: str, published: dict | None,
           planned: set[tuple[str, str]] | None, premise_control: dict | None = None,
           published_at: Path | str = PUBLISHED) -> dict:
    plots = {}
    for key, fn in PLOTS.items():
        name = fn(ev, tmp, lemma_grid) if key == "js" else fn(ev, tmp)
        if name:
            plots[key] = name
    claims = []
    for c in CLAIMS:
        levels = {"theory": theory_verdict(c, ev), "simulate": simulate_verdict(c, ev),
                  "real": real_verdict(c, ev, planned)}
        levels["real"].plots = [plots[k] for k in c.plots if k in plots]
        if simulate_summary is not None:  # simulate plots sit beside its summary.json
            levels["simulate"].plots = [os.path.relpath(Path(simulate_summary).parent / p, out)
                                        for p in levels["simulate"].plots]
        claims.append({"id": c.id, "statement": c.statement, "paper": c.paper, "test": c.describe_test(),
                       "untestable": c.untestable,
                       "levels": {k: v.to_json() for k, v in levels.items()}})
    questions = [{"id": qid, "question": q, **answer(qid, ev, planned)} for qid, q in OPEN_QUESTIONS]
    report = {"purpose": purpose, "excluded": ev.excluded,
              "runs": [{"path": shown_path(r.path), "variant": variant(r.config), "seed": r.seed,
                        "model": shown_path(r.config.get("model"))}
                       for r in ev.runs],
              "groups": own_runs_section(ev.runs, shown_path)["groups"], "provenance": provenance(ev.runs),
              "bases": bases_of(ev), "es_regime": es_regime(ev), "input_problems": ev.problems, "claims": claims,
              "open_questions": questions, "plots": plots,
              "lemma_grid": lemma_grid or []}
    if ev.lemma_as_stated is not None:
        report["lemma_as_stated"] = ev.lemma_as_stated
    if premise_control is not None:
        report["premise"] = premise_record(ev, premise_control, lemma_grid)
    report, non_finite = without_non_finite(report)
    report["non_finite"] = non_finite
    report["summary"] = summary_lines(report, out / "REPORT.md", published, published_at)
    (tmp / "report.json").write_text(dumps(report, str(out / "report.json"), indent=1), encoding="utf-8")
    (tmp / "REPORT.md").write_text(render_markdown(report, published), encoding="utf-8")
    return report


def _cell(level: dict) -> str:
    return f"**{level['status']}**: {level['ours']}" if level["ours"] != "n/a" else level["status"]


def render_markdown(report: dict, published: dict | None = None) -> str:
    lines = ["# ES vs GRPO: the paper's claims, checked", ""]
    if report.get("summary"):
        lines += ["```", *report["summary"], "```", ""]
    lines += ["Verdicts come from the data of this report's inputs: `theory` (exact checks on toy policies), "
              "`simulate` (bandit analogues, over seeds) and `real` (training runs of causal LMs). "
              "Each claim states its test: directional (the 95% interval of a difference lies on the claimed side), "
              "equivalence (the whole interval inside a stated margin), ratio (against the paper's figure), or "
              "identity (true for every input: shown, never counted as evidence). Real-run intervals come from one "
              "design, seeds x test prompts shared by every run (resampled jointly, so differences are paired by "
              "prompt) x samples, with Student t over seeds; per-run numbers use t over seeds. Beside each interval: "
              "its design and the smallest difference it detects at 80% power, next to the paper's effect. "
              "Pass@k in points (x100).", ""]
    if report.get("purpose"):
        lines += [f"**What this reproduction can decide.** {report['purpose']}", ""]
    if report.get("excluded"):
        lines += [f"**Left out of this report** ({len(report['excluded'])}, each with the reason):", ""]
        lines += [f"- `{e['what']}`: {e['reason']}" for e in report["excluded"]] + [""]
    if report.get("groups"):  # groups of equal settings (paper_checks/own_runs.py): different settings are never seeds
        lines += ["Runs: " + ", ".join(f"`{g['name']}` x{len(g['runs'])}" for g in report["groups"]), ""]
    elif report["runs"]:  # a report.json written before the groups
        by = {}
        for r in report["runs"]:
            by.setdefault(r["variant"], []).append(r["seed"])
        lines += ["Runs: " + ", ".join(f"`{v}` x{len(s)}" for v, s in sorted(by.items())), ""]
    lines += render_provenance(report.get("provenance"))
    if report.get("plots", {}).get("pass1_by_step"):  # paper_checks/step_plot.py
        lines += [f"Pass@1 by step, every run: ![Pass@1 by step]({report['plots']['pass1_by_step']})", ""]
    if report.get("bases"):
        lines += ["Base models, as their runs measured them (mean over seeds):", "",
                  "| model | task | T | samples x prompts | seeds | " + " | ".join(
                      f"Pass@{k}" for k in report["bases"][0]["pass_at_k"]) + " | no correct sample |",
                  "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in report["bases"][0]["pass_at_k"])
                  + " | --- |"]
        for b in report["bases"]:
            cells = " | ".join(f"{100 * b['pass_at_k'].get(k, float('nan')):.1f}"
                               for k in report["bases"][0]["pass_at_k"])
            share = "n/a" if b["no_correct_share"] is None else f"{100 * b['no_correct_share']:.0f}%"
            lines.append(f"| `{Path(b['model']).name}` | {b['task']} | {b['temperature']} | "
                         f"{b['samples']} x {b['problems']} | {b['seeds']} | {cells} | {share} |")
        lines.append("")
    if report.get("es_regime"):
        lines += [es_regime_line(report["es_regime"]), ""]
    if report.get("premise"):
        lines += render_premise(report["premise"])
    if report["input_problems"]:
        lines += ["**Input problems** (claims that needed these are marked 'missing data'):", ""]
        lines += [f"- {p}" for p in report["input_problems"]] + [""]
    lines += ["## All claims", "", "| claim | paper | test | theory | simulate | real runs | real design |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += [claim_row(c) for c in report["claims"]]
    lines += [""] + undecided_markdown(report, published)
    lines += ["## Open questions", ""]
    for q in report["open_questions"]:
        lines += [f"### {q['question']}", "", q["answer"], ""]
        lines += render_tables(q["table"])
    if report["lemma_grid"]:
        lines += lemma_grid_lines(report["lemma_grid"], lemma1_training(report)) + [""]
    if report.get("lemma_as_stated"):
        lines += lemma_as_stated_lines(report["lemma_as_stated"]) + [""]
    lines += ["## Claims one by one", ""]
    for c in report["claims"]:
        lines += [f"### {c['statement']}", f'<a id="{c["id"]}"></a>', "", f"Paper: {c['paper']}.", ""]
        if c["untestable"]:
            lines += [f"Limit of our miniature: {c['untestable']}.", ""]
        for level in ("theory", "simulate", "real"):
            lines += level_lines(level, c["levels"][level])
        for plot in c["levels"]["real"]["plots"] + c["levels"]["simulate"]["plots"]:
            lines.append(f"\n![{plot}]({plot})")
        lines.append("")
    return "\n".join(lines) + "\n"


def render_tables(rows: list[dict]) -> list[str]:
    """Markdown tables of rows: rows with the same fields form one table (in order of first appearance),
    rows with other fields their own table; every row is shown."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row), []).append(row)
    lines = []
    for keys, group in groups.items():
        lines += ["| " + " | ".join(keys) + " |", "| " + " | ".join("---" for _ in keys) + " |"]
        lines += ["| " + " | ".join(_fmt(row[k]) for k in keys) + " |" for row in group]
        lines.append("")
    return lines


def claim_row(c: dict) -> str:
    """A claim's row of the "All claims" table."""
    lv = c["levels"]
    return (f"| [{c['statement']}](#{c['id']}) | {c['paper']} | {c['test']} | {lv['theory']['status']} | "
            f"{lv['simulate']['status']} | {_cell(lv['real'])} | {lv['real'].get('design', '')} |")


def level_lines(level: str, v: dict) -> list[str]:
    """One level's verdict of a claim, as its bullet with the test, design and power under it."""
    note = f" ({v['note']})" if v["note"] else ""
    return [f"- {level}: **{v['status']}**: {v['ours']}{note}"] + [f"  - {key}: {v[key]}"
                                                                   for key in ("test", "design", "power") if v.get(key)]


def lemma1_training(report: dict) -> dict | None:
    """The training runs' Lemma 1 summary kept in the lemma1 claim's real-run evidence (None without it)."""
    for c in report.get("claims", []):
        if c["id"] == "lemma1":
            return c["levels"]["real"].get("evidence", {}).get("training")
    return None


def _ci(x: dict | None, spec: str = ".3g") -> str:
    return ("n/a" if not x or x.get("mean") is None
            else f"{x['mean']:{spec}} [{_num(x['ci'][0], spec)}, {_num(x['ci'][1], spec)}]")


def lemma_grid_lines(grid: list[dict], training: dict | None = None) -> list[str]:
    """The report's section on the Lemma 1 grid (paper_checks/lemma_grid.py): its design, a row per (sigma, N),
    and the summary beside the verdict (exponent, the (1 - 1/N) factor, where the ratio leaves 1 +- 10%, where
    the training runs sit, data processing and Lemma 2)."""
    first = grid[0]
    g = summarize_grid(grid)
    lines = [f"## The Lemma 1 grid on the real model: {GRID_ROLE}", ""]
    lines += [f"Each population's JSpol_N against its own second-order value along the same directions: by Taylor's "
              f"theorem that ratio tends to 1 for any smooth model, so the grid is an {GRID_ROLE} (the measurement "
              f"and the expansion agree; where the ratio leaves 1, the second-order regime ends), not evidence for "
              f"the lemma's expectation.", ""]
    if "task" in first:
        lines += [f"On the runs' own task `{first['task']}` at T = {first['temperature']}, "
                  f"{first['max_new_tokens']} new tokens, {first['prompts']} probe prompts, {first['samples']} "
                  f"samples per member and prompt. Each draw of a row is an antithetic pair of populations (noise "
                  f"eps and -eps, own seed per row and draw): its JSpol_N (chain-rule estimator, every token averaged "
                  f"over the vocabulary) against the prediction for the same members, (sigma^2/2)(1/N) sum_j d_j^T "
                  f"I_x d_j with d_j = eps_j - eps_bar, from {first['center_samples']} center completions per prompt "
                  f"(whose mean over the noise is (sigma^2/2)(1 - 1/N) tr I_x). The ratio is the geometric mean of "
                  f"the draws' ratios with a t interval over draws; 'predicted' is the mean of the draws' "
                  f"predictions; tr I, estimated from the same directions, is {_num(g['fisher_trace'], '.4g')} over "
                  f"the whole grid. JSsucc and Lemma 2's gap are corrected by the same permutation null (their value "
                  f"when every member has the same success rate). Rows with s <= {g['s_limit']} (in the regime) "
                  f"decide the verdict.", ""]
    lines += ["| sigma | N | pairs | measured JSpol | predicted | ratio [95%] | width | s measured | in regime | "
              "JSsucc (corrected) | JSpol - JSsucc [95%] | P_pop - P_same [95%] | N p(1-p)^(N-1) JSsucc [95%] |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in grid:  # null (a non-finite value) prints as n/a
        lo, hi = r["ratio_ci"]
        width = "n/a" if lo is None or hi is None else f"{hi - lo:.3f}"
        l2 = r.get("lemma2", {})
        lines.append(f"| {_num(r['sigma'], '.2g')} | {r['members']} | {r.get('draws', 1)} | "
                     f"{_num(r['measured'], '.3g')} | {_num(r['predicted'], '.3g')} | "
                     f"{_num(r['ratio'], '.3f')} [{_num(lo, '.3f')}, {_num(hi, '.3f')}] | "
                     f"{width} | {_num(r['s_measured'], '.3g')} | "
                     f"{'yes' if r['s_measured'] is not None and r['s_measured'] <= g['s_limit'] else 'no'} | "
                     f"{_ci(r.get('jssucc'))} | {_ci(r.get('jspol_minus_jssucc'))} | {_ci(l2.get('gap'))} | "
                     f"{_ci(l2.get('local'))} |")
    lines.append("")
    ex = g["exponent_in_regime"]
    if ex:
        lines.append(f"- Exponent of JSpol in sigma inside the regime (intercept per N, {ex['rows']} rows): "
                     f"{ex['exponent']:.3f} [{ex['ci'][0]:.3f}, {ex['ci'][1]:.3f}] (Lemma 1: 2)")
    for n, per in g["per_members"].items():
        parts = [f"ratio within 1 +- {g['tolerance']:g} at sigma = {per['sigmas_within'] or 'none'}"]
        if per["exponent_all"]:
            parts.append(f"exponent over all its sigmas {per['exponent_all']['exponent']:.2f}")
        dep = g["departure"].get(n, {})
        if dep.get("first_s_outside") is not None:
            parts.append(f"the ratio leaves 1 +- {g['tolerance']:g} between s = {_num(dep['last_s_inside'], '.3g')} "
                         f"(last inside) and s = {dep['first_s_outside']:.3g} (first wholly outside)")
        lines.append(f"- N = {n}: " + "; ".join(parts))
    for n, f in g["n_factor"].items():
        lines.append(f"- The (1 - 1/N) factor alone, N = {n} against N = {f['against']} at sigma = {f['sigmas']} "
                     f"(tr I cancels): (JSpol_N / (1 - 1/N)) / (JSpol_{f['against']} / (1 - 1/{f['against']})) = "
                     f"{f['factor']:.3f} [{f['ci'][0]:.3f}, {f['ci'][1]:.3f}]: **{f['decision']}** "
                     f"(1 within +-{g['tolerance']:g})")
    if training and training.get("s_median") is not None:
        lines.append(f"- The training runs (sigma = {_fmt(training.get('sigma'))}, "
                     f"sampled at T = {_fmt(training.get('temperature'))}) "
                     f"measured s = {training['s_median']:.2g} (median of {len(training['s'])}; range "
                     f"{min(training['s']):.2g}-{max(training['s']):.2g}): outside the regime")
    d = g["dpi"]
    if d["rows"]:
        lines.append(f"- Data processing 0 <= JSsucc_N <= JSpol_N on the same populations: rows whose JSsucc "
                     f"interval lies below 0: {d['rows_jssucc_below_0']} of {d['rows']}; rows whose JSpol - JSsucc "
                     f"interval lies below 0: {d['rows_jssucc_above_jspol']} of {d['rows']}; populations x prompts "
                     f"whose corrected point values satisfy it: {100 * d['share_of_populations_x_prompts']:.0f}% "
                     f"(single populations are noisy: a point value "
                     f"below 0 is sampling error unless its row's interval says so)")
        agree = [r for r in grid if r.get("lemma2") and _holds_zero(r["lemma2"]["gap_minus_local"]["ci"])]
        lines.append(f"- Lemma 2 on the real population: P_pop - P_same against its local form "
                     f"N p_bar (1 - p_bar)^(N-1) JSsucc_N: "
                     f"the difference's interval contains 0 in {len(agree)} of {d['rows']} rows")
    return lines


def _holds_zero(ci) -> bool:
    """Whether the interval [lo, hi] holds 0; False when an end is unknown (null in report.json)."""
    return None not in ci and ci[0] <= 0 <= ci[1]


def _num(value, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)
