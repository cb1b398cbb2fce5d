"""How a real-run check decides: its registration on its claim (`registers(claim_id)(check)`, paper_checks.registry),
the verdict from labelled estimates each decided by its part's test (`decided`), the power line beside it, and
the verdict of a check without data (`missing`). Each check receives its claim record (theory.claims)."""

from __future__ import annotations

import math

from escov.paper_checks.design import Estimate
from escov.paper_checks.registry import CheckRegistry
from escov.paper_checks.verdict import MISSING, Verdict, decimals, fmt_interval
from escov.theory.claims import CLAIMS, Claim
from escov.theory.decisions import combine

REGISTRY = CheckRegistry(CLAIMS)
# registers(claim_id)(check), written after each check: the check is that claim's real-run check. Not as a decorator:
# mutation testing (scripts/mutation.py, mutmut) leaves every decorated function unmutated, and these are the verdicts
registers = REGISTRY.registers


def missing(claim: Claim, what: str, needs: tuple[tuple[str, str], ...] = ()) -> Verdict:
    """No verdict for want of data: what the check needs in words, and as needs (in its evidence)."""
    return Verdict(
        claim.id,
        MISSING,
        "n/a",
        note=f"needs {what}",
        evidence={"needs": [list(n) for n in needs]},
        test=claim.describe_test(),
    )


def power_line(est: Estimate, claim: Claim, scale: float = 100.0, unit: str = " pts", label: str = "") -> str:
    effect = claim.test_of(label).paper_effect
    d = decimals(0.0, est.detectable * scale)  # two significant digits, at least two decimals
    found = (
        "no run-to-run variance (one seed)"
        if not math.isfinite(est.detectable)
        else f"{est.detectable * scale:.{d}f}{unit}"
    )
    return f"detectable at 80% power: {found}; paper: {effect}"


def decided(
    claim: Claim,
    parts: list[tuple[str, Estimate]],
    *,
    scale: float = 100.0,
    unit: str = " pts",
    note: str = "",
    evidence: dict | None = None,
) -> Verdict:
    """One verdict from labelled estimates, each decided by its part's test (Claim.test_of: the claim's test unless
    the claim gives the part its own), combined (all must hold; any that fails, fails)."""
    statuses = [claim.test_of(label).decide(e.lo, e.hi) for label, e in parts]
    ours = "; ".join(f"{label} {fmt_interval(e.mean, e.lo, e.hi, scale, unit)}" for label, e in parts)
    interval = (parts[0][1].lo, parts[0][1].hi) if len(parts) == 1 else None
    if any(e.seeds < 2 for _, e in parts):
        note = (note + "; " if note else "") + "one seed: no run-to-run variance, so no decision"
    return Verdict(
        claim.id,
        combine(statuses),
        ours,
        interval=interval,
        evidence=(evidence or {}) | {label: e.to_json() for label, e in parts},
        note=note,
        test=claim.describe_test(),
        design=" | ".join(sorted({e.design for _, e in parts})),
        power=" | ".join(f"{label}: {power_line(e, claim, scale, unit, label)}" for label, e in parts),
    )
