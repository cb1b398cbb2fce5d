"""The GRPO side, for comparison: its expected update for binary rewards and its entropy change.

Group of G samples from pi_theta, rewards r_i in {0, 1}, advantage A_i = (r_i - mean r) / std r
(population std; a group whose rewards are all equal has A = 0). The on-policy update direction is
(1/G) sum_i A_i grad log pi(y_i). Its expectation is w_G(p) grad p with the exact prompt weight

    w_G(p) = E_{k ~ Binomial(G - 1, p)} [ sqrt((G - 1 - k) / (k + 1)) + sqrt(k / (G - k)) ],

(k = correct samples among the other G - 1; A of a correct sample is sqrt((G-1-k)/(k+1)), of a
wrong one -sqrt(k/(G-k)); E[s | correct] = grad p / p and E[s | wrong] = -grad p / (1 - p)).
As G grows, w_G(p) -> 1 / sqrt(p (1 - p)).

Entropy of a softmax policy under a logit change dz: H(softmax(z + dz)) - H(softmax(z))
= -Cov_{y ~ pi}(log pi(y), dz(y)) + O(|dz|^2).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, xlog1py, xlogy

from escov.theory.metrics import check_distributions, check_probabilities
from escov.theory.standardize import standardize


def group_advantages(rewards) -> np.ndarray:
    """(r - mean r) / std r over the last axis (population std); 0 for an all-equal group (theory.standardize)."""
    r = np.asarray(rewards, dtype=float)
    if r.ndim < 1 or r.shape[-1] < 2:
        raise ValueError(f"rewards must have a group axis of size >= 2 last, got shape {r.shape}")
    return standardize(r)


def grpo_prompt_weight(p, group_size: int) -> np.ndarray:
    """Exact w_G(p): E[(1/G) sum_i A_i grad log pi(y_i)] = w_G(p) grad p for binary rewards."""
    p = check_probabilities("p", p)
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 2:
        raise ValueError(f"group_size must be an integer >= 2, got {group_size!r}")
    g = int(group_size)
    k = np.arange(g)  # correct samples among the other G - 1
    per_k = np.sqrt((g - 1 - k) / (k + 1)) + np.sqrt(k / (g - k))
    return binomial_pmf(k, g - 1, np.asarray(p)[..., None]) @ per_k


def binomial_pmf(k, n: int, p) -> np.ndarray:
    """C(n, k) p^k (1 - p)^(n - k), computed in logs (stable for large n; 0^0 = 1)."""
    k = np.asarray(k)
    log_comb = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    return np.exp(log_comb + xlogy(k, p) + xlog1py(n - k, -np.asarray(p)))


def grpo_weight_limit(p) -> np.ndarray:
    """lim_{G -> inf} w_G(p) = 1 / sqrt(p (1 - p)), for 0 < p < 1."""
    p = check_probabilities("p", p)
    if np.any((p <= 0) | (p >= 1)):
        raise ValueError("p must lie strictly inside (0, 1) for the large-G limit")
    return 1.0 / np.sqrt(p * (1.0 - p))


def entropy_change_first_order(probs, dz) -> np.ndarray:
    """-Cov_{y ~ pi}(log pi(y), dz(y)): first-order entropy change of softmax(z) under z -> z + dz."""
    pi = check_distributions("probs", probs)
    dz = np.asarray(dz, dtype=float)
    if dz.shape != pi.shape or not np.all(np.isfinite(dz)):
        raise ValueError(f"dz must be finite with the shape of probs {pi.shape}, got {dz.shape}")
    if np.any(pi <= 0):
        raise ValueError("probs must be strictly positive (a softmax policy) for log pi")
    log_pi = np.log(pi)
    mean_log = np.sum(pi * log_pi, axis=-1, keepdims=True)
    mean_dz = np.sum(pi * dz, axis=-1, keepdims=True)
    return -np.sum(pi * (log_pi - mean_log) * (dz - mean_dz), axis=-1)
