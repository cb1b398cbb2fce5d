"""Entropy in GRPO's loss, as TRL 1.16's GRPOTrainer has it: the high-entropy token selection
(`top_entropy_quantile`, Wang et al. 2025, "Beyond the 80/20 rule: high-entropy minority tokens drive effective
RL for LLM reasoning") and the entropy bonus, fixed (`entropy_coef`) or adaptive (`use_adaptive_entropy`,
Skywork-OR1, He et al. 2025).

H_t is the entropy (nats) of the policy's next-token law at the sampling temperature, at each completion token.

    selection (top_entropy_quantile = rho < 1): a token keeps its policy term only when H_t >= the
        (1 - rho) quantile (torch.quantile, linear interpolation) of H over the batch's completion tokens;
        rho = 0 keeps the most uncertain token(s) alone, rho = 1 every token
    bonus: loss - coef x sum_t H_t m_t / sum_t m_t, m the selected tokens (all completion tokens when rho = 1),
        a plain token mean whatever the loss type's own averaging
    adaptive: the coefficient applied at an optimizer step is coef when the mean entropy Hbar measured at the
        previous optimizer step was <= entropy_target, else 0 (before any measurement: 0); after each optimizer
        step coef <- min(coef + delta, coef_max) if Hbar <= entropy_target, else max(coef - delta, coef_min)

TRL takes the quantile and the bonus's mean per micro-batch of its accumulation window; here both are over the
whole batch of the update (micro_batch_size stays a memory setting), the same where one micro-batch holds it.
"""

from __future__ import annotations

import math
from typing import Callable

import torch


def high_entropy_mask(entropy: torch.Tensor, mask: torch.Tensor, quantile: float) -> torch.Tensor:
    """Boolean [S, T]: completion tokens whose entropy is at or above the (1 - quantile) quantile of the
    completion tokens' entropies (TRL's get_high_entropy_mask on one process)."""
    values = entropy[mask.bool()].float()
    if values.numel() == 0:
        return torch.zeros_like(mask, dtype=torch.bool)
    threshold = torch.quantile(values, 1.0 - quantile)
    return (entropy * mask >= threshold) & mask.bool()


class EntropyControl:
    """The entropy coefficient across a phase's optimizer steps; its state is a dict of floats kept in the
    optimizer's state (checkpointed with it): {"coef": current coefficient, "last": the last measured mean
    entropy, inf before any}. state: gives that dict, asked for only when the bonus is on."""

    def __init__(self, cfg, state: Callable[[], dict]):
        self.cfg = cfg
        self.state = state() if self.enabled else {}
        self.state.setdefault("coef", float(cfg.entropy_coef))
        self.state.setdefault("last", math.inf)

    @property
    def enabled(self) -> bool:
        return self.cfg.entropy_coef != 0.0 or self.cfg.use_adaptive_entropy

    def applied(self) -> float:
        """The coefficient of this optimizer step's bonus."""
        if self.cfg.use_adaptive_entropy:
            return self.state["coef"] if self.state["last"] <= self.cfg.entropy_target else 0.0
        return self.state["coef"]

    def measured(self, mean_entropy: float) -> None:
        """After an optimizer step: the adaptive update from the step's mean entropy over the selected tokens."""
        if not self.cfg.use_adaptive_entropy:
            return
        cfg, coef = self.cfg, self.state["coef"]
        if mean_entropy <= cfg.entropy_target:
            self.state["coef"] = min(coef + cfg.entropy_coef_delta, cfg.entropy_coef_max)
        else:
            self.state["coef"] = max(coef - cfg.entropy_coef_delta, cfg.entropy_coef_min)
        self.state["last"] = float(mean_entropy)
