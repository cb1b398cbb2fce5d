"""The answer's budgets on the counted tasks (budgets.task_answer; docs/answer-tasks.md): the Countdown answer's
protocol on a planted base, its sizes, test prompts no earlier reader of the task read, its job graph and the
command line that names a task."""

from __future__ import annotations

from pathlib import Path

import pytest

from escov.llm.config import TrainConfig
from escov.llm.problem_sets import SELECTION_SPLIT, eval_set, split_set
from escov.paper_checks.reproduce.budgets import BUDGETS, COUNTDOWN_ONLY, TASK_BASES
from escov.paper_checks.reproduce.planted_bases import VALIDATION_PROMPTS
from escov.paper_checks.reproduce.premise_control import CONTROL_PROMPTS, control_runs

TASKS = tuple(TASK_BASES)


@pytest.mark.parametrize("task", TASKS)
def test_a_task_answer_keeps_the_answers_protocol_at_its_own_sizes(task):
    answer, budget = BUDGETS["answer"], BUDGETS[f"answer-{task}"]
    assert budget.task == task and budget.base_preset == task and budget.base_settings == TASK_BASES[task]
    assert budget.premise_control and budget.grpo == answer.grpo and budget.es == answer.es
    assert budget.es_updates == answer.es_updates and budget.common["steps"] == answer.common["steps"]
    assert budget.curve == answer.curve and budget.seeds == (0, 1, 2, 3)
    assert budget.common["eval_problems"] == 64 and budget.common["max_completion_length"] == 24
    assert not set(COUNTDOWN_ONLY) & set(budget.common) and budget.es_variants == ()
    arms = budget.arms
    assert arms.null_seeds == () and arms.draw_seeds == () and arms.lr_control is None
    assert arms.endpoint_samples == 1024 and arms.endpoint_temperatures == (0.6, 1.0)


@pytest.mark.parametrize("task", TASKS)
def test_a_task_answers_test_prompts_are_read_by_no_earlier_run(task):
    # recomputed from each earlier reader's own settings: the base choice and the control read validation prompts,
    # the control's runs evaluate the first test prompts of the draw at their end; the answer's test prompts are none
    budget = BUDGETS[f"answer-{task}"]
    model = "unused-by-the-draw"
    answer_cfg = TrainConfig.from_dict(budget.common | {"task": task, "algo": "grpo", "model": model})
    answer_ids = {p.id for p in eval_set(answer_cfg).problems}
    assert len(answer_ids) == 64
    read = set()
    for cfg in control_runs(Path(model), budget).values():
        control_cfg = TrainConfig.from_dict(cfg)
        read |= {p.id for p in eval_set(control_cfg).problems}  # its final evaluation
        read |= {p.id for p in split_set(control_cfg, SELECTION_SPLIT, CONTROL_PROMPTS).problems}
    from escov.llm.tasks import get_task

    read |= {p.id for p in get_task(task).problems("validation", VALIDATION_PROMPTS, seed=0)}  # planted_bases
    assert len(read) > CONTROL_PROMPTS and not answer_ids & read


@pytest.mark.parametrize("task", TASKS)
def test_a_task_answers_jobs_are_the_comparison_and_its_endpoints_only(task, tmp_path):
    from escov.paper_checks.reproduce.reproduction import reproduction_jobs

    budget = BUDGETS[f"answer-{task}"]
    names = {j.name for j in reproduction_jobs(budget, tmp_path, None, progress=False)}
    runs = {f"{v}-s{s}" for v in ("es", "grpo") for s in budget.seeds}
    endpoints = {f"endpoint {m} T={t:g}" for m in ["base"] + sorted(runs) for t in (0.6, 1.0)}
    stages = {"pretrain base", "theory", "simulate", "premise control", "Lemma 1 grid"}
    assert names == runs | endpoints | stages


def test_the_command_line_names_a_task_only_with_the_answer(capsys):
    from escov.paper_checks.cli import main

    assert main(["reproduce", "--budget", "small", "--task", "grid_paths", "--out", "x"]) == 2
    assert "--task grid_paths goes with --budget answer, not small" in capsys.readouterr().err
