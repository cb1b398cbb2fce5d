"""Settings from TOML files and flags; the budget of schedules (FLOP match and equal responses)."""

import argparse

import pytest

from escov.llm import schedules
from escov.llm.config import TrainConfig, config_from_args
from escov.llm.settings_help import add_train_arguments


def _parse(argv):
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_train_arguments(parser)
    return config_from_args(parser.parse_args(argv))


def test_flags_override_the_config_file(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(
        'algo = "es-grpo"\nswitch_step = 3\nmodel = "m"\nout = "o"\nsteps = 7\n'
        "[es]\nsigma = 0.002\n[grpo]\nbeta = 0.0\nnum_generations = 4\n"
    )
    cfg = _parse(
        [
            "--config",
            str(path),
            "--steps",
            "9",
            "--es.antithetic",
            "true",
            "--eval_ks",
            "1,4",
            "--population.noise_rank",
            "4",
            "--workers",
            "2",
        ]
    )
    assert (
        cfg.algo,
        cfg.steps,
        cfg.es.sigma,
        cfg.es.antithetic,
        cfg.grpo.beta,
        cfg.grpo.num_generations,
        cfg.eval_ks,
    ) == ("es-grpo", 9, 0.002, True, 0.0, 4, (1, 4))
    assert (cfg.population.noise_rank, cfg.population.batched, cfg.workers) == (4, False, 2)
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg  # what config.json saves reads back the same


@pytest.mark.parametrize(
    "text, match",
    [
        ('model = "m"\nout = "o"\nstepz = 3\n', "unknown setting 'stepz'"),
        ('model = "m"\nout = "o"\n[es]\nsigmaa = 1.0\n', "unknown setting 'sigmaa'"),
        ('model = "m"\nout = "o"\nsteps = "ten"\n', "steps must be an integer"),
        ('model = "m"\nout = "o"\nalgo = "ppo"\n', "algo must be one of"),
        ('model = "m"\nout = "o"\nalgo = "es-grpo"\nsteps = 10\nswitch_step = 10\n', "switch_step"),
        (
            'model = "m"\nout = "o"\nworkers = 3\n[es]\npopulation_size = 8\n',
            r"population_size \(8\) must be divisible by workers \(3\)",
        ),
        ('model = "m"\nout = "o"\nworkers = 0\n', "workers must be an integer >= 1"),
        (
            'model = "m"\nout = "o"\nengine = "vllm"\n[population]\nbatched = true\n',
            "population.batched needs engine = 'hf'",
        ),
        ('model = "m"\nout = "o"\n[population]\nnoise_rank = -1\n', "noise_rank must be an integer >= 0"),
        ('model = "m"\nout = "o"\n[population]\nrank = 4\n', "unknown setting 'rank'"),
    ],
)
def test_bad_config_files_are_errors(tmp_path, text, match):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        _parse(["--config", str(path)])


def test_unknown_flag_is_an_error():
    with pytest.raises((SystemExit, argparse.ArgumentError)):
        _parse(["--model", "m", "--out", "o", "--es.sgma", "0.1"])
    with pytest.raises(ValueError, match="model is required"):
        _parse(["--out", "o"])


def test_flop_match_with_n_equal_4g_gives_equal_steps():
    cfg = TrainConfig(algo="es-grpo", model="m", out="o", steps=10, switch_step=4)
    cfg.es.population_size, cfg.grpo.num_generations = 32, 8
    phases = schedules.plan(cfg)
    assert [(p.algo, p.start, p.steps) for p in phases] == [("es", 0, 4), ("grpo", 4, 6)]
    info = schedules.describe(cfg, phases)
    # 2 T N D P L for ES equals 8 T B G P L for GRPO: each phase spends exactly its share of the budget
    assert (
        info["phases"][0]["flops_per_prompt_PL"] == 8 * 8 * 4 and info["phases"][1]["flops_per_prompt_PL"] == 8 * 8 * 6
    )


@pytest.mark.parametrize("num_iterations", [1, 3])
def test_grpo_flops_count_num_iterations_as_the_bandit_does(num_iterations):
    """A GRPO step costs (2 + 6 mu) G per prompt: G generations, then mu forward/backward passes over them."""
    from escov.simulate import ESConfig as BanditES
    from escov.simulate import GRPOConfig as BanditGRPO

    cfg = TrainConfig(algo="es-grpo", model="m", out="o", steps=10, switch_step=4)
    cfg.es.population_size, cfg.grpo.num_generations, cfg.grpo.num_iterations = 32, 8, num_iterations
    grpo_cost, es_cost = (schedules.step_cost(a, cfg)["flops"] for a in ("grpo", "es"))
    assert grpo_cost == 2 * 8 + 6 * num_iterations * 8 and es_cost == 2 * 32
    bandit = BanditGRPO(num_generations=8, num_iterations=num_iterations), BanditES(population_size=32)
    assert (grpo_cost, es_cost) == tuple(c.flops_per_step(1) for c in bandit)  # one model for both levels
    es_phase = schedules.plan(cfg)[0]
    assert es_phase.steps == round(4 * grpo_cost / es_cost)  # mu = 3: each GRPO step of budget buys 2.5 ES steps


def test_equal_responses_budget_converts_es_steps():
    cfg = TrainConfig(
        algo="grpo-es", model="m", out="o", steps=12, switch_step=4, budget="responses", batch_size=2, train_pool=10
    )
    cfg.es.population_size, cfg.grpo.num_generations = 16, 4
    phases = schedules.plan(cfg)
    # GRPO step: 4 responses per prompt; ES step: 16; 8 GRPO steps of budget -> 2 ES steps
    assert [(p.algo, p.steps) for p in phases] == [("grpo", 4), ("es", 2)]
    info = schedules.describe(cfg, phases)
    assert info["phases"][0]["responses"] == info["phases"][1]["responses"] // 2 == 4 * 4 * 2


def test_old_setting_and_file_names_still_read(tmp_path):
    """population_every was renamed probe_every (the Lemma 1 probe, not the ES population), population.json
    probe.json: configs and run directories written with the old names still read."""
    from escov.llm import rundir

    assert TrainConfig.from_dict({"population_every": 5}).probe_every == 5
    with pytest.raises(ValueError, match="old name of 'probe_every'"):
        TrainConfig.from_dict({"population_every": 5, "probe_every": 5})
    old = tmp_path / "old-run"
    old.mkdir()
    (old / "population.json").write_text('{"measurements": [{"step": 0, "jspol": {"mean": 0.1}}]}')
    assert rundir.probe_path(old) == old / "population.json"
    assert rundir.read_probe(old, problems=[])["measurements"][0]["jspol"] == {"mean": 0.1}


SETTINGS_WITHOUT_TORCH = r"""
import json, sys
from escov.llm.config import TrainConfig

def build(**settings):
    cfg = TrainConfig.from_dict({"model": "m", "out": "o", "device": "cpu"} | settings)
    cfg.validate()
    return cfg

strategies = {
    "one_by_one": build(algo="es"),
    "batched_hf": build(algo="es", population={"batched": True}),
    "ray": build(algo="es", workers=2, es={"population_size": 4}),
    "ray named": build(algo="es", workers=2, es={"population_size": 4}, population={"members": "ray", "batched": True}),
    "vllm_lora": build(algo="es", engine="vllm", population={"members": "vllm_lora", "noise_rank": 4}),
    "vllm_inplace": build(algo="es", engine="vllm", population={"members": "vllm_inplace"}),
    "grpo": build(algo="grpo", grpo={"num_generations": 4, "beta": 0.0}),
    "es-grpo": build(algo="es-grpo", steps=4, switch_step=2, population={"batched": True, "noise_rank": 2}),
}
refused = []
for bad in ({"engine": "vllm", "population": {"members": "batched_hf"}},
            {"engine": "hf", "population": {"members": "vllm_lora", "noise_rank": 4}},
            {"workers": 3, "es": {"population_size": 8}}):
    try:
        build(**bad)
    except ValueError as err:
        refused.append(str(err))
loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.") or m == "escov.llm.es"
                or m.startswith("escov.llm.es."))
print(json.dumps({"built": sorted(strategies), "refused": refused, "loaded": loaded}))
"""


def test_settings_of_every_strategy_validate_without_torch_or_the_es_package():
    """A fresh interpreter builds and validates the settings of every member-evaluation strategy, GRPO and a
    schedule, and refuses bad combinations, without importing torch or any llm.es module."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-c", SETTINGS_WITHOUT_TORCH], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout)
    assert len(found["built"]) == 8
    expected = (
        "config: population.batched needs engine = 'hf'",
        "config: population.members vllm_lora needs engine = 'vllm', got 'hf'",
        "config: es.population_size (8) must be divisible by workers (3)",
    )
    refused = found["refused"]
    assert len(refused) == 3 and all(m.startswith(e) for m, e in zip(refused, expected)), refused
    assert found["loaded"] == [], found["loaded"]


# ----------------------------------------------------------------------------- the round trip, for generated configs


def _values_of(name: str, f, default):  # -> a hypothesis strategy or None
    """A hypothesis strategy of values of one setting near its default (most valid; the rest filtered);
    None for a setting whose values are left to their own tests (file paths, reward functions)."""
    from hypothesis import strategies as st

    from escov.llm import config
    from escov.llm.member_options import MEMBER_MODES
    from escov.llm.tasks.reasoning_format import PROMPT_STYLES
    from escov.llm.tracking import REPORT_TO

    choices = {
        "algo": config.ALGOS,
        "budget": config.BUDGETS,
        "engine": config.ENGINES,
        "dtype": config.DTYPES,
        "prompt_style": PROMPT_STYLES,
        "report_to": REPORT_TO,
        "device": ("auto", "cpu", "cuda", "cuda:1"),
        "grpo.loss_type": tuple(config.LOSSES),
        "grpo.scale_rewards": config.SCALE_REWARDS,
        "grpo.lr_scheduler_type": config.LR_SCHEDULERS,
        "grpo.lora_target_modules": ("", "q_proj,v_proj"),
        "population.lowrank_layout": config.LOWRANK_LAYOUTS,
        "population.members": MEMBER_MODES,
        "es.param_pattern": ("", r"mlp\.", "q_proj|v_proj"),
        "eval_ks": ((1,), (1, 4), (1, 16, 32)),
        "threshold_keep": ((50.0,), (5.0, 22.0, 50.0)),
        "data_split": ("files", "first-8"),
    }
    if name in choices:
        return st.sampled_from(choices[name])
    if f.type == "bool":
        return st.booleans()
    if f.type == "int":
        return st.integers(0, 2**31 - 1) if name == "seed" else st.integers(max(0, default // 2), 2 * default + 3)
    if f.type == "float":
        return (
            st.floats(default / 2, default if default >= 1 else min(2 * default, 1.0))
            if default > 0
            else st.floats(0.0, 0.5)
        )
    return None  # file paths, model, out, reward functions: their own tests


def _generated_configs():
    import dataclasses

    from hypothesis import strategies as st

    from escov.llm.settings_help import settings as all_settings

    values = {}
    for name, f, _, _ in all_settings():
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        strategy = _values_of(name, f, default)
        if strategy is not None:
            values[name] = strategy.filter(lambda v, d=default: v != d)  # a changed setting

    @st.composite
    def configs(draw):
        changed = draw(st.sets(st.sampled_from(sorted(values)), min_size=1, max_size=12))
        data: dict = {}
        for name in sorted(changed):
            section, _, key = name.rpartition(".")
            (data.setdefault(section, {}) if section else data)[key] = draw(values[name])
        return data

    return configs()


def test_generated_configs_read_back_the_same_from_their_dict_and_from_config_json():
    """from_dict(to_dict(c)) == c and the same through JSON (config.json: tuples become lists), for configs
    that change 1 to 12 settings drawn from every setting of llm train (invalid combinations filtered)."""
    import json

    from hypothesis import assume, given, settings

    @settings(max_examples=150, deadline=None)
    @given(_generated_configs())
    def round_trip(data):
        try:
            cfg = TrainConfig.from_dict(data)
        except ValueError:
            assume(False)
        as_dict = cfg.to_dict()
        for key, value in data.items():  # the drawn values are the config's (nothing dropped on the way)
            given_values = value.items() if isinstance(value, dict) else [(None, value)]
            for inner, v in given_values:
                got = as_dict[key][inner] if inner else as_dict[key]
                assert got == (tuple(v) if isinstance(v, list) else v), (key, inner)
        assert TrainConfig.from_dict(as_dict) == cfg
        assert TrainConfig.from_dict(json.loads(json.dumps(as_dict))) == cfg

    round_trip()


@pytest.mark.parametrize(
    "setting, value",
    [
        ("prompt_style", "instruct"),
        ("prompt_style", "paper"),
        ("reward", "es-at-scale-countdown"),
        ("format_reward", 0.25),
    ],
)
def test_the_task_a_config_makes_carries_each_task_setting_off_its_default(setting, value):
    """make_task is get_task with the config's task settings: each one off its default changes the prompts or
    the scores exactly as get_task given that setting alone does."""
    from escov.llm.tasks import countdown, get_task

    def behaviour(task):
        problem = task.problems("test", 1, seed=0)[0]
        numbers, target = problem.meta["numbers"], problem.meta["target"]
        right = countdown.distinct_solutions(numbers, target)[0]
        wrong = "+".join(map(str, numbers)) if sum(numbers) != target else "*".join(map(str, numbers))
        completions = [
            text
            for answer in (right, wrong)
            for text in (
                answer,
                f"<think> x </think> <answer>{answer}</answer>",
                f" x </think>\n<answer>{answer}</answer>",
            )
        ]
        return problem.prompt, [task.score(problem, c) for c in completions]

    made = behaviour(TrainConfig(**{setting: value}).make_task())
    assert made == behaviour(get_task("countdown", **{setting: value}))
    assert made != behaviour(get_task("countdown"))


_TASK_REWARDS = """
def exact(prompts, completions, solution, **kwargs):
    return [1.0 if c.strip() == s else 0.0 for c, s in zip(completions, solution)]

def short(prompts, completions, **kwargs):
    return [1.0 if len(c) <= 2 else 0.0 for c in completions]
"""


def test_the_task_a_config_makes_carries_its_data_and_reward_function_settings(tmp_path, monkeypatch):
    """The data files, their split and field names, the reward functions and weights, what counts as correct and the
    reward timeout: make_task is get_task given each of them by get_task's own name, and each matters (the task
    without it differs in its problems, scores, correctness or time limit)."""
    import json
    import sys

    from escov.llm.tasks import get_task

    (tmp_path / "task_rewards.py").write_text(_TASK_REWARDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    rows = [{"question": f"{i}+{i}=", "solution": str(2 * i)} for i in range(12)]
    for name, part in (("train.jsonl", rows[:8]), ("test.jsonl", rows[8:]), ("all.jsonl", rows)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in part))
    rewards = dict(
        data_fields="prompt=question",
        reward_function=("task_rewards:exact", "task_rewards:short"),
        reward_weights=(1.0, 0.5),
        correct_reward="exact",
        correct_threshold=0.75,
        reward_timeout=30.0,
    )
    two_files = dict(rewards, data=str(tmp_path / "train.jsonl"), test_data=str(tmp_path / "test.jsonl"))
    one_file = dict(rewards, data=str(tmp_path / "all.jsonl"), data_split="first-5")

    def as_get_task(settings):  # get_task's names for them
        named = dict(settings, fields={"prompt": "question"}, reward_function=list(settings["reward_function"]))
        del named["data_fields"]
        return named

    def behaviour(task):
        train, test = task.problems("train", 4, seed=0), task.problems("test", 2, seed=0)
        batch = [(p, c) for p in train[:2] + test[:1] for c in (p.meta["columns"]["solution"], "12", "xyz")]
        scores = task.score_batch([p for p, _ in batch], [c for _, c in batch])
        return (
            [p.prompt for p in train + test],
            [task.size("train"), task.size("test")],
            scores.total.tolist(),
            scores.correct.tolist(),
            task.rewards.timeout,
        )

    try:
        for settings in (two_files, one_file):
            made = behaviour(TrainConfig(task="prompts", **settings).make_task())
            named = as_get_task(settings)
            assert made == behaviour(get_task("prompts", **named))
            split = "data_split" if "data_split" in named else "test_data"
            with pytest.raises(ValueError, match="task 'prompts' has no test data"):
                behaviour(get_task("prompts", **{k: v for k, v in named.items() if k != split}))
            assert made != behaviour(get_task("prompts", **{k: v for k, v in named.items() if k != "reward_weights"}))
            for changed in ({"correct_threshold": 1.0, "correct_reward": "short"}, {"reward_timeout": 0.0}):
                assert made != behaviour(get_task("prompts", **(named | changed)))
    finally:
        sys.modules.pop("task_rewards", None)
