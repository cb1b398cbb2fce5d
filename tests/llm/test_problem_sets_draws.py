"""Which problems each split of a run holds (llm/problem_sets.py), each spelled here from the task's own draw
(task.problems(split, n, seed)) or its solution blocks (block_problems) with the seed the module's docstring names:
the test and validation prompts with seed 0 whatever the run's seed, the training-split curve with 1,000,003, the
probe with 1, the training pool with the run's seed, the held-out task's with seed 0; eval_solutions and
train_solutions choose the blocks of exactly k solutions for the splits they name and no other. Small counts, so
each test takes well under a second (test_problem_sets.py pins the budgets' own prompts)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from escov.llm.config import TrainConfig
from escov.llm.problem_sets import (
    eval_set,
    heldout_set,
    probe_problems,
    prompt_sources,
    split_set,
    train_pool,
)
from escov.llm.tasks import get_task
from escov.llm.tasks.solution_blocks import block_problems


def ids(problems) -> list[str]:
    return [p.id for p in problems]


def cfg(**kw) -> TrainConfig:
    return TrainConfig(**({"task": "countdown3", "seed": 3, "eval_problems": 6, "batch_size": 2} | kw))


def test_the_test_prompts_are_the_test_splits_seed_0_draw_and_eval_solutions_takes_its_block():
    task = get_task("countdown3")
    assert eval_set(cfg()).ids == ids(task.problems("test", 6, seed=0))
    assert eval_set(cfg(), n_problems=4).ids == ids(task.problems("test", 4, seed=0))
    assert eval_set(cfg()).ids != ids(task.problems("test", 6, seed=3))  # not the run's seed
    assert eval_set(cfg(eval_solutions=2)).ids == ids(block_problems(task, "test", 6, 0, 2))
    other = get_task("arithmetic")  # a task handed to the run is the one measured
    handed = eval_set(cfg(), task=other)
    assert handed.task is other and handed.ids == ids(other.problems("test", 6, seed=0))


def test_each_split_of_a_curve_is_its_own_draw():
    task = get_task("countdown3")
    assert split_set(cfg(), "test").ids == eval_set(cfg()).ids
    assert split_set(cfg(), "validation").ids == ids(task.problems("validation", 6, seed=0))
    assert split_set(cfg(), "validation", 3).ids == ids(task.problems("validation", 3, seed=0))
    assert split_set(cfg(eval_solutions=2), "validation").ids == ids(block_problems(task, "validation", 6, 0, 2))
    assert split_set(cfg(eval_solutions=2), "test", 3).ids == ids(block_problems(task, "test", 3, 0, 2))
    train = ids(task.problems("train", 5, seed=1_000_003))
    assert split_set(cfg(), "train", 5).ids == train and split_set(cfg(eval_solutions=2), "train", 5).ids == train
    assert split_set(cfg(), "train", 5).task.name == task.name == "countdown"  # countdown3: countdown, 3 numbers
    with pytest.raises(ValueError, match=r"^split must be one of test, validation, train, got 'dev'$"):
        split_set(cfg(), "dev")


def test_the_training_pool_is_the_runs_seed_draw_or_its_block_and_the_probe_is_seed_1():
    task = get_task("countdown3")
    assert ids(train_pool(cfg(train_pool=8), task)) == ids(task.problems("train", 8, seed=3))
    assert ids(train_pool(cfg(train_pool=8, train_solutions=2), task)) == ids(block_problems(task, "train", 8, 3, 2))
    assert ids(train_pool(cfg(train_pool=8, eval_solutions=2), task)) == ids(task.problems("train", 8, seed=3))
    assert ids(probe_problems(cfg(probe_prompts=3), task)) == ids(task.problems("test", 3, seed=1))
    assert ids(probe_problems(cfg(probe_prompts=3, eval_solutions=2), task)) == ids(task.problems("test", 3, seed=1))


def test_the_held_out_task_is_its_own_test_splits_seed_0_draw():
    held = heldout_set(cfg(heldout_task="arithmetic", heldout_problems=5, seed=7, eval_solutions=2))
    assert held.task.name == "arithmetic" and held.ids == ids(get_task("arithmetic").problems("test", 5, seed=0))
    assert heldout_set(cfg(heldout_task="")) is None


def test_a_generated_tasks_prompt_sources_are_the_pool_the_test_and_probe_prompts_and_the_held_out_task():
    run = cfg(train_pool=4, eval_problems=3, probe_prompts=2, heldout_task="arithmetic", heldout_problems=2)
    task = run.make_task()
    sources = prompt_sources(run, task)
    assert list(sources) == [
        "task countdown (train problems)",
        "task countdown (test problems)",
        "held-out task arithmetic",
    ]
    assert ids(sources["task countdown (train problems)"]) == ids(task.problems("train", 4, seed=3))
    assert ids(sources["task countdown (test problems)"]) == ids(task.problems("test", 3, seed=0)) + ids(
        task.problems("test", 2, seed=1)
    )
    assert ids(sources["held-out task arithmetic"]) == ids(get_task("arithmetic").problems("test", 2, seed=0))
    assert list(prompt_sources(cfg(train_pool=4, eval_problems=3, heldout_task=""), task)) == list(sources)[:2]


ROWS = [{"data_source": "toy", "prompt": f"{i}+1=", "reward_model": {"ground_truth": str(i + 1)}} for i in range(12)]


def test_a_data_file_tasks_prompt_sources_are_every_record_of_each_file(tmp_path):
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "train.parquet")
    pq.write_table(pa.Table.from_pylist(ROWS[:5]), tmp_path / "test.parquet")
    files = {"data": str(tmp_path / "train.parquet"), "test_data": str(tmp_path / "test.parquet")}
    run = TrainConfig(
        task="prompts", reward_function="r:a", train_pool=4, batch_size=2, eval_problems=2, heldout_task="", **files
    )
    task = get_task("prompts", reward_function=lambda prompts, completions, **kw: [0.0] * len(completions), **files)
    sources = prompt_sources(run, task)
    assert list(sources) == [f"data file {tmp_path / 'train.parquet'}", f"data file {tmp_path / 'test.parquet'}"]
    assert [len(v) for v in sources.values()] == [12, 5]  # every record, not the pool's 4 nor the 2 measured
    assert ids(sources[f"data file {tmp_path / 'test.parquet'}"]) == ids(task.problems("test", 5, seed=0))


def test_a_split_without_records_is_no_source_and_the_other_split_still_is():
    """A Countdown test file alone (llm eval's case): no training records, 22 test records; a training file alone:
    no test records."""
    sample = "tests/data/countdown_sample.json"
    only_test = TrainConfig(task="countdown", test_data=sample, train_pool=4, batch_size=2, heldout_task="")
    task = only_test.make_task()
    assert (task.size("train"), task.size("test")) == (0, 22)
    assert {k: len(v) for k, v in prompt_sources(only_test, task).items()} == {f"data file {sample}": 22}
    only_train = TrainConfig(task="countdown", data=sample, train_pool=4, batch_size=2, heldout_task="")
    assert {k: len(v) for k, v in prompt_sources(only_train, only_train.make_task()).items()} == {
        f"data file {sample}": 22
    }


def test_the_test_prompts_of_a_task_handed_to_the_run_are_that_tasks():
    run = cfg(train_pool=4, eval_problems=3, probe_prompts=2, heldout_task="")
    handed = get_task("arithmetic")
    sources = prompt_sources(run, handed)
    assert ids(sources["task arithmetic (test problems)"]) == ids(handed.problems("test", 3, seed=0)) + ids(
        handed.problems("test", 2, seed=1)
    )
    validation = split_set(cfg(), "validation")
    assert validation.task.name == "countdown" and validation.task.size("validation") is None
