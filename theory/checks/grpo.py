"""The GRPO side: the exact prompt weight w_G(p) and the entropy change of a softmax policy.

w_G(p) (theory.grpo) is checked against exact enumeration of every group of G outcomes of a toy
policy, against Monte Carlo groups, and against its large-G limit 1 / sqrt(p (1 - p)). The entropy
change under a small logit step dz is checked against -Cov(log pi, dz), with dz the expected GRPO
logit step of a tabular policy.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.special import softmax

from escov.theory.categorical import CategoricalPolicy
from escov.theory.checks.result import check_result
from escov.theory.checks.toys import TOYS
from escov.theory.grpo import entropy_change_first_order, group_advantages, grpo_prompt_weight, grpo_weight_limit
from escov.theory.metrics import entropy


@dataclass(frozen=True)
class GrpoConfig:
    mc_groups: int = 40_000
    mc_group_size: int = 8
    limit_ps: tuple[float, ...] = (0.05, 0.3)
    limit_sizes: tuple[int, ...] = (8, 64, 1024, 16384)
    limit_claimed: int = 1024  # the limit is claimed for G >= this
    entropy_steps: tuple[float, ...] = (1.0, 0.1, 0.01, 0.001)
    entropy_claimed: float = 0.01  # first order claimed for steps <= this
    z: float = 4.0


CFG = GrpoConfig()


def _expected_update_exact(policy: CategoricalPolicy, theta, group_size: int) -> np.ndarray:
    """E[(1/G) sum_i A_i grad log pi(y_i)] by summing over all M^G groups of outcomes."""
    pi = policy.probs(theta)
    scores = policy.score(theta, np.arange(policy.n_outcomes))  # [M, d]
    groups = np.array(list(itertools.product(range(policy.n_outcomes), repeat=group_size)))  # [M^G, G]
    weight = np.prod(pi[groups], axis=1)
    adv = group_advantages(policy.correct[groups].astype(float))
    update = np.einsum("rg,rgd->rd", adv, scores[groups]) / group_size
    return weight @ update


def _projection(update: np.ndarray, g: np.ndarray) -> tuple[float, float]:
    """(coefficient of update along grad p, norm of the rest relative to |update|)."""
    coef = float(update @ g / (g @ g))
    return coef, float(np.linalg.norm(update - coef * g) / np.linalg.norm(update))


def weight_exact(rng: np.random.Generator) -> list[dict]:
    out = []
    cases = [
        ("tabular_M=3", CategoricalPolicy.tabular(3, 1), np.array([0.3, -0.2, 0.1]), 6),
        ("shared", *TOYS["shared"](), 3),
    ]
    for label, policy, theta, size in cases:
        g = policy.success_grad(theta)
        p = float(policy.success(theta))
        coef, off = _projection(_expected_update_exact(policy, theta, size), g)
        out.append(
            check_result(
                f"grpo/weight_exact_enumeration/{label}/G={size}",
                float(grpo_prompt_weight(p, size)),
                coef,
                abs(coef / grpo_prompt_weight(p, size) - 1) < 1e-10 and off < 1e-10,
                detail=f"exact E[GRPO update] over all {policy.n_outcomes}^{size} groups projected on "
                f"grad p (p = {p:.3f}); part orthogonal to grad p: {off:.1e}",
            )
        )
    return out


def weight_monte_carlo(rng: np.random.Generator) -> list[dict]:
    policy, theta = TOYS["shared"]()
    size, groups = CFG.mc_group_size, CFG.mc_groups
    pi = policy.probs(theta)
    y = rng.choice(policy.n_outcomes, size=(groups, size), p=pi)
    adv = group_advantages(policy.correct[y].astype(float))
    scores = policy.score(theta, np.arange(policy.n_outcomes))
    per_group = np.einsum("rg,rgd->rd", adv, scores[y]) / size  # [R, d]
    g = policy.success_grad(theta)
    along = per_group @ g / (g @ g)  # per-group coefficient on grad p
    p = float(policy.success(theta))
    se = float(along.std(ddof=1) / np.sqrt(groups))
    predicted = float(grpo_prompt_weight(p, size))
    return [
        check_result(
            f"grpo/weight_monte_carlo/shared/G={size}",
            predicted,
            float(along.mean()),
            abs(along.mean() - predicted) <= CFG.z * se,
            stderr=se,
            detail=f"{groups} sampled groups, mean update projected on grad p (p = {p:.3f})",
        )
    ]


def weight_limit(rng: np.random.Generator) -> list[dict]:
    out = []
    for p in CFG.limit_ps:
        for size in CFG.limit_sizes:
            w, limit = float(grpo_prompt_weight(p, size)), float(grpo_weight_limit(p))
            tol = 1.0 / (size * p * (1 - p))
            regime = (
                None
                if size >= CFG.limit_claimed
                else f"G = {size} < {CFG.limit_claimed}: finite group, limit not claimed"
            )
            out.append(
                check_result(
                    f"grpo/weight_limit/p={p:g}/G={size}",
                    limit,
                    w,
                    abs(w / limit - 1) <= tol,
                    regime=regime,
                    detail=f"w_G(p) vs 1/sqrt(p(1-p)); allowed relative error 1/(G p (1-p)) = {tol:.2g}",
                )
            )
    return out


def entropy_change(rng: np.random.Generator) -> list[dict]:
    """H(softmax(z + t dz)) - H(softmax(z)) vs -t Cov(log pi, dz), dz the expected GRPO logit step."""
    z = np.array([1.0, -0.5, 0.5, 0.0, -1.0, 0.3])
    correct = np.arange(z.size) < 2
    pi = softmax(z)
    p = float(pi[correct].sum())
    dz = grpo_prompt_weight(p, 8) * pi * (correct - p)  # w_G(p) grad_z p for tabular logits
    out = []
    for t in CFG.entropy_steps:
        exact = float(entropy(softmax(z + t * dz)) - entropy(pi))
        first = float(entropy_change_first_order(pi, t * dz))
        regime = None if t <= CFG.entropy_claimed else f"step t = {t:g} > {CFG.entropy_claimed}: O(t^2) terms matter"
        out.append(
            check_result(
                f"grpo/entropy_change/t={t:g}",
                first,
                exact,
                abs(exact / first - 1) <= 2 * t,
                regime=regime,
                detail="exact entropy change vs -Cov_pi(log pi, t dz) for the expected "
                "GRPO logit step dz of a tabular policy (allowed relative error 2 t)",
            )
        )
    return out


def run(rng: np.random.Generator) -> list[dict]:
    return weight_exact(rng) + weight_monte_carlo(rng) + weight_limit(rng) + entropy_change(rng)
