"""Across prompts: at a fixed mean Pass@1, mean Pass@K is largest when success is spread evenly.

f_K(p) = 1 - (1 - p)^K is concave, so by Jensen E_x f_K(p_x) <= f_K(E_x p_x), with equality when
every prompt has the same p. Prompts driven to p = 0 cap mean Pass@K at the share of the others:
with a share z of prompts at p = 0, mean Pass@K <= 1 - z whatever K.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escov.theory.checks.result import check_result
from escov.theory.lemmas import mean_pass_at_k
from escov.theory.metrics import pass_at_k_from_p


@dataclass(frozen=True)
class CrossPromptConfig:
    draws: int = 4000
    prompts: int = 20
    mean_pass1: float = 0.1
    ks: tuple[int, ...] = (4, 16, 32)
    zero_shares: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5)


CFG = CrossPromptConfig()


def _spreads(rng: np.random.Generator) -> np.ndarray:
    """Per-prompt success vectors [R, P] in [0, 1] whose mean is exactly mean_pass1."""
    m = CFG.mean_pass1
    u = rng.standard_normal((CFG.draws, CFG.prompts)) * rng.exponential(1.0, size=(CFG.draws, 1))
    u -= u.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):  # the largest step that keeps every p_x in [0, 1]
        room = np.where(u > 0, (1 - m) / u, np.where(u < 0, m / -u, np.inf)).min(axis=1, keepdims=True)
    return m + rng.random((CFG.draws, 1)) * room * u


def jensen(rng: np.random.Generator) -> list[dict]:
    p = _spreads(rng)
    out = []
    for k in CFG.ks:
        even = float(pass_at_k_from_p(CFG.mean_pass1, k))
        spread = mean_pass_at_k(p, k)
        out.append(
            check_result(
                f"cross_prompt/jensen/K={k}",
                even,
                float(spread.max()),
                spread.max() <= even + 1e-12,
                detail=f"max over {CFG.draws} spreads of success over {CFG.prompts} prompts with mean "
                f"Pass@1 = {CFG.mean_pass1} of mean Pass@{k}, vs the even spread "
                f"(mean over spreads {spread.mean():.4f})",
                k=k,
            )
        )
    return out


def zero_prompts(rng: np.random.Generator) -> list[dict]:
    out = []
    k = max(CFG.ks)
    for share in CFG.zero_shares:
        n_zero = int(round(share * CFG.prompts))
        p = np.full(CFG.prompts, CFG.mean_pass1 * CFG.prompts / (CFG.prompts - n_zero))
        p[:n_zero] = 0.0
        value = float(mean_pass_at_k(p, k))
        out.append(
            check_result(
                f"cross_prompt/zero_prompts/share={share:g}",
                1.0 - n_zero / CFG.prompts,
                value,
                value <= 1.0 - n_zero / CFG.prompts + 1e-12,
                detail=f"{n_zero} of {CFG.prompts} prompts at p = 0, the rest at p = {p[-1]:.3f}: mean "
                f"Pass@1 stays {p.mean():.3f}, mean Pass@{k} = {value:.4f} <= 1 - share "
                f"(even spread: {float(pass_at_k_from_p(CFG.mean_pass1, k)):.4f})",
                k=k,
            )
        )
    return out


def run(rng: np.random.Generator) -> list[dict]:
    return jensen(rng) + zero_prompts(rng)
