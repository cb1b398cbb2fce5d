"""Toy categorical policy pi_theta = softmax(A theta + b) over M outcomes, with a verifier.

theta has d entries, A is [M, d] (A = identity gives tabular logits; a general A lets one
parameter move many outcomes, as in a network), b is [M], and `correct` marks the outcomes the
verifier accepts. With z = A theta + b, pi = softmax(z) and c the 0/1 vector of correct outcomes:

- score        s(y) = grad_theta log pi(y) = A^T (e_y - pi)
- Fisher       I = E_{y ~ pi}[s s^T] = A^T (diag pi - pi pi^T) A
- success      p = c^T pi,  grad p = A^T (pi * (c - p))
- projected Bernoulli Fisher  F_succ = grad p grad p^T / (p (1 - p)),  with F_succ <= I (Loewner)

Every method that takes theta accepts a batch [..., d] where the docstring says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax, softmax

from escov.theory.policy import PolicyBase, check_correct_mask, check_finite_array


@dataclass(frozen=True)
class CategoricalPolicy(PolicyBase):
    """pi_theta = softmax(A theta + b) with a verifier `correct` (boolean mask over the M outcomes)."""

    A: np.ndarray
    b: np.ndarray
    correct: np.ndarray

    def __post_init__(self) -> None:
        A = check_finite_array("A", self.A, 2)
        b = check_finite_array("b", self.b, 1)
        if b.shape != (A.shape[0],):
            raise ValueError(f"b must have shape ({A.shape[0]},) to match A {A.shape}, got {b.shape}")
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "correct", check_correct_mask(self.correct, A.shape[0]))

    @classmethod
    def tabular(cls, n_outcomes: int, n_correct: int = 1) -> "CategoricalPolicy":
        """A = identity, b = 0: theta are the logits; the first n_correct outcomes are correct."""
        return cls(np.eye(n_outcomes), np.zeros(n_outcomes), np.arange(n_outcomes) < n_correct)

    @classmethod
    def random(cls, n_outcomes: int, dim: int, rng: np.random.Generator, n_correct: int = 1) -> "CategoricalPolicy":
        """Gaussian A [M, d] (entries N(0, 1)) and b [M] (entries N(0, 1)); first n_correct outcomes correct."""
        return cls(
            rng.standard_normal((n_outcomes, dim)), rng.standard_normal(n_outcomes), np.arange(n_outcomes) < n_correct
        )

    @property
    def dim(self) -> int:
        return self.A.shape[1]

    @property
    def n_outcomes(self) -> int:
        return self.A.shape[0]

    def logits(self, theta) -> np.ndarray:
        """z = A theta + b for theta [..., d] -> [..., M]."""
        return self.check_theta(theta) @ self.A.T + self.b

    def probs(self, theta) -> np.ndarray:
        """pi = softmax(A theta + b) for theta [..., d] -> [..., M]."""
        return softmax(self.logits(theta), axis=-1)

    def log_probs(self, theta) -> np.ndarray:
        """log pi for theta [..., d] -> [..., M]."""
        return log_softmax(self.logits(theta), axis=-1)

    def score(self, theta, y) -> np.ndarray:
        """s(y) = A^T (e_y - pi) for one theta [d] and outcome(s) y (int or int array [...]) -> [..., d]."""
        pi = self.probs(self.check_single_theta(theta))
        y = np.asarray(y)
        if not np.issubdtype(y.dtype, np.integer) or np.any(y < 0) or np.any(y >= self.n_outcomes):
            raise ValueError(f"y must hold outcome indices in [0, {self.n_outcomes}), got {y}")
        return self.A[y] - pi @ self.A

    def fisher(self, theta) -> np.ndarray:
        """I = A^T (diag pi - pi pi^T) A for one theta [d] -> [d, d]."""
        pi = self.probs(self.check_single_theta(theta))
        centred = self.A - pi @ self.A  # row y: s(y)^T
        return centred.T @ (pi[:, None] * centred)

    def success_grad(self, theta) -> np.ndarray:
        """grad p = A^T (pi * (c - p)) for one theta [d] -> [d]."""
        pi = self.probs(self.check_single_theta(theta))
        p = pi[self.correct].sum()
        return self.A.T @ (pi * (self.correct - p))
