"""The reward statistics of a batch (llm/reward_stats.py), against values worked out by hand on a 3 x 2 batch: the
total's mean and population std, each function's mean, std and applied share over the completions it applies to
(NaN: does not apply), the share of prompts whose samples got one reward, the mean length, and the rows of each
data_source (prompts without one grouped as "(none)")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from escov.llm.reward_stats import change_line, reward_stats, summary_line
from escov.llm.tasks.base import Problem

REWARDS = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 0.0]])  # prompt 2 and 3: one reward for both samples
CORRECT = np.array([[True, False], [False, False], [False, False]])
LENGTHS = np.array([[4, 6], [5, 5], [10, 2]])
PARTS = {
    "accuracy": np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]),
    "format": np.array([[np.nan, 1.0], [1.0, np.nan], [np.nan, np.nan]]),  # applies to 2 of 6
    "never": np.full((3, 2), np.nan),
}


def _problems(*sources):
    return [
        Problem(id=str(i), prompt="p", meta={"columns": {} if s is None else {"data_source": s}})
        for i, s in enumerate(sources)
    ]


def test_a_batchs_statistics_against_hand_computed_values():
    stats = reward_stats(REWARDS, PARTS, LENGTHS, _problems(None, None, None), CORRECT)
    # total: (1 + 0 + .5 + .5 + 0 + 0) / 6 = 1/3; population variance: mean of squares 1.5/6 - 1/9
    assert stats["reward_mean"] == pytest.approx(1 / 3)
    assert stats["reward_std"] == pytest.approx(math.sqrt(1.5 / 6 - 1 / 9))
    assert stats["rewards"]["accuracy"] == pytest.approx(
        {"mean": 1 / 6, "std": math.sqrt(1 / 6 - 1 / 36), "applied": 1}
    )
    assert stats["rewards"]["format"] == pytest.approx({"mean": 1.0, "std": 0.0, "applied": 2 / 6})
    assert stats["rewards"]["never"] == {"mean": None, "std": None, "applied": 0.0}
    assert stats["reward_zero_std_share"] == pytest.approx(2 / 3)  # prompts 2 and 3
    assert stats["mean_response_tokens"] == pytest.approx(32 / 6)
    assert "by_data_source" not in stats  # no problem names one


def test_rows_of_each_data_source_and_those_without_one():
    stats = reward_stats(REWARDS, {}, LENGTHS, _problems("gsm", None, "gsm"), CORRECT)
    assert "rewards" not in stats
    assert stats["by_data_source"] == {
        "(none)": pytest.approx({"reward_mean": 0.5, "reward_std": 0.0, "pass_at_1": 0.0, "prompts": 1}),
        "gsm": pytest.approx(
            {"reward_mean": 0.25, "reward_std": math.sqrt(0.25 - 0.0625), "pass_at_1": 0.25, "prompts": 2}
        ),
    }
    lines = summary_line(stats).splitlines()
    assert lines[0] == "reward 0.333 +- 0.373  zero-spread prompts 0.67  length 5.3 tokens"
    assert lines[1:] == [
        "    (none): reward 0.500  pass@1 0.000 (1 prompts)",
        "    gsm: reward 0.250  pass@1 0.250 (2 prompts)",
    ]


def test_the_change_line_reads_both_records_and_names_what_is_unknown():
    base = {"reward_mean": 0.25, "mean_response_tokens": 4.0, "rewards": {"accuracy": {"mean": 0.1}}}
    final = {"reward_mean": 0.5, "mean_response_tokens": 6.5, "rewards": {"accuracy": {"mean": 0.3}, "format": {}}}
    assert change_line(base, final) == (
        "reward 0.250 -> 0.500  accuracy 0.100 -> 0.300  format n/a -> n/a  length 4.000 -> 6.500 tokens"
    )
