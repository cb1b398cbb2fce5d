"""The `[grpo]` table (`GRPOConfig`): the settings of GRPO (llm/grpo.py), TRL's variants and LoRA included."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from escov.llm.grpo_losses import LOSSES
from escov.llm.grpo_variant_settings import check_variant_settings

SCALE_REWARDS = ("group", "batch", "none")  # what the centred rewards are divided by (TRL's names)
# scale_rewards's former true / false (TRL takes both)
SCALE_REWARDS_BOOL = {True: "group", False: "none", "true": "group", "false": "none"}
# llm/grpo.py lr_factor: transformers' schedules of these names
LR_SCHEDULERS = ("constant", "constant_with_warmup", "linear", "cosine")
LORA_SETTINGS = ("lora_r", "lora_alpha", "lora_dropout", "lora_target_modules")  # read only with use_peft


@dataclass
class GRPOConfig:
    num_generations: int = 8         # G completions per prompt (paper 8)
    learning_rate: float = 1e-6      # AdamW (paper 1e-6); typical: 1e-6 to 1e-5 for 1B-7B checkpoints (1e-5 to 1e-4
                                     # with LoRA), 1e-4 to 1e-2 for the tiny model
    beta: float = 0.001              # KL penalty to the frozen reference (paper 0.001); 0: no reference
    epsilon: float = 0.2             # PPO clip range (paper 0.2)
    num_iterations: int = 1          # mu: optimizer steps per batch of rollouts
    loss_type: str = "grpo"          # grpo: mean over completions of their token mean | bnpo, dapo: token mean of the
                                     # batch | dr_grpo: token sum / (completions x max_completion_length) | cispo, sapo,
                                     # clip_cov, kl_cov
    scale_rewards: str = "group"     # advantages (r - group mean) divided by the std of the group | batch | none (true
                                     # = group, false = none)
    max_grad_norm: float = 1.0       # gradient clipping (0: none)
    weight_decay: float = 0.0        # AdamW weight decay
    micro_batch_size: int = 64       # sequences per forward/backward (memory only)
    # ---- TRL's GRPO variants (llm/grpo.py); the defaults keep the settings above as they were ----
    epsilon_high: float = 0.0        # upper clip: ratio clipped to [1 - epsilon, 1 + epsilon_high] (DAPO: 0.28); 0:
                                     # epsilon
    mask_truncated_completions: bool = False  # completions cut at max_completion_length get no loss
    top_p: float = 1.0               # rollouts: nucleus sampling (1: off)
    top_k: int = 0                   # rollouts: sample among the k most likely tokens (0: off)
    min_p: float = 0.0               # rollouts: drop tokens below min_p x the top token's probability (0: off)
    lr_scheduler_type: str = "constant"  # constant | constant_with_warmup | linear (to 0) | cosine (to 0), over the
                                         # phase's optimizer steps
    warmup_ratio: float = 0.0        # linear warmup from 0 over this share of the phase's optimizer steps (rounded up)
    warmup_steps: int = 0            # linear warmup over this many optimizer steps (overrides warmup_ratio)
    use_peft: bool = False           # train LoRA adapters (peft) instead of all weights; checkpoints hold the merged
                                     # weights
    lora_r: int = 16                 # LoRA rank
    lora_alpha: int = 32             # LoRA scale alpha (update B A x alpha / r)
    lora_dropout: float = 0.05       # dropout on the LoRA branch's input during the update
    lora_target_modules: str = ""    # comma-separated module names ("q_proj,v_proj"); "": peft's default for the
                                     # architecture
    gradient_checkpointing: bool = False  # recompute activations in the backward pass (less memory, same gradient)
    # ---- coverage-keeping variants (docs/training.md; names and defaults: TRL 1.16, else verl 0.9) ----
    entropy_coef: float = 0.0        # TRL: loss - entropy_coef x mean token entropy (entropy bonus); 0: none
    use_adaptive_entropy: bool = False  # TRL (Skywork-OR1): entropy_coef +- entropy_coef_delta each optimizer step
    entropy_coef_min: float = 0.0    # TRL, adaptive entropy: lower bound of the coefficient
    entropy_coef_max: float = 1.0    # TRL, adaptive entropy: upper bound of the coefficient
    entropy_coef_delta: float = 0.005  # TRL, adaptive entropy: the coefficient's step
    entropy_target: float = 0.2      # TRL, adaptive entropy: the bonus acts while mean token entropy (nats) <= this
    top_entropy_quantile: float = 1.0  # TRL (80/20 rule): only this top share of tokens by entropy gets a loss
    importance_sampling_level: str = "token"  # TRL: token | sequence (GSPO: one geometric-mean ratio per completion)
    sapo_temperature_pos: float = 1.0  # TRL, loss_type sapo: soft-gate temperature for advantages > 0
    sapo_temperature_neg: float = 1.05  # TRL, loss_type sapo: soft-gate temperature for advantages <= 0
    clip_cov_ratio: float = 0.0002   # verl, loss_type clip_cov: share of tokens whose gradient is cut
    clip_cov_lb: float = 1.0         # verl, loss_type clip_cov: covariance lower bound of the candidates
    clip_cov_ub: float = 5.0         # verl, loss_type clip_cov: covariance upper bound of the candidates
    kl_cov_ratio: float = 0.0002     # verl, loss_type kl_cov: share of tokens (largest covariance) KL-penalized
    ppo_kl_coef: float = 1.0         # verl, loss_type kl_cov: weight of |log pi - log pi_old| on those tokens
    adv_estimator: str = "grpo"      # grpo | grpo_passk (verl: the best gets r_max - r_second) | passk_analytic | pkpo
    pass_k: int = 4                  # adv_estimator passk_analytic (Chen et al. 2025), pkpo (PKPO): the k of Pass@k
    zero_success_gating: bool = False  # update only on prompts never solved at an earlier step of the phase
    outcome_bonus_coef: float = 0.0  # outcome-based exploration (Song et al. 2025): reward + c / sqrt(n(answer)); 0:
                                     # off

    def __post_init__(self) -> None:
        if isinstance(self.scale_rewards, (bool, str)):
            self.scale_rewards = SCALE_REWARDS_BOOL.get(self.scale_rewards, self.scale_rewards)

    @property
    def clip_high(self) -> float:
        """The upper clip range: epsilon_high, or epsilon when it is 0."""
        return self.epsilon_high or self.epsilon

    def validate(self) -> None:
        for name in ("num_generations", "num_iterations", "micro_batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"grpo.{name} must be an integer >= 1, got {v!r}")
        if self.num_generations < 2:
            raise ValueError(f"grpo.num_generations must be >= 2 (a group), got {self.num_generations}")
        for name, low_open in (("learning_rate", True), ("epsilon", True), ("beta", False),
                               ("max_grad_norm", False), ("weight_decay", False)):
            v = getattr(self, name)
            if (isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0
                    or (low_open and v == 0)):
                raise ValueError(f"grpo.{name} must be a finite number {'> 0' if low_open else '>= 0'}, got {v!r}")
        if self.loss_type not in LOSSES:
            raise ValueError(f"grpo.loss_type must be one of {list(LOSSES)}, got {self.loss_type!r}")
        for name, choices in (("scale_rewards", SCALE_REWARDS), ("lr_scheduler_type", LR_SCHEDULERS)):
            if getattr(self, name) not in choices:
                raise ValueError(f"grpo.{name} must be one of {list(choices)}, got {getattr(self, name)!r}")
        for name, low, high in (("epsilon_high", 0.0, math.inf), ("top_p", 0.0, 1.0), ("min_p", 0.0, 1.0),
                                ("warmup_ratio", 0.0, 1.0), ("lora_dropout", 0.0, 1.0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not low <= v <= high \
                    or (name == "top_p" and v == 0):
                where = ">= 0" if high == math.inf else f"in {'(' if name == 'top_p' else '['}{low:g}, {high:g}]"
                raise ValueError(f"grpo.{name} must be a finite number {where}, got {v!r}")
        for name, low in (("top_k", 0), ("warmup_steps", 0), ("lora_r", 1), ("lora_alpha", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"grpo.{name} must be an integer >= {low}, got {v!r}")
        if self.lr_scheduler_type == "constant" and (self.warmup_ratio or self.warmup_steps):
            raise ValueError("grpo.warmup_ratio / grpo.warmup_steps need grpo.lr_scheduler_type constant_with_warmup, "
                             "linear or cosine (constant has no warmup, as in transformers)")
        for name in ("mask_truncated_completions", "use_peft", "gradient_checkpointing"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"grpo.{name} must be true or false, got {getattr(self, name)!r}")
        targets = self.lora_target_modules
        if not isinstance(targets, str) or not re.fullmatch(r"([\w.]+(,[\w.]+)*)?", targets):
            raise ValueError(f"grpo.lora_target_modules must be comma-separated module names, got {targets!r}")
        lora = [n for n in LORA_SETTINGS if getattr(self, n) != GRPOConfig.__dataclass_fields__[n].default]
        if lora and not self.use_peft:
            raise ValueError(f"grpo.{lora[0]} = {getattr(self, lora[0])!r} does nothing without grpo.use_peft = true "
                             "(--use_peft true trains LoRA adapters); give both, or drop it")
        check_variant_settings(self)  # llm/grpo_variant_settings.py
