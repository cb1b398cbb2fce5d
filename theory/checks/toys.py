"""The fixed toy policies the checks run on (built from fixed seeds, so every run sees the same toys)."""

from __future__ import annotations

import numpy as np

from escov.theory.autoregressive import SequencePolicy
from escov.theory.categorical import CategoricalPolicy


def tabular_toy() -> tuple[CategoricalPolicy, np.ndarray]:
    """Tabular logits over M = 6 outcomes, 2 of them correct, at a spread-out theta."""
    return CategoricalPolicy.tabular(6, n_correct=2), np.array([1.0, -0.5, 0.5, 0.0, -1.0, 0.3])


def shared_toy() -> tuple[CategoricalPolicy, np.ndarray]:
    """M = 12 outcomes moved by d = 4 shared parameters (Gaussian A, b), 3 outcomes correct."""
    rng = np.random.default_rng(7)
    return CategoricalPolicy.random(12, 4, rng, n_correct=3), 0.5 * rng.standard_normal(4)


def sequence_toy() -> tuple[SequencePolicy, np.ndarray]:
    """Three tokens from a vocabulary of 3 (27 sequences), d = 4 shared parameters."""
    rng = np.random.default_rng(11)
    return SequencePolicy.random(3, 3, 4, rng), 0.5 * rng.standard_normal(4)


TOYS = {"tabular": tabular_toy, "shared": shared_toy, "sequence": sequence_toy}
