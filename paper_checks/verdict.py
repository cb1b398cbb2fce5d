"""A verdict: a claim's status at one level, computed from measured data only, with what was tested.

The decision rules themselves (directional, equivalence, ratio, identity) live in theory.decisions,
shared with simulate; the design that gives real-run intervals lives in paper_checks.design.
`decide` applies a claim's Test to an interval.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from escov.paper_checks.claims import RATIO_FACTOR
from escov.theory.decisions import FAILS, HOLDS, IDENTITY, INCONCLUSIVE, directional, equivalence, ratio

NOT_TESTABLE = "not testable here"
OUTSIDE_REGIME = "outside the lemma's regime"   # measured where the lemma does not claim to hold: no decision
MISSING = "missing data"
STATUSES = (HOLDS, FAILS, INCONCLUSIVE, IDENTITY, NOT_TESTABLE, OUTSIDE_REGIME, MISSING)
__all__ = ["HOLDS", "FAILS", "INCONCLUSIVE", "IDENTITY", "NOT_TESTABLE", "OUTSIDE_REGIME", "MISSING", "STATUSES",
           "Verdict", "decide", "combine", "fmt_interval", "decimals"]


@dataclass
class Verdict:
    claim_id: str
    status: str
    ours: str
    interval: tuple[float, float] | None = None
    evidence: dict = field(default_factory=dict)
    plots: list[str] = field(default_factory=list)
    note: str = ""
    test: str = ""       # what was tested (Test.describe())
    design: str = ""     # seeds x prompts x samples behind the interval
    power: str = ""      # smallest difference detectable at 80% power, beside the paper's effect

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    def to_json(self) -> dict:
        return asdict(self)


def decide(test, lo: float, hi: float) -> str:
    """A claim's Test (paper_checks.claims) applied to a 95% interval [lo, hi]; an infinite interval
    (one seed: no run-to-run variance) is inconclusive whatever the test."""
    if test.kind == "identity":
        return IDENTITY
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return INCONCLUSIVE
    if test.kind == "directional":
        return directional(lo - test.threshold, hi - test.threshold, test.sign)
    if test.kind == "equivalence":
        return equivalence(lo, hi, test.margin)
    return ratio(lo, hi, *test.paper_range, RATIO_FACTOR)


def combine(statuses: list[str]) -> str:
    """All parts hold -> holds; any part fails -> does not hold; otherwise inconclusive."""
    if statuses and all(s == HOLDS for s in statuses):
        return HOLDS
    if any(s == FAILS for s in statuses):
        return FAILS
    return INCONCLUSIVE


def decimals(lo: float, hi: float, least: int = 2, most: int = 6) -> int:
    """Decimals that show an interval's width hi - lo with two significant digits (at least `least`)."""
    width = hi - lo
    if not (math.isfinite(width) and width > 0):
        return least
    return int(min(most, max(least, math.ceil(-math.log10(width)) + 1)))


def fmt_interval(mean: float, lo: float, hi: float, scale: float = 100.0, unit: str = " pts") -> str:
    """mean [lo, hi] x scale, with enough decimals that the interval's ends differ where they differ."""
    d = decimals(lo * scale, hi * scale)
    return f"{mean * scale:+.{d}f}{unit} [{lo * scale:+.{d}f}, {hi * scale:+.{d}f}]"
