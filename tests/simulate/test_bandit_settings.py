"""Every setting of the bandit analogue refused out of its range, one at a time, with the whole one-line message a
user reads, beside the boundary value that is accepted: the task's shape (simulate/bandit.py TaskShape), the ES and
GRPO steps' settings (simulate/es.py ESConfig, simulate/grpo.py GRPOConfig) and the measurements'
(simulate/measure.py MeasureConfig). The ranges are written here from what each setting means (a population of at
least two, a positive step, a share in [0, 1], ...), not read from the code."""

import math

import pytest

from escov.simulate.bandit import TaskShape
from escov.simulate.es import ESConfig
from escov.simulate.grpo import GRPOConfig
from escov.simulate.measure import MeasureConfig

REFUSED = [
    # the task's shape
    (TaskShape, dict(n_prompts=0), "n_prompts must be >= 1, got 0"),
    (TaskShape, dict(n_prompts=2.0), "n_prompts must be an integer, got 2.0"),
    (TaskShape, dict(n_paths=1), "n_paths must be >= 2, got 1"),
    (TaskShape, dict(n_paths=True), "n_paths must be an integer, got True"),
    (TaskShape, dict(n_correct=0), "n_correct must be >= 1, got 0"),
    (TaskShape, dict(n_paths=16, n_correct=16), "n_correct must be <= 15, got 16"),
    (TaskShape, dict(n_correct=2.5), "n_correct must be an integer, got 2.5"),
    (TaskShape, dict(n_tempting=-1), "n_tempting must be >= 0, got -1"),
    (TaskShape, dict(n_paths=16, n_correct=4, n_tempting=13), "n_tempting must be <= 12, got 13"),
    (TaskShape, dict(n_tempting=1.0), "n_tempting must be an integer, got 1.0"),
    (TaskShape, dict(base_pass1=0), "base_pass1 must be > 0, got 0"),
    (TaskShape, dict(base_pass1=1.0), "base_pass1 must be < 1, got 1.0"),
    (TaskShape, dict(base_pass1=1.5), "base_pass1 must be <= 1, got 1.5"),
    (TaskShape, dict(base_pass1=math.nan), "base_pass1 must be a finite number, got nan"),
    (TaskShape, dict(difficulty_concentration=0), "difficulty_concentration must be > 0, got 0"),
    (TaskShape, dict(rare_share=1.1), "rare_share must be <= 1, got 1.1"),
    (TaskShape, dict(rare_share=-0.1), "rare_share must be >= 0, got -0.1"),
    (TaskShape, dict(tempting_share=-0.1), "tempting_share must be >= 0, got -0.1"),
    (TaskShape, dict(tempting_share=1.5), "tempting_share must be <= 1, got 1.5"),
    (TaskShape, dict(formatted_share=2), "formatted_share must be <= 1, got 2"),
    (TaskShape, dict(format_bonus=-0.5), "format_bonus must be >= 0, got -0.5"),
    (TaskShape, dict(format_bonus=1.5), "format_bonus must be <= 1, got 1.5"),
    (TaskShape, dict(n_correct=1, rare_share=0.1), "rare_share must be 0 when n_correct == 1 (no rare correct paths)"),
    (TaskShape, dict(floor=0), "floor must be > 0, got 0"),
    (TaskShape, dict(floor=1.0), "floor must be < 1, got 1.0"),
    (TaskShape, dict(floor=2.5), "floor must be <= 1, got 2.5"),
    (TaskShape, dict(feature_dim=0), "feature_dim must be >= 1, got 0"),
    (TaskShape, dict(feature_dim=8.0), "feature_dim must be an integer, got 8.0"),
    (TaskShape, dict(theta0_offset=-1), "theta0_offset must be >= 0, got -1"),
    # ES
    (ESConfig, dict(population_size=1), "population_size must be >= 2, got 1"),
    (ESConfig, dict(population_size=2.0), "population_size must be an integer, got 2.0"),
    (ESConfig, dict(sigma=0), "sigma must be > 0, got 0"),
    (ESConfig, dict(sigma=math.inf), "sigma must be a finite number, got inf"),
    (ESConfig, dict(alpha=0), "alpha must be > 0, got 0"),
    (ESConfig, dict(alpha="0.1"), "alpha must be a finite number, got '0.1'"),
    (ESConfig, dict(zscore=False, center_scale=0), "center_scale must be > 0, got 0"),
    (ESConfig, dict(center_scale=2.0), "center_scale rescales centered rewards: it needs zscore=False, got 2.0"),
    (ESConfig, dict(member_temperature=-0.1), "member_temperature must be >= 0, got -0.1"),
    (ESConfig, dict(member_temperature=1.0, member_samples=0), "member_samples must be >= 1, got 0"),
    (ESConfig, dict(member_temperature=1.0, member_samples=1.5), "member_samples must be an integer, got 1.5"),
    (
        ESConfig,
        dict(member_samples=2),
        "member_samples must be 1 with greedy rollouts (member_temperature 0), got 2",
    ),
    (
        ESConfig,
        dict(antithetic=True, population_size=3),
        "population_size must be even for antithetic (two-point) ES, got 3",
    ),
    (ESConfig, dict(batch_size=0), "batch_size must be >= 1, got 0"),
    (ESConfig, dict(batch_size=2.0), "batch_size must be an integer, got 2.0"),
    # GRPO
    (GRPOConfig, dict(num_generations=1), "num_generations must be >= 2, got 1"),
    (GRPOConfig, dict(num_generations=4.0), "num_generations must be an integer, got 4.0"),
    (GRPOConfig, dict(learning_rate=0), "learning_rate must be > 0, got 0"),
    (GRPOConfig, dict(epsilon=0), "epsilon must be > 0, got 0"),
    (GRPOConfig, dict(beta=-0.1), "beta must be >= 0, got -0.1"),
    (GRPOConfig, dict(num_iterations=0), "num_iterations must be >= 1, got 0"),
    (GRPOConfig, dict(num_iterations=2.0), "num_iterations must be an integer, got 2.0"),
    (GRPOConfig, dict(temperature=0), "temperature must be > 0, got 0"),
    (GRPOConfig, dict(optimizer="rmsprop"), "optimizer must be 'adam' or 'sgd', got 'rmsprop'"),
    (GRPOConfig, dict(batch_size=0), "batch_size must be >= 1, got 0"),
    (GRPOConfig, dict(batch_size=1.5), "batch_size must be an integer, got 1.5"),
    # the measurements
    (MeasureConfig, dict(ks=(1, 0)), "ks must be >= 1, got 0"),
    (MeasureConfig, dict(ks=(1.0,)), "ks must be an integer, got 1.0"),
    (MeasureConfig, dict(eval_samples=0), "eval_samples must be >= 1, got 0"),
    (MeasureConfig, dict(eval_samples=32.0), "eval_samples must be an integer, got 32.0"),
    (MeasureConfig, dict(sampled_ks=(0,)), "sampled_ks must be >= 1, got 0"),
    (MeasureConfig, dict(sampled_ks=(2.0,)), "sampled_ks must be an integer, got 2.0"),
    (
        MeasureConfig,
        dict(eval_samples=31),
        "sampled_ks entry 32 needs at least 32 samples per prompt, but eval_samples = 31",
    ),
    (MeasureConfig, dict(temperature=0), "temperature must be > 0, got 0"),
    (MeasureConfig, dict(zero_tol=-0.01), "zero_tol must be >= 0, got -0.01"),
    (MeasureConfig, dict(zero_tol=1.5), "zero_tol must be <= 1, got 1.5"),
    (MeasureConfig, dict(cover_tol=0), "cover_tol must be > 0, got 0"),
    (MeasureConfig, dict(cover_tol=1.01), "cover_tol must be <= 1, got 1.01"),
]

ACCEPTED = [
    (TaskShape, dict(n_prompts=1)),
    (TaskShape, dict(n_paths=2, n_correct=1, n_tempting=1, rare_share=0.0)),
    (TaskShape, dict(n_paths=16, n_correct=15, n_tempting=1)),
    (TaskShape, dict(n_paths=16, n_correct=4, n_tempting=12)),
    (TaskShape, dict(n_tempting=0)),
    (TaskShape, dict(base_pass1=0.999)),
    (TaskShape, dict(rare_share=1.0, tempting_share=0.0, formatted_share=1.0, format_bonus=1.0)),
    (TaskShape, dict(rare_share=0.0, tempting_share=1.0, formatted_share=0.0, format_bonus=0.0)),
    (TaskShape, dict(floor=0.999)),
    (TaskShape, dict(feature_dim=1)),
    (TaskShape, dict(feature_dim=None)),
    (TaskShape, dict(theta0_offset=0)),
    (ESConfig, dict(population_size=2)),
    (ESConfig, dict(zscore=False, center_scale=2.0)),
    (ESConfig, dict(member_temperature=0.0, member_samples=1)),
    (ESConfig, dict(member_temperature=1.0, member_samples=3)),
    (ESConfig, dict(antithetic=True, population_size=4)),
    (ESConfig, dict(batch_size=1)),
    (GRPOConfig, dict(num_generations=2, beta=0, num_iterations=1, optimizer="sgd", batch_size=1)),
    (MeasureConfig, dict(ks=(1,), eval_samples=32, sampled_ks=(32,), zero_tol=0, cover_tol=1)),
    (MeasureConfig, dict(eval_samples=1, sampled_ks=(1,), zero_tol=1)),
]


@pytest.mark.parametrize("config, settings, message", REFUSED)
def test_a_setting_out_of_its_range_is_refused_in_one_line_naming_it(config, settings, message):
    with pytest.raises(ValueError) as err:
        config(**settings)
    assert str(err.value) == message


@pytest.mark.parametrize("config, settings", ACCEPTED)
def test_the_boundary_values_are_accepted(config, settings):
    made = config(**settings)
    assert all(getattr(made, k) == v for k, v in settings.items())
