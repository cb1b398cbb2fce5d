"""Where two training curves are compared at matched Pass@1: the levels of a common range.

Both levels (simulate's bandit trajectories, paper_checks' real-run curves) read each curve at
MATCHED_LEVELS evenly spaced interior levels of the Pass@1 range every compared curve reaches:
lo + (hi - lo) j / (MATCHED_LEVELS + 1), j = 1..MATCHED_LEVELS.
"""
from __future__ import annotations

import numpy as np

MATCHED_LEVELS = 5  # interior Pass@1 levels of the common range


def interior_levels(lo: float, hi: float, count: int = MATCHED_LEVELS) -> np.ndarray:
    """`count` evenly spaced levels strictly inside [lo, hi]."""
    return np.linspace(lo, hi, count + 2)[1:-1]
