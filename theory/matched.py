"""Two training curves compared at matched Pass@1: the one reading every level uses.

A curve is a sequence of measured points in training order, each with a Pass@1 m_t and values y_t
(a metric, per prompt or not). simulate reads exact per-step trajectories with it, paper_checks the
sampled curve points of real runs (llm/curve.py); both read the same way:

    common range   [max over curves of min_t m_t, min over curves of max_t m_t]: the Pass@1 levels
                   every compared curve passes through (a curve joined by straight segments passes
                   through every level between its lowest and highest point);
    levels         MATCHED_LEVELS evenly spaced interior levels of that range,
                   lo + (hi - lo) j / (MATCHED_LEVELS + 1), j = 1..MATCHED_LEVELS (the ends excluded:
                   at the lower end two methods on one seed often sit on the same base measurement);
    crossing       a curve is read where it first reaches the level, in training order: the first
                   segment [t, t+1] with the level between m_t and m_{t+1} (rising, falling or
                   non-monotone curves alike), y(L) = (1 - w) y_t + w y_{t+1}, w = (L - m_t) / (m_{t+1} - m_t);
    support        a level is read from measurements only when that segment spans at most
                   `resolution` of Pass@1 (both its points lie within the resolution of the level).
                   Across a wider gap the straight line is a guess: under a concave frontier
                   Pass@k(Pass@1) the chord lies below it, so the method measured more sparsely reads
                   low. A comparison uses only levels every curve supports.
"""

from __future__ import annotations

import numpy as np

MATCHED_LEVELS = 5  # interior Pass@1 levels of the common range
RESOLUTION = 0.06  # widest Pass@1 gap (a fraction) a level may be interpolated across


def interior_levels(lo: float, hi: float, count: int = MATCHED_LEVELS) -> np.ndarray:
    """`count` evenly spaced levels strictly inside [lo, hi]."""
    return np.linspace(lo, hi, count + 2)[1:-1]


def common_range(pass1_curves) -> tuple[float, float]:
    """[max of the curves' lowest Pass@1, min of their highest]: the levels every curve passes through
    (empty when lo > hi)."""
    curves = [np.asarray(m, dtype=float) for m in pass1_curves]
    return float(max(m.min() for m in curves)), float(min(m.max() for m in curves))


def crossing(pass1, level: float) -> tuple[int, float] | None:
    """(t, w) of the first segment [t, t+1] whose Pass@1 spans `level`, and the weight of point t+1;
    None when the curve never reaches the level. A single point at exactly the level reads (0, 0.0)."""
    m = np.asarray(pass1, dtype=float)
    for t in range(len(m) - 1):
        a, b = m[t], m[t + 1]
        if min(a, b) <= level <= max(a, b):
            return t, (0.0 if a == b else float((level - a) / (b - a)))
    if len(m) == 1 and m[0] == level:
        return 0, 0.0
    return None


def read_at(pass1, values, level: float):
    """values (T, ...) read at the first crossing of `level` (linear interpolation); None if never reached."""
    found = crossing(pass1, level)
    if found is None:
        return None
    t, w = found
    values = np.asarray(values, dtype=float)
    return values[t] if w == 0.0 else (1 - w) * values[t] + w * values[t + 1]


def supported(pass1, level: float, resolution: float = RESOLUTION) -> bool:
    """Whether the segment read at `level` spans at most `resolution` of Pass@1 (False if never reached)."""
    found = crossing(pass1, level)
    if found is None:
        return False
    t, w = found
    m = np.asarray(pass1, dtype=float)
    return bool(w in (0.0, 1.0) or abs(m[t + 1] - m[t]) <= resolution + 1e-12)  # a point at the level: measured


def points_in_range(pass1, lo: float, hi: float) -> int:
    """How many measured points of a curve lie in [lo, hi]."""
    m = np.asarray(pass1, dtype=float)
    return int(np.sum((m >= lo) & (m <= hi)))


def compared_levels(
    pass1_curves, resolution: float = RESOLUTION, count: int = MATCHED_LEVELS
) -> tuple[float, float, np.ndarray, np.ndarray]:
    """(lo, hi, levels, kept) for curves compared together: their common range, its interior levels
    and, per level, whether every curve supports it. No levels when the range is empty."""
    curves = list(pass1_curves)
    lo, hi = common_range(curves)
    if not hi > lo:
        return lo, hi, np.empty(0), np.empty(0, dtype=bool)
    levels = interior_levels(lo, hi, count)
    kept = np.array([all(supported(m, L, resolution) for m in curves) for L in levels], dtype=bool)
    return lo, hi, levels, kept


def differences_at(levels, pass1_a, values_a, pass1_b, values_b) -> np.ndarray:
    """(levels, ...) a - b, each curve read at its first crossing of every level (levels both reach)."""
    return np.stack([read_at(pass1_a, values_a, L) - read_at(pass1_b, values_b, L) for L in levels])
