"""GRPO's per-token policy terms l_t for each loss type, and the importance ratio they weigh (TRL 1.16's
GRPOTrainer._compute_loss, term for term; verl's covariance losses: llm/grpo_covariance.py).

With log-probs logp_t of the policy, old_t of the sampling policy (pi_old) and a completion's advantage A:

    importance_sampling_level "token":    w_t = exp(logp_t - old_t)
                              "sequence": w_t = w = exp((1/T) sum_t (logp_t - old_t))   (GSPO: the completion's
                                          geometric-mean ratio, one per completion, Zheng et al. 2025)
    clipped (grpo, bnpo, dr_grpo, dapo):  l_t = -min(w_t A, clip(w_t, 1 - epsilon, 1 + epsilon_high) A)
    cispo (MiniMax-M1):                   l_t = -sg[min(w_t, epsilon_high)] A logp_t   (sg: no gradient; the
                                          ratio itself is capped, never a token's gradient dropped; TRL's cap is
                                          epsilon_high as given, epsilon when 0 - ScaleRL recommends 5.0)
    sapo (SAPO, arXiv 2511.20347):        l_t = -(4 / tau) sigmoid(tau (w_t - 1)) A, tau = sapo_temperature_pos
                                          for A > 0, sapo_temperature_neg otherwise (a soft gate: at w = 1 its
                                          gradient is A grad logp, as the clipped loss's; far off-policy it fades)

The loss type's mean (llm/grpo_losses.py) then averages the terms.
"""

from __future__ import annotations

import torch


def importance_weights(logp: torch.Tensor, old: torch.Tensor, mask: torch.Tensor, level: str) -> torch.Tensor:
    """w [S, T] (token) or [S, 1] (sequence: exp of the masked mean log-ratio of each completion)."""
    log_ratio = logp - old
    if level == "sequence":
        return torch.exp((log_ratio * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True).clamp(min=1.0))
    return torch.exp(log_ratio)


def policy_terms(logp: torch.Tensor, old: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, cfg):
    """(l [S, T] or [S, 1], w) for the clipped losses, cispo and sapo; adv [S]."""
    w = importance_weights(logp, old, mask, cfg.importance_sampling_level)
    a = adv[:, None]
    if cfg.loss_type == "cispo":
        return -torch.clamp(w, max=cfg.clip_high).detach() * a * logp, w
    if cfg.loss_type == "sapo":
        tau = torch.where(a > 0, cfg.sapo_temperature_pos, cfg.sapo_temperature_neg)
        return -torch.sigmoid(tau * (w - 1)) * 4 / tau * a, w
    return -torch.min(w * a, torch.clamp(w, 1 - cfg.epsilon, 1 + cfg.clip_high) * a), w
