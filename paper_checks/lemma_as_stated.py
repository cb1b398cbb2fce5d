"""Lemma 1 tested as stated on a real model, read: E[JSpol_N] over independent populations against
(sigma^2/2)(1 - 1/N) tr I_x, with tr I_x from separate noise. The measurement is
paper_checks/reproduce/lemma_as_stated_measurement.py; its JSON is read here (numpy only, no torch).

Why a second test. The Lemma 1 grid (paper_checks/lemma_grid.py) compares each population's JSpol_N with its own
second-order value Q along the same directions: by Taylor's theorem that ratio tends to 1 for any smooth model, so
the grid is an implementation check and a regime boundary, not evidence for the lemma's expectation. Here nothing
is shared between the two sides of the ratio:

- measured: per row (sigma, N), D independent populations (own noise each, no antithetic twin); J_d, population d's
  JSpol_N averaged over the probe prompts (chain-rule estimator); the row's mean J and its standard error over
  populations (the spread of the noise drawn and of the samples, both).
- predicted: (sigma^2/2)(1 - 1/N) T with T = tr I_x averaged over the same prompts, from separate center
  completions: per completion ||grad_theta log pi(y | x)||^2, whose mean over y ~ pi is tr I_x exactly (no Gaussian
  projection, so none of the probe noise that makes one sketch replicate spread by about 1.3 of tr I on a Fisher of
  effective rank about 1); T's standard error from the per-prompt sample variances.

Row ratio R = J / ((sigma^2/2)(1 - 1/N) T), interval on the log scale by the delta method, var = (se_J / J)^2 +
(se_T / T)^2, t quantile with Welch-Satterthwaite df (D - 1 for J, the completions' for T). Rows share T, so their
errors are correlated through it; the pooled ratio accounts for that: inside the regime (s <= LEMMA1_S_LIMIT) each
row's J / ((sigma^2/2)(1 - 1/N)) estimates tr I; they are averaged with design weights (N - 1) D (one population's
relative variance goes as 1 / (N - 1), weights from the rows' own estimated errors would undercover) and divided by
T once. Decision: the pooled interval is Lemma 1's equivalence test (ratio - 1 within +-TOLERANCE): holds, does not
hold, or inconclusive. Per N, `departure` locates the sigma where the ratio leaves 1 +- TOLERANCE (the last sigma
whose interval lies inside, the first whose interval lies wholly outside).

Beside it: the bias of the grid's estimator (grid_estimator_bias: the geometric mean of JSpol / Q with Q from 8
center completions per prompt, against the same with Q from all C completions along the same directions), and
JSsucc_N and Lemma 2's gain at the ES arm's sigma (success_side).
"""

from __future__ import annotations

import math

import numpy as np

from escov.paper_checks.lemma_grid import GRID_ROLE
from escov.theory.claims import BY_ID
from escov.theory.decisions import FAILS, HOLDS, t_quantile
from escov.theory.paper import LEMMA1_S_LIMIT

LEMMA1 = BY_ID["lemma1"].test
TOLERANCE = LEMMA1.margin
LEVEL_Q = 0.975  # two-sided 95% intervals
GRID_CENTER_SAMPLES = 8  # the grid's center completions per prompt and population, whose Q the bias reading redraws


def lemma1_scale(sigma: float, members: int) -> float:
    """(sigma^2/2)(1 - 1/N): Lemma 1's prediction per unit of tr I_x."""
    return 0.5 * sigma**2 * (1.0 - 1.0 / members)


def _ws_df(parts: list[tuple[float, float]]) -> float:
    """Welch-Satterthwaite df of a sum of variances given as (variance, df) pairs."""
    total = sum(v for v, _ in parts)
    denom = sum(v * v / df for v, df in parts if v > 0 and df > 0)
    return total * total / denom if denom > 0 else float("inf")


def trace_estimate(per_prompt) -> dict:
    """tr I_x averaged over prompts from separate center completions: per_prompt[i] holds ||grad log pi(y | x_i)||^2
    of prompt i's completions (>= 2 each). T = mean over prompts of the per-prompt means;
    var = sum_i s_i^2 / (C_i P^2)."""
    rows = [np.asarray(v, dtype=float) for v in per_prompt]
    if not rows or any(r.size < 2 for r in rows):
        raise ValueError("trace_estimate needs >= 2 completions on every prompt")
    p = len(rows)
    means = np.array([r.mean() for r in rows])
    parts = [(float(r.var(ddof=1) / (r.size * p * p)), float(r.size - 1)) for r in rows]
    var = sum(v for v, _ in parts)
    return {
        "trace": float(means.mean()),
        "se": math.sqrt(var),
        "df": _ws_df(parts),
        "per_prompt": means.tolist(),
        "completions": int(sum(r.size for r in rows)),
        "relative_sd_per_completion": float(np.mean([r.std(ddof=1) / r.mean() for r in rows])),
    }


def _ratio(center: float, parts: list[tuple[float, float]], lo_hi: bool = True) -> dict:
    """A ratio with its log-scale variance parts (relative variance, df): t interval back on the ratio scale."""
    var = sum(v for v, _ in parts)
    df = _ws_df(parts)
    half = t_quantile(df, LEVEL_Q) * math.sqrt(var)
    return {
        "ratio": center,
        "ci": [center * math.exp(-half), center * math.exp(half)],
        "df": df,
        "se_log": math.sqrt(var),
    }


def row_ratio(jspol_draws, sigma: float, members: int, trace: dict) -> dict:
    """One row: E[JSpol_N] from its independent populations (jspol_draws [D], each the mean over prompts) against
    (sigma^2/2)(1 - 1/N) T (trace: trace_estimate's record)."""
    j = np.asarray(jspol_draws, dtype=float)
    if j.size < 2:
        raise ValueError(f"row_ratio needs >= 2 populations, got {j.size}")
    mean, se = float(j.mean()), float(j.std(ddof=1) / math.sqrt(j.size))
    pred = lemma1_scale(sigma, members) * trace["trace"]
    if not mean > 0:
        return {
            "measured": mean,
            "measured_se": se,
            "predicted": pred,
            "ratio": float("nan"),
            "ci": [-math.inf, math.inf],
        }
    parts = [((se / mean) ** 2, float(j.size - 1)), ((trace["se"] / trace["trace"]) ** 2, trace["df"])]
    return {
        "measured": mean,
        "measured_se": se,
        "predicted": pred,
        "population_relative_sd": float(j.std(ddof=1) / mean),
        **_ratio(mean / pred, parts),
    }


def pooled_ratio(rows: list[dict], trace: dict) -> dict:
    """The rows' tr I estimates J / ((sigma^2/2)(1 - 1/N)) averaged with design weights (N - 1) D, divided by T once
    (rows carry sigma, members, draws, measured, measured_se)."""
    w = np.array([(r["members"] - 1) * r["draws"] for r in rows], dtype=float)
    scale = np.array([lemma1_scale(r["sigma"], r["members"]) for r in rows])
    b = np.array([r["measured"] for r in rows]) / scale
    se_b = np.array([r["measured_se"] for r in rows]) / scale
    pooled = float(np.sum(w * b) / w.sum())
    parts = [(float((wi * si / w.sum() / pooled) ** 2), float(r["draws"] - 1)) for wi, si, r in zip(w, se_b, rows)]
    parts.append(((trace["se"] / trace["trace"]) ** 2, trace["df"]))
    return {**_ratio(pooled / trace["trace"], parts), "rows": len(rows), "trace_from_populations": pooled}


def ratio_status(ci) -> str:
    """Lemma 1's equivalence test on a ratio interval: inside 1 +- TOLERANCE holds, wholly outside does not hold."""
    return LEMMA1.decide(ci[0] - 1.0, ci[1] - 1.0)


def departure(rows: list[dict]) -> dict:
    """Per N: the largest sigma whose ratio interval lies inside 1 +- TOLERANCE below the first that does not, and
    the smallest sigma whose interval lies wholly outside it (where the ratio has left)."""
    out = {}
    for n in sorted({r["members"] for r in rows}):
        sub = sorted((r for r in rows if r["members"] == n), key=lambda r: r["sigma"])
        status = [(r["sigma"], ratio_status(r["ci"])) for r in sub if all(math.isfinite(x) for x in r["ci"])]
        outside = [s for s, v in status if v == FAILS]
        first_out = min(outside) if outside else None
        inside = [s for s, v in status if v == HOLDS and (first_out is None or s < first_out)]
        out[str(n)] = {"last_sigma_inside": max(inside) if inside else None, "first_sigma_outside": first_out}
    return out


def draws_for_half_width(
    population_relative_sd: float, trace_relative_se: float, half_width: float = 0.08, most: int = 10_000
) -> int | None:
    """The fewest independent populations D whose row interval reaches R exp(+-h) with exp(h) - 1 <= half_width,
    given one population's relative sd of JSpol_N and T's relative se (pilot values); None when T alone is too wide."""
    target = math.log1p(half_width)
    for d in range(2, most + 1):
        var = population_relative_sd**2 / d + trace_relative_se**2
        if (
            t_quantile(_ws_df([(population_relative_sd**2 / d, d - 1), (trace_relative_se**2, math.inf)]), LEVEL_Q)
            * (math.sqrt(var))
            <= target
        ):
            return d
    return None


def grid_estimator_bias(jspol, q_per_completion, draws: int = 200, seed: int = 0) -> dict:
    """How much the grid's estimator (geometric mean over populations of JSpol / Q, Q from GRID_CENTER_SAMPLES center
    completions per prompt) inflates the ratio on this base. jspol [D, P]: the populations' JSpol_N per prompt;
    q_per_completion [D, P, C]: each population's Q along its own directions from each of C completions per prompt.
    Returns the geometric-mean ratio with Q from all C completions, its expectation with Q from 8 of them (redrawn
    `draws` times without replacement), and the inflation factor between them."""
    js = np.asarray(jspol, dtype=float)
    q = np.asarray(q_per_completion, dtype=float)
    d, p, c = q.shape
    rng = np.random.default_rng(seed)
    full = np.log(js.mean(axis=1) / q.mean(axis=2).mean(axis=1))
    picks = np.argsort(rng.random((draws, d, p, c)), axis=-1)[..., :GRID_CENTER_SAMPLES]
    q8 = np.take_along_axis(np.broadcast_to(q, (draws, d, p, c)), picks, axis=-1).mean(axis=-1).mean(axis=-1)
    small = np.log(js.mean(axis=1))[None] - np.log(q8)  # [draws, D]
    gap = small.mean(axis=0) - full  # per population: E log(Q_C / Q_8)
    se = float(gap.std(ddof=1) / math.sqrt(d)) if d > 1 else float("inf")
    half = t_quantile(d - 1, LEVEL_Q) * se if d > 1 else float("inf")
    g = float(gap.mean())
    return {
        "ratio_precise_q": float(math.exp(full.mean())),
        "ratio_q8": float(math.exp(small.mean())),
        "inflation": math.exp(g),
        "inflation_ci": [math.exp(g - half), math.exp(g + half)],
        "q8_relative_sd": float(np.mean(np.std(q8, axis=0) / q.mean(axis=2).mean(axis=1))),
        "populations": d,
        "completions": c,
    }


def _mean_ci(values) -> dict:
    v = np.asarray(values, dtype=float)
    se = float(v.std(ddof=1) / math.sqrt(v.size))
    half = t_quantile(v.size - 1, LEVEL_Q) * se
    return {"mean": float(v.mean()), "ci": [float(v.mean() - half), float(v.mean() + half)]}


def success_side(row: dict) -> dict:
    """JSsucc_N and Lemma 2's gain P_pop - P_same against N p_bar (1 - p_bar)^(N-1) JSsucc_N for one row's
    independent populations, each statistic minus its permutation null (the plug-in bias from m samples per
    member), averaged over prompts; t intervals over populations."""
    get = {
        k: np.asarray(row[k], dtype=float).mean(axis=1)
        for k in ("jssucc", "jssucc_null", "gap", "gap_null", "local", "local_null")
    }
    jssucc, gap, local = (get[k] - get[f"{k}_null"] for k in ("jssucc", "gap", "local"))
    return {
        "sigma": row["sigma"],
        "members": row["members"],
        "populations": len(jssucc),
        "jssucc": _mean_ci(jssucc),
        "gap": _mean_ci(gap),
        "local": _mean_ci(local),
        "gap_minus_local": _mean_ci(gap - local),
        "jspol": _mean_ci(np.asarray(row["jspol"], dtype=float).mean(axis=1)),
    }


def check_measurement(measurement, source: str = "the lemma-as-stated measurement") -> None:
    """One clear ValueError naming `source` and what is missing or malformed (keys, rows and their arrays)."""
    if not isinstance(measurement, dict):
        raise ValueError(f"{source}: expected a JSON object, got {type(measurement).__name__}")
    for key in ("trace_per_completion", "rows"):
        if not isinstance(measurement.get(key), list) or not measurement[key]:
            raise ValueError(f"{source}: '{key}' must be a non-empty list")
    for i, row in enumerate(measurement["rows"]):
        need = ("sigma", "members", "jspol", "s")
        missing = [k for k in need if k not in row]
        if missing:
            raise ValueError(f"{source}: row {i} lacks {', '.join(missing)}")
        js = np.asarray(row["jspol"], dtype=float)
        if js.ndim != 2 or js.shape[0] < 2 or len(row["s"]) != js.shape[0]:
            raise ValueError(
                f"{source}: row {i} (sigma {row['sigma']}, N {row['members']}): 'jspol' must be "
                f"[populations >= 2][prompts] with one 's' per population, got shape {js.shape}"
            )


def lemma_as_stated_record(measurement: dict, source: str = "the lemma-as-stated measurement") -> dict:
    """The report's `lemma_as_stated` record from the measurement's JSON (lemma_as_stated_measurement.py)."""
    check_measurement(measurement, source)
    trace = trace_estimate(measurement["trace_per_completion"])
    rows = []
    for m in measurement["rows"]:
        js = np.asarray(m["jspol"], dtype=float).mean(axis=1)
        s = np.asarray(m["s"], dtype=float)
        r = {
            "sigma": m["sigma"],
            "members": m["members"],
            "draws": int(js.size),
            **row_ratio(js, m["sigma"], m["members"], trace),
            "s_measured": float(s.mean()),
            "in_regime": bool(s.mean() <= LEMMA1_S_LIMIT),
        }
        r["status"] = ratio_status(r["ci"])
        rows.append(r)
    inside = [r for r in rows if r["in_regime"] and r["measured"] > 0]
    pooled = pooled_ratio(inside, trace) if inside else None
    if pooled:
        pooled["status"] = ratio_status(pooled["ci"])
    arm = measurement.get("es_arm") or {}
    arm_rows = [m for m in measurement["rows"] if m["sigma"] == arm.get("sigma") and m["members"] == arm.get("members")]
    with_q = [m for m in measurement["rows"] if m.get("q_per_completion")]
    return {
        "what": "E[JSpol_N] over independent populations against (sigma^2/2)(1 - 1/N) tr I_x, tr I_x from separate "
        "center completions; the per-population grid is an " + GRID_ROLE,
        "settings": measurement.get("settings", {}),
        "trace": {k: v for k, v in trace.items() if k != "per_prompt"},
        "rows": rows,
        "pooled": pooled,
        "status": pooled["status"] if pooled else "not measured",
        "departure": departure(rows),
        "es_arm": success_side(arm_rows[0]) if arm_rows else None,
        "grid_estimator": {
            f"{m['sigma']:g}/{m['members']}": grid_estimator_bias(m["jspol"], m["q_per_completion"]) for m in with_q
        },
        "cpu_seconds": measurement.get("cpu_seconds"),
    }


def _ci(x: dict, fmt: str = ".3f") -> str:
    """ratio [lo, hi], n/a where a value is missing (null in report.json)."""
    return " ".join([_num(x.get("ratio"), fmt), f"[{_num(x['ci'][0], fmt)}, {_num(x['ci'][1], fmt)}]"])


def _num(v, fmt: str) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:{fmt}}"


def report_lines(record: dict) -> list[str]:
    """REPORT.md's section on Lemma 1 as stated."""
    t = record["trace"]
    lines = ["## Lemma 1 as stated (independent populations, tr I from separate completions)", ""]
    lines.append(
        f"tr I_x = {t['trace']:.0f} (se {t['se']:.0f}) from {t['completions']} separate center completions "
        f"(per-completion relative sd {t['relative_sd_per_completion']:.2f})."
    )
    if record["pooled"]:
        lines.append(
            f"Pooled E[JSpol_N] / prediction over the {record['pooled']['rows']} rows with s <= {LEMMA1_S_LIMIT}: "
            f"{_ci(record['pooled'])}: **{record['status']}** (equivalence within 1 +- {TOLERANCE:g})."
        )
    lines += [
        "",
        "| sigma | N | populations | s | E JSpol_N | prediction | ratio | reading |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in record["rows"]:
        lines.append(
            f"| {r['sigma']:g} | {r['members']} | {r['draws']} | {r['s_measured']:.3g} | {r['measured']:.3g} | "
            f"{r['predicted']:.3g} | {_ci(r)} | {r['status']} |"
        )
    lines.append("")
    for n, d in record["departure"].items():
        inside, outside = d["last_sigma_inside"], d["first_sigma_outside"]
        lines.append(
            f"- N = {n}: the last sigma whose ratio interval lies inside 1 +- {TOLERANCE:g}: "
            f"{'none' if inside is None else f'{inside:g}'}; the first wholly outside: "
            f"{'none' if outside is None else f'{outside:g}'}."
        )
    for key, g in record["grid_estimator"].items():
        lines.append(
            f"- The grid's estimator at sigma/N {key}: geometric mean of JSpol / Q {g['ratio_q8']:.3f} with Q from "
            f"{GRID_CENTER_SAMPLES} completions per prompt, {g['ratio_precise_q']:.3f} with Q from {g['completions']}: "
            f"inflation {g['inflation']:.3f} [{g['inflation_ci'][0]:.3f}, {g['inflation_ci'][1]:.3f}]."
        )
    a = record["es_arm"]
    if a:
        lines.append(
            f"- At the ES arm's sigma {a['sigma']:g}, N = {a['members']} ({a['populations']} populations): JSsucc_N "
            f"{a['jssucc']['mean']:.4f} [{a['jssucc']['ci'][0]:.4f}, {a['jssucc']['ci'][1]:.4f}] (JSpol_N "
            f"{a['jspol']['mean']:.4f}); P_pop - P_same {a['gap']['mean']:.4f} [{a['gap']['ci'][0]:.4f}, "
            f"{a['gap']['ci'][1]:.4f}] against N p_bar (1 - p_bar)^(N-1) JSsucc_N {a['local']['mean']:.4f} "
            f"[{a['local']['ci'][0]:.4f}, {a['local']['ci'][1]:.4f}]."
        )
    return lines
