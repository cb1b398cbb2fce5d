"""ES where GRPO has narrowed: the premise's endpoints read at GRPO's plateau, from the runs' curves (matched.Curve).

The rules, fixed before the answer's run (registered in docs/answer-budget.md); each interval is over the design
seeds x test prompts (design.seeds_by_prompts, 95%), ES and GRPO paired by seed (matched.paired); a curve is read at
a Pass@1 level L where it first crosses L, by linear interpolation between the two measured points around it
(theory/matched.py crossing, read_at):

    L_plateau                  GRPO's plateau Pass@1: the mean over GRPO seeds of the Pass@1 of each run's last
                               checkpoint. ES reaches GRPO's plateau when every ES seed's curve crosses L_plateau -
                               REACH_TOLERANCE (the step of each first crossing, interpolated, is recorded).
    es_at_grpo_plateau   (b')  L* = the highest Pass@1 level every run of both methods reaches (the lowest of the
                               runs' highest measured Pass@1), each run read at its first crossing; whether each
                               run's reading lies in a segment of at most RESOLUTION is recorded (`supported`).
                               GRPO's fall there F = base Pass@32 - GRPO's Pass@32 read at L*, per (seed,
                               prompt), each GRPO seed against its own base. Validity
                               condition: mean F >= MIN_FALL (GRPO has narrowed by at least 2 points at L*); only
                               then is ES - GRPO Pass@32 at L* read, against the margin F / 2 stated in advance:
                               "es_above" when the interval's lower end is > 0 (the registered one-sided test),
                               "no_es_advantage_of_half_grpo_fall" when its upper end is < F / 2, else
                               "inconclusive"; ES curves that are GRPO's own (one run compared with itself, a
                               difference of 0 by construction: an identity, never evidence) read "inconclusive".
                               With F < MIN_FALL: "not_readable" (GRPO has not narrowed at the common level; the
                               comparison cannot decide whether ES keeps what GRPO loses), F and its interval given.
    distinct_at_grpo_plateau (d') ES - GRPO distinct correct solutions per prompt at L*, read by (b')'s
                               interpolation, an unsolved prompt counting 0 (matched.py's "distinct" metric).
    es_plateau_outcome   (f)   whether ES reaches L_plateau; when it does not, the finding "ES never reaches
                               GRPO's plateau by the cap", with ES's last Pass@1 (per (seed, prompt), interval),
                               each run's plateau rule (premise.plateau; "still rising" when Pass@1 rose by
                               PLATEAU_RISE or more over the last third of the run) and its Pass@32 at the last
                               checkpoint minus the base ((e)'s interval); beside it, how many GRPO runs' own
                               curves cross L_plateau (a run still rising at its end and below the mean does not).
    es_minus_grpo_at_es_end_level (c residual, exploratory) for each seed s the level is ES seed s's final Pass@1;
                               GRPO seed s's Pass@32 per prompt is read at its first crossing of that level and
                               ES's last checkpoint's Pass@32 minus it is the (seed, prompt) value; seeds whose GRPO
                               never crosses their level are counted and dropped, those read across a segment
                               wider than the matched reading's RESOLUTION are counted.

(e) (ES's last checkpoint minus the base, premise.endpoints with premise.verdict) is built in premise_record.py, as
(a) is; (f) takes its Pass@32 from it. The registered family and its adjustment: paper_checks/registered.py.
"""

from __future__ import annotations

import numpy as np

from escov.paper_checks.design import seeds_by_prompts
from escov.paper_checks.matched import Curve, paired
from escov.paper_checks.premise import ENDPOINT_K, PLATEAU_RISE, plateau
from escov.theory.matched import crossing, differences_at, read_at, supported

MIN_FALL = 0.02  # (b')'s validity condition: GRPO's Pass@32 at L* at least 2 points below the base
# ES reaches GRPO's plateau when every ES seed's curve crosses L_plateau - REACH_TOLERANCE: L_plateau is a mean of
# last points, which a GRPO run ending below the mean never crosses itself; 2 points is the spread of GRPO's
# plateau Pass@1 between the premise control's seeds (0.642-0.661 on validation)
REACH_TOLERANCE = 0.02
PASS = f"pass@{ENDPOINT_K}"
ES_ABOVE, NO_ADVANTAGE, INCONCLUSIVE, NOT_READABLE = (
    "es_above",
    "no_es_advantage_of_half_grpo_fall",
    "inconclusive",
    "not_readable",
)
NEVER_REACHES, REACHES = "es_never_reaches_grpo_plateau_by_cap", "es_reaches_grpo_plateau"


def grpo_plateau_pass1(grpo: list[Curve]) -> dict:
    """L_plateau: the mean over GRPO seeds of the last checkpoint's Pass@1, with each seed's value and step."""
    return {
        "level": float(np.mean([c.pass1[-1] for c in grpo])),
        "per_seed": {f"seed {c.seed}": float(c.pass1[-1]) for c in grpo},
        "steps": sorted({int(c.steps[-1]) for c in grpo}),
    }


def crossing_step(c: Curve, level: float) -> float | None:
    """The training step where a curve first crosses `level` (interpolated between its measured steps), or None."""
    found = crossing(c.pass1, level)
    if found is None:
        return None
    t, w = found
    return float(c.steps[t] if w == 0.0 else (1 - w) * c.steps[t] + w * c.steps[t + 1])


def reaches(es: list[Curve], level: float) -> dict:
    """Whether every ES seed's curve crosses `level` - REACH_TOLERANCE, and each seed's first crossing step (None:
    never)."""
    steps = {f"seed {c.seed}": crossing_step(c, level - REACH_TOLERANCE) for c in es}
    return {"reached": bool(steps) and all(s is not None for s in steps.values()), "crossing_step": steps}


def same_runs(es: list[Curve], grpo: list[Curve]) -> bool:
    """Whether every ES curve is its paired GRPO curve's data (one run compared with itself: an identity)."""
    pairs = paired(es, grpo)
    return bool(pairs) and all(
        np.array_equal(a.counts, b.counts) and np.array_equal(a.pass1, b.pass1) for a, b in pairs
    )


def reading(difference: dict, fall: float, identity: bool = False) -> str:
    """(b')'s reading of ES - GRPO Pass@32 at L* given GRPO's mean fall there (module docstring); `identity`: the
    two sides are the same runs, whose difference is 0 by construction and decides nothing."""
    if fall < MIN_FALL:
        return NOT_READABLE
    if identity:
        return INCONCLUSIVE
    if difference["lo"] > 0:
        return ES_ABOVE
    if difference["hi"] < fall / 2:
        return NO_ADVANTAGE
    return INCONCLUSIVE


def grpo_fall_at(grpo: list[Curve], level: float):
    """F per (seed, prompt): each GRPO seed's base Pass@32 minus its Pass@32 read at `level` (an Estimate)."""
    values = np.stack([c.metric(PASS)[0] - read_at(c.pass1, c.metric(PASS), level) for c in grpo])
    return seeds_by_prompts(values, grpo[0].n)


def top_level(es: list[Curve], grpo: list[Curve]) -> float:
    """L*: the highest Pass@1 every run of both methods reaches (the lowest of the runs' highest measured Pass@1)."""
    return float(min(c.pass1.max() for c in [*es, *grpo]))


def at_level(pairs: list[tuple[Curve, Curve]], metric: str, level: float):
    """ES - GRPO in `metric` per (seed, prompt), each curve read at its first crossing of `level` (an Estimate)."""
    values = np.stack(
        [differences_at([level], a.pass1, a.metric(metric), b.pass1, b.metric(metric))[0] for a, b in pairs]
    )
    return seeds_by_prompts(values, pairs[0][0].n)


def es_at_grpo_plateau(es: list[Curve], grpo: list[Curve], plateau_level: dict, reach: dict) -> tuple[dict, dict]:
    """(b') and (d'): ({"es_at_grpo_plateau": ..., "distinct_at_grpo_plateau": ...}) at L* (module docstring)."""
    context = {"grpo_plateau_pass1": plateau_level["level"], "es_reaches_grpo_plateau": reach["reached"]}
    pairs = paired(es, grpo)
    if len(pairs) < 2:
        why = {"reason": f"{len(pairs)} ES/GRPO seed pairs on the same prompts (2 needed)", "reading": NOT_READABLE}
        return why | context, {"reason": why["reason"]}
    level = top_level([a for a, _ in pairs], [b for _, b in pairs])
    start = max(c.pass1[0] for pair in pairs for c in pair)
    if level < start:
        why = {
            "reason": f"no common Pass@1 range: a run's highest Pass@1 ({100 * level:.1f}) lies below another's base "
            f"({100 * start:.1f})",
            "reading": NOT_READABLE,
        }
        return why | context, {"reason": why["reason"]}
    fall = grpo_fall_at([g for _, g in pairs], level)
    diff = at_level(pairs, PASS, level)
    b = context | {
        "level": level,
        "supported": {
            f"{name} seed {c.seed}": supported(c.pass1, level) for a, g in pairs for name, c in (("ES", a), ("GRPO", g))
        },
        "grpo_fall": fall.to_json(),
        "min_fall": MIN_FALL,
        "margin": fall.mean / 2,
        "difference": diff.to_json(),
        "reading": reading(diff.to_json(), fall.mean, same_runs(es, grpo)),
    }
    return b, at_level(pairs, "distinct", level).to_json() | {"level": level}


def es_plateau_outcome(
    es: list[Curve], plateau_level: dict, reach: dict, es_end: dict | None, grpo: list[Curve] = ()
) -> dict:
    """(f): whether ES reaches GRPO's plateau Pass@1; when not, where it stands at its cap (module docstring). Beside
    it, how many GRPO runs' own curves cross L_plateau (a mean of last points: a GRPO run ending below it and never
    above it does not), the rule's strictness on the method that defines the level."""
    out = {
        "grpo_plateau_pass1": plateau_level["level"],
        "reached": reach["reached"],
        "crossing_step": reach["crossing_step"],
        "grpo_runs_crossing": sum(
            crossing(c.pass1, plateau_level["level"] - REACH_TOLERANCE) is not None for c in grpo
        ),
        "tolerance": REACH_TOLERANCE,
        "grpo_runs": len(grpo),
        "finding": REACHES if reach["reached"] else NEVER_REACHES,
        "cap": sorted({int(c.steps[-1]) for c in es}),
    }
    if reach["reached"]:
        return out
    runs = {}
    for c in es:
        p = plateau([int(s) for s in c.steps], [float(m) for m in c.pass1])
        runs[f"seed {c.seed}"] = p | {"still_rising": bool(p["rise_last_third"] >= PLATEAU_RISE)}
    last = np.stack([c.counts[-1] / c.n for c in es])
    return out | {
        "es_last_pass1": seeds_by_prompts(last, es[0].n).to_json(),
        "plateau": runs,
        "still_rising": sum(r["still_rising"] for r in runs.values()),
        "runs": len(runs),
        "pass32_minus_base": None if es_end is None else es_end[PASS],
    }


def residual_at_es_end_level(es: list[Curve], grpo: list[Curve]) -> dict:
    """(c)'s residual: ES - GRPO Pass@32 with GRPO read at ES's final Pass@1, seed by seed (module docstring)."""
    values, levels, dropped, unsupported = [], {}, [], []
    for a, b in paired(es, grpo):
        level = float(a.pass1[-1])
        levels[f"seed {a.seed}"] = level
        g = read_at(b.pass1, b.metric(PASS), level)
        if g is None:
            dropped.append(a.seed)
            continue
        if not supported(b.pass1, level):
            unsupported.append(a.seed)
        values.append(a.metric(PASS)[-1] - g)
    out = {"levels": levels, "dropped_seeds": dropped, "unsupported_seeds": unsupported}
    if not values:
        return out | {"reason": "no GRPO seed crosses its ES seed's final Pass@1"}
    return seeds_by_prompts(np.stack(values), es[0].n).to_json() | out


def plateau_endpoints(es: list[Curve], grpo: list[Curve], es_end: dict | None) -> dict:
    """The record entries of this module from the two methods' curves and (e)'s record (None: no ES curves)."""
    level = grpo_plateau_pass1(grpo)
    reach = reaches(es, level["level"])
    if len(es) < 2:
        why = {"reason": "fewer than 2 ES runs with curves"}
        return {"es_at_grpo_plateau": why | {"reading": NOT_READABLE}, "distinct_at_grpo_plateau": why}
    b, d = es_at_grpo_plateau(es, grpo, level, reach)
    return {
        "es_at_grpo_plateau": b,
        "distinct_at_grpo_plateau": d,
        "es_plateau_outcome": es_plateau_outcome(es, level, reach, es_end, grpo),
        "es_minus_grpo_at_es_end_level": residual_at_es_end_level(es, grpo),
    }
