"""Metrics shared by every level of the toolkit (theory, simulate, llm, paper_checks).

All logarithms are natural. Each function validates its input and raises a
ValueError that names the offending argument; nothing is silently clipped.

- pass_at_k(n, c, k): unbiased Pass@k from n samples with c correct (Chen et al. 2021),
  1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k / i)   (stable product form).
- pass_at_k_from_p(p, k): exact Pass@k of a policy with success probability p, 1 - (1 - p)^k.
- maj_at_k: majority-vote accuracy over k of the n sampled answers; maj_at_ks: at several k from one draw.
- entropy(probs): H(pi) = -sum_y pi(y) log pi(y).
- generalized_js(probs, weights): H(sum_i w_i pi_i) - sum_i w_i H(pi_i) = sum_i w_i KL(pi_i || pi_bar).
- jssucc(p): h(p_bar) - (1/N) sum_i h(p_i), the JS divergence of the members' Bernoulli projections.
- generalized_js_batch, jssucc_batch: the same over leading axes (many populations at once).
- binary_entropy(p), bernoulli_kl(p, q): h(p) and KL(Bern(p) || Bern(q)).
- success_probability(probs, correct): the Bernoulli projection p = sum_{y correct} pi(y).
"""

from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np
from scipy.special import xlogy

DIST_ATOL = 1e-6


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def check_probabilities(name: str, p) -> np.ndarray:
    """Return p as a float array after checking every entry is a finite number in [0, 1]."""
    arr = np.asarray(p, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got non-finite entries")
    if np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name} must lie in [0, 1], got values in [{arr.min()}, {arr.max()}]")
    return arr


def check_distributions(name: str, probs, atol: float = DIST_ATOL) -> np.ndarray:
    """Return probs as a float array whose last axis holds distributions, or raise ValueError."""
    arr = np.asarray(probs, dtype=float)
    if arr.ndim == 0:
        raise ValueError(f"{name} must have at least one axis of outcomes")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got NaN or inf")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative, got min {arr.min()}")
    sums = arr.sum(axis=-1)
    if np.any(np.abs(sums - 1.0) > atol):
        worst = sums.flat[np.argmax(np.abs(sums - 1.0))]
        raise ValueError(f"{name} rows must sum to 1 (within {atol}), got a row summing to {worst}")
    return arr


def pass_at_k_counts(n: int, c, k: int) -> np.ndarray:
    """Unbiased Pass@k for an array of correct-counts c, each out of n samples (vectorized)."""
    n = _check_int("n", n, 1)
    k = _check_int("k", k, 1)
    if k > n:
        raise ValueError(f"k must be <= n (number of samples), got k={k} > n={n}")
    c = np.asarray(c)
    if not np.issubdtype(c.dtype, np.integer):  # an empty list is a float array: no counts, nothing to refuse
        if not np.all(c == np.round(c)):
            raise ValueError("c must hold integers (correct-sample counts)")
        c = c.astype(int)
    if np.any(c < 0) or np.any(c > n):
        raise ValueError(f"c must lie in [0, n={n}], got values in [{c.min()}, {c.max()}]")
    # 1 - prod_{i=n-c+1}^{n} (1 - k/i); the product is 0 whenever n - c < k.
    i = np.arange(1, n + 1)
    log_terms = np.where(i > k, np.log1p(-k / np.maximum(i, k + 1)), -np.inf)  # log(1 - k/i), -inf for i <= k
    # cumulative sums from the top: S[m] = sum_{i=n-m+1}^{n} log(1 - k/i)
    suffix = np.concatenate([[0.0], np.cumsum(log_terms[::-1])])
    with np.errstate(invalid="ignore"):
        fail = np.exp(suffix[c])
    return 1.0 - fail


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator of Pass@k from n samples of which c are correct."""
    c = _check_int("c", c, 0)
    return float(pass_at_k_counts(n, np.array([c]), k)[0])


def pass_at_k_from_p(p, k: int) -> np.ndarray:
    """Exact Pass@k = 1 - (1 - p)^k of a policy whose per-draw success probability is p."""
    k = _check_int("k", k, 1)
    p = check_probabilities("p", p)
    with np.errstate(divide="ignore"):
        return -np.expm1(k * np.log1p(-p))


def maj_at_k(
    answers: Sequence[Hashable | None], correct: Sequence[bool], k: int, *, n_subsets: int = 256, seed: int = 0
) -> float:
    """Majority-vote accuracy over k of the n samples (answers already normalized).

    The vote ignores samples with no answer (None). A tie among t answers gives credit
    (#correct tied answers) / t. With k == n the vote is over all samples; with k < n it is
    averaged over n_subsets random size-k subsets drawn without replacement (seeded).
    """
    return float(maj_at_ks(answers, correct, [k], n_subsets=n_subsets, seed=seed)[0])


def maj_at_ks(
    answers: Sequence[Hashable | None],
    correct: Sequence[bool],
    ks: Sequence[int],
    *,
    n_subsets: int = 256,
    seed: int = 0,
) -> np.ndarray:
    """maj_at_k at each k of ks, the subsets of every k < n the first k of one seeded draw of n_subsets
    random orders of the samples (so maj_at_ks(..., [k])[0] is maj_at_k(..., k), draw for draw)."""
    n = len(answers)
    if len(correct) != n:
        raise ValueError(f"correct must have one flag per answer: {len(correct)} != {n}")
    ks = [_check_int("k", k, 1) for k in ks]
    for k in ks:
        if k > n:
            raise ValueError(f"k must be <= n (number of samples), got k={k} > n={n}")
    labels: dict = {}  # answer -> its index; an answer is correct if any of its samples is
    ids = np.array([-1 if a is None else labels.setdefault(a, len(labels)) for a in answers], dtype=np.int64)
    answer_ok = np.zeros(len(labels), dtype=bool)
    for i, ok in zip(ids, correct):
        if i >= 0 and ok:
            answer_ok[i] = True
    orders = None
    out = np.empty(len(ks))
    for j, k in enumerate(ks):
        if k == n:
            subsets = np.arange(n)[None, :]
        else:
            if orders is None:  # n_subsets uniform random orders; the first k of each is a uniform k-subset
                orders = np.random.default_rng(seed).random((n_subsets, n)).argsort(axis=1, kind="stable")
            subsets = orders[:, :k]
        out[j] = _vote_credit(ids, answer_ok, subsets)
    return out


def _vote_credit(ids: np.ndarray, answer_ok: np.ndarray, subsets: np.ndarray) -> float:
    """The mean over subsets of the majority vote's credit (ids: each sample's answer index, -1 for none)."""
    # every subset's vote at once: counts[s, a] = samples of answer a drawn in subset s (no answer: not counted)
    picked = ids[subsets] + 1  # column 0 counts the samples with no answer
    width = len(answer_ok) + 1
    flat = (np.arange(len(subsets))[:, None] * width + picked).ravel()
    counts = np.bincount(flat, minlength=len(subsets) * width).reshape(len(subsets), width)[:, 1:]
    top = counts.max(axis=1, initial=0)
    tied = (counts == top[:, None]) & (top[:, None] > 0)
    credit = (tied & answer_ok).sum(axis=1) / np.maximum(tied.sum(axis=1), 1)  # no answer at all: credit 0
    return float(credit.mean())


def entropy(probs, axis: int = -1) -> np.ndarray:
    """Shannon entropy -sum pi log pi along axis (0 log 0 = 0)."""
    arr = check_distributions("probs", probs) if axis in (-1, np.ndim(probs) - 1) else np.asarray(probs, float)
    return -xlogy(arr, arr).sum(axis=axis)


def binary_entropy(p) -> np.ndarray:
    """h(p) = -p log p - (1 - p) log(1 - p)."""
    p = check_probabilities("p", p)
    return -xlogy(p, p) - xlogy(1 - p, 1 - p)


def bernoulli_kl(p, q) -> np.ndarray:
    """KL(Bern(p) || Bern(q)); +inf where q puts zero mass on an outcome p can take."""
    p = check_probabilities("p", p)
    q = check_probabilities("q", q)
    with np.errstate(divide="ignore"):
        return xlogy(p, p) - xlogy(p, q) + xlogy(1 - p, 1 - p) - xlogy(1 - p, 1 - q)


def _check_weights(weights, n: int) -> np.ndarray:
    if weights is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"weights must have shape ({n},), got {w.shape}")
    check_distributions("weights", w)
    return w


def generalized_js_batch(probs, weights=None) -> np.ndarray:
    """JS_w of many populations at once: probs [..., N, V] -> array [...] (see generalized_js)."""
    probs = check_distributions("probs", probs)
    if probs.ndim < 2:
        raise ValueError(f"probs must have shape [..., N, V], got {probs.shape}")
    w = _check_weights(weights, probs.shape[-2])
    mix = np.einsum("n,...nv->...v", w, probs)[..., None, :]
    # KL(pi_i || mix) summed over outcomes where pi_i > 0. There mix >= w_i pi_i, so
    # log(pi_i / mix) <= log(1 / w_i): fmin applies that exact bound, which only binds when
    # mix underflowed to 0 (pi_i near the smallest float), where the log ratio would be +inf or NaN.
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.fmin(np.log(probs) - np.log(mix), -np.log(w)[:, None])
        kl = np.where(probs > 0, probs * log_ratio, 0.0).sum(axis=-1)
    js = np.einsum("n,...n->...", w, np.where(w > 0, kl, 0.0))
    return np.maximum(js, 0.0)  # only float rounding can make the sum of KL terms negative


def generalized_js(probs, weights=None) -> float:
    """JS_w(pi_1..pi_N) = sum_i w_i KL(pi_i || pi_bar), pi_bar = sum_i w_i pi_i (>= 0, <= log N).

    probs: array [N, V] whose rows are distributions; weights default to 1/N each.
    """
    probs = np.asarray(probs, dtype=float)
    if probs.ndim != 2:
        raise ValueError(f"probs must have shape [N, V], got {probs.shape}")
    return float(generalized_js_batch(probs, weights))


def jssucc_batch(p) -> np.ndarray:
    """JSsucc_N of many populations at once: p [..., N] -> array [...] (see jssucc)."""
    p = check_probabilities("p", p)
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"p must have shape [..., N] with N >= 1 members, got shape {p.shape}")
    js = binary_entropy(p.mean(axis=-1)) - binary_entropy(p).mean(axis=-1)
    return np.maximum(js, 0.0)  # h is concave, so only float rounding can make this negative


def jssucc(p) -> float:
    """JSsucc_N = h(p_bar) - (1/N) sum_i h(p_i), JS divergence of the members' success Bernoullis."""
    p = check_probabilities("p", p)
    if p.ndim != 1 or p.size < 1:
        raise ValueError(f"p must be a 1-D array of member success probabilities, got shape {p.shape}")
    return float(jssucc_batch(p))


def success_probability(probs, correct) -> np.ndarray:
    """Bernoulli projection p = sum_{y in correct} pi(y); correct is a boolean mask over outcomes."""
    probs = check_distributions("probs", probs)
    mask = np.asarray(correct, dtype=bool)
    if mask.shape != probs.shape[-1:]:
        raise ValueError(f"correct must be a mask of shape {probs.shape[-1:]}, got {mask.shape}")
    return np.clip(probs[..., mask].sum(axis=-1), 0.0, 1.0)
