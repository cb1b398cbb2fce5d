"""GRPO's advantage estimators (`grpo.adv_estimator`): rewards [B, G] of B groups of G completions -> one
advantage per completion.

    grpo            (r_i - mean r) / (s + 1e-4), s by scale_rewards (group_advantages)
    grpo_passk      verl 0.9's Pass@k estimator (after arXiv 2503.19595): only the best completion of a group
                    (the first of equal bests) gets a non-zero advantage, r_max - r_second; with scale_rewards
                    group divided by (std + 1e-6), std the group's sample std (ddof 1, verl's torch.std), with
                    none not divided. An all-equal group, or one whose two best are equal, gets 0.
    passk_analytic  Chen et al. 2025 ("Pass@k training for adaptively balancing exploration and exploitation"):
                    the advantages of Pass@k training in closed form. With c correct completions of G and
                    k = pass_k, the group's Pass@k reward has mean Rbar = 1 - C(G - c, k) / C(G, k) and std
                    sigma = sqrt(Rbar (1 - Rbar)); a correct completion gets (1 - Rbar) / sigma, a wrong one
                    (1 - Rbar - C(G - c - 1, k - 1) / C(G - 1, k - 1)) / sigma; sigma = 0 (c = 0, or every
                    k-subset holds a correct one) gives 0. It reads correctness, not the reward.
    pkpo            PKPO (Walder & Karkhanis 2025, "Pass@K policy optimization"): the unbiased Pass@k gradient
                    sum_i s_i grad log pi(y_i), s_i = (1 / C(G, k)) sum over the k-subsets S holding i of max_S r
                    (any rewards, not only 0/1; from the sorted rewards r_(1) <= ... <= r_(G), i at rank p:
                    s_i = (r_(p) C(p - 1, k - 1) + sum_{q > p} r_(q) C(q - 2, k - 2)) / C(G, k)), minus a
                    leave-one-out baseline (k / G) b_i, b_i the unbiased Pass@k of the other G - 1 completions,
                    which does not depend on y_i and so keeps the estimate unbiased (an all-equal group gets 0);
                    scale_rewards none leaves it so, group divides it by the group's std + 1e-4 as grpo does.
"""

from __future__ import annotations

from math import comb

import numpy as np

from escov.llm.config import SCALE_REWARDS_BOOL
from escov.theory.paper import GRPO_ADVANTAGE_EPS
from escov.theory.standardize import standardize

PASSK_EPS = 1e-6  # verl's epsilon in grpo_passk's division by the group's std


def group_advantages(rewards: np.ndarray, scale_rewards: str | bool = "group") -> np.ndarray:
    """rewards [B, G] -> (r - group mean) / (s + 1e-4), exactly 0 for an all-equal group, where s is the
    group's population std ("group", or True), the whole batch's ("batch"); "none" (or False): r - group mean."""
    mode = SCALE_REWARDS_BOOL.get(scale_rewards, scale_rewards)
    if mode == "batch":
        centred = standardize(rewards, scale=False)
        return centred / (np.asarray(rewards, dtype=np.float64).std() + GRPO_ADVANTAGE_EPS)
    return standardize(rewards, GRPO_ADVANTAGE_EPS, scale=mode == "group")


def grpo_passk_advantages(rewards: np.ndarray, scale: bool) -> np.ndarray:
    """verl's grpo_passk: r_max - r_second to each group's (first) best completion, the rest 0."""
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.shape[1] < 2:
        raise ValueError(f"grpo_passk needs groups of at least 2 completions, got {rewards.shape[1]}")
    adv = np.zeros_like(rewards)
    for i, row in enumerate(rewards):
        best = int(np.argmax(row))
        gap = row[best] - np.sort(row)[-2]
        adv[i, best] = gap / (row.std(ddof=1) + PASSK_EPS) if scale else gap
    return adv


def passk_analytic_advantages(correct: np.ndarray, k: int) -> np.ndarray:
    """Chen et al.'s closed-form Pass@k group advantages from the [B, G] correctness of each completion."""
    correct = np.asarray(correct, dtype=bool)
    g = correct.shape[1]
    if not 1 <= k <= g:
        raise ValueError(f"pass_k must lie in [1, {g}] (the group size), got {k}")
    adv = np.zeros(correct.shape, dtype=np.float64)
    for i, row in enumerate(correct):
        c = int(row.sum())
        mean = 1.0 - comb(g - c, k) / comb(g, k)
        sigma = (mean * (1.0 - mean)) ** 0.5
        if sigma == 0.0:
            continue
        wrong = (1.0 - mean - comb(g - c - 1, k - 1) / comb(g - 1, k - 1)) / sigma
        adv[i] = np.where(row, (1.0 - mean) / sigma, wrong)
    return adv


def max_of_k_weights(rewards: np.ndarray, k: int) -> np.ndarray:
    """s_i of each row: the mean over the k-subsets of the row of max_S r, summed over the subsets holding i,
    divided by C(G, k) (the sorted-rank formula of the module docstring)."""
    rewards = np.asarray(rewards, dtype=np.float64)
    g = rewards.shape[1]
    out = np.zeros_like(rewards)
    for row, values in zip(out, rewards):
        order = np.argsort(values, kind="stable")
        ranked = values[order]
        for p in range(1, g + 1):  # 1-based rank
            above = sum(ranked[q - 1] * comb(q - 2, k - 2) for q in range(p + 1, g + 1)) if k >= 2 else 0.0
            row[order[p - 1]] = (ranked[p - 1] * comb(p - 1, k - 1) + above) / comb(g, k)
    return out


def pass_at_k_of(rewards: np.ndarray, k: int) -> np.ndarray:
    """The unbiased estimate of E[max of k draws] from each row: (1 / C(m, k)) sum over k-subsets of max_S r."""
    rewards = np.sort(np.asarray(rewards, dtype=np.float64), axis=1)
    m = rewards.shape[1]
    weights = np.array([comb(q - 1, k - 1) for q in range(1, m + 1)], dtype=np.float64) / comb(m, k)
    return rewards @ weights


def pkpo_advantages(rewards: np.ndarray, k: int, scale: bool) -> np.ndarray:
    """PKPO's s_i minus (k / G) x the leave-one-out Pass@k of the other completions (module docstring)."""
    rewards = np.asarray(rewards, dtype=np.float64)
    g = rewards.shape[1]
    if not 1 <= k <= g - 1:
        raise ValueError(f"pkpo needs pass_k in [1, {g - 1}] (a leave-one-out baseline of the group), got {k}")
    others = np.stack([pass_at_k_of(np.delete(rewards, i, axis=1), k) for i in range(g)], axis=1)
    adv = max_of_k_weights(rewards, k) - k / g * others
    return adv / (rewards.std(axis=1, keepdims=True) + GRPO_ADVANTAGE_EPS) if scale else adv


def advantages(rewards: np.ndarray, correct: np.ndarray, cfg) -> np.ndarray:
    """The [B, G] advantages of cfg.adv_estimator (with cfg.scale_rewards and cfg.pass_k)."""
    if cfg.adv_estimator == "grpo_passk":
        return grpo_passk_advantages(rewards, scale=cfg.scale_rewards == "group")
    if cfg.adv_estimator == "passk_analytic":
        return passk_analytic_advantages(correct, cfg.pass_k)
    if cfg.adv_estimator == "pkpo":
        return pkpo_advantages(rewards, cfg.pass_k, scale=cfg.scale_rewards == "group")
    return group_advantages(rewards, cfg.scale_rewards)
