"""The real-run checks on Pass@k per prompt: final - base and method - method, seeds x test prompts shared by every
run (paper_checks.design.seeds_by_prompts), two methods paired by seed and by prompt."""

from __future__ import annotations

import numpy as np

from escov.paper_checks.design import Estimate, seeds_by_prompts
from escov.paper_checks.evidence import Evidence, eval_of, heldout_of, per_problem_pass
from escov.paper_checks.real_checks.decide import decided, missing, registers
from escov.paper_checks.real_checks.needs import HELDOUT
from escov.paper_checks.rundir import Run
from escov.paper_checks.verdict import Verdict, fmt_interval
from escov.theory.claims import Claim


def _has_eval(run: Run, which: str, k: int) -> bool:
    ev = eval_of(run, which)
    return bool(ev) and str(k) in ev["pass_at_k"] and "per_problem" in ev


def _ids(run: Run, which: str) -> list[str]:
    return [p["id"] for p in eval_of(run, which)["per_problem"]]


def _samples(runs: list[Run], which: str) -> int:
    return int(eval_of(runs[0], which)["n"])


def diff_vs_base(runs: list[Run], k: int, which: str = "final") -> Estimate | None:
    """Pass@k final - base per (seed, prompt) over runs sharing their test prompts."""
    runs = [r for r in runs if _has_eval(r, which, k) and _has_eval(r, "base", k)]
    if not runs or any(_ids(r, which) != _ids(runs[0], which) or _ids(r, "base") != _ids(r, which) for r in runs):
        return None
    y = np.stack([per_problem_pass(eval_of(r, which), k) - per_problem_pass(eval_of(r, "base"), k) for r in runs])
    return seeds_by_prompts(y, _samples(runs, which))


def diff_between(a: list[Run], b: list[Run], k: int, which: str = "final") -> Estimate | None:
    """Pass@k a - b per (seed, prompt): runs paired by seed, on the same test prompts."""
    by_seed = {r.seed: r for r in b if _has_eval(r, which, k)}
    pairs = [(ra, by_seed[ra.seed]) for ra in a if _has_eval(ra, which, k) and ra.seed in by_seed]
    if not pairs or any(
        _ids(ra, which) != _ids(pairs[0][0], which) or _ids(rb, which) != _ids(ra, which) for ra, rb in pairs
    ):
        return None
    y = np.stack(
        [per_problem_pass(eval_of(ra, which), k) - per_problem_pass(eval_of(rb, which), k) for ra, rb in pairs]
    )
    return seeds_by_prompts(y, _samples([p[0] for p in pairs], which))


# ----------------------------------------------------------------------------- Pass@k claims


def improves_over_base(ev: Evidence, claim: Claim, name: str) -> Verdict:
    """`name`'s final Pass@k minus the base's, for every k the claim reads (its pass_at_k), decided by its test."""
    parts = []
    for k in claim.pass_at_k:
        d = diff_vs_base(ev.by_variant(name), k)
        if d is None:
            return missing(
                claim, f"{name} runs with base and final evaluations on the same prompts (Pass@{k})", ((name, ""),)
            )
        parts.append((f"@{k}", d))
    return decided(claim, parts, note=f"{name} final minus base")


def es_improves_over_base(ev: Evidence, claim: Claim) -> Verdict:
    return improves_over_base(ev, claim, "es")


registers("es_improves_over_base")(es_improves_over_base)


def grpo_raises_pass1(ev: Evidence, claim: Claim) -> Verdict:
    return improves_over_base(ev, claim, "grpo")


registers("grpo_raises_pass1")(grpo_raises_pass1)


def grpo_passk_below_base(ev: Evidence, claim: Claim) -> Verdict:
    return improves_over_base(ev, claim, "grpo")


registers("grpo_passk_below_base")(grpo_passk_below_base)


def es_passk_above_grpo(ev: Evidence, claim: Claim) -> Verdict:
    parts = []
    for k in claim.pass_at_k:
        d = diff_between(ev.by_variant("es"), ev.by_variant("grpo"), k)
        if d is None:
            return missing(claim, "es and grpo runs with the same seeds and test prompts", (("es", ""), ("grpo", "")))
        parts.append((f"ES - GRPO @{k}", d))
    return decided(claim, parts)


registers("es_passk_above_grpo")(es_passk_above_grpo)


def schedules_pareto(ev: Evidence, claim: Claim) -> Verdict:
    """ES->GRPO's Pass@32 above each of ES, GRPO and GRPO->ES (every comparison must hold)."""
    parts = []
    (k,) = claim.pass_at_k
    for other in ("es", "grpo", "grpo-es"):
        d = diff_between(ev.by_variant("es-grpo"), ev.by_variant(other), k)
        if d is None:
            return missing(
                claim, f"es-grpo and {other} runs with the same seeds and test prompts", (("es-grpo", ""), (other, ""))
            )
        parts.append((f"ES->GRPO - {other} @{k}", d))
    return decided(claim, parts, note="holds when ES->GRPO is above every other method")


registers("schedules_pareto")(schedules_pareto)


def zscore_essential(ev: Evidence, claim: Claim) -> Verdict:
    """z-scored ES against centered rewards at alpha rescaled to the z-scored update norm (the effect
    of z-scoring itself); the same-alpha comparison (mostly a ~1/std(R) smaller step) is shown beside."""
    d = diff_between(ev.by_variant("es"), ev.by_variant("es[no-zscore,rescaled]"), 1)
    if d is None:
        return missing(
            claim,
            "es and es[no-zscore,rescaled] runs with the same seeds",
            (("es", ""), ("es[no-zscore,rescaled]", "")),
        )
    same_alpha = diff_between(ev.by_variant("es"), ev.by_variant("es[no-zscore]"), 1)
    shown = (
        "; at the same alpha (step size effect, not decided): "
        f"{fmt_interval(same_alpha.mean, same_alpha.lo, same_alpha.hi)}"
        if same_alpha is not None
        else ""
    )
    v = decided(
        claim,
        [("z-scored - centered at rescaled alpha @1", d)],
        note="the effect of z-scoring at equal update norm" + shown,
        evidence={"same_alpha": same_alpha.to_json() if same_alpha is not None else None},
    )
    return v


registers("zscore_essential")(zscore_essential)


def one_point_vs_two_point(ev: Evidence, claim: Claim) -> Verdict:
    d = diff_between(ev.by_variant("es"), ev.by_variant("es[two-point]"), 1)
    if d is None:
        return missing(claim, "es and es[two-point] runs with the same seeds", (("es", ""), ("es[two-point]", "")))
    return decided(
        claim,
        [("one-point - two-point @1", d)],
        note="holds when one-point loses at most 2 points, with the whole interval",
    )


registers("one_point_vs_two_point")(one_point_vs_two_point)


def no_forgetting(ev: Evidence, claim: Claim) -> Verdict:
    """Held-out Pass@1 after minus before, for ES and for GRPO: no loss beyond 2 points."""
    parts = []
    for name in ("es", "grpo"):
        runs = [r for r in ev.by_variant(name) if heldout_of(r, "base") and heldout_of(r, "final")]
        if not runs:
            return missing(claim, f"{name} runs with held-out evaluations before and after", ((name, HELDOUT),))
        y = np.stack(
            [per_problem_pass(heldout_of(r, "final"), 1) - per_problem_pass(heldout_of(r, "base"), 1) for r in runs]
        )
        parts.append((f"{name.upper()} held-out @1", seeds_by_prompts(y, int(heldout_of(runs[0], "final")["n"]))))
    return decided(claim, parts)


registers("no_forgetting")(no_forgetting)
