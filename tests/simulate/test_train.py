"""The training loop, schedules and budgets."""

import numpy as np
import pytest

from escov.simulate import ESConfig, GRPOConfig, NonFiniteError, TaskShape, make_task, schedule, train
from escov.simulate.schedules import grpo_budget, step_cost, steps_for

TASK_SHAPE = TaskShape(n_prompts=8, n_paths=6, n_correct=2, n_tempting=1, feature_dim=4)


def test_run_records_every_step_and_counts_the_budget():
    task = make_task(TASK_SHAPE, 2)
    grpo, es = GRPOConfig(num_generations=4), ESConfig(population_size=6)
    run = train(task, [(grpo, 3), (es, 2)], progress=False)
    assert run.steps == 5 and run.algorithm == ["grpo"] * 3 + ["es"] * 2
    assert run.policy["pass@1"].shape == (6, 2) and run.success.shape == (6, 2, 8)
    assert run.updates["update_norm"].shape == (5, 2)
    assert np.all(np.isnan(run.updates["js_pol"][:3])) and np.all(np.isfinite(run.updates["js_pol"][3:]))
    assert np.all(np.isnan(run.updates["reward"][3:])) and np.all(np.isfinite(run.updates["reward"][:3]))
    np.testing.assert_array_equal(run.responses, [0, 32, 64, 96, 96 + 48, 96 + 96])
    np.testing.assert_array_equal(run.flops, [0, 256, 512, 768, 768 + 96, 768 + 192])
    np.testing.assert_allclose(run.policy["pass@1"][-1], run.final("pass@1"))
    np.testing.assert_allclose(run.policy["drift"][0], 0.0)
    np.testing.assert_allclose(run.success[-1].mean(-1), run.final("pass@1"))


def test_runs_are_deterministic_given_the_seed():
    task = make_task(TASK_SHAPE, 2)
    phases = [(ESConfig(population_size=4, member_temperature=1.0), 3), (GRPOConfig(), 2)]
    a, b = (train(task, phases, progress=False) for _ in range(2))
    c = train(task, phases, seed=1, progress=False)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert not np.array_equal(a.theta, c.theta)


@pytest.mark.filterwarnings("ignore:overflow")
@pytest.mark.parametrize("cfg", [GRPOConfig(optimizer="sgd", learning_rate=1e308), ESConfig(alpha=1e308)])
def test_non_finite_runs_stop_naming_the_step(cfg):
    task = make_task(TASK_SHAPE, 2)
    with pytest.raises(NonFiniteError, match=rf"step 1 \({cfg.name}\): \w+ became non-finite"):
        train(task, [(cfg, 50)], progress=False)


def test_bad_phases_raise():
    task = make_task(TASK_SHAPE, 1)
    with pytest.raises(ValueError, match="phases"):
        train(task, [], progress=False)
    with pytest.raises(ValueError, match="GRPOConfig or ESConfig"):
        train(task, [("grpo", 3)], progress=False)
    with pytest.raises(ValueError, match="steps"):
        train(task, [(GRPOConfig(), -1)], progress=False)


def test_flops_match_when_population_is_four_times_the_group():
    for g in (2, 8, 16):
        assert step_cost(GRPOConfig(num_generations=g), 64, "flops") == step_cost(
            ESConfig(population_size=4 * g), 64, "flops"
        )
    assert step_cost(GRPOConfig(), 64, "flops") != step_cost(ESConfig(population_size=30), 64, "flops")


def test_budget_definitions_convert_to_update_counts():
    grpo, es = GRPOConfig(num_generations=8), ESConfig(population_size=32)
    assert steps_for(es, grpo_budget(grpo, 100, 64, "responses"), 64, "responses") == 25
    assert steps_for(es, grpo_budget(grpo, 100, 64, "updates"), 64, "updates") == 100
    assert steps_for(es, grpo_budget(grpo, 100, 64, "flops"), 64, "flops") == 100
    phases = schedule(grpo, es, grpo_budget(grpo, 100, 64, "responses"), 64, "responses", switch=0.4)
    assert phases == [(grpo, 40), (es, 15)]
    with pytest.raises(ValueError, match="budget"):
        step_cost(grpo, 64, "tokens")
    with pytest.raises(ValueError, match="switch"):
        schedule(grpo, es, 10.0, 64, "updates", switch=1.5)
    with pytest.raises(ValueError, match="switch"):
        schedule(grpo, None, 10.0, 64, "updates", switch=0.5)
