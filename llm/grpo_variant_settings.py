"""The settings of GRPO's coverage-keeping variants (llm/grpo_objectives.py, llm/grpo_covariance.py,
llm/grpo_entropy.py, llm/grpo_advantages.py, llm/grpo_exploration.py): their choices, their ranges, and the
combinations refused. GRPOConfig.validate (llm/settings/grpo_config.py) calls check_variant_settings; like the
rest of the settings, this module imports no torch.

Each variant's settings carry its source's name and default (TRL 1.16's GRPOConfig where TRL has the variant,
verl 0.9's core_algos otherwise), so that every default leaves plain GRPO unchanged. A setting that belongs to
one variant and is moved off its default while that variant is off is refused in one line naming both settings,
and so is a pair of variants that cannot act together.
"""

from __future__ import annotations

import dataclasses
import math

IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")  # TRL: per-token ratios | GSPO's one ratio per sequence
ADV_ESTIMATORS = ("grpo", "grpo_passk", "passk_analytic", "pkpo")  # llm/grpo_advantages.py
COVARIANCE_LOSSES = ("clip_cov", "kl_cov")  # llm/grpo_covariance.py: per-token covariance selection
CLIPPED_LOSSES = ("grpo", "bnpo", "dr_grpo", "dapo")  # PPO's clipped ratio; llm/grpo_objectives.py

# setting -> (the condition under which it acts, that condition's text): a setting moved off its default (the
# dataclass's) while its condition does not hold is refused, naming the setting that would turn it on
_OWNED = {
    "sapo_temperature_pos": (lambda c: c.loss_type == "sapo", "grpo.loss_type sapo"),
    "sapo_temperature_neg": (lambda c: c.loss_type == "sapo", "grpo.loss_type sapo"),
    "clip_cov_ratio": (lambda c: c.loss_type == "clip_cov", "grpo.loss_type clip_cov"),
    "clip_cov_lb": (lambda c: c.loss_type == "clip_cov", "grpo.loss_type clip_cov"),
    "clip_cov_ub": (lambda c: c.loss_type == "clip_cov", "grpo.loss_type clip_cov"),
    "kl_cov_ratio": (lambda c: c.loss_type == "kl_cov", "grpo.loss_type kl_cov"),
    "ppo_kl_coef": (lambda c: c.loss_type == "kl_cov", "grpo.loss_type kl_cov"),
    "entropy_coef_min": (lambda c: c.use_adaptive_entropy, "grpo.use_adaptive_entropy true"),
    "entropy_coef_max": (lambda c: c.use_adaptive_entropy, "grpo.use_adaptive_entropy true"),
    "entropy_coef_delta": (lambda c: c.use_adaptive_entropy, "grpo.use_adaptive_entropy true"),
    "entropy_target": (lambda c: c.use_adaptive_entropy, "grpo.use_adaptive_entropy true"),
    "pass_k": (lambda c: c.adv_estimator in ("passk_analytic", "pkpo"), "grpo.adv_estimator passk_analytic or pkpo"),
}


def _number(cfg, name: str, low: float, high: float = math.inf, low_open: bool = False) -> None:
    v = getattr(cfg, name)
    if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not math.isfinite(v)
        or not low <= v <= high
        or (low_open and v == low)
    ):
        where = (f"> {low:g}" if low_open else f">= {low:g}") if high == math.inf else f"in [{low:g}, {high:g}]"
        raise ValueError(f"grpo.{name} must be a finite number {where}, got {v!r}")


def check_variant_settings(cfg) -> None:
    """ValueError (one line) for a variant setting out of range or a combination that makes no sense."""
    if cfg.importance_sampling_level not in IMPORTANCE_SAMPLING_LEVELS:
        raise ValueError(
            f"grpo.importance_sampling_level must be one of {list(IMPORTANCE_SAMPLING_LEVELS)}, "
            f"got {cfg.importance_sampling_level!r}"
        )
    if cfg.adv_estimator not in ADV_ESTIMATORS:
        raise ValueError(f"grpo.adv_estimator must be one of {list(ADV_ESTIMATORS)}, got {cfg.adv_estimator!r}")
    for name in ("use_adaptive_entropy", "zero_success_gating"):
        if not isinstance(getattr(cfg, name), bool):
            raise ValueError(f"grpo.{name} must be true or false, got {getattr(cfg, name)!r}")
    for name in (
        "entropy_coef",
        "entropy_coef_min",
        "entropy_coef_delta",
        "entropy_target",
        "ppo_kl_coef",
        "outcome_bonus_coef",
    ):
        _number(cfg, name, 0.0)
    _number(cfg, "top_entropy_quantile", 0.0, 1.0)
    for name in ("sapo_temperature_pos", "sapo_temperature_neg", "clip_cov_ratio", "kl_cov_ratio"):
        _number(cfg, name, 0.0, low_open=True)
    for name in ("clip_cov_lb", "clip_cov_ub"):
        _number(cfg, name, -math.inf)
    _number(cfg, "entropy_coef_max", cfg.entropy_coef_min)
    reads_k = _OWNED["pass_k"][0](cfg)  # k <= G where an estimator reads it; the default k = 4 stands beside any G
    if (
        isinstance(cfg.pass_k, bool)
        or not isinstance(cfg.pass_k, int)
        or cfg.pass_k < 1
        or (reads_k and cfg.pass_k > cfg.num_generations)
    ):
        raise ValueError(
            f"grpo.pass_k must be an integer in [1, grpo.num_generations={cfg.num_generations}], got {cfg.pass_k!r}"
        )
    defaults = {f.name: f.default for f in dataclasses.fields(cfg)}
    for name, (acts, condition) in _OWNED.items():
        if getattr(cfg, name) != defaults[name] and not acts(cfg):
            raise ValueError(f"grpo.{name} = {getattr(cfg, name)!r} does nothing without {condition}")
    if cfg.clip_cov_lb >= cfg.clip_cov_ub:
        raise ValueError(f"grpo.clip_cov_lb ({cfg.clip_cov_lb:g}) must be below grpo.clip_cov_ub ({cfg.clip_cov_ub:g})")
    if cfg.importance_sampling_level == "sequence" and cfg.loss_type in COVARIANCE_LOSSES:
        raise ValueError(
            f"grpo.loss_type {cfg.loss_type} selects single tokens by their covariance: it needs "
            "grpo.importance_sampling_level token, got sequence"
        )
    if cfg.adv_estimator in ("grpo_passk", "pkpo") and cfg.scale_rewards == "batch":
        raise ValueError(
            f"grpo.adv_estimator {cfg.adv_estimator} divides by its group's std (grpo.scale_rewards "
            "group) or by nothing (none): grpo.scale_rewards batch has no meaning there"
        )
    if cfg.adv_estimator == "pkpo" and cfg.pass_k > cfg.num_generations - 1:
        raise ValueError(
            f"grpo.adv_estimator pkpo's leave-one-out baseline needs grpo.pass_k <= grpo.num_generations"
            f" - 1 = {cfg.num_generations - 1}, got {cfg.pass_k}"
        )
    if cfg.adv_estimator == "passk_analytic" and cfg.scale_rewards != "group":
        raise ValueError(
            f"grpo.adv_estimator passk_analytic is standardized by its own closed-form std: it needs "
            f"grpo.scale_rewards group, got {cfg.scale_rewards}"
        )
    if cfg.epsilon_high and cfg.loss_type in ("sapo", "kl_cov"):
        raise ValueError(f"grpo.epsilon_high does nothing with grpo.loss_type {cfg.loss_type} (it has no clip range)")
