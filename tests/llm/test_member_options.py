"""Which member strategy the settings choose (llm/member_options.py strategy_name), setting by setting and in the
combinations where one setting's effect depends on another: a cluster address with a single worker still means Ray;
population.batched matters only without Ray workers; an explicit population.members overrides both."""

import pytest

from escov.llm.member_options import DistributedConfig, strategy_name, uses_workers
from escov.llm.settings.population_config import PopulationConfig


@pytest.mark.parametrize(
    "workers, address, batched, members, expected",
    [
        (1, "", False, "auto", "one_by_one"),  # one local worker: no Ray
        (1, "", True, "auto", "batched_hf"),
        (1, "auto", False, "auto", "ray"),  # one worker on a cluster: Ray, whatever batched says
        (1, "ray://head:10001", True, "auto", "ray"),
        (2, "", False, "auto", "ray"),  # two local workers: Ray
        (2, "", True, "auto", "ray"),
        (2, "auto", True, "one_by_one", "one_by_one"),  # an explicit strategy is the one that runs
        (1, "", False, "vllm_lora", "vllm_lora"),
    ],
)
def test_the_strategy_follows_workers_address_and_batched_together(workers, address, batched, members, expected):
    distributed = DistributedConfig(workers=workers, address=address)
    population = PopulationConfig(batched=batched, members=members)
    assert strategy_name(population, distributed) == expected
    assert uses_workers(distributed) is (workers > 1 or address != "")


def test_without_distributed_settings_there_are_no_workers():
    assert uses_workers(None) is False
    assert strategy_name(PopulationConfig(batched=True), None) == "batched_hf"
    assert strategy_name(PopulationConfig(batched=False), None) == "one_by_one"
