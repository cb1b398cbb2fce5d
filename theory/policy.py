"""What every toy policy in `theory` shares: input validation and the projected Bernoulli Fisher.

A policy maps parameters theta [..., d] to a distribution over finitely many outcomes (`probs`),
with a verifier given as a boolean mask `correct` over outcomes. Subclasses provide `dim`,
`probs`, `fisher` (d x d Fisher information at one theta) and `success_grad` (grad p at one theta).
"""

from __future__ import annotations

import numpy as np


def check_finite_array(name: str, value, ndim: int) -> np.ndarray:
    """Return value as a float array with ndim axes and finite entries, or raise ValueError."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got NaN or inf")
    return arr


def check_correct_mask(correct, n_outcomes: int) -> np.ndarray:
    """Return the verifier's boolean mask over outcomes, with at least one right and one wrong."""
    mask = np.asarray(correct)
    if mask.shape != (n_outcomes,) or mask.dtype != bool:
        raise ValueError(f"correct must be a boolean mask of shape ({n_outcomes},), got {mask.dtype} {mask.shape}")
    if mask.all() or not mask.any():
        raise ValueError("correct must mark at least one correct and one wrong outcome")
    return mask


class PolicyBase:
    """Shared methods; subclasses define dim, probs(theta), fisher(theta), success_grad(theta), correct."""

    dim: int
    correct: np.ndarray

    def probs(self, theta) -> np.ndarray:
        raise NotImplementedError

    def fisher(self, theta) -> np.ndarray:
        raise NotImplementedError

    def success_grad(self, theta) -> np.ndarray:
        raise NotImplementedError

    def fisher_trace(self, theta) -> float:
        """tr I(theta) at one theta [d]."""
        return float(np.trace(self.fisher(theta)))

    def success(self, theta) -> np.ndarray:
        """p = sum of pi(y) over correct outcomes: theta [..., d] -> [...]."""
        return self.probs(theta)[..., self.correct].sum(axis=-1)

    def success_fisher(self, theta) -> np.ndarray:
        """F_succ = grad p grad p^T / (p (1 - p)) at one theta [d] -> [d, d]."""
        g = self.success_grad(theta)
        p = float(self.success(self.check_single_theta(theta)))
        if not 0.0 < p < 1.0:
            raise ValueError(f"theta gives success probability {p}: F_succ needs 0 < p < 1")
        return np.outer(g, g) / (p * (1.0 - p))

    def check_theta(self, theta) -> np.ndarray:
        """theta as a finite float array of shape [..., d], or ValueError."""
        theta = np.asarray(theta, dtype=float)
        if theta.ndim < 1 or theta.shape[-1] != self.dim:
            raise ValueError(f"theta must have shape [..., {self.dim}], got {theta.shape}")
        if not np.all(np.isfinite(theta)):
            raise ValueError("theta must be finite, got NaN or inf")
        return theta

    def check_single_theta(self, theta) -> np.ndarray:
        """theta as one finite parameter vector of shape [d], or ValueError."""
        theta = self.check_theta(theta)
        if theta.ndim != 1:
            raise ValueError(f"theta must be one parameter vector of shape ({self.dim},), got {theta.shape}")
        return theta
