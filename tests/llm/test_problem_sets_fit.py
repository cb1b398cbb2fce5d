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
