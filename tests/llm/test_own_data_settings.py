"""Settings for your own data: reward functions and weights as TOML lists and repeated flags, callables
recorded by import path, the paper's measurements off on task 'prompts', problem counts fitted to a
small file (or a one-line error naming the flag), and flags the chosen algorithm never reads refused."""

import argparse
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from escov.llm import train_cli
from escov.llm.config import TrainConfig, config_from_args
from escov.llm.tasks import get_task
from escov.llm.train import fit_to_data

ROWS = [{"data_source": "toy", "prompt": f"{i}+1=", "reward_model": {"ground_truth": str(i + 1)}} for i in range(48)]


def parse(argv: list[str], tmp_path) -> TrainConfig:
    parser = argparse.ArgumentParser()
    train_cli.add_arguments(parser)
    return config_from_args(parser.parse_args(["--model", "m", "--out", str(tmp_path / "run"), *argv]))


def test_repeated_reward_flags_and_toml_lists_give_every_function_and_weight(tmp_path):
    cfg = parse(
        [
            "--task",
            "prompts",
            "--data",
            "d.jsonl",
            "--reward_function",
            "r:a",
            "--reward_function",
            "r:b",
            "--reward_weights",
            "1.0",
            "--reward_weights",
            "0.5",
        ],
        tmp_path,
    )
    assert cfg.reward_function == ("r:a", "r:b") and cfg.reward_weights == (1.0, 0.5)
    assert cfg.task_kwargs()["reward_function"] == ["r:a", "r:b"] and cfg.task_kwargs()["reward_weights"] == [1.0, 0.5]
    (tmp_path / "c.toml").write_text(
        'task = "prompts"\ndata = "d.jsonl"\nreward_function = ["r:a", "r:b"]\nreward_weights = [1, 0.5]\n'
    )
    from_toml = parse(["--config", str(tmp_path / "c.toml")], tmp_path)
    assert from_toml.reward_function == ("r:a", "r:b") and from_toml.reward_weights == (1.0, 0.5)
    one = TrainConfig.from_dict({"model": "m", "out": "o", "task": "prompts", "data": "d", "reward_function": "r:a"})
    assert one.reward_function == ("r:a",)  # config.json files written with one string still read
    with pytest.raises(ValueError, match=r"one number per reward function: 2 functions, got 1 weights"):
        parse(
            [
                "--task",
                "prompts",
                "--data",
                "d",
                "--reward_function",
                "r:a",
                "--reward_function",
                "r:b",
                "--reward_weights",
                "1",
            ],
            tmp_path,
        )


def test_a_callable_is_recorded_by_its_import_path(tmp_path, monkeypatch):
    (tmp_path / "recorded_rewards.py").write_text(
        "def f(prompts, completions, **kw):\n    return [0.0] * len(completions)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import recorded_rewards

    try:
        cfg = TrainConfig(model="m", out="o", task="prompts", data="d", reward_function=recorded_rewards.f)
        assert cfg.reward_function == ("recorded_rewards:f",)
        with pytest.raises(ValueError, match="cannot be recorded as 'module:function'"):
            TrainConfig(model="m", out="o", task="prompts", data="d", reward_function=lambda **kw: [])
    finally:
        sys.modules.pop("recorded_rewards", None)


def test_the_papers_measurements_are_off_on_your_data_unless_asked_for(tmp_path):
    mine = parse(["--task", "prompts", "--data", "d", "--reward_function", "r:a"], tmp_path)
    assert (mine.probe, mine.heldout_task, mine.threshold_keep) == (False, "", ())
    asked = parse(
        [
            "--task",
            "prompts",
            "--data",
            "d",
            "--reward_function",
            "r:a",
            "--probe",
            "true",
            "--heldout_task",
            "arithmetic",
            "--threshold_keep",
            "50",
        ],
        tmp_path,
    )
    assert (asked.probe, asked.heldout_task, asked.threshold_keep) == (True, "arithmetic", (50.0,))
    paper = parse(["--task", "countdown"], tmp_path)
    assert (paper.probe, paper.heldout_task, paper.threshold_keep) == (True, "arithmetic", (5.0, 22.0, 50.0))


def test_the_python_api_has_the_command_lines_defaults_for_your_data():
    mine = TrainConfig(task="prompts", reward_function=("r:a",))
    assert (mine.probe, mine.heldout_task, mine.threshold_keep) == (False, "", ())
    asked = TrainConfig(task="prompts", reward_function=("r:a",), heldout_task="gsm8k", threshold_keep=(50.0,))
    assert (asked.probe, asked.heldout_task, asked.threshold_keep) == (False, "gsm8k", (50.0,))
    again = TrainConfig.from_dict(mine.to_dict())  # a run's config.json: its settings as recorded
    assert (again.probe, again.heldout_task) == (False, "")
    resumed = TrainConfig.from_dict(mine.to_dict() | {"probe": True})
    assert resumed.probe is True  # recorded as true: kept
    assert TrainConfig(task="countdown").probe is True


def test_flags_the_algorithm_never_reads_are_refused(tmp_path):
    with pytest.raises(ValueError) as err:
        parse(["--algo", "grpo", "--workers", "2"], tmp_path)
    assert str(err.value) == (
        "--workers does nothing with --algo grpo: it is read only by --algo es (and es-grpo, grpo-es); drop it"
    )
    with pytest.raises(ValueError) as err:
        parse(["--algo", "es", "--grpo.beta", "0", "--learning_rate", "1e-5"], tmp_path)
    assert str(err.value) == (
        "--grpo.beta, --grpo.learning_rate do nothing with --algo es: they are read only by --algo grpo "
        "(and es-grpo, grpo-es); drop them"
    )
    with pytest.raises(ValueError, match=r"^--population.batched do"):
        parse(["--algo", "grpo", "--population.batched", "true"], tmp_path)
    # what both read (the probe's sigma; GRPO's group size prices ES's budget), and everything in a schedule of both,
    # stays
    assert parse(["--algo", "grpo", "--es.sigma", "0.01"], tmp_path).es.sigma == 0.01
    assert parse(["--algo", "es", "--grpo.num_generations", "4"], tmp_path).grpo.num_generations == 4
    assert (
        parse(
            ["--algo", "es-grpo", "--steps", "4", "--switch_step", "2", "--workers", "2", "--grpo.beta", "0"], tmp_path
        ).workers
        == 2
    )


def test_problem_counts_fit_a_small_file_or_name_the_flag(tmp_path):
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "train.parquet")
    pq.write_table(pa.Table.from_pylist(ROWS[:10]), tmp_path / "test.parquet")
    task = get_task(
        "prompts",
        data=tmp_path / "train.parquet",
        test_data=tmp_path / "test.parquet",
        reward_function=lambda prompts, completions, **kw: [0.0] * len(completions),
    )
    cfg = TrainConfig(model="m", out="o", task="prompts", data="d", reward_function="r:a", probe=True)
    notes = fit_to_data(cfg, task)
    assert (cfg.train_pool, cfg.eval_problems, cfg.probe_prompts, cfg.batch_size) == (48, 10, 4, 16)
    assert notes == [
        "the train data holds 48 records: train_pool = 48 (default 512; --train_pool sets it)",
        "the test data holds 10 records: eval_problems = 10 (default 64; --eval_problems sets it)",
    ]
    for given, message in [
        (
            {"train_pool": 100},
            r"^train_pool = 100 but the train data holds 48 records: give "
            r"--train_pool 48 or less$",
        ),
        ({"eval_problems": 20}, r"^eval_problems = 20 but the test data holds 10 records"),
    ]:
        cfg = TrainConfig(model="m", out="o", task="prompts", data="d", reward_function="r:a", **given)
        with pytest.raises(ValueError, match=message):
            fit_to_data(cfg, task)
    tiny = get_task(
        "prompts",
        data=tmp_path / "test.parquet",
        test_data=tmp_path / "test.parquet",
        reward_function=lambda prompts, completions, **kw: [0.0] * len(completions),
    )
    cfg = TrainConfig(model="m", out="o", task="prompts", data="d", reward_function="r:a")
    assert "batch_size = 10 (default 16; --batch_size sets it)" in fit_to_data(cfg, tiny)[-1] and cfg.batch_size == 10
    cfg = TrainConfig(model="m", out="o", task="prompts", data="d", reward_function="r:a", batch_size=12)
    with pytest.raises(
        ValueError, match=r"^batch_size = 12 but the training pool holds 10 prompts: give --batch_size 10"
    ):
        fit_to_data(cfg, tiny)
    countdown = TrainConfig(model="m", out="o")
    assert fit_to_data(countdown, get_task("countdown")) == [] and countdown.train_pool == 512
