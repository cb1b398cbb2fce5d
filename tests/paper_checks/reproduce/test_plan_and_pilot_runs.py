"""The reproduction's plan (paper_checks/reproduce/plan.py equal_update_budget) with sampled members, against FLOPs
counted by hand, and the pilot's runs (paper_checks/reproduce/pilot.py pilot_runs): the answer's ES and GRPO on the
pilot seeds, without the probe or the held-out task."""

from dataclasses import replace
from pathlib import Path

import pytest

from escov.paper_checks.reproduce.budgets import BUDGETS
from escov.paper_checks.reproduce.pilot import PILOT_SEEDS, pilot_runs
from escov.paper_checks.reproduce.plan import equal_update_budget


@pytest.mark.parametrize("population, steps", [(16, 20), (32, 40), (64, 80)])
def test_equal_updates_count_each_members_samples(population, steps):
    """40 GRPO-step budget, G = 8, one iteration: (2 + 6) 8 = 64 per step; ES N = 32 with m = 2 samples per member:
    2 N m = 128 per update, so 40 x 64 / 128 = 20 updates; at population N' those cost 20 x 2 N' 2 / 64 steps."""
    b = BUDGETS["answer"]
    budget = replace(
        b,
        common=b.common | {"steps": 40},
        es=b.es | {"population_size": 32, "member_samples": 2},
        grpo=b.grpo | {"num_generations": 8, "num_iterations": 1},
    )
    assert equal_update_budget(budget, population) == steps


# one metrics.jsonl row of a training step, every field `llm train` writes besides step, phase and the ES spread
STEP_ROW = {
    "reward_mean": 0.5,
    "center_reward_mean": 0.5,
    "pass_at_1": 0.5,
    "no_correct_share": 0.0,
    "entropy": 1.0,
    "drift_rel": 0.0,
    "drift_layers": {},
    "step_seconds": 1.0,
    "tokens_per_s": 1.0,
    "wall_seconds": 1.0,
}


def test_the_pilot_runs_have_no_probe_and_no_held_out_task():
    runs = pilot_runs("answer", Path("base"), PILOT_SEEDS[:2])
    assert sorted(runs) == sorted(f"{a}-s{s}" for a in ("es", "grpo") for s in PILOT_SEEDS[:2])
    for name, cfg in runs.items():
        assert cfg["probe_every"] == 0 and cfg["heldout_task"] == "" and cfg["algo"] == name.split("-")[0]
        assert cfg["es"] == BUDGETS["answer"].es and cfg["grpo"] == BUDGETS["answer"].grpo


def test_the_mean_reward_spread_skips_the_steps_without_one(tmp_path):
    """Steps whose members all scored alike (es_reward_std 0: no update) are not averaged in: (0.2 + 0.4) / 2."""
    from escov.llm.rundir import append_step
    from escov.paper_checks.reproduce.plan import mean_reward_std

    for step, spread in enumerate((0.0, 0.2, 0.0, 0.4), start=1):
        append_step(tmp_path, STEP_ROW | {"step": step, "phase": "es", "es_reward_std": spread})
    assert mean_reward_std(tmp_path) == pytest.approx(0.3)
