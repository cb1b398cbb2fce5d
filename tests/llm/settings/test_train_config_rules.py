"""The run's top-level rules (llm/settings/train_config.py TrainConfig.validate): each value on both sides of its
bound, each combination refused, each message whole; and when ES runs on Ray actors (distributed)."""

from __future__ import annotations

import math

import pytest

from escov.llm.settings.train_config import TrainConfig

REFUSED = [
    ({"steps": 0}, "steps must be an integer >= 1, got 0"),
    ({"steps": True}, "steps must be an integer >= 1, got True"),
    ({"budget": "tokens"}, "budget must be one of ['flops', 'responses'], got 'tokens'"),
    ({"engine": "sglang"}, "engine must be one of ['hf', 'vllm'], got 'sglang'"),
    ({"dtype": "int8"}, "dtype must be one of ['float32', 'bfloat16', 'float16'], got 'int8'"),
    ({"switch_step": -1}, "switch_step must be an integer >= 0, got -1"),
    ({"probe_every": -1}, "probe_every must be an integer >= 0, got -1"),
    ({"eval_steps": -1}, "eval_steps must be an integer >= 0, got -1"),
    ({"seed": -1}, "seed must be an integer >= 0, got -1"),
    ({"eval_skip": -1}, "eval_skip must be an integer >= 0, got -1"),
    (
        {"eval_skip": 4, "task": "gsm8k", "test_data": "t.jsonl"},
        "eval_skip = 4 skips generated test problems; with data files choose the rows in the test file (give "
        "eval_skip = 0)",
    ),
    ({"probe_every": 5, "probe": False}, "probe_every = 5 needs probe = true"),
    ({"algo": "es-grpo", "steps": 4, "switch_step": 0}, "switch_step must lie in (0, steps=4) for algo es-grpo, got 0"),
    ({"algo": "grpo-es", "steps": 4, "switch_step": 4}, "switch_step must lie in (0, steps=4) for algo grpo-es, got 4"),
    ({"batch_size": 9, "train_pool": 8}, "batch_size must be <= train_pool (8), got 9"),
    ({"eval_samples": 8, "eval_ks": (1, 9)}, "eval_ks must be integers in [1, eval_samples=8], got (1, 9)"),
    ({"eval_ks": (0, 1)}, "eval_ks must be integers in [1, eval_samples=32], got (0, 1)"),
    ({"eval_ks": ()}, "eval_ks must be integers in [1, eval_samples=32], got ()"),
    ({"threshold_keep": (0.0, 5.0)}, "threshold_keep must hold percentages in (0, 100], got (0.0, 5.0)"),
    ({"threshold_keep": (100.5,)}, "threshold_keep must hold percentages in (0, 100], got (100.5,)"),
    ({"workers": 0}, "workers must be an integer >= 1, got 0"),
    ({"gpu_memory_utilization": 0.0}, "gpu_memory_utilization must lie in (0, 1], got 0.0"),
    ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization must lie in (0, 1], got 1.5"),
    ({"reward_timeout": -1.0}, "reward_timeout must be a number of seconds >= 0 (0: no limit), got -1.0"),
    ({"reward_timeout": True}, "reward_timeout must be a number of seconds >= 0 (0: no limit), got True"),
    ({"reward_timeout": math.inf}, "reward_timeout must be a number of seconds >= 0 (0: no limit), got inf"),
    ({"eval_solutions": -1}, "eval_solutions must be an integer >= 0, got -1"),
    ({"train_solutions": -2}, "train_solutions must be an integer >= 0, got -2"),
    ({"checkpoint_dense": -1}, "checkpoint_dense must be an integer >= 0, got -1"),
    ({"truncate_prompts": 1}, "truncate_prompts must be true or false, got 1"),
    ({"report_to": "mlflow"}, "report_to must be one of ['none', 'tensorboard', 'wandb', 'trackio'], got 'mlflow'"),
    ({"completions_kept": -1}, "completions_kept must be an integer >= 0, got -1"),
    ({"completions_every": -1}, "completions_every must be an integer >= 0, got -1"),
    ({"data": 3}, "data must be a file path (a string), got 3"),
    ({"ray_address": 3}, "ray_address must be a string, got 3"),
    ({"gpu_memory_utilization": True}, "gpu_memory_utilization must lie in (0, 1], got True"),
    ({"test_data": None}, "test_data must be a file path (a string), got None"),
    ({"prompt_style": "fancy"}, "prompt_style must be one of ['plain', 'instruct', 'paper'], got 'fancy'"),
    ({"temperature": 0}, "temperature must be a finite number > 0, got 0"),
    ({"eval_temperature": -1.0}, "eval_temperature must be a finite number > 0, got -1.0"),
    # a task object's own name (llm.train.train takes one): the reward convention's own rules
    (
        {"task": "mine", "reward": "bogus"},
        "reward must be one of ['escov', 'es-at-scale-countdown', 'paper-gsm8k'], got 'bogus'",
    ),
    ({"task": "mine", "format_reward": 1.5}, "format_reward must lie in [0, 1), got 1.5"),
    (
        {"task": "mine", "reward": "paper-gsm8k", "format_reward": 0.1},
        "format_reward is part of the reward convention 'paper-gsm8k'; set it only with reward 'escov'",
    ),
    (
        {"reward_timeout": 5.0},
        "reward_timeout limits reward functions (reward_function); the task's own reward has none",
    ),
    (
        {"eval_solutions": 2, "task": "arithmetic"},
        "eval_solutions = 2 needs generated problems of task countdown or countdown3 (no data files); give "
        "eval_solutions = 0",
    ),
    (  # a test file alone is data enough to refuse a solution block, for either split
        {"train_solutions": 3, "task": "countdown3", "test_data": "t.jsonl"},
        "train_solutions = 3 needs generated problems of task countdown or countdown3 (no data files); give "
        "train_solutions = 0",
    ),
    (
        {"eval_solutions": 2, "task": "countdown3", "data": "d.jsonl"},
        "eval_solutions = 2 needs generated problems of task countdown or countdown3 (no data files); give "
        "eval_solutions = 0",
    ),
]

ACCEPTED = [
    {"task": "mine", "format_reward": 0.1},  # a task object's own name, under any convention
    {"task": "mine", "reward": "paper-gsm8k"},
    {"task": "mine", "reward": "es-at-scale-countdown"},
    {"reward_timeout": 5.0, "reward_function": ("m:f",)},  # a built-in task's reward functions are limited too
    {"completions_kept": 0, "completions_every": 0, "checkpoint_dense": 0, "truncate_prompts": True},
    {"seed": 0, "eval_skip": 0, "switch_step": 0},
    {"algo": "es-grpo", "steps": 4, "switch_step": 1},
    {"algo": "grpo-es", "steps": 4, "switch_step": 3},
    {"batch_size": 8, "train_pool": 8},
    {"eval_samples": 8, "eval_ks": (1, 8)},
    {"threshold_keep": (100.0, 0.5)},
    {"gpu_memory_utilization": 1.0},
    {"probe_every": 5, "probe": True},
    {"eval_skip": 8},
    {"eval_solutions": 2, "train_solutions": 3},
]


@pytest.mark.parametrize("settings, message", REFUSED)
def test_each_refused_value_or_combination_is_named_whole(settings, message):
    with pytest.raises(ValueError) as err:
        TrainConfig(**settings)
    assert str(err.value) == message


@pytest.mark.parametrize("settings", ACCEPTED)
def test_each_value_at_or_inside_its_bound_is_accepted(settings):
    TrainConfig(**settings)


@pytest.mark.parametrize(
    "settings, distributed",
    [
        ({}, None),
        ({"workers": 2}, {"workers": 2, "address": "", "cpus_per_worker": 2.0, "threads_per_worker": 2}),
        ({"ray_address": "auto"}, {"workers": 1, "address": "auto", "cpus_per_worker": 2.0, "threads_per_worker": 2}),
        ({"workers": 4, "threads": 1}, {"workers": 4, "address": "", "cpus_per_worker": 1.0, "threads_per_worker": 1}),
    ],
)
def test_es_runs_on_ray_actors_with_more_than_one_worker_or_a_cluster_address(settings, distributed):
    got = TrainConfig(**settings).distributed()
    if distributed is None:
        assert got is None
    else:
        assert {k: getattr(got, k) for k in distributed} == distributed and got.gpus_per_worker == 0.0


@pytest.mark.parametrize("device, gpus", [("cuda", 1.0), ("cuda:1", 1.0), ("cpu", 0.0)])
def test_each_actor_holds_one_gpu_of_its_own_when_the_run_is_on_cuda(device, gpus):
    """The settings alone (no GPU needed to read them): an engine per GPU on CUDA, none on the CPU."""
    assert TrainConfig(workers=2, device=device).distributed().gpus_per_worker == gpus


@pytest.mark.parametrize("given, read", [(True, "group"), (False, "none"), ("batch", "batch")])
def test_a_settings_table_reads_trls_scale_rewards_booleans(given, read):
    """TOML's `scale_rewards = true` (TRL's former boolean) reads as group, false as none: the [grpo] table's
    values are otherwise checked against the field's type (a string)."""
    assert TrainConfig.from_dict({"grpo": {"scale_rewards": given}}).grpo.scale_rewards == read


@pytest.mark.parametrize(
    "table, message",
    [
        ({"population": {"rows": 8}}, "run.toml: [population]: unknown setting 'rows'; known settings: "),
        ({"es": {"rows": 8}}, "run.toml: [es]: unknown setting 'rows'; known settings: "),
        ({"grpo": {"rows": 8}}, "run.toml: [grpo]: unknown setting 'rows'; known settings: "),
        ({"population": 3}, "run.toml: population must be a table of settings, got 3"),
        ({"es": [1]}, "run.toml: es must be a table of settings, got [1]"),
        ({"grpo": "x"}, "run.toml: grpo must be a table of settings, got 'x'"),
        ({"steps": 0}, "run.toml: steps must be an integer >= 1, got 0"),
        ({"grpo": {"epsilon": 0.0}}, "run.toml: grpo.epsilon must be a finite number > 0, got 0.0"),
    ],
)
def test_a_settings_tables_refusal_names_its_source_and_table_once(table, message):
    with pytest.raises(ValueError) as err:
        TrainConfig.from_dict(table, source="run.toml")
    assert str(err.value).startswith(message) and str(err.value).count("run.toml") == 1


def test_a_renamed_setting_reads_under_its_new_name_beside_the_others():
    cfg = TrainConfig.from_dict({"population_every": 5, "steps": 7, "probe": True})
    assert (cfg.probe_every, cfg.steps, cfg.probe) == (5, 7, True)


@pytest.mark.parametrize(
    "data, message",
    [
        (3, "run.toml must be a table of settings, got 3"),
        ({"stpes": 3}, "run.toml: unknown setting 'stpes'; known settings: ['algo', "),
        (
            {"population_every": 5, "probe_every": 5},
            "run.toml: 'population_every' is the old name of 'probe_every'; give only 'probe_every'",
        ),
    ],
)
def test_a_settings_table_that_cannot_be_read_is_named_by_its_source_once(data, message):
    with pytest.raises(ValueError) as err:
        TrainConfig.from_dict(data, source="run.toml")
    assert str(err.value).startswith(message) and str(err.value).count("run.toml") == 1
