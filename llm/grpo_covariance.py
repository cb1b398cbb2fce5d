"""Covariance-based entropy control (Cui et al. 2025, "The Entropy Mechanism of Reinforcement Learning for
Reasoning Language Models"): loss types clip_cov and kl_cov, as verl 0.9's core_algos defines them.

Entropy falls fastest through the few tokens whose log-prob and advantage covary most. Over the N completion
tokens of a micro-batch (verl computes these statistics per micro-batch too), with A_t the token's completion
advantage, w_t = exp(logp_t - old_t) and means taken over the N tokens:

    cov_t = (A_t - mean A) (logp_t - mean logp)          (a number; no gradient flows through the selection)

    clip_cov: l_t = max(-A_t w_t, -A_t clip(w_t, 1 - epsilon, 1 + epsilon_high)) x c_t, where c_t = 0 for
              max(1, floor(clip_cov_ratio N)) tokens drawn at random (seeded) among those whose clipped branch is
              not active and clip_cov_lb < cov_t < clip_cov_ub, else c_t = 1: those tokens get no gradient
    kl_cov:   l_t = -A_t w_t + ppo_kl_coef |logp_t - old_t| for the max(1, floor(kl_cov_ratio N)) tokens of
              largest cov_t, l_t = -A_t w_t for the rest (no ratio clipping in kl_cov)

Both return the share of the N tokens so treated ("cov_share").
"""

from __future__ import annotations

import torch


def _covariance(logp: torch.Tensor, a: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """cov_t over the valid tokens (logp without gradient), [S, T]."""
    n = valid.sum().clamp(min=1)
    lp = logp.detach()
    return (a - (a * valid).sum() / n) * (lp - (lp * valid).sum() / n)


def clip_cov_terms(logp, old, adv, mask, cfg, generator: torch.Generator):
    """(l [S, T], w [S, T], share of tokens cut) for loss_type clip_cov."""
    w = torch.exp(logp - old)
    a = adv[:, None].expand_as(logp)
    valid = mask > 0
    unclipped, clipped = -a * w, -a * torch.clamp(w, 1 - cfg.epsilon, 1 + cfg.clip_high)
    cov = _covariance(logp, a, valid)
    candidates = valid & ~(clipped > unclipped) & (cov > cfg.clip_cov_lb) & (cov < cfg.clip_cov_ub)
    where = torch.nonzero(candidates.flatten()).squeeze(1)
    n_cut = min(max(int(cfg.clip_cov_ratio * int(valid.sum())), 1), len(where))
    keep = torch.ones(logp.numel(), dtype=logp.dtype, device=logp.device)
    order = torch.randperm(len(where), generator=generator).to(where.device)
    keep[where[order[:n_cut]]] = 0.0
    terms = torch.maximum(unclipped, clipped) * keep.view_as(logp)
    return terms, w, n_cut / max(int(valid.sum()), 1)


def kl_cov_terms(logp, old, adv, mask, cfg):
    """(l [S, T], w [S, T], share of tokens penalized) for loss_type kl_cov."""
    log_ratio = logp - old
    w = torch.exp(log_ratio)
    a = adv[:, None].expand_as(logp)
    valid = mask > 0
    n_valid = int(valid.sum())
    terms = -a * w
    if n_valid == 0:
        return terms, w, 0.0
    cov = _covariance(logp, a, valid).flatten()
    where = torch.nonzero(valid.flatten()).squeeze(1)
    k = max(1, int(n_valid * cfg.kl_cov_ratio))
    chosen = where[torch.topk(cov[where], k).indices]
    penalty = torch.zeros(logp.numel(), dtype=logp.dtype, device=logp.device)
    penalty[chosen] = 1.0
    terms = terms + cfg.ppo_kl_coef * log_ratio.abs() * penalty.view_as(logp)
    return terms, w, k / n_valid
