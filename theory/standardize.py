"""Z-scoring a group of rewards: ES member fitness and GRPO group advantages, at every level.

Over the last axis (the members of a population, or the samples of a group), population std (ddof 0):

    z_i = (r_i - mean r) / (std r + eps)        (scale = False: r_i - mean r, only centred)

and exactly 0 for a group whose rewards are all equal (so an all-equal group gives no update, never
NaN, whatever rounding does to the mean). Each algorithm names its eps: ES 1e-8 (docs/paper.md; the
paper's code), GRPO 1e-4 (TRL's GRPOTrainer), the exact theory 0.
"""

from __future__ import annotations

import numpy as np


def standardize(rewards, eps: float = 0.0, scale: bool = True) -> np.ndarray:
    """(r - mean r) / (std r + eps) over the last axis; 0 for an all-equal group; scale False: r - mean r."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim < 1 or r.shape[-1] < 1 or not np.all(np.isfinite(r)):
        raise ValueError(f"rewards must be finite with a non-empty group axis last, got shape {r.shape}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < np.inf:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    centred = r - r.mean(axis=-1, keepdims=True)
    equal = r.max(axis=-1, keepdims=True) == r.min(axis=-1, keepdims=True)
    if scale:
        std = r.std(axis=-1, keepdims=True) + eps
        centred = np.divide(centred, std, out=np.zeros_like(centred), where=~equal)
    return np.where(equal, 0.0, centred)
