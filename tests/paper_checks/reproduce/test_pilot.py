"""The design pilot (paper_checks/reproduce/pilot.py): the answer budget's ES and GRPO runs on seeds of its own, curves
on training-split prompts only; bad inputs named in one line."""

import pytest

from escov.paper_checks.reproduce.budgets import ANSWER_SEEDS, BUDGETS
from escov.paper_checks.reproduce.pilot import PILOT_SEEDS, pilot_runs, run_pilot
from escov.paper_checks.reproduce.step_sweep import SWEEP_SEED


def test_the_pilot_runs_are_the_answers_es_and_grpo_on_other_seeds(tmp_path):
    runs = pilot_runs("answer", tmp_path, PILOT_SEEDS)
    b = BUDGETS["answer"]
    assert not set(PILOT_SEEDS) & (set(ANSWER_SEEDS) | {SWEEP_SEED}) and len(PILOT_SEEDS) >= 2
    assert sorted(runs) == sorted(f"{a}-s{s}" for s in PILOT_SEEDS for a in ("es", "grpo"))
    for name, cfg in runs.items():
        assert cfg["es"] == b.es and cfg["grpo"] == b.grpo and cfg["task"] == b.task
        assert cfg["steps"] == b.common["steps"] and cfg["checkpoint_dense"] == b.common["checkpoint_dense"]
        assert cfg["algo"] == name.split("-s")[0]


def test_bad_pilot_inputs_are_named(tmp_path, tiny_model_dir):
    with pytest.raises(ValueError, match="--model .*: not a model directory"):
        run_pilot(tmp_path / "nowhere", tmp_path / "out")
    with pytest.raises(ValueError, match="a pilot needs at least 2 seeds"):
        run_pilot(tiny_model_dir, tmp_path / "out", seeds=(200,))


@pytest.mark.parametrize("budget", ["answer", "small"])
def test_each_pilot_run_is_the_budgets_settings_with_no_probe_steps_and_no_held_out_task(tmp_path, budget):
    """Every setting of the budget, but the probe's schedule (none) and the held-out task (none); the run's method,
    base, seed and the budget's task, ES and GRPO settings."""
    b = BUDGETS[budget]
    runs = pilot_runs(budget, tmp_path / "base", (7, 9))
    assert list(runs) == ["es-s7", "grpo-s7", "es-s9", "grpo-s9"]
    for name, cfg in runs.items():
        algo, seed = name.split("-s")
        changed = {"probe_every": 0, "heldout_task": "", "algo": algo, "model": str(tmp_path / "base")}
        assert cfg == b.common | changed | {"seed": int(seed), "task": b.task, "es": b.es, "grpo": b.grpo}


def test_a_pilot_refuses_one_seed_in_one_line_and_goes_on_with_two(tmp_path, tiny_model_dir):
    with pytest.raises(ValueError) as err:
        run_pilot(tiny_model_dir, tmp_path / "out", seeds=(200,))
    assert str(err.value) == "a pilot needs at least 2 seeds (a seed component), got 1"
    with pytest.raises(ValueError) as err:
        run_pilot(tmp_path / "nowhere", tmp_path / "out")
    assert str(err.value) == f"--model {tmp_path / 'nowhere'}: not a model directory (no config.json)"
    with pytest.raises(KeyError, match="no-such-budget"):  # two seeds pass: the next step looks the budget up
        run_pilot(tiny_model_dir, tmp_path / "out", budget_name="no-such-budget", seeds=(200, 201))
