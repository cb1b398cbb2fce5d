"""Each setting of a reproduction's budget (paper_checks/reproduce/budgets.py Budget), changed, changes the
reproduction it plans: the runs of `plan` and the jobs of `reproduction_jobs`, read without running them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from escov.paper_checks.reproduce.budgets import BUDGETS, ES_VARIANTS
from escov.paper_checks.reproduce.lemma_grid_measurement import GridDesign
from escov.paper_checks.reproduce.plan import plan
from escov.paper_checks.reproduce.reproduction import reproduction_jobs

SMALL = BUDGETS["small"]
CHANGED = replace(
    SMALL,
    seeds=(5, 7),
    task="countdown",
    switch_fraction=0.25,
    schedules=True,
    es_variants=("es-twopoint",),
    sweep_populations=(8,),
    common=SMALL.common | {"steps": 8, "batch_size": 3},
    es=SMALL.es | {"sigma": 0.003},
    grpo=SMALL.grpo | {"learning_rate": 2e-4},
)


def _args(jobs, name):
    """The (function, args) a job would run, made without running it."""
    return next(j for j in jobs if j.name == name).make()


def test_seeds_task_and_the_shared_settings_reach_every_run():
    runs = plan(CHANGED, Path("base"), None)
    assert {cfg["seed"] for cfg in runs.values()} == set(CHANGED.seeds)
    assert {name.rsplit("-s", 1)[1] for name in runs} == {"5", "7"}
    for name, cfg in runs.items():
        assert cfg["task"] == "countdown" and cfg["batch_size"] == 3
        assert cfg["es"]["sigma"] == 0.003 and cfg["grpo"]["learning_rate"] == 2e-4
        assert cfg["steps"] == 8 or name.startswith("sweep")  # the sweep's runs: steps of equal updates


def test_schedules_switch_fraction_and_es_variants_choose_the_runs():
    runs = plan(CHANGED, Path("base"), None)
    variants = {name.rsplit("-s", 1)[0] for name in runs}
    assert variants == {"es", "grpo", "es-grpo", "grpo-es", "es-twopoint", "sweep-base-N8"}
    assert all(runs[f"{a}-s5"]["switch_step"] == int(8 * 0.25) == 2 for a in ("es-grpo", "grpo-es"))
    antithetic = runs["es-twopoint-s5"]["es"]
    assert antithetic == CHANGED.es | ES_VARIANTS["es-twopoint"]
    without = plan(replace(CHANGED, schedules=False, es_variants=None), Path("base"), None)
    assert not any(name.startswith(("es-grpo", "grpo-es")) for name in without)
    assert {name.rsplit("-s", 1)[0] for name in without} >= set(ES_VARIANTS)  # None: every variant


def test_sweep_populations_give_a_run_per_population_and_base():
    runs = plan(replace(CHANGED, sweep_populations=(8, 64)), Path("base"), Path("other"))
    sweep = {name for name in runs if name.startswith("sweep")}
    assert sweep == {f"sweep-{b}-N{n}-s{s}" for b in ("base", "other") for n in (8, 64) for s in (5, 7)}
    assert all(runs[f"sweep-other-N64-s{s}"]["model"] == "other" for s in (5, 7))
    assert runs["sweep-base-N64-s5"]["es"]["population_size"] == 64


def test_presets_scale_grid_and_curve_reach_their_jobs(tmp_path):
    grid = GridDesign(sigmas=(0.01,), members=(4,), draws={4: 2})
    curve = {"points": 2, "samples": 32}
    budget = replace(
        CHANGED,
        base_preset="narrow",
        sweep_preset="default",
        simulate_scale=0.125,
        grid=grid,
        curve=curve,
        es_variants=(),
    )
    jobs = reproduction_jobs(budget, tmp_path, None, progress=False)
    assert _args(jobs, "pretrain base")[1][1] == "narrow"
    assert _args(jobs, "pretrain sweep base")[1][1] == "default"
    assert _args(jobs, "simulate")[1][1] == 0.125
    assert _args(jobs, "Lemma 1 grid")[1][2].grid == grid
    name, cfg, _, run_curve, _ = _args(jobs, "grpo-s5")[1]
    assert run_curve == curve and cfg["seed"] == 5


def test_base_settings_and_the_premise_control_reach_their_jobs(tmp_path):
    from escov.paper_checks.reproduce import bases, reproduction

    budget = replace(CHANGED, base_settings=(("rare_keep", "0.5"),), premise_control=True)
    jobs = reproduction_jobs(budget, tmp_path, None, progress=False)
    assert _args(jobs, "pretrain base")[1][3] == (("rare_keep", "0.5"),)
    assert _args(jobs, "premise control") == (
        reproduction._premise_control,
        (tmp_path / "base", tmp_path / "premise-control", budget),
    )
    assert "premise control" not in {j.name for j in reproduction_jobs(CHANGED, tmp_path, None, progress=False)}
    # the settings reach the pretraining and key the base apart from the plain preset's
    assert bases.base_cache_key("test", settings=budget.base_settings) != bases.base_cache_key("test")
    bases._build_base(tmp_path / "built", "test", False, budget.base_settings)
    record = json.loads((tmp_path / "built" / "pretrain.json").read_text())
    assert record["overrides"] == {"rare_keep": "0.5"} and record["config"]["rare_keep"] == 0.5


def test_lemma_1_as_stated_reads_its_es_arm_at_the_small_sigma_arms_settings():
    """The report reads Lemma 1 as stated's ES-arm row for JSsucc and Lemma 2 beside the es-small-sigma runs: the row
    is measured at that arm's sigma and population size."""
    answer = BUDGETS["answer"]
    sigma, members = answer.lemma_as_stated.es_arm
    assert "es-small-sigma" in answer.es_variants
    assert sigma == ES_VARIANTS["es-small-sigma"]["sigma"] and members == answer.es["population_size"]


def test_the_lemma_1_grid_is_measured_as_each_budgets_runs_are_evaluated():
    """grid_settings: the budget's task, its evaluation temperature (not the training one) and its completion
    length, for every budget (the answer's evaluate at 0.6 and train at 1.0; the task answers' completions are 24
    tokens, the others' 32)."""
    from escov.llm.config import TrainConfig
    from escov.paper_checks.reproduce.reproduction import grid_settings

    defaults = TrainConfig()
    seen = set()
    for name, budget in BUDGETS.items():
        settings = grid_settings(budget)
        temperature = budget.common.get("eval_temperature", defaults.eval_temperature)
        length = budget.common.get("max_completion_length", defaults.max_completion_length)
        assert settings["task_name"] == budget.task, name
        assert (settings["temperature"], settings["max_new_tokens"]) == (temperature, length), name
        seen.add((temperature, length))
    assert {(0.6, 32), (0.6, 24)} <= seen


def test_the_answer_trains_on_the_solution_block_it_measures_and_skips_the_selection_runs_prompts():
    """The answer's test prompts are the instances with exactly 2 solutions after the selection runs' own final
    evaluations (premise_control.SELECTION_EVAL's first 8); its training pool is drawn from the same block, so the
    prompts measured are the kind trained on (docs/answer-budget.md, "Prompts")."""
    from escov.paper_checks.reproduce.premise_control import SELECTION_EVAL

    common = BUDGETS["answer"].common
    assert common["eval_solutions"] == common["train_solutions"] == 2
    assert common["eval_skip"] == SELECTION_EVAL["eval_problems"] == 8
