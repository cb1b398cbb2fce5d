"""The `[grpo]` table's rules (llm/settings/grpo_config.py GRPOConfig.validate): each value on both sides of its
bound, each combination refused, each message whole; scale_rewards' booleans and the upper clip's default."""

from __future__ import annotations

import math

import pytest

from escov.llm.settings.grpo_config import GRPOConfig

REFUSED = [
    ({"num_generations": 1}, "grpo.num_generations must be >= 2 (a group), got 1"),
    ({"num_generations": 0}, "grpo.num_generations must be an integer >= 1, got 0"),
    ({"num_iterations": 0}, "grpo.num_iterations must be an integer >= 1, got 0"),
    ({"micro_batch_size": 2.0}, "grpo.micro_batch_size must be an integer >= 1, got 2.0"),
    ({"learning_rate": 0.0}, "grpo.learning_rate must be a finite number > 0, got 0.0"),
    ({"epsilon": 0.0}, "grpo.epsilon must be a finite number > 0, got 0.0"),
    ({"beta": -0.001}, "grpo.beta must be a finite number >= 0, got -0.001"),
    ({"max_grad_norm": math.nan}, "grpo.max_grad_norm must be a finite number >= 0, got nan"),
    ({"weight_decay": True}, "grpo.weight_decay must be a finite number >= 0, got True"),
    ({"scale_rewards": "std"}, "grpo.scale_rewards must be one of ['group', 'batch', 'none'], got 'std'"),
    (
        {"lr_scheduler_type": "step"},
        "grpo.lr_scheduler_type must be one of ['constant', 'constant_with_warmup', 'linear', 'cosine'], got 'step'",
    ),
    ({"epsilon_high": -0.1}, "grpo.epsilon_high must be a finite number >= 0, got -0.1"),
    ({"top_p": 0.0}, "grpo.top_p must be a finite number in (0, 1], got 0.0"),
    ({"top_p": 1.01}, "grpo.top_p must be a finite number in (0, 1], got 1.01"),
    ({"min_p": 1.5}, "grpo.min_p must be a finite number in [0, 1], got 1.5"),
    (
        {"lr_scheduler_type": "linear", "warmup_ratio": -0.1},
        "grpo.warmup_ratio must be a finite number in [0, 1], got -0.1",
    ),
    ({"top_k": -1}, "grpo.top_k must be an integer >= 0, got -1"),
    ({"top_k": True}, "grpo.top_k must be an integer >= 0, got True"),
    ({"top_p": True}, "grpo.top_p must be a finite number in (0, 1], got True"),
    ({"top_p": "0.9"}, "grpo.top_p must be a finite number in (0, 1], got '0.9'"),
    ({"use_peft": True, "lora_dropout": 1.5}, "grpo.lora_dropout must be a finite number in [0, 1], got 1.5"),
    (
        {"loss_type": "ppo"},
        "grpo.loss_type must be one of ['grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo', 'sapo', 'clip_cov', 'kl_cov'], "
        "got 'ppo'",
    ),
    ({"lr_scheduler_type": "linear", "warmup_steps": -1}, "grpo.warmup_steps must be an integer >= 0, got -1"),
    ({"use_peft": True, "lora_r": 0}, "grpo.lora_r must be an integer >= 1, got 0"),
    ({"use_peft": True, "lora_alpha": 0}, "grpo.lora_alpha must be an integer >= 1, got 0"),
    (
        {"warmup_steps": 3},
        "grpo.warmup_ratio / grpo.warmup_steps need grpo.lr_scheduler_type constant_with_warmup, linear or cosine "
        "(constant has no warmup, as in transformers)",
    ),
    (
        {"warmup_ratio": 0.1},
        "grpo.warmup_ratio / grpo.warmup_steps need grpo.lr_scheduler_type constant_with_warmup, linear or cosine "
        "(constant has no warmup, as in transformers)",
    ),
    ({"use_peft": 1}, "grpo.use_peft must be true or false, got 1"),
    (
        {"use_peft": True, "lora_target_modules": "q_proj, v_proj"},
        "grpo.lora_target_modules must be comma-separated module names, got 'q_proj, v_proj'",
    ),
    (
        {"lora_r": 8},
        "grpo.lora_r = 8 does nothing without grpo.use_peft = true (--use_peft true trains LoRA adapters); give "
        "both, or drop it",
    ),
    (
        {"lora_dropout": 0.1},
        "grpo.lora_dropout = 0.1 does nothing without grpo.use_peft = true (--use_peft true trains LoRA adapters); "
        "give both, or drop it",
    ),
]

ACCEPTED = [
    {"num_generations": 2},
    {"beta": 0.0, "max_grad_norm": 0.0, "weight_decay": 0.0},
    {"epsilon_high": 0.0},
    {"top_p": 1.0, "min_p": 0.0, "top_k": 0},
    {"top_p": 1e-6, "min_p": 1.0},
    {"lr_scheduler_type": "constant_with_warmup", "warmup_ratio": 1.0},
    {"lr_scheduler_type": "cosine", "warmup_steps": 0},
    {"use_peft": True, "lora_r": 1, "lora_alpha": 1, "lora_dropout": 0.0, "lora_target_modules": "q_proj,v_proj"},
    {"use_peft": True, "lora_target_modules": "model.layers.0.mlp"},
]


@pytest.mark.parametrize("settings, message", REFUSED)
def test_each_refused_value_or_combination_is_named_whole(settings, message):
    with pytest.raises(ValueError) as err:
        GRPOConfig(**settings).validate()
    assert str(err.value) == message


@pytest.mark.parametrize("settings", ACCEPTED)
def test_each_value_at_or_inside_its_bound_is_accepted(settings):
    GRPOConfig(**settings).validate()


@pytest.mark.parametrize(
    "given, read", [(True, "group"), (False, "none"), ("true", "group"), ("false", "none"), ("batch", "batch")]
)
def test_scale_rewards_reads_trls_booleans_as_group_and_none(given, read):
    assert GRPOConfig(scale_rewards=given).scale_rewards == read


def test_the_upper_clip_is_epsilon_high_or_epsilon_when_it_is_zero():
    assert GRPOConfig(epsilon=0.2).clip_high == 0.2
    assert GRPOConfig(epsilon=0.2, epsilon_high=0.28).clip_high == 0.28
