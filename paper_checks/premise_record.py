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
    es_null                  ES beside its random-z null: held-out Pass@1 change and drift against the random walk
                             (paper_checks/es_null.py)
    es_small_sigma           ES at a sigma inside Lemma 1's regime: its Pass@1 at its last checkpoint minus the
                             base per (seed, prompt), "learned" when that interval lies above 0, with the members'
                             divergence s the Lemma 1 grid measured at that sigma on the same base
"""

from __future__ import annotations

import numpy as np

from escov.paper_checks.design import seeds_by_prompts
from escov.paper_checks.es_null import es_null
from escov.paper_checks.es_null import render as render_es_null
from escov.paper_checks.evidence import Evidence
from escov.paper_checks.matched import AT_TOP, Curve, matched_difference, paired
from escov.paper_checks.premise import ENDPOINT_K, endpoints, plateau, verdict
from escov.paper_checks.real_checks import curves_of

MARGIN = 0.02  # (b)'s equivalence margin, 2 points of Pass@32 (docs/answer-budget.md, stated before the run)
SMALL_SIGMA_VARIANT = "es[small-sigma]"
TEST_SPLIT = "test"  # the answer's prompts (llm/problem_sets.py: the runs' curves read the test split)
PASS = f"pass@{ENDPOINT_K}"


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
    """Each test prompt's family (premise.family_of) on the runs' base and task."""
    from escov.llm.config import saved_config
    from escov.llm.problem_sets import split_set
    from escov.paper_checks.base_info import base_preset
    from escov.paper_checks.premise import family_of

    run = ev.by_variant("grpo")[0]
    cfg = saved_config(run.config, source=str(run.path / "config.json"))
    by_id = {p.id: p for p in split_set(cfg, TEST_SPLIT, len(ids)).problems}
    preset = base_preset(run.config["model"])
    return [family_of(by_id[i].meta["numbers"], by_id[i].meta["target"], preset) for i in ids]


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
        "registered": "docs/answer-budget.md, 'The premise'",
        "margin": MARGIN,
    }
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
        }
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
    record["es_null"] = es_null(ev)  # ES beside its random-z null: forgetting and drift (es_null.py)
    return record


def _pm(e: dict | None, scale: float = 100.0) -> str:
    if not e or e.get("mean") is None:
        return "not measured" if not e else e.get("reason", "no interval")
    if e.get("lo") is None:
        return f"{scale * e['mean']:+.2f} (no interval)"
    return f"{scale * e['mean']:+.2f} [{scale * e['lo']:+.2f}, {scale * e['hi']:+.2f}]"


def render(record: dict) -> list[str]:
    """REPORT.md's section on the premise."""
    lines = [
        "## The premise: does GRPO narrow here, and what does ES keep?",
        "",
        f"Settings chosen on {record['selection_split']} prompts; the endpoints below read the {record['test_split']} "
        f"prompts, registered before the run ({record['registered']}). Pass@32 and shares in points.",
        "",
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
    lines += render_es_null(record.get("es_null"))
    return lines + [""]
