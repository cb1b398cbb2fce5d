"""ES populations theta + sigma eps_i around one policy, and Lemma 1 by Monte Carlo.

For a population of N members with perturbations delta_i = sigma eps_i:
- JSpol_N = JS(pi_1..pi_N) (equal weights), JSsucc_N = h(p_bar) - mean_i h(p_i);
- its quadratic approximation Q = (1 / 2N) sum_i (delta_i - delta_bar)^T I (delta_i - delta_bar),
  with E[Q] = (sigma^2 / 2)(1 - 1/N) tr I exactly (Lemma 1's leading term), and the same with
  F_succ for JSsucc_N.

`lemma1_monte_carlo` draws R populations at once ([R, N, d] noise, no loop over draws) and
evaluates each at eps and -eps (antithetic pair). The pair mean is an unbiased estimate of E[JS];
(JS(eps) + JS(-eps)) / 2 - Q cancels the odd (sigma^3) terms, so the paired residual isolates the
O(sigma^4) correction from Monte Carlo noise: its ratio to the prediction shrinks like sigma^2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escov.theory.lemmas import lemma1_prediction, validity_parameter
from escov.theory.metrics import generalized_js_batch, jssucc_batch
from escov.theory.policy import PolicyBase


def _members(policy: PolicyBase, theta, sigma: float, eps) -> np.ndarray:
    """theta + sigma eps after checking sigma > 0 and N >= 2 members: eps [..., N, d]."""
    if not np.isfinite(sigma) or sigma <= 0:
        raise ValueError(f"sigma must be a finite number > 0, got {sigma}")
    eps = np.asarray(eps, dtype=float)
    if eps.ndim < 2 or eps.shape[-2] < 2 or eps.shape[-1] != policy.dim:
        raise ValueError(f"eps must have shape [..., N, {policy.dim}] with N >= 2 members, got {eps.shape}")
    return np.asarray(policy.check_single_theta(theta)) + sigma * eps


def population_jspol(policy: PolicyBase, theta, sigma: float, eps) -> np.ndarray:
    """JSpol_N of the populations theta + sigma eps: eps [..., N, d] -> [...]."""
    return generalized_js_batch(policy.probs(_members(policy, theta, sigma, eps)))


def population_jssucc(policy: PolicyBase, theta, sigma: float, eps) -> np.ndarray:
    """JSsucc_N of the populations theta + sigma eps: eps [..., N, d] -> [...]."""
    return jssucc_batch(policy.success(_members(policy, theta, sigma, eps)))


def quadratic_form(matrix, sigma: float, eps) -> np.ndarray:
    """Q = (sigma^2 / 2N) sum_i (eps_i - eps_bar)^T M (eps_i - eps_bar): eps [..., N, d] -> [...]."""
    eps = np.asarray(eps, dtype=float)
    centred = eps - eps.mean(axis=-2, keepdims=True)
    return 0.5 * sigma**2 * np.einsum("...nd,de,...ne->...", centred, matrix, centred) / eps.shape[-2]


@dataclass(frozen=True)
class Lemma1Estimate:
    """Monte Carlo E[JS] against (sigma^2 / 2)(1 - 1/N) tr F (F = I for JSpol, F_succ for JSsucc)."""

    sigma: float
    n: int
    fisher_trace: float
    predicted: float
    measured: float  # mean of the antithetic pair means
    stderr: float  # its standard error over the R pairs
    residual: float  # mean of (pair mean - Q): the O(sigma^4) part
    residual_stderr: float
    draws: int

    @property
    def s(self) -> float:
        """Validity parameter (sigma^2 / 2) tr F."""
        return validity_parameter(self.fisher_trace, self.sigma)

    @property
    def ratio(self) -> float:
        return self.measured / self.predicted


def lemma1_monte_carlo(
    policy: PolicyBase, theta, sigma: float, n: int, draws: int, rng: np.random.Generator, success: bool = False
) -> Lemma1Estimate:
    """Estimate E[JSpol_n] (or E[JSsucc_n] when success=True) from `draws` antithetic pairs."""
    theta = policy.check_single_theta(theta)
    if draws < 2:
        raise ValueError(f"draws must be >= 2, got {draws}")
    fisher = policy.success_fisher(theta) if success else policy.fisher(theta)
    trace = float(np.trace(fisher))
    predicted = lemma1_prediction(trace, sigma, n)
    diversity = population_jssucc if success else population_jspol
    eps = rng.standard_normal((draws, n, policy.dim))
    pair = 0.5 * (diversity(policy, theta, sigma, eps) + diversity(policy, theta, sigma, -eps))
    resid = pair - quadratic_form(fisher, sigma, eps)
    return Lemma1Estimate(
        sigma=float(sigma),
        n=int(n),
        fisher_trace=trace,
        predicted=predicted,
        measured=float(pair.mean()),
        stderr=float(pair.std(ddof=1) / np.sqrt(draws)),
        residual=float(resid.mean()),
        residual_stderr=float(resid.std(ddof=1) / np.sqrt(draws)),
        draws=int(draws),
    )
