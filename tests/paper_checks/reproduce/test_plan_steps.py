"""The reproduction plan's budgets in GRPO steps (paper_checks/reproduce/plan.py es_steps), the reward spread of a
finished ES run (mean_reward_std) and what the planned runs give the checks (planned_needs), against costs counted by
hand: an ES update of N members with m samples each costs 2 N m per prompt (in units of P L), a GRPO step of G
completions and mu iterations (2 + 6 mu) G, 64 at the answer's G = 8, mu = 1."""

from dataclasses import replace
from pathlib import Path

import pytest

from escov.paper_checks.reproduce.budgets import BUDGETS
from escov.paper_checks.reproduce.plan import es_steps, mean_reward_std, planned_needs
from tests.paper_checks.reproduce.test_plan_and_pilot_runs import STEP_ROW

ANSWER = BUDGETS["answer"]


def test_an_es_run_gets_the_grpo_steps_that_cost_its_updates():
    assert ANSWER.es_updates == 450 and ANSWER.grpo["num_generations"] == 8
    assert ANSWER.es["population_size"] == 32  # 2 x 32 = 64: an update costs one GRPO step
    assert es_steps(ANSWER, ANSWER.es) == 450
    assert es_steps(ANSWER, ANSWER.es | {"population_size": 64}) == 900  # 128 / 64: two steps an update
    sampled = ANSWER.es | {"member_temperature": 1.0, "member_samples": 2}  # 2 x 32 x 2 = 128
    assert es_steps(ANSWER, sampled) == 900
    assert es_steps(replace(ANSWER, es_updates=10), ANSWER.es | {"population_size": 48}) == 15  # 96 / 64


def test_updates_that_no_whole_number_of_grpo_steps_buys_are_refused_naming_both():
    """N = 8: an update costs 16 = a quarter step; 10 updates are 2.5 steps, rounded to 2, which buy 8 updates."""
    es = ANSWER.es | {"population_size": 8}
    with pytest.raises(ValueError) as err:
        es_steps(replace(ANSWER, es_updates=10), es)
    assert str(err.value) == f"ES settings {es}: 10 updates are no whole budget of GRPO steps (8)"
    with pytest.raises(ValueError) as err:
        es_steps(ANSWER, ANSWER.es | {"population_size": 0})
    assert str(err.value) == "budget ES settings: es.population_size must be an integer >= 2, got 0"


def test_a_budget_run_that_is_no_valid_run_is_named():
    small = BUDGETS["small"]
    with pytest.raises(ValueError) as err:
        planned_needs(replace(small, common=small.common | {"eval_samples": 0}))
    assert str(err.value) == "budget run es-s0: eval_samples must be an integer >= 1, got 0"


def test_the_population_sweep_is_planned_only_where_the_budget_sweeps():
    assert BUDGETS["full"].sweep_populations and not ANSWER.sweep_populations
    assert ("es", "the population sweep") in planned_needs(BUDGETS["full"])
    assert ("es", "the population sweep") not in planned_needs(ANSWER)


def test_the_reward_spread_skips_rows_without_one_and_a_run_without_any_is_named(tmp_path):
    """Rows of a GRPO phase (no es_reward_std) and ES steps with no spread are not averaged: (0.2 + 0.6) / 2."""
    from escov.llm.rundir import append_step

    append_step(tmp_path, STEP_ROW | {"step": 1, "phase": "grpo"})
    for step, spread in ((2, 0.2), (3, 0.0), (4, 0.6)):
        append_step(tmp_path, STEP_ROW | {"step": step, "phase": "es", "es_reward_std": spread})
    assert mean_reward_std(tmp_path) == pytest.approx(0.4)
    none = tmp_path / "none"
    none.mkdir()
    append_step(none, STEP_ROW | {"step": 1, "phase": "grpo"})
    with pytest.raises(ValueError) as err:
        mean_reward_std(none)
    assert str(err.value) == f"{none}/metrics.jsonl: no ES step with reward spread (es_reward_std > 0)"


def _sized(steps: int, es: dict, grpo: dict):
    b = BUDGETS["answer"]
    return replace(b, common=b.common | {"steps": steps}, es=es, grpo=grpo)


def test_equal_updates_need_a_whole_number_of_updates_from_each_cost():
    """5 GRPO steps of (2 + 6) 8 = 64 buy 5 updates of 2 x 32 = 64 (N = 64: 10 steps); with 2 iterations a step costs
    (2 + 12) 8 = 112 and buys 8.75 updates, with 3 samples per member an update costs 192: 5 x 64 / 192 = 1.67. The
    member samples and iterations left unset are 1."""
    from escov.paper_checks.reproduce.plan import equal_update_budget

    plain = _sized(5, {"population_size": 32}, {"num_generations": 8})
    assert equal_update_budget(plain, 64) == 10 and equal_update_budget(plain, 32) == 5
    iterations = _sized(5, {"population_size": 32}, {"num_generations": 8, "num_iterations": 2})
    with pytest.raises(ValueError) as err:
        equal_update_budget(iterations, 64)
    assert str(err.value) == "population 64: 8.75 updates are not a whole GRPO-step budget"
    samples = _sized(5, {"population_size": 32, "member_samples": 3}, {"num_generations": 8})
    with pytest.raises(ValueError, match=r"^population 64: 1\.66667 updates are not a whole GRPO-step budget$"):
        equal_update_budget(samples, 64)


def test_an_equal_update_budget_of_one_step_is_one_and_a_fraction_of_a_step_is_refused():
    """4 steps of 64 buy 4 updates of 64; at N = 8 (16 each) those cost exactly 1 step; at N = 48 (96 each), with 5
    steps, 7.5 steps."""
    from escov.paper_checks.reproduce.plan import equal_update_budget

    assert equal_update_budget(_sized(4, {"population_size": 32}, {"num_generations": 8}), 8) == 1
    with pytest.raises(ValueError, match=r"^population 48: 5 updates are not a whole GRPO-step budget$"):
        equal_update_budget(_sized(5, {"population_size": 32}, {"num_generations": 8}), 48)


def test_a_sweep_run_of_a_budget_counting_es_updates_keeps_the_common_settings_and_its_own_steps():
    """The ES runs' own settings (es_common: checkpoints, probe) and length in updates are the main ES runs'; a sweep
    run of the same budget has the common settings and the steps of equal updates."""
    from escov.paper_checks.reproduce.budgets import SWEEP_EVAL
    from escov.paper_checks.reproduce.plan import equal_update_budget, plan

    swept = replace(ANSWER, sweep_populations=(16,), seeds=(0,))
    runs = plan(swept, Path("base"), None)
    assert ANSWER.es_common["checkpoint_every"] != ANSWER.common["checkpoint_every"]
    assert runs["es-s0"]["checkpoint_every"] == ANSWER.es_common["checkpoint_every"] and runs["es-s0"]["steps"] == 450
    sweep = runs["sweep-base-N16-s0"]
    assert sweep["checkpoint_every"] == ANSWER.common["checkpoint_every"]
    assert sweep["steps"] == equal_update_budget(swept, 16) and sweep["eval_problems"] == SWEEP_EVAL["eval_problems"]


def test_every_run_starts_from_the_base_given_and_a_schedule_switches_after_at_least_one_step():
    """A schedule switches after steps x switch_fraction steps, rounded down, and never before step 1: 3 x 0.5 = 1.5
    gives 1; 4 x 0.1 = 0.4 gives 1, not 0."""
    from escov.paper_checks.reproduce.plan import plan

    regime = BUDGETS["answer-paper-regime"]
    for steps, fraction in ((3, 0.5), (4, 0.1)):
        b = replace(regime, common=regime.common | {"steps": steps}, switch_fraction=fraction, seeds=(0,))
        runs = plan(b, Path("the-base"), None)
        assert runs["es-grpo-s0"]["switch_step"] == runs["grpo-es-s0"]["switch_step"] == 1
        assert {name: run["model"] for name, run in runs.items()} == {name: "the-base" for name in runs}


@pytest.mark.parametrize("name", sorted(BUDGETS))
def test_every_budgets_runs_start_from_their_base_and_only_the_bf16_variant_changes_the_dtype(name):
    """Each run of each budget from the base given (the population sweep's second base for its runs on it); the dtype
    and the unbatched members only in es-bf16; the answer's null arm on its null seeds alone."""
    from escov.paper_checks.reproduce.plan import plan

    b = BUDGETS[name]
    runs = plan(b, Path("the-base"), Path("other-base"), {seed: 0.5 for seed in b.seeds})
    for run_name, run in runs.items():
        assert run["model"] == ("other-base" if run_name.startswith("sweep-other-") else "the-base"), run_name
        bf16 = run_name.startswith("es-bf16-")
        assert (run.get("dtype") == "bfloat16") == bf16 and (run.get("population") == {"batched": False}) == bf16
    nulls = sorted(int(r.rsplit("-s", 1)[1]) for r in runs if r.startswith("es-null-"))
    if b.arms is not None:
        assert nulls == sorted(b.arms.null_seeds) != sorted(b.seeds)


def test_the_population_sweep_runs_each_population_on_both_bases_but_the_main_runs_own():
    """full: populations 8, 16, 32, 64 on the base and on the second base, every seed; on the base, N = 32 is the main
    ES runs themselves, so no sweep run repeats it. A budget naming es-rescaled among its variants gets that variant."""
    from escov.paper_checks.reproduce.plan import plan

    full = BUDGETS["full"]
    assert full.sweep_populations == (8, 16, 32, 64) and full.es["population_size"] == 32
    runs = plan(full, Path("the-base"), Path("other-base"))
    want = {f"sweep-{label}-N{n}-s{s}" for label in ("base", "other") for n in (8, 16, 32, 64) for s in full.seeds}
    assert {r for r in runs if r.startswith("sweep-")} == want - {f"sweep-base-N32-s{s}" for s in full.seeds}
    small = replace(BUDGETS["small"], es_variants=("es-rescaled",))
    rescaled = plan(small, Path("b"), None, {0: 0.25})
    assert rescaled["es-rescaled-s0"]["es"]["center_scale"] == 4.0 and "es-rescaled-s1" not in rescaled
