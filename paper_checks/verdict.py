"""Verdicts and the bootstrap that gives them an uncertainty.

A verdict is computed from measured data only. `compare` turns a bootstrap interval of a
difference into holds / does not hold / inconclusive: the claim "a > b" holds when the whole
95% interval of a - b lies above zero, does not hold when it lies at or below zero, and is
inconclusive when the interval straddles zero.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

HOLDS = "holds"
FAILS = "does not hold"
INCONCLUSIVE = "inconclusive"
NOT_TESTABLE = "not testable here"
MISSING = "missing data"
STATUSES = (HOLDS, FAILS, INCONCLUSIVE, NOT_TESTABLE, MISSING)


@dataclass
class Verdict:
    claim_id: str
    status: str
    ours: str
    interval: tuple[float, float] | None = None
    evidence: dict = field(default_factory=dict)
    plots: list[str] = field(default_factory=list)
    note: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    def to_json(self) -> dict:
        return asdict(self)


def bootstrap_mean(per_seed, *, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Mean over seeds of the per-seed prompt means, and its 95% percentile bootstrap interval.

    per_seed: a list with one 1-D array per seed (run) of per-prompt values, e.g. the paired
    difference final - base of each test prompt. Seeds are resampled, then prompts within each
    resampled seed. With one seed only prompts are resampled.
    """
    arrays = [np.asarray(a, float).ravel() for a in per_seed]
    if not arrays or any(a.size == 0 for a in arrays):
        raise ValueError("per_seed must hold at least one non-empty array of per-prompt values")
    rng = np.random.default_rng(seed)
    boot = np.empty(n_boot)
    for b in range(n_boot):
        picks = rng.integers(0, len(arrays), size=len(arrays))
        boot[b] = np.mean([arrays[i][rng.integers(0, arrays[i].size, size=arrays[i].size)].mean() for i in picks])
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(np.mean([a.mean() for a in arrays])), float(lo), float(hi)


def status_from_interval(lo: float, hi: float) -> str:
    """The claim "difference > 0" from a 95% interval of the difference."""
    if lo > 0:
        return HOLDS
    if hi <= 0:
        return FAILS
    return INCONCLUSIVE


def status_no_worse(lo: float, hi: float, tolerance: float) -> str:
    """The claim "difference >= -tolerance" (no loss beyond a tolerance) from a 95% interval."""
    if lo >= -tolerance:
        return HOLDS
    if hi < -tolerance:
        return FAILS
    return INCONCLUSIVE


def fmt_interval(mean: float, lo: float, hi: float, scale: float = 100.0, unit: str = " pts") -> str:
    return f"{mean * scale:+.2f}{unit} [{lo * scale:+.2f}, {hi * scale:+.2f}]"


def bootstrap_two_sample(a, b, *, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """mean(a) - mean(b) for two independent samples (e.g. per-seed values of two groups), with a
    95% percentile bootstrap interval."""
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    if a.size == 0 or b.size == 0:
        raise ValueError("a and b must be non-empty")
    rng = np.random.default_rng(seed)
    boot = rng.choice(a, (n_boot, a.size)).mean(1) - rng.choice(b, (n_boot, b.size)).mean(1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(a.mean() - b.mean()), float(lo), float(hi)
