"""Lemma 2 checks: P_pop >= P_same, its exact gap, its local form, and the K-of-N case.

Populations of member success probabilities p [R, N] are drawn from Beta distributions (with some
members set to exactly 0 or 1), so the statements are tested on arbitrary p, not only on ES toys.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from escov.theory.checks.result import check_result
from escov.theory.lemmas import (
    distinct_members_pass,
    elementary_symmetric,
    lemma2_gap_expansion,
    lemma2_gap_local,
    mixture_pass,
    population_pass,
    same_policy_pass,
)


@dataclass(frozen=True)
class Lemma2Config:
    populations: int = 4000
    n: int = 8
    local_radii: tuple[float, ...] = (0.1, 0.03, 0.01, 0.003)
    local_claimed: float = 0.03  # the local form is claimed for spreads |xi| <= this
    mc_draws: int = 200_000  # Monte Carlo draws for P_pop and the K-of-N cases
    k_values: tuple[int, ...] = (2, 4)
    z: float = 4.0


CFG = Lemma2Config()


def _random_populations(rng: np.random.Generator) -> np.ndarray:
    a, b = rng.uniform(0.2, 5.0, size=(2, CFG.populations, 1))
    p = rng.beta(a, b, size=(CFG.populations, CFG.n))
    edge = rng.random(p.shape) < 0.05
    p[edge] = rng.integers(0, 2, size=edge.sum())  # some members exactly 0 or 1
    return p


def inequality_and_exact_gap(rng: np.random.Generator) -> list[dict]:
    p = _random_populations(rng)
    pop, same = population_pass(p), same_policy_pass(p)
    gap = pop - same
    expansion = lemma2_gap_expansion(p)
    unequal = p.max(axis=1) - p.min(axis=1) > 1e-3
    with np.errstate(divide="ignore"):  # log(0) = -inf where a member always succeeds
        log_fail_ratio = np.log1p(-p).sum(axis=1) - CFG.n * np.log1p(-p.mean(axis=1))
    fail_ratio = np.exp(log_fail_ratio[unequal])  # prod(1 - p_i) / (1 - p_bar)^N < 1 (AM-GM)
    equal_p = np.repeat(rng.random((200, 1)), CFG.n, axis=1)
    equal_gap = np.abs(population_pass(equal_p) - same_policy_pass(equal_p)).max()
    # e_k by the recursion against brute force over all k-subsets, on the first population
    xi = p[0] - p[0].mean()
    brute = [sum(np.prod(xi[list(s)]) for s in itertools.combinations(range(CFG.n), k)) for k in range(CFG.n + 1)]
    esp_err = float(np.max(np.abs(elementary_symmetric(xi) - brute)))
    ratio_same_pop = same[pop > 0] / pop[pop > 0]
    return [
        check_result(
            "lemma2/p_pop_ge_p_same",
            1.0,
            ratio_same_pop.max(),
            ratio_same_pop.max() <= 1.0 + 1e-12,
            detail=f"max over {CFG.populations} populations (N = {CFG.n}) of P_same / P_pop",
        ),
        check_result(
            "lemma2/strict_unless_equal",
            1.0,
            float(fail_ratio.max()),
            bool(fail_ratio.max() < 1.0) and equal_gap < 1e-14,
            detail=f"max over populations with spread > 1e-3 of prod(1 - p_i) / (1 - p_bar)^N (must be < 1, "
            f"so P_pop > P_same); max |P_pop - P_same| over 200 all-equal populations: {equal_gap:.1e}",
        ),
        check_result(
            "lemma2/exact_gap_expansion",
            float(gap.sum()),
            float(expansion.sum()),
            float(np.max(np.abs(gap - expansion))) < 1e-12,
            detail=f"sum over populations of P_pop - P_same vs -sum_k (-1)^k (1-p_bar)^(N-k) e_k(xi); max abs "
            f"difference {np.max(np.abs(gap - expansion)):.1e}; e_k recursion vs subsets: {esp_err:.1e}",
        ),
    ]


def local_form(rng: np.random.Generator) -> list[dict]:
    """Gap vs N p_bar (1 - p_bar)^(N-1) JSsucc_N for populations p_bar + r u, |u_i| <= 1: error O(r)."""
    out = []
    p_bar = rng.uniform(0.2, 0.8, size=(CFG.populations, 1))
    u = rng.uniform(-1, 1, size=(CFG.populations, CFG.n))
    u -= u.mean(axis=1, keepdims=True)
    u /= np.abs(u).max(axis=1, keepdims=True)
    for r in CFG.local_radii:
        p = p_bar + r * u
        exact = population_pass(p) - same_policy_pass(p)
        local = lemma2_gap_local(p)
        worst = float(np.max(np.abs(local / exact - 1.0)))
        regime = None if r <= CFG.local_claimed else f"spread r = {r} > {CFG.local_claimed}: O(|xi|^3) terms matter"
        out.append(
            check_result(
                f"lemma2/local_form/r={r:g}",
                float(exact.mean()),
                float(local.mean()),
                worst <= 5 * r,
                regime=regime,
                radius=r,
                detail=f"mean gap vs mean local form; worst relative error {worst:.2e} (claimed O(r): <= 5 r)",
            )
        )
    return out


def monte_carlo(rng: np.random.Generator) -> list[dict]:
    """P_pop and the K-of-N cases by sampling, against the exact formulas."""
    p = np.array([0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.8, 0.9])
    n, draws = p.size, CFG.mc_draws
    hits = rng.random((draws, n)) < p  # one draw from each member
    any_hit = hits.any(axis=1)
    out = [
        check_result(
            "lemma2/p_pop_monte_carlo",
            float(population_pass(p)),
            any_hit.mean(),
            abs(any_hit.mean() - population_pass(p)) <= CFG.z * any_hit.std() / np.sqrt(draws),
            stderr=any_hit.std() / np.sqrt(draws),
            detail="one sampled answer from each of N members",
        )
    ]
    for k in CFG.k_values:
        members = np.argsort(rng.random((draws, n)), axis=1)[:, :k]  # k distinct members, uniform
        distinct = np.take_along_axis(hits, members, axis=1).any(axis=1)
        chosen = rng.integers(0, n, size=(draws, k))  # k members with replacement
        mixture = (rng.random((draws, k)) < p[chosen]).any(axis=1)
        exact_distinct, exact_mixture = float(distinct_members_pass(p, k)), float(mixture_pass(p, k))
        se_d, se_m = distinct.std() / np.sqrt(draws), mixture.std() / np.sqrt(draws)
        out += [
            check_result(
                f"lemma2/k_of_n/distinct_members_monte_carlo/K={k}",
                exact_distinct,
                distinct.mean(),
                abs(distinct.mean() - exact_distinct) <= CFG.z * se_d,
                stderr=se_d,
                detail="K distinct members (without replacement), one draw each, vs 1 - e_K(1-p)/C(N,K)",
            ),
            check_result(
                f"lemma2/k_of_n/distinct_beats_same/K={k}",
                exact_mixture,
                exact_distinct,
                exact_distinct > exact_mixture,
                detail="exact: K distinct members vs K draws from one policy of success p_bar (must be larger)",
            ),
            check_result(
                f"lemma2/k_of_n/mixture_no_gain/K={k}",
                exact_mixture,
                mixture.mean(),
                abs(mixture.mean() - exact_mixture) <= CFG.z * se_m,
                stderr=se_m,
                detail="K members drawn with replacement (the mixture) vs 1 - (1 - p_bar)^K: no gain",
            ),
        ]
    return out


def run(rng: np.random.Generator) -> list[dict]:
    return inequality_and_exact_gap(rng) + local_form(rng) + monte_carlo(rng)
