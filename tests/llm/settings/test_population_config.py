"""The `[population]` table's rules (llm/settings/population_config.py): each value on both sides of its bound, each
message whole, and which low-rank layout "auto" picks on either side of its memory limit."""

from __future__ import annotations

import pytest
import torch

from escov.llm.settings.population_config import STACK_AUTO_BYTES, PopulationConfig

REFUSED = [
    ({"batched": 1}, "population.batched must be true or false, got 1"),
    ({"noise_rank": -1}, "population.noise_rank must be an integer >= 0 (0 = full rank), got -1"),
    ({"noise_rank": True}, "population.noise_rank must be an integer >= 0 (0 = full rank), got True"),
    ({"max_rows": 0}, "population.max_rows must be an integer >= 1, got 0"),
    ({"keep_noise_mb": -1}, "population.keep_noise_mb must be an integer >= 0, got -1"),
    (
        {"lowrank_layout": "flat"},
        "population.lowrank_layout must be one of ['auto', 'factored', 'stacked'], got 'flat'",
    ),
    ({"max_rows": True}, "population.max_rows must be an integer >= 1, got True"),
    ({"max_rows": 2.0}, "population.max_rows must be an integer >= 1, got 2.0"),
    ({"keep_noise_mb": True}, "population.keep_noise_mb must be an integer >= 0, got True"),
    ({"keep_noise_mb": 1.5}, "population.keep_noise_mb must be an integer >= 0, got 1.5"),
    ({"noise_rank": 2.0}, "population.noise_rank must be an integer >= 0 (0 = full rank), got 2.0"),
]


@pytest.mark.parametrize("settings, message", REFUSED)
def test_each_refused_value_is_named_whole(settings, message):
    with pytest.raises(ValueError) as err:
        PopulationConfig(**settings).validate()
    assert str(err.value) == message


@pytest.mark.parametrize("settings", [{"noise_rank": 0}, {"max_rows": 1}, {"keep_noise_mb": 0}, {"batched": True}])
def test_each_value_at_its_bound_is_accepted(settings):
    PopulationConfig(**settings).validate()


def test_an_unknown_member_strategy_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"^population.members must be one of \['auto', .*\], got 'fast'$"):
        PopulationConfig(members="fast").validate()


def test_plain_is_member_by_member_with_full_rank_noise_only():
    assert PopulationConfig().plain
    assert not PopulationConfig(batched=True).plain and not PopulationConfig(noise_rank=4).plain


def test_auto_stacks_low_rank_members_while_their_matrices_fit_the_limit():
    """stacked bytes = members x sum of the matrices' sizes x the dtype's bytes; auto factors above the limit."""
    shapes = [(64, 64), (64, 32)]  # 6144 entries per member
    fits = STACK_AUTO_BYTES // (6144 * 4)  # members whose float32 matrices take at most the limit
    auto = PopulationConfig(lowrank_layout="auto")
    assert not auto.factored(fits, shapes, torch.float32) and auto.factored(fits + 1, shapes, torch.float32)
    assert not auto.factored(2 * fits, shapes, torch.bfloat16)  # half the bytes per entry
    exact = [(STACK_AUTO_BYTES // (16 * 4), 1)]  # 16 float32 members of exactly the limit: still stacked
    assert not auto.factored(16, exact, torch.float32) and auto.factored(16, [(exact[0][0] + 1, 1)], torch.float32)
    assert PopulationConfig(lowrank_layout="factored").factored(1, shapes, torch.float32)
    assert not PopulationConfig(lowrank_layout="stacked").factored(10**6, shapes, torch.float32)
