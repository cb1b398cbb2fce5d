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
