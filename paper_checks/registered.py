"""The premise's registered family of tests and Holm's adjustment across it; every other entry is exploratory.

Registered before the answer's run (docs/answer-budget.md), each member the interval of its record entry
(design.seeds_by_prompts, 95%) tested against 0 with the t statistic behind that interval (Estimate.p,
theory.decisions.t_p_value):

    grpo_plateau_minus_base    (a)  GRPO's last checkpoint - base, Pass@32: directional, < 0 (GRPO narrows)
    es_at_grpo_plateau         (b') ES - GRPO Pass@32 at L*: directional, > 0 (ES keeps coverage); a member only when
                                    (b') is readable (GRPO's fall at L* meets its validity condition)
    distinct_at_grpo_plateau   (d') ES - GRPO distinct correct solutions at L*: two-sided
    es_minus_base_end          (e)  ES's last checkpoint - base, Pass@32: two-sided

A directional member is tested at the level its interval is read at (theory.decisions.directional: the whole 95%
interval on the claimed side, a one-sided 2.5% test): its p is twice the one-sided p (capped at 1), so that alone
it rejects exactly when its interval lies on the claimed side of 0, as a two-sided member rejects exactly when 0
lies outside its interval; the one-sided p is recorded beside it.

Holm's step-down at family-wise level ALPHA over the m readable members: with p_(1) <= ... <= p_(m), the adjusted
p_adj(i) = max_{j <= i} min(1, (m - j + 1) p_(j)), and a member is rejected when p_adj < ALPHA (strict, as an
interval excludes 0 strictly): the step-down rejects p_(1), p_(2), ... while p_(i) < ALPHA / (m - i + 1) and stops
at the first that is not. The family-wise error is at most ALPHA whatever the dependence between members.

`registered` also names the registered outcome (f) (a finding, not a test), and `exploratory` lists the record's
other endpoints, read without adjustment. The commit is the code commit the runs trained with (each run's
inputs.json, llm/fingerprints.py), which holds the registration; None when the runs do not record one or disagree.
"""

from __future__ import annotations

from escov.llm import rundir
from escov.llm.rundir import RunDirError
from escov.theory.decisions import t_p_value

ALPHA = 0.05
WHERE = "docs/answer-budget.md, 'The premise'"
GREATER, LESS, TWO_SIDED = 1, -1, 0
SIDES = {GREATER: "one-sided > 0", LESS: "one-sided < 0", TWO_SIDED: "two-sided"}
FAMILY = {
    "grpo_plateau_minus_base": LESS,
    "es_at_grpo_plateau": GREATER,
    "distinct_at_grpo_plateau": TWO_SIDED,
    "es_minus_base_end": TWO_SIDED,
}
OUTCOME = "es_plateau_outcome"
LABELS = {  # each endpoint's name in REPORT.md
    "grpo_plateau_minus_base": "(a)",
    "es_at_grpo_plateau": "(b')",
    "distinct_at_grpo_plateau": "(d')",
    "es_minus_base_end": "(e)",
    "es_minus_grpo_top_level": "(b)",
    "es_minus_grpo_end": "(c)",
    "es_minus_grpo_at_es_end_level": "(c')",
    "distinct_correct": "(d)",
    "es_small_sigma": "ES at the small sigma",
    "es_null": "ES beside its random-z null",
}
EXPLORATORY = (
    "es_minus_grpo_top_level",
    "es_minus_grpo_end",
    "es_minus_grpo_at_es_end_level",
    "distinct_correct",
    "es_small_sigma",
    "es_null",
)


def family_member(record: dict, name: str) -> dict | None:
    """The interval a family member tests, or None when it is not readable."""
    entry = record.get(name)
    if not entry:
        return None
    if name in ("grpo_plateau_minus_base", "es_minus_base_end"):
        entry = entry.get("pass@32")
    elif name == "es_at_grpo_plateau":
        if entry.get("reading") in (None, "not_readable"):
            return None
        entry = entry.get("difference")
    return entry if entry and entry.get("mean") is not None and entry.get("se") is not None else None


def member_p(estimate: dict, side: int) -> dict:
    """{"test", "p", and for a directional member "p_one_sided"} of one member's interval (module docstring)."""
    mean, se, df = estimate["mean"], estimate["se"], estimate["df"]
    if side == TWO_SIDED:
        return {"test": SIDES[side], "p": t_p_value(mean, se, df)}
    one = t_p_value(mean, se, df, side)
    return {"test": SIDES[side], "p": min(1.0, 2.0 * one), "p_one_sided": one}


def holm(p: dict[str, float], alpha: float = ALPHA) -> dict[str, dict]:
    """Holm's step-down (module docstring): {name: {"p", "p_adjusted", "rejects"}}."""
    order = sorted(p, key=lambda k: (p[k], k))
    m, running, out = len(order), 0.0, {}
    for i, name in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[name]))
        out[name] = {"p": p[name], "p_adjusted": running, "rejects": bool(running < alpha)}
    return {name: out[name] for name in p}


def runs_commit(paths) -> str | None:
    """The one code commit every run directory's inputs.json records (unmodified tree), else None."""
    commits = set()
    for path in paths:
        try:
            manifest = rundir.read_manifest(path)
        except (RunDirError, OSError):
            return None
        code = (manifest or {}).get("code") or {}
        if not code.get("commit") or code.get("modified"):
            return None
        commits.add(code["commit"])
    return commits.pop() if len(commits) == 1 else None


def registered(record: dict, commit: str | None) -> dict:
    """The record's `registered` entry: the family, each readable member's test and Holm's adjustment."""
    tests = {
        name: member_p(est, side) for name, side in FAMILY.items() if (est := family_member(record, name)) is not None
    }
    adjusted = holm({name: t["p"] for name, t in tests.items()})
    return {
        "where": WHERE,
        "commit": commit,
        "family": list(FAMILY),
        "alpha": ALPHA,
        "holm": {name: tests[name] | adjusted[name] for name in tests},
        "not_readable": [name for name in FAMILY if name not in tests],
        "outcome": [OUTCOME],
    }


def exploratory(record: dict) -> list[str]:
    """The record's endpoints outside the registered family and outcome, present in it."""
    return [name for name in EXPLORATORY if record.get(name) is not None]


def holm_lines(record: dict) -> list[str]:
    """REPORT.md's lines on the family: each readable member's adjusted p and decision, then the exploratory rest."""
    reg = record["registered"]
    parts = [
        f"{LABELS[name]} p {t['p']:.3g}, adjusted {t['p_adjusted']:.3g}: "
        + ("rejected" if t["rejects"] else "not rejected")
        for name, t in reg["holm"].items()
    ]
    left = [LABELS[name] for name in reg["not_readable"]]
    commit = f" (runs at commit {reg['commit'][:12]})" if reg.get("commit") else ""
    return [
        f"- Registered family{commit}, Holm at family-wise {reg['alpha']:g} over its readable members: "
        + ("; ".join(parts) if parts else "none readable")
        + (f"; not readable: {', '.join(left)}" if left else "")
        + ".",
        f"- Exploratory (no adjustment): {', '.join(LABELS[n] for n in record.get('exploratory', [])) or 'none'}.",
    ]
