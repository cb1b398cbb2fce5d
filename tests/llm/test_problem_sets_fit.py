"""Which problem counts are fitted to a user's data (llm/problem_sets.py fit_to_data) when settings act together:
the probe's prompt count is fitted to a small test file only when the probe runs; with the probe off it is neither
lowered nor refused, while the evaluation's count still is."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from escov.llm.config import TrainConfig
from escov.llm.problem_sets import fit_to_data
from escov.llm.tasks import get_task

ROWS = [{"data_source": "toy", "prompt": f"{i}+1=", "reward_model": {"ground_truth": str(i + 1)}} for i in range(40)]


@pytest.fixture
def task(tmp_path):
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "train.parquet")
    pq.write_table(pa.Table.from_pylist(ROWS[:2]), tmp_path / "test.parquet")  # 2 test records: fewer than 4 prompts
    return get_task(
        "prompts",
        data=tmp_path / "train.parquet",
        test_data=tmp_path / "test.parquet",
        reward_function=lambda prompts, completions, **kw: [0.0] * len(completions),
    )


def _cfg(**kw) -> TrainConfig:
    return TrainConfig(model="m", out="o", task="prompts", data="d", reward_function="r:a", **kw)


def test_the_probes_prompts_are_fitted_only_when_the_probe_runs(task):
    default = TrainConfig.__dataclass_fields__["probe_prompts"].default
    assert default > 2
    on = _cfg(probe=True)
    notes = fit_to_data(on, task)
    assert (on.train_pool, on.eval_problems, on.probe_prompts) == (40, 2, 2)
    assert f"the test data holds 2 records: probe_prompts = 2 (default {default}; --probe_prompts sets it)" in notes
    off = _cfg(probe=False)
    notes = fit_to_data(off, task)
    assert (off.train_pool, off.eval_problems, off.probe_prompts) == (40, 2, default)
    assert not any("probe_prompts" in n for n in notes) and len(notes) == 2


def test_a_probe_count_given_explicitly_is_refused_only_when_the_probe_runs(task):
    assert fit_to_data(_cfg(probe=False, probe_prompts=8), task)
    message = r"^probe_prompts = 8 but the test data holds 2 records: give --probe_prompts 2 or less$"
    with pytest.raises(ValueError, match=message):
        fit_to_data(_cfg(probe=True, probe_prompts=8), task)


@pytest.fixture
def small(tmp_path):
    """10 training records and 2 test records: fewer than every default count."""
    pq.write_table(pa.Table.from_pylist(ROWS[:10]), tmp_path / "train10.parquet")
    pq.write_table(pa.Table.from_pylist(ROWS[:2]), tmp_path / "test2.parquet")
    return get_task(
        "prompts",
        data=tmp_path / "train10.parquet",
        test_data=tmp_path / "test2.parquet",
        reward_function=lambda prompts, completions, **kw: [0.0] * len(completions),
    )


def test_counts_left_at_their_defaults_are_lowered_to_the_data_in_order_with_a_note_each(small):
    defaults = {k: TrainConfig.__dataclass_fields__[k].default for k in ("train_pool", "eval_problems", "batch_size")}
    assert defaults["train_pool"] > 10 and defaults["eval_problems"] > 2 and defaults["batch_size"] > 10
    run = _cfg(probe=True)
    notes = fit_to_data(run, small)
    assert (run.train_pool, run.eval_problems, run.probe_prompts, run.batch_size) == (10, 2, 2, 10)
    probe = TrainConfig.__dataclass_fields__["probe_prompts"].default
    assert notes == [
        f"the train data holds 10 records: train_pool = 10 (default {defaults['train_pool']}; --train_pool sets it)",
        f"the test data holds 2 records: eval_problems = 2 (default {defaults['eval_problems']}; --eval_problems "
        "sets it)",
        f"the test data holds 2 records: probe_prompts = 2 (default {probe}; --probe_prompts sets it)",
        f"the training pool holds 10 prompts: batch_size = 10 (default {defaults['batch_size']}; --batch_size sets it)",
    ]
    exact = _cfg(probe=True, train_pool=10, eval_problems=2, probe_prompts=2, batch_size=10)  # as much as it holds
    assert fit_to_data(exact, small) == [] and (exact.train_pool, exact.batch_size) == (10, 10)
    generated = TrainConfig(task="countdown3")  # generated problems: no count is fitted
    assert fit_to_data(generated, generated.make_task()) == [] and generated.train_pool == defaults["train_pool"]


@pytest.mark.parametrize(
    "given, message",
    [
        (
            {"train_pool": 11, "batch_size": 2},
            "train_pool = 11 but the train data holds 10 records: give --train_pool 10 or less",
        ),
        ({"eval_problems": 3}, "eval_problems = 3 but the test data holds 2 records: give --eval_problems 2 or less"),
        ({"batch_size": 12}, "batch_size = 12 but the training pool holds 10 prompts: give --batch_size 10 or less"),
    ],
)
def test_a_count_given_explicitly_that_the_data_cannot_fill_is_refused_naming_its_flag(small, given, message):
    with pytest.raises(ValueError) as err:
        fit_to_data(_cfg(probe=False, **given), small)
    assert str(err.value) == message


def test_a_count_that_fits_leaves_the_next_one_to_be_fitted_and_a_batch_equal_to_the_pool_stays(tmp_path):
    """train_pool 12 of 16 records fits (no note), eval_problems is still fitted to the 2 test records; a pool of 16
    records at the default batch of 16 needs no change of batch size."""
    pq.write_table(pa.Table.from_pylist(ROWS[:16]), tmp_path / "train16.parquet")
    pq.write_table(pa.Table.from_pylist(ROWS[:2]), tmp_path / "test2.parquet")
    rf = lambda prompts, completions, **kw: [0.0] * len(completions)  # noqa: E731
    sixteen = get_task(
        "prompts", data=tmp_path / "train16.parquet", test_data=tmp_path / "test2.parquet", reward_function=rf
    )
    batch = TrainConfig.__dataclass_fields__["batch_size"].default
    assert batch == 16
    run = _cfg(probe=False)
    notes = fit_to_data(run, sixteen)
    assert (run.train_pool, run.batch_size, run.eval_problems) == (16, 16, 2) and len(notes) == 2
    assert not any("batch_size" in n for n in notes)
    given = _cfg(probe=False, train_pool=12, batch_size=4)
    assert len(fit_to_data(given, sixteen)) == 1 and (given.train_pool, given.eval_problems) == (12, 2)
