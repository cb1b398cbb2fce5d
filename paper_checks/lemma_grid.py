"""Lemma 1 on a real model over a grid of sigma and N, on the task, temperature and completion length of
the runs it sits beside, sized to decide.

Design. Fixed probe prompts (the task's first `prompts` test problems) and the base's weights theta.
tr I_x(theta) = E_{y ~ pi_theta} ||grad log pi_theta(y | x)||^2 is estimated once, from `fisher_samples`
center completions per prompt, `fisher_batch` at a time (llm.lemma_measurements.fisher_sketch: the token of
each position averaged exactly, one backward pass per batch; the per-completion squared score norm is far
too heavy-tailed to pin tr I down). The center is the same for every grid point, so its sampling error is
shared by every row and enters each row's interval once. For each (sigma, N), `D`
independent populations (own noise seed per point and draw, so errors are not shared across sigma or N),
each measured with `samples` completions per member and prompt (llm.lemma_measurements.population_samples):
JSpol_N by the mixture estimator, s = E_j KL(pi_j || pi_theta), and the verifier-projected side.

Row statistics (row_statistics). ratio = mean_d JSpol_d / ((sigma^2/2)(1 - 1/N) tr I), the mean over
prompts of both. Its 95% interval is ratio * exp(+-t se) on the log scale with se^2 = var_d(JSpol_d) /
(D mean^2) + (se(tr I) / tr I)^2 (delta method) and Welch-Satterthwaite degrees of freedom from the
draws (D - 1) and the center samples (prompts x (fisher_samples - 1)).

Decision (lemma1_decision). Lemma 1 is claimed where s <= LEMMA1_S_LIMIT. The rows inside the regime are
pooled (a precision-weighted mean of their log ratios, tr I's error counted once) and the pooled ratio is
an equivalence test of ratio - 1 within +-TOLERANCE (Lemma 1's test, theory.claims): inside -> holds,
wholly outside -> does not hold, else inconclusive; any single in-regime row whose interval lies wholly
outside 1 +- TOLERANCE also gives "does not hold". Rows without the fields pooling reads (a grid written before
they were recorded) decide nothing.

Beside it (summarize_grid): the exponent of JSpol in sigma fitted inside the regime (2 where Lemma 1
holds), the (1 - 1/N) factor alone (JSpol_N / JSpol_Nmax at equal sigma, where tr I cancels), the s at
which the ratio leaves 1 +- TOLERANCE, data processing 0 <= JSsucc_N <= JSpol_N per population, and
Lemma 2's gap P_pop - P_same against its local form N p_bar (1 - p_bar)^(N-1) JSsucc_N (both corrected by
the same permutation null).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from escov.theory.claims import BY_ID
from escov.theory.decisions import FAILS, HOLDS, over_seeds, t_quantile
from escov.theory.lemmas import lemma1_prediction
from escov.theory.paper import LEMMA1_S_LIMIT

LEMMA1 = BY_ID["lemma1"].test  # the claim's test: an equivalence of ratio - 1 within its margin (10%)
TOLERANCE = LEMMA1.margin
LEVEL_Q = 0.975            # two-sided 95% intervals
TARGET_WIDTH = 0.10        # the design's aim: a ratio interval at most this wide inside the regime


@dataclass(frozen=True)
class GridDesign:
    """What the grid measures: every sigma at every N (draws[N] populations each; N absent from `sigmas_of`
    gets all sigmas), `prompts` probe prompts, `samples` completions per member and prompt, and
    `fisher_samples` center completions per prompt for tr I_x, sketched `fisher_batch` at a time."""
    sigmas: tuple[float, ...]
    members: tuple[int, ...]
    draws: dict[int, int]
    prompts: int = 4
    samples: int = 4
    fisher_samples: int = 64
    fisher_batch: int = 16
    sigmas_of: dict[int, tuple[float, ...]] = field(default_factory=dict)

    def __post_init__(self):
        if not self.sigmas or any(not s > 0 for s in self.sigmas):
            raise ValueError(f"grid sigmas must be > 0, got {list(self.sigmas)}")
        if not self.members or any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in self.members):
            raise ValueError(f"grid members must be integers >= 2, got {list(self.members)}")
        for n in self.members:
            d = self.draws.get(n)
            if isinstance(d, bool) or not isinstance(d, int) or d < 2:
                raise ValueError(f"grid draws for N = {n} must be an integer >= 2 (an interval over populations "
                                 f"needs two), got {d!r}")
        for name in ("prompts", "samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"grid {name} must be >= 1, got {getattr(self, name)}")
        if self.fisher_batch < 1 or self.fisher_samples % self.fisher_batch or self.fisher_samples // self.fisher_batch < 2:
            raise ValueError(f"grid fisher_samples ({self.fisher_samples}) must be at least two batches of fisher_batch "
                             f"({self.fisher_batch}): tr I needs a standard error")

    def cells(self) -> list[tuple[float, int, int]]:
        """(sigma, N, draws) of every grid point, N-major."""
        return [(s, n, self.draws[n]) for n in self.members for s in self.sigmas_of.get(n, self.sigmas)]


@dataclass(frozen=True)
class FisherTrace:
    """tr I at the center, the mean over the probe prompts, with its standard error and degrees of freedom."""
    mean: float
    se: float
    df: float

    @classmethod
    def from_replicates(cls, sq: np.ndarray) -> "FisherTrace":
        """sq [prompt, replicate]: independent unbiased estimates of tr I_x (llm.lemma_measurements.center_scores).
        The prompts are fixed, so the error is the replicates' within each prompt: se^2 = sum_x var_x / M / P^2."""
        sq = np.asarray(sq, dtype=float)
        p, m = sq.shape
        return cls(float(sq.mean()), float(math.sqrt(sq.var(axis=1, ddof=1).sum() / m) / p), float(p * (m - 1)))


def _mean_ci(values) -> dict:
    """Mean over draws with its Student t 95% interval."""
    r = over_seeds(values)
    return {"mean": r["mean"], "ci": [r["lo"], r["hi"]]}


def row_statistics(jspol_draws, fisher: FisherTrace, sigma: float, members: int) -> dict:
    """The ratio of measured to predicted JSpol_N of one grid point from its populations' JSpol (one value per
    draw, each the mean over the probe prompts) and the shared tr I (see the module's docstring)."""
    js = np.asarray(jspol_draws, dtype=float)
    d = js.size
    if d < 2:
        raise ValueError(f"row_statistics needs >= 2 draws, got {d}")
    predicted = lemma1_prediction(fisher.mean, sigma, members)
    mean = float(js.mean())
    a = js.var(ddof=1) / d / mean ** 2 if mean > 0 else float("inf")   # (se of the mean / mean)^2
    b = (fisher.se / fisher.mean) ** 2 if fisher.mean > 0 else float("inf")
    se = math.sqrt(a + b)
    df = (a + b) ** 2 / (a ** 2 / (d - 1) + (b ** 2 / fisher.df if fisher.df > 0 else 0.0)) if a + b > 0 else float("inf")
    ratio = mean / predicted if predicted > 0 else float("nan")
    half = t_quantile(df, LEVEL_Q) * se
    return {"measured": mean, "measured_se": float(js.std(ddof=1) / math.sqrt(d)), "predicted": predicted,
            "ratio": ratio, "ratio_ci": [ratio * math.exp(-half), ratio * math.exp(half)] if math.isfinite(half) else
            [float("-inf"), float("inf")], "ratio_df": float(df), "ratio_se_log": se,
            "ratio_sd": float(np.std(js / predicted, ddof=1)), "ratios": (js / predicted).tolist()}


def draws_for_width(population_cv: float, fisher_rel_se: float, width: float = TARGET_WIDTH,
                    fisher_df: float = float("inf"), most: int = 10_000) -> int | None:
    """The fewest draws D whose ratio interval (row_statistics, at ratio 1) is at most `width` wide, given one
    population's relative sd of JSpol (`population_cv`, measured in a pilot) and tr I's relative standard
    error; None when tr I's error alone is too large."""
    for d in range(2, most + 1):
        a, b = population_cv ** 2 / d, fisher_rel_se ** 2
        df = (a + b) ** 2 / (a ** 2 / (d - 1) + (b ** 2 / fisher_df if math.isfinite(fisher_df) else 0.0))
        half = t_quantile(df, LEVEL_Q) * math.sqrt(a + b)
        if math.exp(half) - math.exp(-half) <= width:
            return d
    return None


POOLED_FIELDS = ("measured", "measured_se", "draws", "fisher_trace", "fisher_trace_se", "fisher_df")  # what pooling reads


def pooled_ratio(rows: list[dict]) -> dict:
    """The rows' ratios pooled: the mean of their log ratios weighted by 1 / (their draws' variance), with tr I's
    error added once (every row shares it); a t interval with Welch-Satterthwaite df, back on the ratio scale."""
    a = np.array([(r["measured_se"] / r["measured"]) ** 2 for r in rows])
    w = 1 / a
    log_mean = float(np.sum(w * np.log([r["ratio"] for r in rows])) / w.sum())
    b = (rows[0]["fisher_trace_se"] / rows[0]["fisher_trace"]) ** 2
    c = (w / w.sum()) ** 2 * a
    var = float(c.sum() + b)
    df = var ** 2 / (float(np.sum(c ** 2 / (np.array([r["draws"] for r in rows]) - 1))) + b ** 2 / rows[0]["fisher_df"])
    half = t_quantile(df, LEVEL_Q) * math.sqrt(var)
    return {"ratio": math.exp(log_mean), "ci": [math.exp(log_mean - half), math.exp(log_mean + half)], "df": df,
            "rows": len(rows)}


def draws_needed(pilot: list[dict], fisher_samples: int, width: float = TARGET_WIDTH) -> list[dict]:
    """Sizing from a pilot grid: per row, one population's relative sd of JSpol (from its draws) and the draws a row
    needs for a ratio interval `width` wide (draws_for_width) when tr I comes from `fisher_samples` center samples per
    prompt (the pilot's relative standard error of tr I scaled by sqrt(its fisher_samples / fisher_samples))."""
    out = []
    for r in pilot:
        ratios = np.asarray(r["ratios"], dtype=float)
        cv = float(ratios.std(ddof=1) / ratios.mean())
        fisher_rel_se = r["fisher_trace_se"] / r["fisher_trace"] * math.sqrt(r["fisher_samples"] / fisher_samples)
        out.append({"sigma": r["sigma"], "members": r["members"], "s_measured": r["s_measured"], "population_cv": cv,
                    "fisher_rel_se": fisher_rel_se, "draws": draws_for_width(cv, fisher_rel_se, width)})
    return out


def lemma1_decision(rows: list[dict]) -> dict | None:
    """The verdict from the rows inside the regime (s_measured <= LEMMA1_S_LIMIT): their pooled ratio
    (pooled_ratio) is an equivalence test of ratio - 1 within +-TOLERANCE, and every row is one too. Holds when the
    pooled interval lies inside 1 +- TOLERANCE and no row lies wholly outside it; does not hold when the pooled
    interval or any row lies wholly outside; inconclusive otherwise. None when no row lies inside the regime."""
    inside = [r for r in rows if _finite(r.get("s_measured")) and r["s_measured"] <= LEMMA1_S_LIMIT
              and _finite(r.get("ratio")) and r["ratio"] > 0 and all(_finite(x) for x in r["ratio_ci"])
              and all(_finite(r.get(k)) and r[k] > 0 for k in POOLED_FIELDS)]
    if not inside:
        return None
    pooled = pooled_ratio(inside)
    pooled["status"] = LEMMA1.decide(pooled["ci"][0] - 1, pooled["ci"][1] - 1)
    per_row = [LEMMA1.decide(r["ratio_ci"][0] - 1, r["ratio_ci"][1] - 1) for r in inside]
    status = FAILS if FAILS in per_row + [pooled["status"]] else pooled["status"]
    return {"status": status, "pooled": pooled, "rows": [{"sigma": r["sigma"], "members": r["members"], "status": v}
                                                         for r, v in zip(inside, per_row)]}


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ----------------------------------------------------------------------------- measuring

def measure_grid(model_dir: str | Path, design: GridDesign, *, task, task_name: str, temperature: float,
                 max_new_tokens: int, seed: int = 0, progress: bool = True) -> list[dict]:
    """One row per (sigma, N) of the design on the model at model_dir, for `task` (an llm.tasks Task, built as
    the runs build theirs; task_name: the runs' name for it, recorded in every row) at the runs' sampling
    temperature and completion length."""
    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import (center_scores, jspol_estimate, population_samples, success_diversity,
                                              validity_estimate)
    from escov.llm.rollout import derive_seed

    engine = HFEngine(model_dir)
    try:
        problems = task.problems("test", design.prompts, seed=seed)
        center = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
        common = dict(engine=engine, scorer=engine.model, task=task, problems=problems, encode=engine.prompt_token_ids,
                      pad_id=engine.tokenizer.pad_token_id, center=center, temperature=temperature,
                      max_new_tokens=max_new_tokens)
        sq, _ = center_scores(samples=design.fisher_samples, seed=seed, step=0, sketch_batch=design.fisher_batch, **common)
        fisher = FisherTrace.from_replicates(sq)
        rows = []
        cells = design.cells()
        bar = tqdm(total=sum(d for _, _, d in cells), desc="lemma 1 grid (populations)", disable=not progress)
        for sigma, n, draws in cells:
            per_draw = []
            for draw in range(draws):
                pop_seed = derive_seed(seed, sigma, n, draw) % 2**31
                logp, correct = population_samples(sigma=float(sigma), members=int(n), samples=design.samples,
                                                   seed=pop_seed, step=0, **common)
                js = np.array([jspol_estimate(logp[i, :, :, :n])[0] for i in range(len(problems))])
                succ = [success_diversity(correct[i], seed=derive_seed(pop_seed, "success-null", i)) for i in range(len(problems))]
                per_draw.append({"jspol": js, "s": float(np.mean([validity_estimate(logp[i]) for i in range(len(problems))])),
                                 **{k: np.array([x[k] for x in succ]) for k in succ[0]}})
                bar.update()
            rows.append(grid_row(per_draw, fisher, float(sigma), int(n)) | {
                "task": task_name, "temperature": temperature, "max_new_tokens": max_new_tokens, "prompts": len(problems),
                "samples": design.samples, "fisher_samples": design.fisher_samples,
                "fisher_batch": design.fisher_batch})
        bar.close()
    finally:
        engine.close()
    return rows


def grid_row(per_draw: list[dict], fisher: FisherTrace, sigma: float, members: int) -> dict:
    """A grid row from its populations: per draw, arrays over the probe prompts of jspol and of the success-side
    statistics of llm.lemma_measurements.success_diversity, and the population's s."""
    js = np.array([d["jspol"].mean() for d in per_draw])
    s = np.array([d["s"] for d in per_draw])
    jssucc = np.array([d["jssucc"] - d["jssucc_null"] for d in per_draw])       # [draw, prompt], bias-corrected
    gap = np.array([(d["gap"] - d["gap_null"]).mean() for d in per_draw])
    local = np.array([(d["local"] - d["local_null"]).mean() for d in per_draw])
    jspol_pp = np.array([d["jspol"] for d in per_draw])
    row = {"sigma": sigma, "members": members, "draws": len(per_draw), **row_statistics(js, fisher, sigma, members),
           "s_measured": float(s.mean()), "s_ci": _mean_ci(s)["ci"], "s_predicted": 0.5 * sigma ** 2 * fisher.mean,
           "in_regime": bool(s.mean() <= LEMMA1_S_LIMIT), "fisher_trace": fisher.mean, "fisher_trace_se": fisher.se,
           "fisher_df": fisher.df}
    row["jssucc"] = _mean_ci(jssucc.mean(axis=1))
    row["jspol_minus_jssucc"] = _mean_ci(js - jssucc.mean(axis=1))
    row["dpi_share"] = float(np.mean((jssucc >= 0) & (jssucc <= jspol_pp)))  # populations x prompts, point values
    row["lemma2"] = {"gap": _mean_ci(gap), "local": _mean_ci(local), "gap_minus_local": _mean_ci(gap - local)}
    return row


# ----------------------------------------------------------------------------- the summary beside the verdict

def _slope(rows: list[dict]) -> dict | None:
    """Weighted least squares of log JSpol on log sigma with an intercept per N (weights 1 / se^2 of log
    mean JSpol from the draws); t interval with the smallest df of the rows' draws."""
    rows = [r for r in rows if _finite(r.get("measured")) and r["measured"] > 0 and r.get("measured_se")]
    groups = {}
    for r in rows:
        groups.setdefault(r["members"], []).append(r)
    xs, ys, ws = [], [], []
    for sub in groups.values():
        if len({r["sigma"] for r in sub}) < 2:
            continue
        x = np.log([r["sigma"] for r in sub])
        y = np.log([r["measured"] for r in sub])
        w = np.array([(r["measured"] / r["measured_se"]) ** 2 for r in sub])
        xs.append(x - np.average(x, weights=w))
        ys.append(y - np.average(y, weights=w))
        ws.append(w)
    if not xs:
        return None
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    slope = float(np.sum(w * x * y) / np.sum(w * x * x))
    se = float(1 / math.sqrt(np.sum(w * x * x)))
    df = min(r["draws"] for r in rows) - 1
    half = t_quantile(df, LEVEL_Q) * se
    return {"exponent": slope, "ci": [slope - half, slope + half], "rows": len(x)}


def _n_factor(rows: list[dict]) -> dict:
    """Per N below the largest: (JSpol_N / (1 - 1/N)) / (JSpol_Nmax / (1 - 1/Nmax)) at equal sigma, i.e. the
    ratio of the rows' ratios (tr I cancels), as a geometric mean over the sigmas both have; 1 where the
    (1 - 1/N) factor holds. Interval: t on the log scale, variances from the draws."""
    by = {(r["sigma"], r["members"]): r for r in rows if _finite(r.get("ratio")) and r["ratio"] > 0 and r.get("measured_se")}
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
        var = [(by[(s, n)]["measured_se"] / by[(s, n)]["measured"]) ** 2 + (by[(s, top)]["measured_se"] / by[(s, top)]["measured"]) ** 2
               for s in sig]
        mean, se = float(np.mean(logs)), math.sqrt(sum(var)) / len(sig)
        df = min(min(by[(s, n)]["draws"], by[(s, top)]["draws"]) for s in sig) - 1
        half = t_quantile(df, LEVEL_Q) * se
        out[str(n)] = {"against": top, "sigmas": sig, "factor": math.exp(mean), "ci": [math.exp(mean - half), math.exp(mean + half)],
                       "decision": LEMMA1.decide(math.exp(mean - half) - 1, math.exp(mean + half) - 1)}
    return out


def _departure(rows: list[dict]) -> dict:
    """Per N, rows by increasing s: the largest s whose ratio interval lies inside 1 +- TOLERANCE and the
    smallest s whose interval lies wholly outside it (where the O(sigma^4) term has taken over)."""
    out = {}
    for n in sorted({r["members"] for r in rows}):
        sub = sorted((r for r in rows if r["members"] == n and _finite(r.get("s_measured")) and _finite(r.get("ratio"))),
                     key=lambda r: r["s_measured"])
        verdicts = [(r, LEMMA1.decide(r["ratio_ci"][0] - 1, r["ratio_ci"][1] - 1)) for r in sub
                    if all(_finite(x) for x in r["ratio_ci"])]
        inside = [r["s_measured"] for r, v in verdicts if v == HOLDS]
        outside = [r["s_measured"] for r, v in verdicts if v == FAILS]
        out[str(n)] = {"last_s_inside": max(inside) if inside else None, "first_s_outside": min(outside) if outside else None}
    return out


def summarize_grid(rows: list[dict]) -> dict:
    """What the report shows beside the verdict (see the module's docstring)."""
    inside = [r for r in rows if _finite(r.get("s_measured")) and r["s_measured"] <= LEMMA1_S_LIMIT]
    per_n = {}
    for n in sorted({r["members"] for r in rows}):
        sub = [r for r in rows if r["members"] == n]
        within = [r["sigma"] for r in sub if _finite(r.get("ratio")) and all(_finite(x) for x in r["ratio_ci"])
                  and LEMMA1.decide(r["ratio_ci"][0] - 1, r["ratio_ci"][1] - 1) == HOLDS]
        per_n[str(n)] = {"exponent_in_regime": _slope([r for r in inside if r["members"] == n]),
                         "exponent_all": _slope(sub), "sigmas_within": within,
                         "sigmas_not_within": [r["sigma"] for r in sub if r["sigma"] not in within]}
    with_succ = [r for r in rows if "jssucc" in r]
    return {"s_limit": LEMMA1_S_LIMIT, "tolerance": TOLERANCE, "per_members": per_n,
            "exponent_in_regime": _slope(inside), "n_factor": _n_factor(inside), "departure": _departure(rows),
            "dpi": {"rows": len(with_succ),
                    "rows_jssucc_below_0": sum(r["jssucc"]["ci"][1] < 0 for r in with_succ),
                    "rows_jssucc_above_jspol": sum(r["jspol_minus_jssucc"]["ci"][1] < 0 for r in with_succ),
                    "share_of_populations_x_prompts": (float(np.mean([r["dpi_share"] for r in with_succ]))
                                                       if with_succ else None)}}
