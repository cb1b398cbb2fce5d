"""The report's `premise` record: does the answer's base realise the paper's premise, and what ES does there.

The endpoints were registered in docs/answer-budget.md before the answer ran; each is an interval over the
design seeds x test prompts (paper_checks/design.py seeds_by_prompts, 95%), read from the runs' curves
(llm/curve.py: the base at step 0, checkpoints along training, n samples per prompt at the evaluation temperature):

    positive_control         the control on validation prompts (paper_checks/premise.py control.json): its verdict
                             and its plateau - base intervals
    grpo_plateau_minus_base  (a) GRPO's last checkpoint minus its base per (seed, prompt): Pass@32 and the
                             no-correct share (n > 32 samples: measured, not 1 - Pass@32); narrowed when the
                             Pass@32 interval lies wholly below 0 (premise.verdict); the plateau rule per run
    es_minus_grpo_top_level  (b) ES - GRPO Pass@32 at the highest Pass@1 level both reach (matched.py, at="top");
                             registered test: difference > 0; the equivalence margin MARGIN stated in advance
    es_minus_grpo_end        (c) ES - GRPO Pass@32 at both runs' last checkpoints (equal training budgets), with
                             ES - GRPO Pass@1 there beside it (where on the Pass@1 axis the two compare)
    distinct_correct         (d) distinct correct solutions (canonical forms): GRPO's plateau - base over the
                             prompts both solve on every seed, and ES - GRPO per prompt at (b)'s level (0 where
                             a prompt is unsolved)
    test_split_fresh         the test prompts' check against every earlier reader (reproduce/fresh_split.py, handed
                             in beside the control's record): rule, count, readers, overlap, disjoint
    es_null                  ES beside its random-z null: held-out Pass@1 change and drift against the random walk
                             (paper_checks/es_null.py)
    es_small_sigma           ES at a sigma inside Lemma 1's regime: its Pass@1 at its last checkpoint minus the
                             base per (seed, prompt), "learned" when that interval lies above 0, with the members'
                             divergence s the Lemma 1 grid measured at that sigma on the same base
    es_minus_base_end        (e) ES's last checkpoint minus its base, read as (a) reads GRPO's (premise.verdict:
                             does ES narrow when it gets there?), with ES's Pass@1 and step there
    es_at_grpo_plateau, distinct_at_grpo_plateau, es_plateau_outcome, es_minus_grpo_at_es_end_level
                             (b'), (d'), (f) and (c)'s residual: ES where GRPO has narrowed (premise_plateau.py)
    registered, exploratory  the registered family {(a), (b'), (d'), (e)} with Holm's adjustment, the commit the
                             runs trained with, and the other endpoints, exploratory (registered.py)
"""

from __future__ import annotations

import numpy as np

from escov.paper_checks.design import seeds_by_prompts
from escov.paper_checks.es_null import NULL, es_null
from escov.paper_checks.es_null import render as render_es_null
from escov.paper_checks.evidence import Evidence
from escov.paper_checks.matched import AT_TOP, Curve, matched_difference, paired
from escov.paper_checks.premise import endpoints, plateau, verdict
from escov.paper_checks.premise_plateau import NOT_READABLE, PASS, plateau_endpoints
from escov.paper_checks.real_checks import curves_of
from escov.paper_checks.registered import exploratory, holm_lines, registered, runs_commit

MARGIN = 0.02  # (b)'s equivalence margin, 2 points of Pass@32 (docs/answer-budget.md, stated before the run)
SMALL_SIGMA_VARIANT = "es[small-sigma]"
TEST_SPLIT = "test"  # the answer's prompts (llm/problem_sets.py: the runs' curves read the test split)


def _interval(est) -> dict | None:
    return (
        None
        if est is None
        else {k: v for k, v in est.to_json().items() if k in ("mean", "lo", "hi", "design", "detectable")}
    )


def _reading_b(interval: dict) -> str:
    """(b)'s reading: the registered test (> 0) and the equivalence margin, else inconclusive."""
    if interval["lo"] > 0:
        return "es_above"
    if interval["hi"] < MARGIN:
        return f"no_es_advantage_of_{round(100 * MARGIN)}_points"
    return "inconclusive"


def _pairs(curves: list[Curve]) -> list[tuple[dict, dict]]:
    """(base, last) per curve as the per-problem rows premise.endpoints reads."""

    def point(c: Curve, i: int) -> dict:
        distinct = c.metric("distinct")[i]
        return {
            "sampled": {
                "n": c.n,
                "per_problem": [
                    {"id": pid, "correct": int(k), "distinct_correct_answers": float(d)}
                    for pid, k, d in zip(c.ids, c.counts[i], distinct)
                ],
            }
        }

    return [(point(c, 0), point(c, len(c.steps) - 1)) for c in curves]


def _families(ev: Evidence, ids: tuple[str, ...]) -> list[str]:
    """Each test prompt's family (premise.prompt_family) on the runs' base and task."""
    from escov.llm.config import saved_config
    from escov.llm.problem_sets import split_set
    from escov.paper_checks.premise import prompt_family

    run = ev.by_variant("grpo")[0]
    cfg = saved_config(run.config, source=str(run.path / "config.json"))
    by_id = {p.id: p for p in split_set(cfg, TEST_SPLIT, len(ids)).problems}
    return [prompt_family(cfg.task, by_id[i].meta, run.config["model"]) for i in ids]


def _lost_against_kept(split: dict | None) -> str:
    """The base's success on the lost (seed, prompt) pairs against the kept ones (premise.endpoints), as a clause."""
    if not split or not split["lost"]["pairs"] or not split["kept"]["pairs"]:
        return ""
    lost, kept = split["lost"], split["kept"]
    return (
        f" At the base the lost pairs were solved by {100 * lost['base_pass1']:.1f}% of samples "
        f"({lost['base_distinct']:.2f} distinct correct solutions), the kept ones by {100 * kept['base_pass1']:.1f}% "
        f"({kept['base_distinct']:.2f})."
    )


def grpo_plateau_minus_base(ev: Evidence, grpo: list[Curve]) -> dict:
    """(a) and GRPO's half of (d): premise.endpoints on the test curves, with the verdict and the plateau rule."""
    out = endpoints(_pairs(grpo), _families(ev, grpo[0].ids))
    out["verdict"] = verdict(out[PASS])
    out["plateau"] = {f"seed {c.seed}": plateau([int(s) for s in c.steps], [float(m) for m in c.pass1]) for c in grpo}
    return out


def end_difference(es: list[Curve], grpo: list[Curve]) -> dict | None:
    """(c): ES - GRPO Pass@32 per (seed, prompt) at both runs' last checkpoints."""
    pairs = paired(es, grpo)
    if len(pairs) < 2:
        return None
    values = np.stack([a.metric(PASS)[-1] - b.metric(PASS)[-1] for a, b in pairs])
    pass1 = np.stack([a.metric("pass@1")[-1] - b.metric("pass@1")[-1] for a, b in pairs])
    steps = sorted({int(a.steps[-1]) for a, _ in pairs} | {int(b.steps[-1]) for _, b in pairs})
    return _interval(seeds_by_prompts(values, pairs[0][0].n)) | {
        "steps": steps,
        "pass1": _interval(seeds_by_prompts(pass1, pairs[0][0].n)),
    }


def small_sigma(ev: Evidence, lemma_grid: list[dict] | None) -> dict | None:
    """ES inside Lemma 1's regime: its Pass@1 gain over the base and s at its sigma (the grid's median)."""
    runs = ev.by_variant(SMALL_SIGMA_VARIANT)
    curves = curves_of(runs)
    if len(curves) < 2:
        return None
    sigma = runs[0].config["es"]["sigma"]
    gain = seeds_by_prompts(np.stack([c.metric("pass@1")[-1] - c.metric("pass@1")[0] for c in curves]), curves[0].n)
    s = [r["s_measured"] for r in lemma_grid or [] if np.isclose(r["sigma"], sigma) and r.get("s_measured") is not None]
    return {
        "sigma": sigma,
        "runs": len(curves),
        "s_measured_median": float(np.median(s)) if s else None,
        "pass1_gain": _interval(gain),
        "learned": bool(gain.lo > 0),
    }


def premise_record(ev: Evidence, control: dict | None, lemma_grid: list[dict] | None = None) -> dict:
    """The report's `premise` record (module docstring); a part whose runs are missing says why."""
    record: dict = {
        "selection_split": control["split"] if control else None,
        "test_split": TEST_SPLIT,
        "registered": registered({}, None),
        "margin": MARGIN,
    }
    if control is not None and "test_split_fresh" in control:
        fresh = control["test_split_fresh"]
        record["test_split_fresh"] = {k: fresh[k] for k in ("rule", "count", "readers", "overlap", "disjoint")}
    if control is not None:
        e = control["endpoints"]
        record["positive_control"] = {
            "verdict": control["verdict"],
            "base": control["base"].get("name"),
            "seeds": control["seeds"],
            "prompts": control["prompts"],
            "samples": control["samples"],
            "steps": control["steps"],
            "plateau_reached": sum(p["reached"] for p in control["plateau"].values()),
            "runs": len(control["plateau"]),
            PASS: e[PASS],
            "no_correct": e["no_correct"],
            "distinct": e["distinct"],
            "lost_by_family": {f: v["lost"] for f, v in e["families"].items()},
        } | ({"lost_vs_kept": e["lost_vs_kept"]} if "lost_vs_kept" in e else {})  # controls measured since 2026-12-06
    es, grpo = curves_of(ev.by_variant("es")), curves_of(ev.by_variant("grpo"))
    if len(grpo) < 2:
        record["reason"] = "fewer than 2 GRPO runs with curves"
        return record
    record["grpo_plateau_minus_base"] = grpo_plateau_minus_base(ev, grpo)
    top, info = matched_difference(es, grpo, PASS, names=("ES", "GRPO"), at=AT_TOP)
    if top is None:
        record["es_minus_grpo_top_level"] = {"reason": info.get("reason", "not compared")}
    else:
        record["es_minus_grpo_top_level"] = _interval(top) | {
            "level": info["compared_levels"][0],
            "reading": _reading_b(_interval(top)),
        }
    record["es_minus_grpo_end"] = end_difference(es, grpo)
    distinct_top = None
    if top is not None:
        d, _ = matched_difference(es, grpo, "distinct", names=("ES", "GRPO"), at=AT_TOP)
        distinct_top = _interval(d)
    record["distinct_correct"] = {
        "grpo_plateau_minus_base": record["grpo_plateau_minus_base"]["distinct"],
        "es_minus_grpo_top_level": distinct_top,
    }
    record["es_small_sigma"] = small_sigma(ev, lemma_grid)
    record["es_null"] = es_null(ev) | null_on_test(ev, es)  # ES beside its random-z null (es_null.py; test prompts)
    record |= at_grpo_plateau(ev, es, grpo)
    record["registered"] = registered(record, runs_commit(r.path for r in ev.by_variant("es") + ev.by_variant("grpo")))
    record["exploratory"] = exploratory(record)
    return record


def null_on_test(ev: Evidence, es: list[Curve]) -> dict:
    """{"test": ...}: ES's random-z null on the test prompts (exploratory): its last checkpoint - base, Pass@32 (with
    the premise's verdict) and Pass@1, per (seed, prompt); and ES - null at both runs' last checkpoints, per (seed,
    prompt) of the seeds both ran (end_difference). Does ES lose what a walk of its step size loses?"""
    null = curves_of(ev.by_variant(NULL))
    if len(null) < 2:
        return {"test": {"reason": f"fewer than 2 {NULL} runs with curves"}}
    e = endpoints(_pairs(null), _families(ev, null[0].ids))
    pass1 = np.stack([c.metric("pass@1")[-1] - c.metric("pass@1")[0] for c in null])
    return {
        "test": {
            "null_minus_base_end": {
                PASS: e[PASS],
                "pass1": _interval(seeds_by_prompts(pass1, null[0].n)),
                "verdict": verdict(e[PASS]),
                "runs": len(null),
            },
            "es_minus_null_end": end_difference(es, null),
        }
    }


def render_null_on_test(record: dict) -> list[str]:
    """The premise section's line on the null's test-prompt endpoints (none for a record without them)."""
    t = (record.get("es_null") or {}).get("test")
    if not t:
        return []
    if "reason" in t:
        return [f"- The null on the test prompts: not measured ({t['reason']})."]
    n, d = t["null_minus_base_end"], t["es_minus_null_end"]
    both = (
        f"ES - null at both last checkpoints: Pass@32 {_pm(d)}, Pass@1 {_pm(d['pass1'])}"
        if d
        else "ES - null not compared (fewer than 2 common seeds)"
    )
    return [
        f"- The null on the test prompts ({n['runs']} runs, exploratory): its last checkpoint - base, Pass@32 "
        f"{_pm(n[PASS])} (**{n['verdict']}**), Pass@1 {_pm(n['pass1'])}; {both}."
    ]


def at_grpo_plateau(ev: Evidence, es: list[Curve], grpo: list[Curve]) -> dict:
    """(e) (ES's last checkpoint - base, as (a) reads GRPO's, with ES's Pass@1 and step there) and the endpoints
    at GRPO's plateau (premise_plateau.py)."""
    es_end = None
    if len(es) >= 2:
        es_end = grpo_plateau_minus_base(ev, es) | {
            "pass1": float(np.mean([c.pass1[-1] for c in es])),
            "steps": sorted({int(c.steps[-1]) for c in es}),
        }
    return {"es_minus_base_end": es_end} | plateau_endpoints(es, grpo, es_end)


def _pm(e: dict | None, scale: float = 100.0, sign: str = "+") -> str:
    """An interval x scale with two decimals; sign "+" for a difference, "" for a level (a Pass@1 itself)."""
    if not e or e.get("mean") is None:
        return "not measured" if not e else e.get("reason", "no interval")
    if e.get("lo") is None:
        return f"{scale * e['mean']:{sign}.2f} (no interval)"
    return f"{scale * e['mean']:{sign}.2f} [{scale * e['lo']:{sign}.2f}, {scale * e['hi']:{sign}.2f}]"


def _at(level: float | None) -> str:
    return "" if level is None else f" (Pass@1 {100 * level:.1f})"


def render_at_plateau(record: dict) -> list[str]:
    """The lines of the endpoints at GRPO's plateau (premise_plateau.py), each at the Pass@1 where it was read and
    with its caveat, then the registered family's Holm line; none for a record built before they existed."""
    if "es_at_grpo_plateau" not in record:
        return []
    lines = []
    b, f = record["es_at_grpo_plateau"], record.get("es_plateau_outcome")
    if "level" not in b:
        lines.append(f"- (b') ES - GRPO Pass@32 at the highest Pass@1 both reach: {b['reason']}.")
    else:
        fall = b["grpo_fall"]
        unsupported = [run for run, ok in b.get("supported", {}).items() if not ok]
        where = f"; read across a gap over the resolution in {', '.join(unsupported)}" if unsupported else ""
        head = (
            f"- (b') ES - GRPO Pass@32 at the highest Pass@1 every run reaches (Pass@1 {100 * b['level']:.1f}"
            f"{where}), GRPO's plateau "
            f"{100 * b['grpo_plateau_pass1']:.1f} ({'reached' if b['es_reaches_grpo_plateau'] else 'not reached'} "
            f"by ES): GRPO's fall there (base - GRPO) {_pm(fall)}"
        )
        if b["reading"] == NOT_READABLE:
            lines.append(
                f"{head}, under the {100 * b['min_fall']:g}-point validity condition: **not readable** (GRPO has "
                f"not narrowed where both methods are; ES - GRPO there {_pm(b['difference'])} decides nothing)."
            )
        else:
            lines.append(
                f"{head}; ES - GRPO {_pm(b['difference'])}: **{b['reading']}** (registered test > 0; margin half "
                f"GRPO's fall, {100 * b['margin']:.2f} points)."
            )
    d = record.get("distinct_at_grpo_plateau") or {}
    lines.append(f"- (d') Distinct correct solutions, ES - GRPO per prompt{_at(d.get('level'))}: {_pm(d, 1.0)}.")
    e = record.get("es_minus_base_end")
    if e:
        lines.append(
            f"- (e) ES at its last checkpoint (step {', '.join(map(str, e['steps']))}, Pass@1 {100 * e['pass1']:.1f}) "
            f"- base: Pass@32 {_pm(e[PASS])}, no-correct share {_pm(e['no_correct'])}: **{e['verdict']}**."
        )
    if f:
        cap = ", ".join(map(str, f["cap"]))
        if f["reached"]:
            steps = ", ".join(f"{s:.0f}" for s in f["crossing_step"].values())
            lines.append(
                f"- (f) ES reaches GRPO's plateau Pass@1 {100 * f['grpo_plateau_pass1']:.1f} on every seed (first "
                f"crossing at steps {steps}; cap {cap})."
            )
        else:
            lines.append(
                f"- (f) **ES never reaches GRPO's plateau Pass@1 {100 * f['grpo_plateau_pass1']:.1f} by the cap** "
                f"(step {cap}): its last Pass@1 {_pm(f['es_last_pass1'], sign='')}, "
                f"still rising on {f['still_rising']} of "
                f"{f['runs']} runs; Pass@32 there - base {_pm(f['pass32_minus_base'])}; GRPO's own runs cross that "
                f"level on {f['grpo_runs_crossing']} of {f['grpo_runs']}."
            )
    c = record.get("es_minus_grpo_at_es_end_level")
    if c:
        levels = list(c["levels"].values())
        dropped = (
            f"; {len(c['dropped_seeds'])} seeds dropped (GRPO never crosses)"
            if "mean" in c and c["dropped_seeds"]
            else ""
        )
        lines.append(
            f"- (c') exploratory residual, ES - GRPO Pass@32 with GRPO read at each ES seed's final Pass@1 "
            f"({100 * min(levels):.1f}-{100 * max(levels):.1f}): {_pm(c)}{dropped}."
        )
    return lines + holm_lines(record)


def render(record: dict) -> list[str]:
    """REPORT.md's section on the premise (a record published before the endpoints at GRPO's plateau: its own)."""
    reg = record["registered"]
    where = reg["where"] if isinstance(reg, dict) else reg
    lines = [
        "## The premise: does GRPO narrow here, and what does ES keep?",
        "",
        f"Settings chosen on {record['selection_split']} prompts; the endpoints below read the {record['test_split']} "
        f"prompts, registered before the run ({where}). Pass@32 and shares in points.",
        "",
    ]
    if f := record.get("test_split_fresh"):
        lines += [
            f"- Test prompts: {f['count']}, {f['rule']}; disjoint from {len(f['readers'])} earlier readers' "
            f"prompts: **{'yes' if f['disjoint'] else 'no'}**."
        ]
    c = record.get("positive_control")
    if c:
        lines += [
            f"- Positive control ({len(c['seeds'])} seeds x {c['prompts']} {record['selection_split']} prompts x "
            f"{c['samples']} samples, GRPO {c['steps']} steps): **{c['verdict']}**; Pass@32 plateau - base "
            f"{_pm(c[PASS])}, no-correct share {_pm(c['no_correct'])}; plateau reached on {c['plateau_reached']} "
            f"of {c['runs']} runs."
        ]
    if "reason" in record:
        return lines + [f"- {record['reason']}", ""]
    a = record["grpo_plateau_minus_base"]
    reached = sum(p["reached"] for p in a["plateau"].values())
    lines.append(
        f"- (a) GRPO at its last checkpoint - base: Pass@32 {_pm(a[PASS])}, no-correct share {_pm(a['no_correct'])}: "
        f"**{a['verdict']}** (plateau rule met on {reached} of {len(a['plateau'])} runs); lost seed x prompt: "
        + ", ".join(f"{f} {v['lost']}" for f, v in a["families"].items())
        + "."
        + _lost_against_kept(a.get("lost_vs_kept"))
    )
    b = record["es_minus_grpo_top_level"]
    level = f" ({100 * b['level']:.1f} points)" if "level" in b else ""
    lines.append(
        f"- (b) ES - GRPO Pass@32 at the highest Pass@1 both reach{level}: {_pm(b)}"
        + (f" (**{b['reading']}**; margin {100 * record['margin']:.0f} points)" if "reading" in b else "")
        + "."
    )
    end = record["es_minus_grpo_end"]
    lines.append(
        f"- (c) ES - GRPO Pass@32 at the end of equal budgets: {_pm(end)}"
        + (f", where ES - GRPO Pass@1 is {_pm(end['pass1'])}" if end else "")
        + "."
    )
    d = record["distinct_correct"]
    g = d["grpo_plateau_minus_base"]
    lines.append(
        f"- (d) Distinct correct solutions: GRPO plateau - base {_pm(g, 1.0)}"
        + (f" ({g['base']:.2f} -> {g['plateau']:.2f} per solved prompt, {g['prompts']} prompts)" if "base" in g else "")
        + f"; ES - GRPO per prompt at (b)'s level {_pm(d['es_minus_grpo_top_level'], 1.0)}."
    )
    s = record.get("es_small_sigma")
    if s:
        s_text = "not measured" if s["s_measured_median"] is None else f"{s['s_measured_median']:.3f}"
        lines.append(
            f"- ES at sigma {s['sigma']:g} (members' s {s_text}, Lemma 1's regime s <= 0.05): Pass@1 gain over "
            f"the base {_pm(s['pass1_gain'])}: {'learned' if s['learned'] else 'no gain detected'}."
        )
    lines += render_es_null(record.get("es_null")) + render_null_on_test(record)
    return lines + render_at_plateau(record) + [""]
