"""Coverage measures of a model's n samples per prompt, as the RL-narrowing literature reports them.

Every measure takes per-prompt correct counts c_i out of n samples (numpy, vectorized over prompts and
over bootstrap replicates); Pass@k itself is theory.metrics.pass_at_k_counts (the unbiased estimator of
Chen et al. 2021 in its stable product form, exact for n in the thousands).

- k_grid(n): the evaluated budgets 1, 2, 4, ..., 2^m <= n, and n itself when n is not a power of two.
- pass_at_k_table(c, n, ks): [prompts, len(ks)] per-prompt unbiased Pass@k.
- cover_at_tau(c, n, tau): per prompt 1[c / n >= tau] (Cover@tau of Dragoi et al. 2025: the share of
  prompts on which at least a fraction tau of the n completions is correct; its mean over prompts is
  unbiased for the n-sample Cover@tau E_prompt P(Binomial(n, p) >= tau n)).
- crossing_k(ks, model, reference): the budget k* at which the reference's Pass@k curve overtakes the
  model's (Yue et al. 2025): the first evaluated budget where it leads, or (interpolate=True) the point
  between that budget and the one before where the straight line on log2 k crosses 0 (its docstring).
- solvability(c_model, c_reference): the Invisible Leash (Wu et al. 2025) sets at k = n, with SRR, NDR, NSCR.
- problem_bootstrap_indices(prompts, replicates, seed): prompt resamples shared by every model and seed.
- percentile_interval(replicates, confidence): the percentile interval of bootstrap replicates.
- answer_entropy(answers), distinct_correct(answers, correct): answer-level diversity of one prompt.
"""

from __future__ import annotations

from collections import Counter
from typing import Hashable, Sequence

import numpy as np

from escov.theory.metrics import pass_at_k_counts

TAU_ATOL = 1e-12  # c / n >= tau is decided as c >= tau n - TAU_ATOL: tau = 0.3 with n = 10 counts c = 3


def k_grid(n: int) -> list[int]:
    """The budgets Pass@k is reported at: the powers of two up to n, then n itself if it is not one."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    ks = [1 << i for i in range(int(n).bit_length()) if 1 << i <= n]
    return ks if ks[-1] == n else ks + [int(n)]


def pass_at_k_table(counts, n: int, ks: Sequence[int]) -> np.ndarray:
    """Per-prompt unbiased Pass@k, shape counts.shape + (len(ks),): 1 - C(n - c, k) / C(n, k) for each k."""
    counts = np.asarray(counts)
    return np.stack([pass_at_k_counts(n, counts.ravel(), int(k)).reshape(counts.shape) for k in ks], axis=-1)


def cover_at_tau(counts, n: int, tau: float) -> np.ndarray:
    """Per prompt 1.0 where at least a fraction tau of its n completions is correct (c / n >= tau), else 0.0."""
    if not 0.0 < tau <= 1.0:
        raise ValueError(f"tau must lie in (0, 1], got {tau}")
    return (np.asarray(counts) >= tau * n - TAU_ATOL).astype(float)


def crossing_k(ks: Sequence[int], model, reference, interpolate: bool = False) -> np.ndarray:
    """The budget at which the reference's Pass@k curve overtakes the model's; NaN where it never does.

    ks: increasing budgets; model, reference: Pass@k curves [..., len(ks)] (any leading axes, e.g.
    bootstrap replicates). With d(k) = reference(k) - model(k), the crossing is at the first grid
    budget k_j with d(k_j) > 0 (strictly: two curves that both reach 1 never cross):
      - interpolate=False: k* = k_j, the first evaluated budget at which the reference leads;
      - interpolate=True and j = 0 (the reference leads from k = 1 on): k* = 1;
      - interpolate=True and j > 0: k* is where the straight line through (log2 k_{j-1}, d_{j-1}) and
        (log2 k_j, d_j) is 0: log2 k* = log2 k_{j-1} + (log2 k_j - log2 k_{j-1}) * (-d_{j-1}) / (d_j - d_{j-1}),
        a real number in (k_{j-1}, k_j] (k* = k_{j-1} exactly when d_{j-1} = 0);
      - no grid budget with d > 0: NaN ("no crossing up to n").
    """
    logk = np.log2(np.asarray(ks, dtype=float))
    d = np.asarray(reference, dtype=float) - np.asarray(model, dtype=float)
    ahead = d > 0
    any_ahead = ahead.any(axis=-1)
    j = np.argmax(ahead, axis=-1)
    prev = np.maximum(j - 1, 0)
    d_j = np.take_along_axis(d, j[..., None], axis=-1)[..., 0]
    d_prev = np.take_along_axis(d, prev[..., None], axis=-1)[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(j > 0, -d_prev / (d_j - d_prev), 0.0)
    log_star = np.where(j > 0, logk[prev] + (logk[j] - logk[prev]) * frac, 0.0)
    return np.where(any_ahead, np.exp2(log_star) if interpolate else np.exp2(logk[j]), np.nan)


def solvability(model_counts, reference_counts) -> dict:
    """The empirical-support sets of "The Invisible Leash" (Wu et al. 2025) at k = n, counted in prompts.

    A prompt is solved by a model when at least one of its n samples is correct (c > 0).
    preserved P: solved by both; gained E (expansion): by the model only; lost S (shrinkage): by the
    reference only; neither: by neither. The paper's rates, as defined there:
      SRR  (support retention rate) = P / (P + S): the share of the reference's solved prompts kept;
      NDR  (net discovery rate)     = E / (P + E): the share of the model's solved prompts that are new;
      NSCR (net support change rate) = (E - S) / (P + E + S): net growth of the solved set.
    A rate whose denominator is 0 is None.
    """
    m, r = np.asarray(model_counts) > 0, np.asarray(reference_counts) > 0
    if m.shape != r.shape:
        raise ValueError(f"model and reference counts must cover the same prompts, got {m.shape} and {r.shape}")
    p, e, s = int((m & r).sum()), int((m & ~r).sum()), int((~m & r).sum())

    def rate(num, den):
        return None if den == 0 else num / den

    return {
        "preserved": p,
        "gained": e,
        "lost": s,
        "neither": int((~m & ~r).sum()),
        "srr": rate(p, p + s),
        "ndr": rate(e, p + e),
        "nscr": rate(e - s, p + e + s),
    }


def problem_bootstrap_indices(prompts: int, replicates: int, seed: int) -> np.ndarray:
    """[replicates, prompts] prompt indices drawn uniformly with replacement (the problem bootstrap).

    The same draw is applied to every model and seed of a comparison, so paired differences (the
    crossing, solvability) keep their pairing; seeds, where there are several, are averaged within
    each resampled prompt, so the intervals are conditional on the seeds that were run.
    """
    return np.random.default_rng(seed).integers(0, prompts, size=(replicates, prompts))


def percentile_interval(replicates, confidence: float = 0.95) -> tuple[float, float]:
    """(lo, hi): the (1 - confidence)/2 and (1 + confidence)/2 quantiles of the replicates (NaN-free)."""
    x = np.asarray(replicates, dtype=float)
    a = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(x, [a, 1.0 - a])
    return float(lo), float(hi)


def answer_entropy(answers: Sequence[Hashable | None]) -> float:
    """Entropy (nats) of the empirical distribution of a prompt's final answers; samples with no answer
    (None) are left out; 0.0 when no sample has an answer."""
    counts = np.array(list(Counter(a for a in answers if a is not None).values()), dtype=float)
    if counts.size == 0:
        return 0.0
    q = counts / counts.sum()
    return float(-(q * np.log(q)).sum())


def distinct_correct(answers: Sequence[Hashable | None], correct: Sequence[bool]) -> int:
    """The number of distinct canonical solutions among a prompt's correct samples (None left out)."""
    if len(answers) != len(correct):
        raise ValueError(f"answers and correct must have one entry per sample: {len(answers)} != {len(correct)}")
    return len({a for a, ok in zip(answers, correct) if ok and a is not None})
