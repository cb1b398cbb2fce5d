"""The paper's Lemmas 1-3 and Proposition 1 as formulas (one prompt unless said otherwise).

Notation: N members with success probabilities p_i, p_bar their mean, xi_i = p_i - p_bar,
f_K(p) = 1 - (1 - p)^K (Pass@K of one policy), h the binary entropy, natural logs.

- Lemma 1:  E[JSpol_N] = (sigma^2 / 2)(1 - 1/N) tr I(theta) + O(sigma^4); the same with tr F_succ
            for JSsucc_N. Valid while s = (sigma^2 / 2) tr I is small.
- Lemma 2:  P_pop = 1 - prod_i (1 - p_i) >= P_same = 1 - (1 - p_bar)^N, and exactly
            P_pop - P_same = -sum_{k>=2} (-1)^k (1 - p_bar)^(N-k) e_k(xi)
            (e_k the elementary symmetric polynomials; e_1(xi) = 0), locally
            N p_bar (1 - p_bar)^(N-1) JSsucc_N. K distinct members: 1 - e_K(1 - p) / C(N, K);
            K draws from the mixture: 1 - (1 - p_bar)^K (no gain).
- Lemma 3:  sum_i w_i p_i - p_bar = N Cov(w, p) for weights summing to 1; the ES update
            theta+ = theta + (alpha / N) sum_i z_i eps_i moves p by (alpha / sigma) Cov(z, p) to
            first order (z with mean 0).
- Prop. 1:  f_K(p) - f_K(q) = (p - q) sum_{j<K} (1 - p)^j (1 - q)^(K-1-j), hence
            K (1 - max)^(K-1) |p - q| <= |f_K(p) - f_K(q)| <= K (1 - min)^(K-1) |p - q| <= K |p - q|;
            Pinsker |p - q| <= sqrt(KL(Bern p || Bern q) / 2).
Covariances are population covariances (divide by N).
"""

from __future__ import annotations

import math

import numpy as np

from escov.theory.metrics import bernoulli_kl, check_probabilities, jssucc_batch, pass_at_k_from_p


def _check_count(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_positive(name: str, value) -> float:
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def _check_population(p) -> np.ndarray:
    p = check_probabilities("p", p)
    if p.ndim < 1 or p.shape[-1] < 2:
        raise ValueError(f"p must hold N >= 2 member success probabilities on its last axis, got shape {p.shape}")
    return p


# ----- Lemma 1 -------------------------------------------------------------------------------


def lemma1_prediction(fisher_trace: float, sigma: float, n: int) -> float:
    """(sigma^2 / 2)(1 - 1/n) fisher_trace: the leading term of E[JSpol_n] (or of E[JSsucc_n] with tr F_succ)."""
    fisher_trace = float(fisher_trace)
    if not math.isfinite(fisher_trace) or fisher_trace < 0:
        raise ValueError(f"fisher_trace must be a finite number >= 0, got {fisher_trace}")
    sigma = _check_positive("sigma", sigma)
    n = _check_count("n", n, 2)
    return 0.5 * sigma**2 * (1.0 - 1.0 / n) * fisher_trace


def validity_parameter(fisher_trace: float, sigma: float) -> float:
    """s = (sigma^2 / 2) tr I: Lemma 1's expansion is only claimed where s is small."""
    fisher_trace = float(fisher_trace)
    if not math.isfinite(fisher_trace) or fisher_trace < 0:
        raise ValueError(f"fisher_trace must be a finite number >= 0, got {fisher_trace}")
    return 0.5 * _check_positive("sigma", sigma) ** 2 * fisher_trace


# ----- Lemma 2 -------------------------------------------------------------------------------


def elementary_symmetric(x) -> np.ndarray:
    """e_0..e_N of the entries on the last axis of x: [..., N] -> [..., N + 1] (e_0 = 1)."""
    x = np.asarray(x, dtype=float)
    if x.ndim < 1:
        raise ValueError(f"x must have a last axis of values, got shape {x.shape}")
    e = np.zeros(x.shape[:-1] + (x.shape[-1] + 1,))
    e[..., 0] = 1.0
    for j in range(x.shape[-1]):  # multiply prod_i (1 + x_i t) by one factor at a time
        e[..., 1 : j + 2] = e[..., 1 : j + 2] + x[..., j, None] * e[..., 0 : j + 1]
    return e


def population_pass(p) -> np.ndarray:
    """P_pop = 1 - prod_i (1 - p_i): one draw from each of the N members, any correct."""
    return 1.0 - np.prod(1.0 - _check_population(p), axis=-1)


def same_policy_pass(p) -> np.ndarray:
    """P_same = 1 - (1 - p_bar)^N: N draws from one policy with the members' mean success."""
    p = _check_population(p)
    return pass_at_k_from_p(p.mean(axis=-1), p.shape[-1])


def lemma2_gap_expansion(p) -> np.ndarray:
    """P_pop - P_same = -sum_{k=2..N} (-1)^k (1 - p_bar)^(N-k) e_k(xi), xi = p - p_bar."""
    p = _check_population(p)
    n = p.shape[-1]
    p_bar = p.mean(axis=-1, keepdims=True)
    e = elementary_symmetric(p - p_bar)
    k = np.arange(2, n + 1)
    return -np.sum((-1.0) ** k * (1.0 - p_bar) ** (n - k) * e[..., 2:], axis=-1)


def lemma2_gap_local(p) -> np.ndarray:
    """N p_bar (1 - p_bar)^(N-1) JSsucc_N: the gap up to O(|xi|^3)."""
    p = _check_population(p)
    n = p.shape[-1]
    p_bar = p.mean(axis=-1)
    return n * p_bar * (1.0 - p_bar) ** (n - 1) * jssucc_batch(p)


def distinct_members_pass(p, k: int) -> np.ndarray:
    """1 - E_S prod_{i in S} (1 - p_i) = 1 - e_k(1 - p) / C(N, k): one draw from each of k distinct
    members chosen uniformly without replacement."""
    p = _check_population(p)
    n = p.shape[-1]
    k = _check_count("k", k, 1)
    if k > n:
        raise ValueError(f"k must be <= N (number of members), got k={k} > N={n}")
    return 1.0 - elementary_symmetric(1.0 - p)[..., k] / math.comb(n, k)


def mixture_pass(p, k: int) -> np.ndarray:
    """1 - (1 - p_bar)^k: k draws, each from a member chosen uniformly with replacement (the mixture)."""
    p = _check_population(p)
    return pass_at_k_from_p(p.mean(axis=-1), _check_count("k", k, 1))


# ----- Lemma 3 -------------------------------------------------------------------------------


def _check_pair(w_name: str, w, p) -> tuple[np.ndarray, np.ndarray]:
    p = _check_population(p)
    w = np.asarray(w, dtype=float)
    if w.shape != p.shape:
        raise ValueError(f"{w_name} must have the shape of p {p.shape}, got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{w_name} must be finite, got NaN or inf")
    return w, p


def population_cov(a, b) -> np.ndarray:
    """Cov_i(a_i, b_i) = (1/N) sum_i (a_i - a_bar)(b_i - b_bar) along the last axis."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return np.mean((a - a.mean(axis=-1, keepdims=True)) * (b - b.mean(axis=-1, keepdims=True)), axis=-1)


def mixture_gain(w, p) -> np.ndarray:
    """p_w - p_bar = sum_i w_i p_i - p_bar: success of the mixture sum_i w_i pi_i minus the mean."""
    w, p = _check_pair("w", w, p)
    if np.any(np.abs(w.sum(axis=-1) - 1.0) > 1e-9):
        raise ValueError("w must sum to 1 over the members")
    return np.sum(w * p, axis=-1) - p.mean(axis=-1)


def lemma3_covariance(w, p) -> np.ndarray:
    """N Cov(w, p): equals mixture_gain(w, p) whenever the weights sum to 1."""
    w, p = _check_pair("w", w, p)
    return p.shape[-1] * population_cov(w, p)


def es_update_prediction(z, p, alpha: float, sigma: float) -> np.ndarray:
    """(alpha / sigma) Cov(z, p): first-order change of p under theta + (alpha / N) sum_i z_i eps_i."""
    z, p = _check_pair("z", z, p)
    return _check_positive("alpha", alpha) / _check_positive("sigma", sigma) * population_cov(z, p)


# ----- Proposition 1 -------------------------------------------------------------------------


def pass_k_difference(p, q, k: int) -> np.ndarray:
    """f_K(p) - f_K(q) = (p - q) sum_{j=0}^{K-1} (1 - p)^j (1 - q)^(K-1-j) (exact)."""
    p, q = np.broadcast_arrays(check_probabilities("p", p), check_probabilities("q", q))
    k = _check_count("k", k, 1)
    j = np.arange(k)
    terms = (1.0 - p[..., None]) ** j * (1.0 - q[..., None]) ** (k - 1 - j)
    return (p - q) * terms.sum(axis=-1)


def transfer_bounds(p, q, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(K (1 - max)^(K-1) |p - q|, K (1 - min)^(K-1) |p - q|, K |p - q|): bounds on |f_K(p) - f_K(q)|."""
    p, q = np.broadcast_arrays(check_probabilities("p", p), check_probabilities("q", q))
    k = _check_count("k", k, 1)
    gap = np.abs(p - q)
    lower = k * (1.0 - np.maximum(p, q)) ** (k - 1) * gap
    upper = k * (1.0 - np.minimum(p, q)) ** (k - 1) * gap
    return lower, upper, k * gap


def pinsker_bound(p, q) -> np.ndarray:
    """sqrt(KL(Bern(p) || Bern(q)) / 2) >= |p - q| (Pinsker)."""
    return np.sqrt(bernoulli_kl(p, q) / 2.0)


def mean_pass_at_k(p, k: int) -> np.ndarray:
    """J_K = E_x[1 - (1 - p(x))^K]: the mean over prompts (last axis) of the exact Pass@K."""
    p = check_probabilities("p", p)
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"p must hold per-prompt success probabilities on its last axis, got shape {p.shape}")
    return pass_at_k_from_p(p, k).mean(axis=-1)


def prop1_assumption(j_mixture, j_center, eps_succ, k: int) -> np.ndarray:
    """J_K(pi_w) - J_K(pi_theta) > K sqrt(eps_succ / 2), with eps_succ >= E_x KL(Bern p_w || Bern p_+)."""
    return np.asarray(j_mixture) - np.asarray(j_center) > k * np.sqrt(np.asarray(eps_succ) / 2.0)


def prop1_conclusion(j_updated, j_mixture, j_center, eps_succ, k: int) -> np.ndarray:
    """J_K(pi_+) >= J_K(pi_w) - K sqrt(eps_succ / 2) > J_K(pi_theta)."""
    floor = np.asarray(j_mixture) - k * np.sqrt(np.asarray(eps_succ) / 2.0)
    return (np.asarray(j_updated) >= floor) & (floor > np.asarray(j_center))
