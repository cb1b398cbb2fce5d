"""Proposition 1 checks: the exact difference of f_K, its bounds, Pinsker, and the proposition itself.

Toy setting for the proposition: P prompts, each a softmax policy pi_theta(.|x) = softmax(A_x theta
+ b_x) with shared theta; an antithetic ES population theta + sigma eps_i; fitness = mean success
over prompts; z its z-score; the mixture weights w_i = (1 + c z_i) / N (>= 0, sum 1, monotone in
fitness); the ES update theta+ = theta + (alpha / N) sum_i z_i eps_i with alpha = c sigma (so that,
by Lemma 3, p_+ tracks p_w to first order). eps_succ = E_x KL(Bern(p_w(x)) || Bern(p_+(x))).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escov.theory.categorical import CategoricalPolicy
from escov.theory.checks.result import check_result
from escov.theory.grpo import group_advantages
from escov.theory.lemmas import (
    mean_pass_at_k,
    pass_k_difference,
    pinsker_bound,
    prop1_assumption,
    prop1_conclusion,
    transfer_bounds,
)
from escov.theory.metrics import bernoulli_kl, pass_at_k_from_p


@dataclass(frozen=True)
class Prop1Config:
    grid: int = 201  # p and q on a grid of this many points in [0, 1]
    ks: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    trials: int = 300
    prompts: int = 6
    outcomes: int = 8
    dim: int = 4
    n: int = 16  # population size (8 antithetic pairs)
    sigmas: tuple[float, ...] = (0.02, 0.1, 0.3)
    prop_ks: tuple[int, ...] = (1, 4, 16)


CFG = Prop1Config()


def transfer_bound_checks(rng: np.random.Generator) -> list[dict]:
    """On a grid of (p, q) and every K: exact difference, lower/upper/Lipschitz bounds, Pinsker."""
    grid = np.linspace(0.0, 1.0, CFG.grid)
    p, q = np.meshgrid(grid, grid, indexing="ij")
    worst_exact, worst_lower, worst_upper, worst_lip = 0.0, 0.0, 0.0, 0.0
    for k in CFG.ks:
        formula = pass_k_difference(p, q, k)
        worst_exact = max(worst_exact, float(np.max(np.abs(pass_at_k_from_p(p, k) - pass_at_k_from_p(q, k) - formula))))
        direct = (1.0 - q) ** k - (1.0 - p) ** k  # f_K(p) - f_K(q) without cancelling against 1
        lower, upper, lipschitz = transfer_bounds(p, q, k)
        moved = np.abs(direct) > 0
        worst_lower = max(worst_lower, float(np.max(lower[moved] / np.abs(direct[moved]))))
        worst_upper = max(worst_upper, float(np.max(np.abs(direct[moved]) / upper[moved])))
        worst_lip = max(worst_lip, float(np.max(upper[moved] / lipschitz[moved])))
    inner = (p > 0) & (p < 1) & (q > 0) & (q < 1) & (p != q)
    pinsker = float(np.max(np.abs(p - q)[inner] / pinsker_bound(p[inner], q[inner])))
    where = f"{CFG.grid} x {CFG.grid} grid of (p, q) in [0, 1]^2, K in {list(CFG.ks)}"
    return [
        check_result(
            "prop1/difference_exact",
            0.0,
            worst_exact,
            worst_exact < 1e-12,
            detail=f"max |f_K(p) - f_K(q) - (p - q) sum_j (1-p)^j (1-q)^(K-1-j)| on a {where}",
        ),
        check_result(
            "prop1/bound_lower",
            1.0,
            worst_lower,
            worst_lower <= 1.0 + 1e-9,
            detail=f"max of K (1 - max)^(K-1) |p - q| / |f_K(p) - f_K(q)| on a {where}",
        ),
        check_result(
            "prop1/bound_upper",
            1.0,
            worst_upper,
            worst_upper <= 1.0 + 1e-9,
            detail=f"max of |f_K(p) - f_K(q)| / (K (1 - min)^(K-1) |p - q|) on a {where}",
        ),
        check_result(
            "prop1/lipschitz",
            1.0,
            worst_lip,
            worst_lip <= 1.0 + 1e-12,
            detail=f"max of K (1 - min)^(K-1) |p - q| / (K |p - q|) on a {where}",
        ),
        check_result(
            "prop1/pinsker",
            1.0,
            pinsker,
            pinsker <= 1.0 + 1e-12,
            detail="max of |p - q| / sqrt(KL(Bern p || Bern q) / 2) on the interior of the grid",
        ),
    ]


def _trial(rng: np.random.Generator) -> dict:
    """One toy: returns per-prompt success of the center, the mixture and the ES update."""
    prompts = [CategoricalPolicy.random(CFG.outcomes, CFG.dim, rng, n_correct=2) for _ in range(CFG.prompts)]
    theta = 0.5 * rng.standard_normal(CFG.dim)
    sigma = float(rng.choice(CFG.sigmas))
    half = rng.standard_normal((CFG.n // 2, CFG.dim))
    eps = np.concatenate([half, -half])
    p_members = np.stack([pol.success(theta + sigma * eps) for pol in prompts], axis=1)  # [N, P]
    z = group_advantages(p_members.mean(axis=1))
    c = 0.9 / np.abs(z).max()
    w = (1.0 + c * z) / CFG.n
    theta_plus = theta + c * sigma / CFG.n * (z @ eps)
    return {
        "center": np.array([float(pol.success(theta)) for pol in prompts]),
        "mixture": w @ p_members,
        "updated": np.array([float(pol.success(theta_plus)) for pol in prompts]),
    }


def proposition(rng: np.random.Generator) -> list[dict]:
    trials = [_trial(rng) for _ in range(CFG.trials)]
    center, mixture, updated = (np.stack([t[key] for t in trials]) for key in ("center", "mixture", "updated"))
    eps_succ = bernoulli_kl(mixture, updated).mean(axis=1)  # [T]
    out, worst_transfer = [], 0.0
    for k in CFG.prop_ks:
        j_center, j_mix, j_upd = (mean_pass_at_k(x, k) for x in (center, mixture, updated))
        assumed = prop1_assumption(j_mix, j_center, eps_succ, k)
        concluded = prop1_conclusion(j_upd, j_mix, j_center, eps_succ, k)
        worst_transfer = max(worst_transfer, float(np.max(np.abs(j_upd - j_mix) / (k * np.sqrt(eps_succ / 2)))))
        n_assumed, n_concluded = int(assumed.sum()), int((assumed & concluded).sum())
        out.append(
            check_result(
                f"prop1/proposition/K={k}",
                n_assumed,
                n_concluded,
                n_assumed > 0 and n_concluded == n_assumed,
                detail=f"of {CFG.trials} toy populations ({CFG.prompts} prompts, N = {CFG.n}), "
                f"{n_assumed} meet the assumption J_K(pi_w) - J_K(pi_theta) > K sqrt(eps_succ/2); "
                f"the conclusion J_K(pi_+) >= J_K(pi_w) - K sqrt(eps_succ/2) > J_K(pi_theta) "
                f"holds on {n_concluded} of them",
                k=k,
            )
        )
    out.append(
        check_result(
            "prop1/transfer_bound",
            1.0,
            worst_transfer,
            worst_transfer <= 1.0 + 1e-12,
            detail="max over all trials and K of |J_K(pi_+) - J_K(pi_w)| / (K sqrt(eps_succ / 2))",
        )
    )
    return out


def run(rng: np.random.Generator) -> list[dict]:
    return transfer_bound_checks(rng) + proposition(rng)
