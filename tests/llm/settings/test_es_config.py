"""The `[es]` table's rules (llm/settings/es_config.py ESConfig.validate): each value on both sides of its bound,
each combination the table refuses, and each message whole."""

from __future__ import annotations

import math

import pytest

from escov.llm.es.noise import NOISE_TABLE_SIZE
from escov.llm.settings.es_config import ESConfig

REFUSED = [
    ({"population_size": 1}, "es.population_size must be an integer >= 2, got 1"),
    ({"population_size": True}, "es.population_size must be an integer >= 2, got True"),
    ({"population_size": 4.0}, "es.population_size must be an integer >= 2, got 4.0"),
    ({"population_size": 5, "antithetic": True}, "es.population_size must be even with es.antithetic, got 5"),
    (
        {"center_scale": 2.0},
        "es.center_scale rescales centered rewards: it needs es.zscore = false, got 2.0",
    ),
    ({"sigma": 0.0}, "es.sigma must be a finite number > 0, got 0.0"),
    ({"sigma": -1e-3}, "es.sigma must be a finite number > 0, got -0.001"),
    ({"alpha": math.inf}, "es.alpha must be a finite number > 0, got inf"),
    ({"zscore": False, "center_scale": 0.0}, "es.center_scale must be a finite number > 0, got 0.0"),
    ({"member_temperature": -0.1}, "es.member_temperature must be >= 0 (0 = greedy), got -0.1"),
    ({"member_temperature": math.inf}, "es.member_temperature must be >= 0 (0 = greedy), got inf"),
    ({"member_temperature": 1.0, "member_samples": 0}, "es.member_samples must be an integer >= 1, got 0"),
    (
        {"member_samples": 2},
        "es.member_samples must be 1 with greedy rollouts (member_temperature 0), got 2",
    ),
    ({"noise_chunk": 0}, f"es.noise_chunk must be an integer in [1, {NOISE_TABLE_SIZE}], got 0"),
    (
        {"noise_chunk": NOISE_TABLE_SIZE + 1},
        f"es.noise_chunk must be an integer in [1, {NOISE_TABLE_SIZE}], got {NOISE_TABLE_SIZE + 1}",
    ),
    ({"tag": "Small"}, "es.tag must be lowercase letters, digits and '-', got 'Small'"),
    ({"tag": "a_b"}, "es.tag must be lowercase letters, digits and '-', got 'a_b'"),
    ({"tag": 1}, "es.tag must be lowercase letters, digits and '-', got 1"),
    ({"member_temperature": 1.0, "member_samples": True}, "es.member_samples must be an integer >= 1, got True"),
    ({"member_temperature": 1.0, "member_samples": 2.0}, "es.member_samples must be an integer >= 1, got 2.0"),
    ({"member_temperature": "1"}, "es.member_temperature must be >= 0 (0 = greedy), got '1'"),
    ({"sigma": "0.1"}, "es.sigma must be a finite number > 0, got '0.1'"),
    ({"noise_chunk": True}, f"es.noise_chunk must be an integer in [1, {NOISE_TABLE_SIZE}], got True"),
    ({"noise_chunk": 2.0}, f"es.noise_chunk must be an integer in [1, {NOISE_TABLE_SIZE}], got 2.0"),
]

ACCEPTED = [
    {"population_size": 2},
    {"population_size": 3},
    {"population_size": 4, "antithetic": True},
    {"zscore": False, "center_scale": 2.0},
    {"zscore": False, "center_scale": 0.5},
    {"sigma": 1e-9, "alpha": 1e-9},
    {"member_temperature": 0.0, "member_samples": 1},
    {"member_temperature": 0.7, "member_samples": 4},
    {"noise_chunk": 1},
    {"noise_chunk": NOISE_TABLE_SIZE},
    {"tag": "small-sigma-2"},
    {"param_pattern": r"layers\.[01]\."},
]


@pytest.mark.parametrize("settings, message", REFUSED)
def test_each_refused_value_or_combination_is_named_whole(settings, message):
    with pytest.raises(ValueError) as err:
        ESConfig(**settings).validate()
    assert str(err.value) == message


@pytest.mark.parametrize("settings", ACCEPTED)
def test_each_value_inside_its_bound_is_accepted(settings):
    ESConfig(**settings).validate()


def test_a_pattern_that_is_no_regular_expression_is_named():
    with pytest.raises(ValueError, match=r"^es.param_pattern is not a valid regular expression: "):
        ESConfig(param_pattern="(").validate()
