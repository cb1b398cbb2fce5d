"""The statistical design of every real-run comparison: seeds x prompts shared by all runs x samples.

Every run, whatever its seed or method, is evaluated on the same test prompts. A per-prompt value
(Pass@k of one prompt from its correct count among n samples, or a paired difference such as
final - base, or ES - GRPO of the same seed) then has the structure

    Y[s, p] = mu + a_s + b_p + c_sp + e_sp

a seed effect a_s (run-to-run variance), a prompt effect b_p shared by all runs (the same prompts
are hard for everyone), their interaction and the binomial sampling noise e_sp. The target mu is
the mean over the seed population and the prompt population, and

    Var(mean Y) = sigma_a^2 / S + sigma_b^2 / P + (sigma_c^2 + sigma_e^2) / (S P).

Resampling prompts independently within each seed (as a naive hierarchical bootstrap does) treats
b_p as if it were averaged over S independent prompt sets, and a percentile bootstrap over two
seeds cannot hold a seed effect: both make intervals too narrow. Here the two levels enter apart:

    prompts   resampled jointly, one draw of prompt indices used for every seed and every run, so
              differences stay paired by prompt; the bootstrap variance of the grand mean over
              these draws, v_p, estimates sigma_b^2 / P + (sigma_c^2 + sigma_e^2) / (S P);
    seeds     the spread of the per-seed means, v_s = Var_s(mean_p Y[s, .]) / S, estimates
              sigma_a^2 / S + (sigma_c^2 + sigma_e^2) / (S P), on S - 1 degrees of freedom.

The interval is mean +- t_{0.975, df} sqrt(v_s + v_p), df by Welch-Satterthwaite from S - 1 and
P - 1. The interaction term is counted twice, so the interval errs on the wide side (coverage is
checked on synthetic data with a known truth in tests/paper_checks/test_design_coverage.py).
With one seed there is no run-to-run variance to estimate: the interval is infinite and every
test on it is inconclusive.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from escov.theory.decisions import LEVEL, detectable, effective_df, t_p_value, t_quantile

N_BOOT = 2000
# the difference a design is planned to detect at 80% power: 2 points (of Pass@32 at matched Pass@1), the size of
# the paper's Table 2 ES - GRPO differences (+1.0 to +3.4 points)
PLANNED_EFFECT = 0.02


@dataclass(frozen=True)
class Estimate:
    """A mean over a design with its 95% interval, the design's size and its power line."""

    mean: float
    lo: float
    hi: float
    se: float
    df: float
    seeds: int
    prompts: int = 0
    samples: int = 0
    detectable: float = float("inf")  # smallest true difference found at 80% power
    v_seeds: float | None = None  # the seed part v_s of se^2 (seeds_by_prompts; None: not recorded)

    @property
    def design(self) -> str:
        if self.prompts:
            return f"{self.seeds} seeds x {self.prompts} prompts x {self.samples} samples"
        return f"{self.seeds} seeds"

    def p(self, side: int = 0) -> float:
        """The p-value of mean = 0 from the t statistic behind the interval (theory.decisions.t_p_value): two-sided
        (side 0; < 1 - LEVEL exactly when 0 lies outside [lo, hi]) or one-sided against d > 0 (+1) or d < 0 (-1)."""
        return t_p_value(self.mean, self.se, self.df, side)

    def to_json(self) -> dict:
        return asdict(self) | {"design": self.design}


def seeds_by_prompts(values, samples: int, *, n_boot: int = N_BOOT, seed: int = 0) -> Estimate:
    """Mean of a (seeds, prompts) array whose prompts are shared by every row, with the interval above.

    samples: completions per prompt behind each value (written beside the interval)."""
    y = np.asarray(values, dtype=float)
    if y.ndim != 2 or y.shape[0] < 1 or y.shape[1] < 2 or not np.all(np.isfinite(y)):
        raise ValueError(f"values must be a finite (seeds, prompts) array with at least 2 prompts, got shape {y.shape}")
    n_seeds, n_prompts = y.shape
    mean = float(y.mean())
    rng = np.random.default_rng(seed)
    per_prompt = y.mean(0)
    v_p = float(per_prompt[rng.integers(0, n_prompts, size=(n_boot, n_prompts))].mean(1).var(ddof=1))
    if n_seeds < 2:
        return Estimate(mean, float("-inf"), float("inf"), float("inf"), 0.0, 1, n_prompts, samples)
    v_s = float(y.mean(1).var(ddof=1) / n_seeds)
    half_s, half_p = (
        t_quantile(df, 0.5 + LEVEL / 2) * math.sqrt(v) for df, v in ((n_seeds - 1, v_s), (n_prompts - 1, v_p))
    )
    half = math.hypot(half_s, half_p)
    se = math.sqrt(v_s + v_p)
    if se == 0.0:  # every value the same: no variance to estimate, the mean is exact
        return Estimate(mean, mean, mean, 0.0, float("inf"), n_seeds, n_prompts, samples, 0.0, 0.0)
    df = effective_df(se, half)
    return Estimate(mean, mean - half, mean + half, se, df, n_seeds, n_prompts, samples, detectable(se, df), v_s)


def seed_level(summary: dict) -> Estimate:
    """An Estimate from escov.theory.decisions.over_seeds / welch (one value per seed, no prompt level)."""
    return Estimate(
        summary["mean"],
        summary["lo"],
        summary["hi"],
        summary["se"],
        summary["df"],
        summary["seeds"],
        detectable=summary["detectable"],
    )


# ----------------------------------------------------------------------------- planning a design


@dataclass(frozen=True)
class Components:
    """The variance components of Y[s, p] = mu + a_s + b_p + r_sp (module docstring; r_sp holds the
    interaction and the sampling noise, which one value per cell cannot separate), estimated by the two-way
    analysis of variance without replication (method of moments, negative estimates set to 0):

        MS_seed = P Var_s(mean_p Y),  MS_prompt = S Var_p(mean_s Y),
        MS_res = sum (Y - row - col + grand)^2 / ((S-1)(P-1))
        residual = MS_res,  seed = (MS_seed - MS_res) / P,  prompt = (MS_prompt - MS_res) / S
    """

    seed: float
    prompt: float
    residual: float
    seeds: int
    prompts: int

    def shares(self, seeds: int | None = None, prompts: int | None = None) -> dict[str, float]:
        """Each component's share of Var(mean Y) at a design of (seeds, prompts) (default: the measured one)."""
        s, p = seeds or self.seeds, prompts or self.prompts
        parts = {"seeds": self.seed / s, "prompts": self.prompt / p, "residual": self.residual / (s * p)}
        total = sum(parts.values())
        return {k: (v / total if total > 0 else 0.0) for k, v in parts.items()}

    def to_json(self) -> dict:
        return asdict(self) | {"shares": self.shares()}


def variance_components(values) -> Components:
    """Components of a finite (seeds, prompts) array with at least 2 seeds and 2 prompts."""
    y = np.asarray(values, dtype=float)
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2 or not np.all(np.isfinite(y)):
        raise ValueError(f"values must be a finite (seeds, prompts) array with at least 2 of each, got shape {y.shape}")
    s, p = y.shape
    rows, cols, grand = y.mean(1, keepdims=True), y.mean(0, keepdims=True), y.mean()
    ms_res = float(((y - rows - cols + grand) ** 2).sum() / ((s - 1) * (p - 1)))
    ms_seed = float(p * rows.var(ddof=1))
    ms_prompt = float(s * cols.var(ddof=1))
    return Components(max(0.0, (ms_seed - ms_res) / p), max(0.0, (ms_prompt - ms_res) / s), ms_res, s, p)


def planned_detectable(c: Components, seeds: int, prompts: int) -> float:
    """The detectable difference (80% power) that seeds_by_prompts is expected to report at a design of
    (seeds, prompts) with components c: its two variances v_s = (seed + residual / P) / S and
    v_p = (prompt + residual / S) / P, its half-width and effective degrees of freedom."""
    if seeds < 2 or prompts < 2:
        raise ValueError(f"a design needs at least 2 seeds and 2 prompts, got {seeds} x {prompts}")
    v_s = (c.seed + c.residual / prompts) / seeds
    v_p = (c.prompt + c.residual / seeds) / prompts
    se = math.sqrt(v_s + v_p)
    if se == 0.0:
        return 0.0
    half = math.hypot(
        t_quantile(seeds - 1, 0.5 + LEVEL / 2) * math.sqrt(v_s),
        t_quantile(prompts - 1, 0.5 + LEVEL / 2) * math.sqrt(v_p),
    )
    return detectable(se, effective_df(se, half))


def seeds_needed(c: Components, target: float, prompts: int, most: int = 1000) -> int | None:
    """The fewest seeds (2..most) whose planned detectable difference at `prompts` is at most target (it falls
    as seeds grow: found by bisection); None when even `most` seeds do not reach it."""
    if planned_detectable(c, most, prompts) > target:
        return None
    lo, hi = 1, most  # planned_detectable(hi) <= target; lo is below the answer
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if planned_detectable(c, mid, prompts) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def plan(values) -> dict:
    """What a pilot's (seeds, prompts) array says about the design: its components and their shares, and the
    seeds needed to detect PLANNED_EFFECT at 80% power with the measured prompts and with 4 times as many
    (None: out of reach). Empty when the array has fewer than 2 seeds."""
    y = np.asarray(values, dtype=float)
    if y.ndim != 2 or y.shape[0] < 2:
        return {}
    c = variance_components(y)
    prompts = c.prompts
    return {
        "components": c.to_json(),
        "target": PLANNED_EFFECT,
        "seeds_needed": {str(p): seeds_needed(c, PLANNED_EFFECT, p) for p in (prompts, 4 * prompts)},
    }


def plan_text(planned: dict, scale: float = 100.0, unit: str = " pts") -> str:
    """One line for a report: which component dominates and the seeds the target needs."""
    if not planned:
        return ""
    shares = planned["components"]["shares"]
    need = "; ".join(
        f"{'out of reach' if n is None else f'{n} seeds'} at {p} prompts" for p, n in planned["seeds_needed"].items()
    )
    return (
        f"variance of the mean: seeds {100 * shares['seeds']:.0f}%, prompts {100 * shares['prompts']:.0f}%, "
        f"residual (interaction and samples) {100 * shares['residual']:.0f}%; detecting "
        f"{planned['target'] * scale:g}{unit} at 80% power needs {need}"
    )


def seeds_to_detect(est: dict, effect: float, most: int = 64) -> int | None:
    """The fewest seeds (2..most), at the same prompts, whose detectable difference is at most `effect`, from an
    estimate written by seeds_by_prompts or a seed-level interval (Estimate.to_json). Its variance se^2 = v_s + v_p
    is split into the two parts of seeds_by_prompts: v_s as recorded (v_seeds), else (an estimate written before it
    was recorded) from half-width^2 = t_{S-1}^2 v_s + t_{P-1}^2 v_p, which fixes the split only when S != P (a
    seed-level estimate is all v_s); at S' seeds v_s becomes v_s S / S' and v_p is kept (its residual part, which
    also falls with seeds, is not: the count errs high). None: not reached with `most` seeds, or the split unknown."""
    seeds, prompts, se = est["seeds"], est.get("prompts", 0), est["se"]
    if seeds < 2 or se is None or not math.isfinite(se) or effect <= 0:
        return None
    q = 0.5 + LEVEL / 2
    if prompts >= 2:
        half = (est["hi"] - est["lo"]) / 2
        t_s, t_p = t_quantile(seeds - 1, q), t_quantile(prompts - 1, q)
        if est.get("v_seeds") is not None:
            v_s = min(se**2, est["v_seeds"])
        elif seeds == prompts:  # t_s = t_p: the half-width says nothing of the split
            return None
        else:
            v_s = min(se**2, max(0.0, (half**2 - t_p**2 * se**2) / (t_s**2 - t_p**2)))
    else:
        v_s = se**2
        df_scale = est["df"] / (seeds - 1)  # a Welch interval of two groups has more df than one group's S - 1
    v_p = se**2 - v_s
    for n in range(2, most + 1):
        v_n = v_s * seeds / n
        se_n = math.sqrt(v_n + v_p)
        if se_n == 0.0:
            return n
        if prompts >= 2:
            df = effective_df(se_n, math.hypot(t_quantile(n - 1, q) * math.sqrt(v_n), t_p * math.sqrt(v_p)))
        else:
            df = df_scale * (n - 1)
        if detectable(se_n, df) <= effect:
            return n
    return None
