"""A verdict: a claim's status at one level, computed from measured data only, with what was tested.

The decision rules themselves (directional, equivalence, ratio, identity) live in theory.decisions,
shared with simulate, and a claim's Test (theory.claims) decides with them; the design that gives
real-run intervals lives in paper_checks.design. The statuses are theory.decisions' verdict words and
the ones a level adds when it decides nothing: not testable, outside the lemma's regime, missing data (the runs
a check needs were planned, or no budget says what was planned, and their data are absent or damaged), and not
run in this budget (the reproduction's budget plans none of the runs or measurements the check needs).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from escov.theory.decisions import DECISIONS, FAILS, HOLDS, IDENTITY, INCONCLUSIVE

NOT_TESTABLE = "not testable here"
OUTSIDE_REGIME = "outside the lemma's regime"  # measured where the lemma does not claim to hold: no decision
MISSING = "missing data"
NOT_RUN = "not run in this budget"
STATUSES = (*DECISIONS, NOT_TESTABLE, OUTSIDE_REGIME, MISSING, NOT_RUN)
__all__ = [
    "HOLDS",
    "FAILS",
    "INCONCLUSIVE",
    "IDENTITY",
    "NOT_TESTABLE",
    "OUTSIDE_REGIME",
    "MISSING",
    "NOT_RUN",
    "STATUSES",
    "Verdict",
    "fmt_interval",
    "decimals",
]


@dataclass
class Verdict:
    claim_id: str
    status: str
    ours: str
    interval: tuple[float, float] | None = None
    evidence: dict = field(default_factory=dict)
    plots: list[str] = field(default_factory=list)
    note: str = ""
    test: str = ""  # what was tested (Test.describe())
    design: str = ""  # seeds x prompts x samples behind the interval
    power: str = ""  # smallest difference detectable at 80% power, beside the paper's effect

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    def to_json(self) -> dict:
        return asdict(self)


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
