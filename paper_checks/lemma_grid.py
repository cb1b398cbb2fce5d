"""Lemma 1 on a real model over a grid of sigma and N, on the task, temperature and completion length of
the runs it sits beside, sized to decide.

Design. Fixed probe prompts (the task's first `prompts` test problems) and the base's weights theta. For each
(sigma, N), `D` independent draws (own noise seed per point and draw, so errors are not shared across rows), each
an antithetic pair of populations (members theta + sigma eps_j and theta - sigma eps_j: the terms of odd order in
the noise, which spread one population's JSpol_N around its second-order value by O(sigma) of it, cancel in the
pair's mean), measured twice (llm.lemma_measurements):

- JSpol_N of each population of the pair, from `samples` completions per member and prompt (population_samples: the chain-rule
  estimator, every position's token averaged exactly over the vocabulary), its s = E_j KL(pi_j || pi_theta) and
  the verifier-projected side;
- Lemma 1's prediction for the pair's members (the same for both), Q = (sigma^2 / 2)(1/N) sum_j d_j^T I_x d_j with d_j = eps_j - eps_bar,
  from `center_samples` fresh center completions per prompt (direction_gram: exact along the members' directions,
  so only the completions are sampled). Over the noise, E Q = (sigma^2 / 2)(1 - 1/N) tr I_x, Lemma 1's prediction.

Why pairs. I_x of these models is dominated by a few directions, so JSpol_N of one population, and any Gaussian
projection of I_x (the Hutchinson sketch of tr I), spreads widely with the noise drawn (relative sd about 1.3 for
one sketch of 64 completions on the paper-regime base). Measured on the same members, JSpol_N and Q move together:
their ratio, population by population, is Lemma 1's statement with the noise's spread cancelled.

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
the pooled interval undercover, 0.87-0.91 instead of 0.95 on synthetic rows) and the pooled ratio is an equivalence test of ratio - 1
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
    gets all sigmas), `prompts` probe prompts, `samples` completions per member and prompt, and `center_samples`
    center completions per prompt and population for its prediction."""
    sigmas: tuple[float, ...]
    members: tuple[int, ...]
    draws: dict[int, int]
    prompts: int = 4
    samples: int = 2
    center_samples: int = 8
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
        for name in ("prompts", "samples", "center_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"grid {name} must be >= 1, got {getattr(self, name)}")
        if self.samples < 2:
            raise ValueError(f"grid samples must be >= 2 (a population's JSpol needs its standard error), got {self.samples}")

    def cells(self) -> list[tuple[float, int, int]]:
        """(sigma, N, draws) of every grid point, N-major."""
        return [(s, n, self.draws[n]) for n in self.members for s in self.sigmas_of.get(n, self.sigmas)]


def _mean_ci(values) -> dict:
    """Mean over draws with its Student t 95% interval."""
    r = over_seeds(values)
    return {"mean": r["mean"], "ci": [r["lo"], r["hi"]]}


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
    return {"measured": float(js.mean()), "measured_se": float(js.std(ddof=1) / math.sqrt(d)), "predicted": float(q.mean()),
            "predicted_se": float(q.std(ddof=1) / math.sqrt(d)), "ratio": ratio,
            "ratio_ci": [ratio * math.exp(-half), ratio * math.exp(half)] if math.isfinite(half) else [float("-inf"), float("inf")],
            "ratio_df": float(d - 1), "ratio_se_log": se, "ratio_of_means": float(js.mean() / q.mean()),
            "ratio_sd": float(np.std(js / q, ddof=1)), "ratios": (js / q).tolist()}


def draws_for_width(population_cv: float, width: float = TARGET_WIDTH, most: int = 10_000) -> int | None:
    """The fewest draws D whose ratio interval (row_statistics: t on D - 1 df) is at most `width` wide, given the sd
    of one population's log(JSpol / Q) (`population_cv`, measured in a pilot); None beyond `most`."""
    for d in range(2, most + 1):
        half = t_quantile(d - 1, LEVEL_Q) * population_cv / math.sqrt(d)
        if math.exp(half) - math.exp(-half) <= width:
            return d
    return None


POOLED_FIELDS = ("ratio", "ratio_se_log", "ratio_df", "center_samples")  # what pooling reads (center_samples: a paired row)


def pooled_ratio(rows: list[dict]) -> dict:
    """The rows' ratios pooled: the plain mean of their log ratios (rows are independent; equal weights, because
    weights from the rows' estimated errors undercover), a t interval with Welch-Satterthwaite df, back on the
    ratio scale."""
    se = np.array([r["ratio_se_log"] for r in rows])
    log_mean = float(np.mean(np.log([r["ratio"] for r in rows])))
    c = se ** 2 / len(rows) ** 2
    var = float(c.sum())
    df = var ** 2 / float(np.sum(c ** 2 / np.array([r["ratio_df"] for r in rows])))
    half = t_quantile(df, LEVEL_Q) * math.sqrt(var)
    return {"ratio": math.exp(log_mean), "ci": [math.exp(log_mean - half), math.exp(log_mean + half)], "df": df,
            "rows": len(rows)}


def draws_needed(pilot: list[dict], width: float = TARGET_WIDTH) -> list[dict]:
    """Sizing from a pilot grid: per row, the sd of one population's log(JSpol / Q) (se_log x sqrt(its draws)) and
    the draws a row needs for a ratio interval `width` wide (draws_for_width)."""
    out = []
    for r in pilot:
        cv = r["ratio_se_log"] * math.sqrt(r["draws"])
        out.append({"sigma": r["sigma"], "members": r["members"], "s_measured": r["s_measured"], "population_cv": cv,
                    "draws": draws_for_width(cv, width)})
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
    from escov.llm.lemma_measurements import (direction_gram, population_direction, population_prediction,
                                              population_samples, stratified_mean, success_diversity, validity_estimate)
    from escov.llm.rollout import derive_seed, rollout

    engine = HFEngine(model_dir)
    try:
        problems = task.problems("test", design.prompts, seed=seed)
        center = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
        prompt_ids = [engine.prompt_token_ids(p.prompt) for p in problems]
        common = dict(engine=engine, scorer=engine.model, task=task, problems=problems, encode=engine.prompt_token_ids,
                      pad_id=engine.tokenizer.pad_token_id, center=center, temperature=temperature,
                      max_new_tokens=max_new_tokens)
        rows = []
        cells = design.cells()
        bar = tqdm(total=sum(d for _, _, d in cells), desc="lemma 1 grid (antithetic pairs of populations)", disable=not progress)
        for sigma, n, draws in cells:
            per_draw = []
            for draw in range(draws):
                pop_seed = derive_seed(seed, sigma, n, draw) % 2**31
                signed = {}   # the population and its antithetic twin (sign -1): the same directions, the same Q
                for sign in (1.0, -1.0):
                    logp, correct, chain = population_samples(sigma=float(sigma), members=int(n), samples=design.samples,
                                                              seed=pop_seed, step=0, sign=sign, **common)
                    succ = [success_diversity(correct[i], seed=derive_seed(pop_seed, "success-null", sign, i))
                            for i in range(len(problems))]
                    signed[sign] = {"jspol": np.array([stratified_mean(chain[i])[0] for i in range(len(problems))]),
                                    "s": float(np.mean([validity_estimate(logp[i]) for i in range(len(problems))])),
                                    **{k: np.array([x[k] for x in succ]) for k in succ[0]}}
                # the prediction for these members, from fresh center completions (population_samples left the center)
                out = rollout(engine, task, problems, n=design.center_samples, temperature=temperature,
                              max_new_tokens=max_new_tokens, seed=derive_seed(pop_seed, "prediction-center"), step=0)
                gram = direction_gram(engine.model, center, [prompt_ids[i] for i in range(len(problems)) for _ in range(design.center_samples)],
                                      [c.token_ids for i in range(len(problems)) for c in out.completions[i]],
                                      [population_direction(center, pop_seed, 0, j) for j in range(n)], temperature,
                                      engine.tokenizer.pad_token_id)
                gram = gram.reshape(n, n, len(problems), design.center_samples).mean(axis=3)   # [j, k, prompt]
                q = np.array([population_prediction(gram[:, :, i], float(sigma)) for i in range(len(problems))])
                per_draw.append({"predicted": q, "fisher_trace": q * 2 * n / (sigma ** 2 * (n - 1)),
                                 **{k: np.stack([signed[1.0][k], signed[-1.0][k]]) for k in signed[1.0]}})
                bar.update()
            rows.append(grid_row(per_draw, float(sigma), int(n)) | {
                "task": task_name, "temperature": temperature, "max_new_tokens": max_new_tokens, "prompts": len(problems),
                "samples": design.samples, "center_samples": design.center_samples})
        bar.close()
    finally:
        engine.close()
    return rows


def grid_row(per_draw: list[dict], sigma: float, members: int) -> dict:
    """A grid row from its draws, each an antithetic pair of populations (eps and -eps): per draw, arrays [sign, prompt]
    of jspol and of the success-side statistics of llm.lemma_measurements.success_diversity, [sign] of the population's
    s, and arrays [prompt] of the prediction for the pair's members (`predicted`) and its tr I estimate (`fisher_trace`:
    (1/(N - 1)) sum_j d_j^T I_x d_j). A draw's JSpol is the mean of its pair's: the terms of odd order in the noise,
    which spread single populations around Q by O(sigma) of it, cancel."""
    js = np.array([d["jspol"].mean() for d in per_draw])
    q = np.array([d["predicted"].mean() for d in per_draw])
    trace = np.array([d["fisher_trace"].mean() for d in per_draw])
    s = np.array([np.mean(d["s"]) for d in per_draw])
    jssucc = np.array([d["jssucc"] - d["jssucc_null"] for d in per_draw])       # [draw, sign, prompt], bias-corrected
    gap = np.array([(d["gap"] - d["gap_null"]).mean() for d in per_draw])
    local = np.array([(d["local"] - d["local_null"]).mean() for d in per_draw])
    jspol_pp = np.array([d["jspol"] for d in per_draw])
    fisher = float(trace.mean())
    row = {"sigma": sigma, "members": members, "draws": len(per_draw), **row_statistics(js, q),
           "s_measured": float(s.mean()), "s_ci": _mean_ci(s)["ci"], "s_predicted": 0.5 * sigma ** 2 * fisher,
           "in_regime": bool(s.mean() <= LEMMA1_S_LIMIT), "fisher_trace": fisher,
           "fisher_trace_se": float(trace.std(ddof=1) / math.sqrt(trace.size))}
    row["jssucc"] = _mean_ci(jssucc.mean(axis=(1, 2)))
    row["jspol_minus_jssucc"] = _mean_ci(js - jssucc.mean(axis=(1, 2)))
    row["dpi_share"] = float(np.mean((jssucc >= 0) & (jssucc <= jspol_pp)))  # populations x prompts, point values
    row["lemma2"] = {"gap": _mean_ci(gap), "local": _mean_ci(local), "gap_minus_local": _mean_ci(gap - local)}
    return row


# ----------------------------------------------------------------------------- the summary beside the verdict

def _paired(r: dict) -> bool:
    return _finite(r.get("ratio")) and r["ratio"] > 0 and _finite(r.get("ratio_se_log")) and r["ratio_se_log"] > 0 \
        and _finite(r.get("ratio_df")) and r["ratio_df"] > 0


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
    traced = [r for r in rows if _finite(r.get("fisher_trace")) and r.get("draws")]
    probes = np.array([r["draws"] * (r["members"] - 1) for r in traced], dtype=float)  # Hutchinson probes per row
    fisher = float(np.sum(probes * [r["fisher_trace"] for r in traced]) / probes.sum()) if traced else None
    return {"s_limit": LEMMA1_S_LIMIT, "tolerance": TOLERANCE, "fisher_trace": fisher, "per_members": per_n,
            "exponent_in_regime": _slope(inside), "n_factor": _n_factor(inside), "departure": _departure(rows),
            "dpi": {"rows": len(with_succ),
                    "rows_jssucc_below_0": sum(r["jssucc"]["ci"][1] < 0 for r in with_succ),
                    "rows_jssucc_above_jspol": sum(r["jspol_minus_jssucc"]["ci"][1] < 0 for r in with_succ),
                    "share_of_populations_x_prompts": (float(np.mean([r["dpi_share"] for r in with_succ]))
                                                       if with_succ else None)}}
