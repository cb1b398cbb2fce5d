"""Lemma 3 checks: p_w - p_bar = N Cov(w, p), and what the real ES update obeys.

The identity is exact for any weights summing to 1. The ES update theta+ = theta + (alpha / N)
sum_i z_i eps_i (z the standardized member fitness, mean 0) moves the success probability by
(alpha / sigma) Cov(z, p_1..N) plus terms that vanish relative to it as sigma and alpha shrink;
it is claimed where sigma + alpha <= es_claimed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import softmax

from escov.theory.checks.result import check_result
from escov.theory.checks.toys import TOYS
from escov.theory.grpo import group_advantages
from escov.theory.lemmas import es_update_prediction, lemma3_covariance, mixture_gain
from escov.theory.metrics import success_probability


@dataclass(frozen=True)
class Lemma3Config:
    populations: int = 4000
    n: int = 32
    es_steps: tuple[tuple[float, float], ...] = (
        (0.01, 0.001),
        (0.03, 0.003),
        (0.1, 0.01),
        (0.1, 0.1),
        (0.3, 0.3),
        (1.0, 0.3),
    )  # (sigma, alpha)
    es_claimed: float = 0.2
    z: float = 4.0


CFG = Lemma3Config()


def covariance_identity(rng: np.random.Generator) -> list[dict]:
    """Arbitrary weights (Dirichlet) and success probabilities (uniform), then a real toy mixture."""
    w = rng.dirichlet(np.full(CFG.n, 0.5), size=CFG.populations)
    p = rng.random((CFG.populations, CFG.n))
    gain, cov = mixture_gain(w, p), lemma3_covariance(w, p)
    # On the shared toy: the mixture sum_i w_i pi_i of a population, weights monotone in fitness.
    policy, theta = TOYS["shared"]()
    eps = rng.standard_normal((CFG.n, policy.dim))
    probs = policy.probs(theta + 0.3 * eps)
    p_members = policy.success(theta + 0.3 * eps)
    w_fit = softmax(2.0 * group_advantages(p_members))
    p_mixture = float(success_probability(w_fit @ probs, policy.correct))
    predicted = float(p_members.mean() + lemma3_covariance(w_fit, p_members))
    return [
        check_result(
            "lemma3/covariance_identity",
            float(cov.sum()),
            float(gain.sum()),
            float(np.max(np.abs(gain - cov))) < 1e-12,
            detail=f"sum over {CFG.populations} random (w, p) of sum w_i p_i - p_bar vs N Cov(w, p); "
            f"max abs difference {np.max(np.abs(gain - cov)):.1e}",
        ),
        check_result(
            "lemma3/mixture_success",
            predicted,
            p_mixture,
            abs(p_mixture - predicted) < 1e-12,
            detail="success of the mixture sum_i w_i pi_i (w = softmax(2 z), monotone in fitness) "
            "vs p_bar + N Cov(w, p) on the shared toy, N = 32, sigma = 0.3",
        ),
    ]


def es_update(rng: np.random.Generator) -> list[dict]:
    """p(theta+) - p(theta) against (alpha / sigma) Cov(z, p), averaged over populations."""
    policy, theta = TOYS["shared"]()
    out = []
    for sigma, alpha in CFG.es_steps:
        eps = rng.standard_normal((CFG.populations, CFG.n, policy.dim))
        p = policy.success(theta + sigma * eps)
        z = group_advantages(p)  # the ES z-score: (p_i - mean) / std (population std)
        theta_plus = theta + alpha / CFG.n * np.einsum("rn,rnd->rd", z, eps)
        moved = policy.success(theta_plus) - policy.success(theta)
        pred = es_update_prediction(z, p, alpha, sigma)
        se = float(np.std(moved - pred, ddof=1) / np.sqrt(CFG.populations))
        rel = moved.mean() / pred.mean() - 1.0
        holds = abs(rel) <= CFG.z * se / pred.mean() + (sigma + alpha)
        regime = None
        if sigma + alpha > CFG.es_claimed:
            regime = f"sigma + alpha = {sigma + alpha:g} > {CFG.es_claimed}: higher-order terms matter ({rel:+.1%})"
        out.append(
            check_result(
                f"lemma3/es_update/sigma={sigma:g},alpha={alpha:g}",
                float(pred.mean()),
                float(moved.mean()),
                holds,
                stderr=se,
                regime=regime,
                sigma=sigma,
                alpha=alpha,
                detail=f"mean over {CFG.populations} populations (N = {CFG.n}, shared toy) of "
                f"p(theta+) - p(theta) vs (alpha/sigma) Cov(z, p); allowed relative error "
                f"sigma + alpha plus {CFG.z:g} standard errors",
            )
        )
    return out


def run(rng: np.random.Generator) -> list[dict]:
    return covariance_identity(rng) + es_update(rng)
