"""The GRPO variants' settings (llm/grpo_variant_settings.py check_variant_settings) one at a time, each range at its
boundary (inside and just outside) and each refused combination beside the nearest accepted one, with the whole
one-line message a user reads."""

import math

import pytest

from escov.llm.grpo_variant_settings import check_variant_settings
from escov.llm.settings.grpo_config import GRPOConfig


def _refused(**settings) -> str:
    with pytest.raises(ValueError) as err:
        check_variant_settings(GRPOConfig(**settings))
    return str(err.value)


@pytest.mark.parametrize(
    "settings",
    [
        {},
        dict(importance_sampling_level="sequence"),
        dict(adv_estimator="grpo_passk"),
        dict(adv_estimator="passk_analytic", pass_k=8),  # k = G
        dict(adv_estimator="pkpo", pass_k=7),  # k = G - 1
        dict(adv_estimator="pkpo", pass_k=1, scale_rewards="none"),
        dict(adv_estimator="grpo_passk", scale_rewards="none"),
        dict(adv_estimator="passk_analytic", pass_k=1),
        dict(pass_k=4, num_generations=2),  # the default k beside a smaller G: no estimator reads it
        dict(use_adaptive_entropy=True, entropy_coef_min=0.5, entropy_coef_max=0.5, entropy_target=0.0),
        dict(entropy_coef=0.0, ppo_kl_coef=1.0, outcome_bonus_coef=0.0, top_entropy_quantile=0.0),
        dict(top_entropy_quantile=1.0, zero_success_gating=True),
        dict(loss_type="sapo", sapo_temperature_pos=1e-9, sapo_temperature_neg=3.0),
        dict(loss_type="clip_cov", clip_cov_ratio=1.0, clip_cov_lb=-2.0, clip_cov_ub=-1.0),
        dict(loss_type="kl_cov", kl_cov_ratio=0.5, ppo_kl_coef=0.0),
        dict(loss_type="cispo", epsilon_high=5.0),
        dict(loss_type="clip_cov", epsilon_high=0.28),
    ],
)
def test_settings_that_go_together_are_accepted(settings):
    check_variant_settings(GRPOConfig(**settings))


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            dict(importance_sampling_level="prompt"),
            "grpo.importance_sampling_level must be one of ['token', 'sequence'], got 'prompt'",
        ),
        (
            dict(adv_estimator="ppo"),
            "grpo.adv_estimator must be one of ['grpo', 'grpo_passk', 'passk_analytic', 'pkpo'], got 'ppo'",
        ),
        (dict(use_adaptive_entropy=1), "grpo.use_adaptive_entropy must be true or false, got 1"),
        (dict(zero_success_gating="yes"), "grpo.zero_success_gating must be true or false, got 'yes'"),
        (dict(entropy_coef=-0.1), "grpo.entropy_coef must be a finite number >= 0, got -0.1"),
        (dict(entropy_coef=math.inf), "grpo.entropy_coef must be a finite number >= 0, got inf"),
        (dict(entropy_coef=True), "grpo.entropy_coef must be a finite number >= 0, got True"),
        (dict(entropy_coef="0.1"), "grpo.entropy_coef must be a finite number >= 0, got '0.1'"),
        (dict(entropy_coef_min=-1.0), "grpo.entropy_coef_min must be a finite number >= 0, got -1.0"),
        (dict(entropy_coef_delta=-1.0), "grpo.entropy_coef_delta must be a finite number >= 0, got -1.0"),
        (dict(entropy_target=-1.0), "grpo.entropy_target must be a finite number >= 0, got -1.0"),
        (dict(ppo_kl_coef=-1.0), "grpo.ppo_kl_coef must be a finite number >= 0, got -1.0"),
        (dict(outcome_bonus_coef=-1.0), "grpo.outcome_bonus_coef must be a finite number >= 0, got -1.0"),
        (dict(top_entropy_quantile=1.5), "grpo.top_entropy_quantile must be a finite number in [0, 1], got 1.5"),
        (dict(top_entropy_quantile=-0.5), "grpo.top_entropy_quantile must be a finite number in [0, 1], got -0.5"),
        (dict(sapo_temperature_pos=0.0), "grpo.sapo_temperature_pos must be a finite number > 0, got 0.0"),
        (dict(sapo_temperature_neg=0.0), "grpo.sapo_temperature_neg must be a finite number > 0, got 0.0"),
        (dict(clip_cov_ratio=0.0), "grpo.clip_cov_ratio must be a finite number > 0, got 0.0"),
        (dict(kl_cov_ratio=-1.0), "grpo.kl_cov_ratio must be a finite number > 0, got -1.0"),
        (dict(clip_cov_lb=math.nan), "grpo.clip_cov_lb must be a finite number >= -inf, got nan"),
        (dict(clip_cov_ub=-math.inf), "grpo.clip_cov_ub must be a finite number >= -inf, got -inf"),
        (
            dict(use_adaptive_entropy=True, entropy_coef_min=0.5, entropy_coef_max=0.25),
            "grpo.entropy_coef_max must be a finite number >= 0.5, got 0.25",
        ),
        (dict(pass_k=0), "grpo.pass_k must be an integer in [1, grpo.num_generations=8], got 0"),
        (dict(pass_k=True), "grpo.pass_k must be an integer in [1, grpo.num_generations=8], got True"),
        (dict(pass_k=2.0), "grpo.pass_k must be an integer in [1, grpo.num_generations=8], got 2.0"),
        (
            dict(adv_estimator="passk_analytic", pass_k=9),
            "grpo.pass_k must be an integer in [1, grpo.num_generations=8], got 9",
        ),
        (
            dict(adv_estimator="pkpo", pass_k=5, num_generations=4),
            "grpo.pass_k must be an integer in [1, grpo.num_generations=4], got 5",
        ),
    ],
)
def test_a_setting_out_of_its_range_is_refused_with_its_range(settings, message):
    assert _refused(**settings) == message


@pytest.mark.parametrize(
    "name, value, condition, turned_on",
    [
        ("sapo_temperature_pos", 2.0, "grpo.loss_type sapo", dict(loss_type="sapo")),
        ("sapo_temperature_neg", 2.0, "grpo.loss_type sapo", dict(loss_type="sapo")),
        ("clip_cov_ratio", 0.01, "grpo.loss_type clip_cov", dict(loss_type="clip_cov")),
        ("clip_cov_lb", 0.5, "grpo.loss_type clip_cov", dict(loss_type="clip_cov")),
        ("clip_cov_ub", 6.0, "grpo.loss_type clip_cov", dict(loss_type="clip_cov")),
        ("kl_cov_ratio", 0.01, "grpo.loss_type kl_cov", dict(loss_type="kl_cov")),
        ("ppo_kl_coef", 2.0, "grpo.loss_type kl_cov", dict(loss_type="kl_cov")),
        ("entropy_coef_min", 0.1, "grpo.use_adaptive_entropy true", dict(use_adaptive_entropy=True)),
        ("entropy_coef_max", 0.5, "grpo.use_adaptive_entropy true", dict(use_adaptive_entropy=True)),
        ("entropy_coef_delta", 0.01, "grpo.use_adaptive_entropy true", dict(use_adaptive_entropy=True)),
        ("entropy_target", 0.5, "grpo.use_adaptive_entropy true", dict(use_adaptive_entropy=True)),
        ("pass_k", 2, "grpo.adv_estimator passk_analytic or pkpo", dict(adv_estimator="passk_analytic")),
        ("pass_k", 3, "grpo.adv_estimator passk_analytic or pkpo", dict(adv_estimator="pkpo")),
    ],
)
def test_a_variants_setting_off_its_default_needs_its_variant(name, value, condition, turned_on):
    assert _refused(**{name: value}) == f"grpo.{name} = {value!r} does nothing without {condition}"
    check_variant_settings(GRPOConfig(**{name: value}, **turned_on))


# every value of the setting that turns a variant on, written out here (the loss types of TRL and verl this package
# has, the advantage estimators): an owned setting must be refused under each value but its own, not only the default
_LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "clip_cov", "kl_cov")
_ESTIMATORS = ("grpo", "grpo_passk", "passk_analytic", "pkpo")


@pytest.mark.parametrize(
    "name, value, field, acting",
    [
        ("sapo_temperature_pos", 2.0, "loss_type", ("sapo",)),
        ("clip_cov_ratio", 0.01, "loss_type", ("clip_cov",)),
        ("kl_cov_ratio", 0.01, "loss_type", ("kl_cov",)),
        ("ppo_kl_coef", 2.0, "loss_type", ("kl_cov",)),
        ("pass_k", 2, "adv_estimator", ("passk_analytic", "pkpo")),
    ],
)
def test_a_variants_setting_is_refused_under_every_other_choice_of_what_turns_it_on(name, value, field, acting):
    choices = _LOSS_TYPES if field == "loss_type" else _ESTIMATORS
    condition = {
        "loss_type": f"grpo.loss_type {acting[0]}",
        "adv_estimator": "grpo.adv_estimator passk_analytic or pkpo",
    }
    for choice in choices:
        settings = {name: value, field: choice}
        if choice in acting:
            check_variant_settings(GRPOConfig(**settings))
        else:
            assert _refused(**settings) == f"grpo.{name} = {value!r} does nothing without {condition[field]}", choice


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            dict(loss_type="clip_cov", clip_cov_lb=5.0),
            "grpo.clip_cov_lb (5) must be below grpo.clip_cov_ub (5)",
        ),
        (
            dict(loss_type="clip_cov", clip_cov_lb=2.5, clip_cov_ub=1.5),
            "grpo.clip_cov_lb (2.5) must be below grpo.clip_cov_ub (1.5)",
        ),
        (
            dict(loss_type="clip_cov", importance_sampling_level="sequence"),
            "grpo.loss_type clip_cov selects single tokens by their covariance: it needs "
            "grpo.importance_sampling_level token, got sequence",
        ),
        (
            dict(loss_type="kl_cov", importance_sampling_level="sequence"),
            "grpo.loss_type kl_cov selects single tokens by their covariance: it needs "
            "grpo.importance_sampling_level token, got sequence",
        ),
        (
            dict(adv_estimator="grpo_passk", scale_rewards="batch"),
            "grpo.adv_estimator grpo_passk divides by its group's std (grpo.scale_rewards group) or by nothing "
            "(none): grpo.scale_rewards batch has no meaning there",
        ),
        (
            dict(adv_estimator="pkpo", scale_rewards="batch"),
            "grpo.adv_estimator pkpo divides by its group's std (grpo.scale_rewards group) or by nothing "
            "(none): grpo.scale_rewards batch has no meaning there",
        ),
        (
            dict(adv_estimator="pkpo", pass_k=8),
            "grpo.adv_estimator pkpo's leave-one-out baseline needs grpo.pass_k <= grpo.num_generations - 1 = 7, got 8",
        ),
        (
            dict(adv_estimator="passk_analytic", scale_rewards="batch"),
            "grpo.adv_estimator passk_analytic is standardized by its own closed-form std: it needs "
            "grpo.scale_rewards group, got batch",
        ),
        (
            dict(adv_estimator="passk_analytic", scale_rewards="none"),
            "grpo.adv_estimator passk_analytic is standardized by its own closed-form std: it needs "
            "grpo.scale_rewards group, got none",
        ),
        (
            dict(loss_type="sapo", epsilon_high=0.28),
            "grpo.epsilon_high does nothing with grpo.loss_type sapo (it has no clip range)",
        ),
        (
            dict(loss_type="kl_cov", epsilon_high=0.28),
            "grpo.epsilon_high does nothing with grpo.loss_type kl_cov (it has no clip range)",
        ),
    ],
)
def test_variants_that_cannot_act_together_are_refused_naming_both(settings, message):
    assert _refused(**settings) == message
