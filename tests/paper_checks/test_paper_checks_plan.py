"""The reproduction plan covers every variant the claims need, with configs the trainer accepts."""
from pathlib import Path

import pytest

from llm.config import TrainConfig
from paper_checks.evidence import variant
from paper_checks.reproduce import BUDGETS, plan


@pytest.mark.parametrize("budget", sorted(BUDGETS))
def test_plan_builds_valid_configs_for_every_variant(budget):
    runs = plan(BUDGETS[budget], Path("base"), Path("other"))
    variants = {variant(TrainConfig.from_dict(cfg | {"out": f"o/{name}"}).to_dict()) for name, cfg in runs.items()}
    assert variants >= {"es", "grpo", "es-grpo", "grpo-es", "es[sampled]", "es[no-zscore]", "es[two-point]",
                        "es[null]", "es[bf16]"}
    seeds = {cfg["seed"] for name, cfg in runs.items() if variant(cfg) == "es" and cfg["model"] == "base"
             and cfg["es"]["population_size"] == BUDGETS[budget].es["population_size"]}
    assert seeds == set(BUDGETS[budget].seeds)
    sweep = {(cfg["model"], cfg["es"]["population_size"]) for cfg in runs.values() if variant(cfg) == "es"}
    assert {m for m, _ in sweep} == {"base", "other"} and len({n for _, n in sweep}) >= 2


def test_unknown_budget_is_an_error(tmp_path):
    from paper_checks.reproduce import reproduce
    with pytest.raises(ValueError, match="budget"):
        reproduce("huge", tmp_path)
    with pytest.raises(ValueError, match="config.json"):
        reproduce("small", tmp_path, model=tmp_path)
