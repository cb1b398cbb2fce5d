"""The Lemma 1 grid on a real model over sigma and N, read: each row's ratio of measured to predicted JSpol_N,
the pooled decision and the summary beside it. The rows are measured by
paper_checks/reproduce/lemma_grid_measurement.py (its design: antithetic pairs of populations, each measured
against its own members' prediction Q).

What it is: an implementation check and regime boundary (GRID_ROLE), not evidence for the lemma. Each population's
JSpol_N is compared with its own second-order value Q along the same directions, and by Taylor's theorem that
ratio tends to 1 for any smooth model as sigma -> 0: a ratio near 1 says the estimators and the expansion are
implemented consistently, and where it leaves 1 says where the second-order regime ends. The lemma as stated
(E[JSpol_N] over the noise against (sigma^2/2)(1 - 1/N) tr I_x, tr I_x from separate noise) is tested by
paper_checks/lemma_as_stated.py.

Row statistics (row_statistics). Per population the ratio JSpol_d / Q_d (each the mean over the probe prompts);
the row's ratio R is their geometric mean, exp(mean_d log(JSpol_d / Q_d)), with the t interval (D - 1 degrees of
freedom) of the mean log ratio, back on the ratio scale. Where Lemma 1 holds, every population's ratio is 1 up to
the O(sigma^2) terms, so E JSpol_N / E Q (a Q-weighted mean of the populations' ratios, `ratio_of_means` in the row)
lies with them. The ratio of sums would estimate it directly, but its delta-method interval undercovers when Q
spreads as widely as it does at small N (0.86 instead of 0.95 at D = 4 for Q of relative sd 1, a chi-square with
one degree of freedom, on synthetic rows); the mean log ratio covers at any spread of Q, because the populations'
errors are multiplicative. Rows share nothing, so their errors are independent. tr I is reported beside it: per
population (1/(N - 1)) sum_j d_j^T I_x d_j is an unbiased estimate of tr I_x.

Decision (lemma1_decision). Lemma 1 is claimed where s <= LEMMA1_S_LIMIT. The rows inside the regime are
pooled (the plain mean of their log ratios: weights from the rows' own estimated errors, a few draws each, make
the pooled interval undercover, 0.87-0.91 instead of 0.95 on synthetic rows) and the pooled ratio is an
equivalence test of ratio - 1
within +-TOLERANCE (Lemma 1's test, theory.claims): inside -> holds, wholly outside -> does not hold, else
inconclusive; any single in-regime row whose interval lies wholly outside 1 +- TOLERANCE also gives "does not
hold". Rows without the fields pooling reads (a grid written before they were recorded) decide nothing.

Beside it (summarize_grid): the exponent of JSpol in sigma fitted inside the regime (2 + the slope of log R in
log sigma, since Q is proportional to sigma^2; 2 where Lemma 1 holds), the (1 - 1/N) factor alone (R_N / R_Nmax at
equal sigma), the s at which the ratio leaves 1 +- TOLERANCE, data processing 0 <= JSsucc_N <= JSpol_N per
population, and Lemma 2's gap P_pop - P_same against its local form N p_bar (1 - p_bar)^(N-1) JSsucc_N (both
corrected by the same permutation null).
"""

from __future__ import annotations

import math

import numpy as np

from escov.theory.claims import BY_ID
from escov.theory.decisions import FAILS, HOLDS, t_quantile
from escov.theory.paper import LEMMA1_S_LIMIT

GRID_ROLE = "implementation check and regime boundary"  # what the per-population grid is, wherever it is shown
LEMMA1 = BY_ID["lemma1"].test  # the claim's test: an equivalence of ratio - 1 within its margin (10%)
TOLERANCE = LEMMA1.margin
LEVEL_Q = 0.975  # two-sided 95% intervals
TARGET_WIDTH = 0.10  # the design's aim: a ratio interval at most this wide inside the regime


def row_statistics(jspol_draws, predicted_draws) -> dict:
    """The ratio of measured to predicted JSpol_N of one grid point from its populations: per draw JSpol and the
    prediction Q for the same members, each the mean over the probe prompts (see the module's docstring)."""
    js, q = np.asarray(jspol_draws, dtype=float), np.asarray(predicted_draws, dtype=float)
    d = js.size
    if d < 2 or q.size != d:
        raise ValueError(f"row_statistics needs >= 2 draws of JSpol and of the prediction, got {d} and {q.size}")
    positive = bool(np.all(js > 0) and np.all(q > 0))
    log_ratio = np.log(js / q) if positive else np.full(d, np.nan)
    ratio = float(np.exp(log_ratio.mean()))
    se = float(log_ratio.std(ddof=1) / math.sqrt(d)) if positive else float("inf")
    half = t_quantile(d - 1, LEVEL_Q) * se
    return {
        "measured": float(js.mean()),
        "measured_se": float(js.std(ddof=1) / math.sqrt(d)),
        "predicted": float(q.mean()),
        "predicted_se": float(q.std(ddof=1) / math.sqrt(d)),
        "ratio": ratio,
        "ratio_ci": [ratio * math.exp(-half), ratio * math.exp(half)]
        if math.isfinite(half)
        else [float("-inf"), float("inf")],
        "ratio_df": float(d - 1),
        "ratio_se_log": se,
        "ratio_of_means": float(js.mean() / q.mean()),
        "ratio_sd": float(np.std(js / q, ddof=1)),
        "ratios": (js / q).tolist(),
    }


def draws_for_width(population_cv: float, width: float = TARGET_WIDTH, most: int = 10_000) -> int | None:
    """The fewest draws D whose ratio interval (row_statistics: t on D - 1 df) is at most `width` wide, given the sd
    of one population's log(JSpol / Q) (`population_cv`, measured in a pilot); None beyond `most`."""
    for d in range(2, most + 1):
        half = t_quantile(d - 1, LEVEL_Q) * population_cv / math.sqrt(d)
        if math.exp(half) - math.exp(-half) <= width:
            return d
    return None


POOLED_FIELDS = (
    "ratio",
    "ratio_se_log",
    "ratio_df",
    "center_samples",
)  # what pooling reads (center_samples: a paired row)


def pooled_ratio(rows: list[dict]) -> dict:
    """The rows' ratios pooled: the plain mean of their log ratios (rows are independent; equal weights, because
    weights from the rows' estimated errors undercover), a t interval with Welch-Satterthwaite df, back on the
    ratio scale."""
    se = np.array([r["ratio_se_log"] for r in rows])
    log_mean = float(np.mean(np.log([r["ratio"] for r in rows])))
    c = se**2 / len(rows) ** 2
    var = float(c.sum())
    df = var**2 / float(np.sum(c**2 / np.array([r["ratio_df"] for r in rows])))
    half = t_quantile(df, LEVEL_Q) * math.sqrt(var)
    return {
        "ratio": math.exp(log_mean),
        "ci": [math.exp(log_mean - half), math.exp(log_mean + half)],
        "df": df,
        "rows": len(rows),
    }


def draws_needed(pilot: list[dict], width: float = TARGET_WIDTH) -> list[dict]:
    """Sizing from a pilot grid: per row, the sd of one population's log(JSpol / Q) (se_log x sqrt(its draws)) and
    the draws a row needs for a ratio interval `width` wide (draws_for_width)."""
    out = []
    for r in pilot:
        cv = r["ratio_se_log"] * math.sqrt(r["draws"])
        out.append(
            {
                "sigma": r["sigma"],
                "members": r["members"],
                "s_measured": r["s_measured"],
                "population_cv": cv,
                "draws": draws_for_width(cv, width),
            }
        )
    return out


def lemma1_decision(rows: list[dict]) -> dict | None:
    """The verdict from the rows inside the regime (s_measured <= LEMMA1_S_LIMIT): their pooled ratio
    (pooled_ratio) is an equivalence test of ratio - 1 within +-TOLERANCE, and every row is one too. Holds when the
    pooled interval lies inside 1 +- TOLERANCE and no row lies wholly outside it; does not hold when the pooled
    interval or any row lies wholly outside; inconclusive otherwise. None when no row lies inside the regime."""
    inside = [
        r
        for r in rows
        if _finite(r.get("s_measured"))
        and r["s_measured"] <= LEMMA1_S_LIMIT
        and _finite(r.get("ratio"))
        and r["ratio"] > 0
        and all(_finite(x) for x in r["ratio_ci"])
        and all(_finite(r.get(k)) and r[k] > 0 for k in POOLED_FIELDS)
    ]
    if not inside:
        return None
    pooled = pooled_ratio(inside)
    pooled["status"] = LEMMA1.decide(pooled["ci"][0] - 1, pooled["ci"][1] - 1)
    per_row = [LEMMA1.decide(r["ratio_ci"][0] - 1, r["ratio_ci"][1] - 1) for r in inside]
    status = FAILS if FAILS in per_row + [pooled["status"]] else pooled["status"]
    return {
        "status": status,
        "pooled": pooled,
        "rows": [{"sigma": r["sigma"], "members": r["members"], "status": v} for r, v in zip(inside, per_row)],
    }


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ----------------------------------------------------------------------------- the summary beside the verdict


def _paired(r: dict) -> bool:
    return (
        _finite(r.get("ratio"))
        and r["ratio"] > 0
        and _finite(r.get("ratio_se_log"))
        and r["ratio_se_log"] > 0
        and _finite(r.get("ratio_df"))
        and r["ratio_df"] > 0
    )


def _slope(rows: list[dict]) -> dict | None:
    """The exponent of JSpol in sigma: 2 + the weighted least-squares slope of log R on log sigma (the prediction Q is
    proportional to sigma^2), with an intercept per N (weights 1 / se_log^2); t interval with the smallest df of the
    rows."""
    rows = [r for r in rows if _paired(r)]
    groups = {}
    for r in rows:
        groups.setdefault(r["members"], []).append(r)
    xs, ys, ws, used = [], [], [], []
    for sub in groups.values():
        if len({r["sigma"] for r in sub}) < 2:
            continue
        x = np.log([r["sigma"] for r in sub])
        y = np.log([r["ratio"] for r in sub])
        w = np.array([1 / r["ratio_se_log"] ** 2 for r in sub])
        xs.append(x - np.average(x, weights=w))
        ys.append(y - np.average(y, weights=w))
        ws.append(w)
        used += sub
    if not xs:
        return None
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    slope = float(np.sum(w * x * y) / np.sum(w * x * x))
    se = float(1 / math.sqrt(np.sum(w * x * x)))
    half = t_quantile(min(r["ratio_df"] for r in used), LEVEL_Q) * se
    return {"exponent": 2 + slope, "ci": [2 + slope - half, 2 + slope + half], "rows": len(x)}


def _n_factor(rows: list[dict]) -> dict:
    """Per N below the largest: (JSpol_N / (1 - 1/N)) / (JSpol_Nmax / (1 - 1/Nmax)) at equal sigma, i.e. the
    ratio of the rows' ratios, as a geometric mean over the sigmas both have; 1 where the (1 - 1/N) factor holds.
    Interval: t on the log scale from the rows' se_log, with the smallest df of the rows."""
    by = {(r["sigma"], r["members"]): r for r in rows if _paired(r)}
    ns = sorted({n for _, n in by})
    out = {}
    if len(ns) < 2:
        return out
    top = ns[-1]
    for n in ns[:-1]:
        sig = sorted(s for s, m in by if m == n and (s, top) in by)
        if not sig:
            continue
        logs = [math.log(by[(s, n)]["ratio"] / by[(s, top)]["ratio"]) for s in sig]
        var = [by[(s, n)]["ratio_se_log"] ** 2 + by[(s, top)]["ratio_se_log"] ** 2 for s in sig]
        mean, se = float(np.mean(logs)), math.sqrt(sum(var)) / len(sig)
        df = min(min(by[(s, n)]["ratio_df"], by[(s, top)]["ratio_df"]) for s in sig)
        half = t_quantile(df, LEVEL_Q) * se
        out[str(n)] = {
            "against": top,
            "sigmas": sig,
            "factor": math.exp(mean),
            "ci": [math.exp(mean - half), math.exp(mean + half)],
            "decision": LEMMA1.decide(math.exp(mean - half) - 1, math.exp(mean + half) - 1),
        }
    return out


def _departure(rows: list[dict]) -> dict:
    """Per N, rows by increasing s: the largest s whose ratio interval lies inside 1 +- TOLERANCE and the
    smallest s whose interval lies wholly outside it (where the O(sigma^4) term has taken over)."""
    out = {}
    for n in sorted({r["members"] for r in rows}):
        sub = sorted(
            (r for r in rows if r["members"] == n and _finite(r.get("s_measured")) and _finite(r.get("ratio"))),
            key=lambda r: r["s_measured"],
        )
        verdicts = [
            (r, LEMMA1.decide(r["ratio_ci"][0] - 1, r["ratio_ci"][1] - 1))
            for r in sub
            if all(_finite(x) for x in r["ratio_ci"])
        ]
        inside = [r["s_measured"] for r, v in verdicts if v == HOLDS]
        outside = [r["s_measured"] for r, v in verdicts if v == FAILS]
        out[str(n)] = {
            "last_s_inside": max(inside) if inside else None,
            "first_s_outside": min(outside) if outside else None,
        }
    return out


def summarize_grid(rows: list[dict]) -> dict:
    """What the report shows beside the verdict (see the module's docstring)."""
    inside = [r for r in rows if _finite(r.get("s_measured")) and r["s_measured"] <= LEMMA1_S_LIMIT]
    per_n = {}
    for n in sorted({r["members"] for r in rows}):
        sub = [r for r in rows if r["members"] == n]
        within = [
            r["sigma"]
            for r in sub
            if _finite(r.get("ratio"))
            and all(_finite(x) for x in r["ratio_ci"])
            and LEMMA1.decide(r["ratio_ci"][0] - 1, r["ratio_ci"][1] - 1) == HOLDS
        ]
        per_n[str(n)] = {
            "exponent_in_regime": _slope([r for r in inside if r["members"] == n]),
            "exponent_all": _slope(sub),
            "sigmas_within": within,
            "sigmas_not_within": [r["sigma"] for r in sub if r["sigma"] not in within],
        }
    with_succ = [r for r in rows if "jssucc" in r]
    traced = [r for r in rows if _finite(r.get("fisher_trace")) and r.get("draws")]
    probes = np.array([r["draws"] * (r["members"] - 1) for r in traced], dtype=float)  # Hutchinson probes per row
    fisher = float(np.sum(probes * [r["fisher_trace"] for r in traced]) / probes.sum()) if traced else None
    return {
        "s_limit": LEMMA1_S_LIMIT,
        "tolerance": TOLERANCE,
        "fisher_trace": fisher,
        "per_members": per_n,
        "exponent_in_regime": _slope(inside),
        "n_factor": _n_factor(inside),
        "departure": _departure(rows),
        "dpi": {
            "rows": len(with_succ),
            "rows_jssucc_below_0": sum(r["jssucc"]["ci"][1] < 0 for r in with_succ),
            "rows_jssucc_above_jspol": sum(r["jspol_minus_jssucc"]["ci"][1] < 0 for r in with_succ),
            "share_of_populations_x_prompts": (
                float(np.mean([r["dpi_share"] for r in with_succ])) if with_succ else None
            ),
        },
    }
