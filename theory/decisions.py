"""Decision rules shared by every level: an interval in, a verdict out; and intervals over seeds.

Every empirical verdict of the toolkit (simulate's over seeds, paper_checks' over seeds and prompts)
is one of four tests, each stated here once:

    directional   the claim "d > 0" (or "d < 0"): holds when the whole 95% interval lies strictly
                  on the claimed side of 0, does not hold when it lies strictly on the other side,
                  inconclusive when it contains 0 (touching 0 included).
    equivalence   the claim "|d| <= margin" ("keeps Pass@1"): holds only when the whole interval lies
                  strictly inside (-margin, margin), does not hold when it lies wholly outside it
                  (at or beyond one end), inconclusive otherwise. A wide interval never passes.
    ratio         the claim "our ratio is the paper's figure" (a range [lo, hi] of the paper's
                  models): on the log scale, an equivalence with the range widened by a stated
                  factor on both sides.
    identity      a statement that holds for every input by construction (Maclaurin's inequality,
                  data processing): shown, labelled, never counted as evidence.

A claim's test (theory.claims.Test) picks one of these rules in its `decide`; a claim of several
parts is decided part by part and `combine`d. The verdict words (DECISIONS) are the same at every level.

Intervals over seeds are Student t intervals with S - 1 degrees of freedom: with few seeds a
percentile bootstrap over seeds is far too narrow (two seeds resampled give an interval [min, max]
that holds the true mean only half the time), t is exact for normal seed effects.
The power line: the smallest true difference a design detects at 80% power in a two-sided 5% t test
(noncentral t with the design's degrees of freedom), in units of its standard error times se.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as st

HOLDS = "holds"
FAILS = "does not hold"
INCONCLUSIVE = "inconclusive"
IDENTITY = "identity (not evidence)"
DECISIONS = (HOLDS, FAILS, INCONCLUSIVE, IDENTITY)  # the verdicts of a decision, the same words at every level
FINDING = "finding"  # a measurement shown without a decision (simulate's entries that are not a paper's claim)
LEVEL = 0.95
POWER = 0.80
KEEP_MARGIN = 0.02  # "keeps Pass@1" / "no loss": within 2 points of Pass@1 (a fraction), at every level


def directional(lo: float, hi: float, sign: int = 1) -> str:
    """The claim sign * d > 0 from a 95% interval [lo, hi] of d."""
    if sign not in (1, -1):
        raise ValueError(f"sign must be +1 or -1, got {sign!r}")
    lo, hi = (lo, hi) if sign == 1 else (-hi, -lo)
    if lo > 0:
        return HOLDS
    if hi < 0:
        return FAILS
    return INCONCLUSIVE


def equivalence(lo: float, hi: float, margin: float) -> str:
    """The claim |d| <= margin from a 95% interval [lo, hi] of d."""
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    if -margin < lo and hi < margin:
        return HOLDS
    if lo >= margin or hi <= -margin:
        return FAILS
    return INCONCLUSIVE


def ratio(lo: float, hi: float, paper_lo: float, paper_hi: float, factor: float) -> str:
    """The claim "our ratio matches the paper's [paper_lo, paper_hi] within a factor", from a 95%
    interval [lo, hi] of our ratio: an equivalence on the log scale around the paper's range."""
    if not (0 < paper_lo <= paper_hi and factor >= 1 and lo > 0 and hi >= lo):
        raise ValueError(
            f"ratio needs 0 < lo <= hi, 0 < paper_lo <= paper_hi, factor >= 1; got "
            f"[{lo}, {hi}], [{paper_lo}, {paper_hi}], {factor}"
        )
    band_lo, band_hi = paper_lo / factor, paper_hi * factor
    if band_lo < lo and hi < band_hi:
        return HOLDS
    if lo >= band_hi or hi <= band_lo:
        return FAILS
    return INCONCLUSIVE


def combine(statuses: list[str]) -> str:
    """Parts of one claim, each decided: all parts hold -> holds; any part fails -> does not hold;
    otherwise (none, or some inconclusive) inconclusive."""
    if statuses and all(s == HOLDS for s in statuses):
        return HOLDS
    if any(s == FAILS for s in statuses):
        return FAILS
    return INCONCLUSIVE


def t_quantile(df: float, q: float) -> float:
    return float(st.t.ppf(q, df)) if math.isfinite(df) else float(st.norm.ppf(q))


def t_interval(mean: float, se: float, df: float) -> tuple[float, float]:
    half = t_quantile(df, 0.5 + LEVEL / 2) * se
    return mean - half, mean + half


def t_p_value(mean: float, se: float, df: float, side: int = 0) -> float:
    """The p-value of d = 0 from the t statistic T = mean / se on df degrees of freedom, the one whose quantile
    makes the interval mean +- t_{0.975, df} se: two-sided (side 0, P(|T'| >= |T|), so p < 1 - LEVEL exactly when
    0 lies outside that interval) or one-sided against d > 0 (side +1, P(T' >= T)) or d < 0 (side -1, P(T' <= T)).
    se = 0 is an exact mean: p is 0 where it lies on the tested side of 0 (either side for two-sided), else 1; an
    infinite se (one seed) gives 1."""
    if side not in (0, 1, -1):
        raise ValueError(f"side must be 0, +1 or -1, got {side!r}")
    if not math.isfinite(se):
        return 1.0
    if se == 0.0:
        return 0.0 if (mean != 0 and (side == 0 or side * mean > 0)) else 1.0
    t = mean / se
    sf = (lambda x: float(st.t.sf(x, df))) if math.isfinite(df) else (lambda x: float(st.norm.sf(x)))
    if side == 0:
        return min(1.0, 2.0 * sf(abs(t)))
    return sf(side * t)


def effective_df(se: float, half: float) -> float:
    """The degrees of freedom whose t quantile turns se into the half-width half (inf when half <= z se)."""
    from scipy.optimize import brentq

    target = half / se
    if target <= st.norm.ppf(0.5 + LEVEL / 2) * (1 + 1e-9):
        return float("inf")
    return float(brentq(lambda df: t_quantile(df, 0.5 + LEVEL / 2) - target, 1e-3, 1e7))


def detectable(se: float, df: float) -> float:
    """Smallest true difference detected with probability POWER by the two-sided t test at 1 - LEVEL:
    delta * se with P(|T| > t_crit) = POWER for T noncentral t (df, delta)."""
    if not (math.isfinite(se) and se > 0 and df > 0):
        return float("inf") if not (math.isfinite(se) and df > 0) else 0.0
    from scipy.optimize import brentq

    crit = t_quantile(df, 0.5 + LEVEL / 2)
    if not math.isfinite(df):
        power = lambda d: st.norm.sf(crit - d) + st.norm.cdf(-crit - d)
    else:
        power = lambda d: st.nct.sf(crit, df, d) + float(np.nan_to_num(st.nct.cdf(-crit, df, d)))  # lower tail: ~0
    hi = crit + 3.0
    while power(hi) < POWER:
        hi *= 2
    return float(brentq(lambda d: power(d) - POWER, 0.0, hi) * se)


def over_seeds(values) -> dict:
    """Mean over seeds with its t interval (S - 1 df) and power line; one seed gives no interval."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        raise ValueError("over_seeds needs at least one finite value")
    mean = float(v.mean())
    if v.size < 2:
        return {
            "mean": mean,
            "lo": float("-inf"),
            "hi": float("inf"),
            "se": float("inf"),
            "df": 0.0,
            "seeds": 1,
            "detectable": float("inf"),
        }
    se, df = float(v.std(ddof=1) / math.sqrt(v.size)), float(v.size - 1)
    lo, hi = t_interval(mean, se, df)
    return {
        "mean": mean,
        "lo": lo,
        "hi": hi,
        "se": se,
        "df": df,
        "seeds": int(v.size),
        "detectable": detectable(se, df),
    }


def welch(a, b) -> dict:
    """mean(a) - mean(b) for two independent groups of seeds: Welch's t interval (Satterthwaite df)."""
    a, b = (np.asarray(x, dtype=float).ravel() for x in (a, b))
    if a.size < 2 or b.size < 2:
        mean = float(a.mean() - b.mean()) if a.size and b.size else float("nan")
        return {
            "mean": mean,
            "lo": float("-inf"),
            "hi": float("inf"),
            "se": float("inf"),
            "df": 0.0,
            "seeds": int(min(a.size, b.size)),
            "detectable": float("inf"),
        }
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)) if va + vb > 0 else float("inf")
    mean = float(a.mean() - b.mean())
    lo, hi = t_interval(mean, se, df)
    return {
        "mean": mean,
        "lo": lo,
        "hi": hi,
        "se": se,
        "df": float(df),
        "seeds": int(min(a.size, b.size)),
        "detectable": detectable(se, df),
    }
