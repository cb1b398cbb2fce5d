"""Scoring completions without a `correct` column (paper_checks/coverage/scoring.py): reward functions called once
per prompt with its samples and the row's other columns, weighted and compared with the threshold; a task's verifier
with its reward settings and threshold; each correct flag written down by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from escov.paper_checks.coverage.scoring import score_with_functions, score_with_task
from escov.paper_checks.coverage.table import InputError


def _frame(rows: list[dict], source: str = "t.jsonl") -> pd.DataFrame:
    return pd.DataFrame([r | {"src": f"{source} line", "pos": i + 1} for i, r in enumerate(rows)])


def _module(tmp_path) -> str:
    """Two reward functions in TRL's batch contract: `length` (characters) and `matches` (1 when the completion is the
    row's `answer`); each call of `length` writes the prompts it was given as a line of calls.txt."""
    calls = tmp_path / "calls.txt"
    (tmp_path / "scores.py").write_text(
        "def length(prompts, completions, **kw):\n"
        f"    with open({str(calls)!r}, 'a') as f:\n"
        "        f.write('|'.join(prompts) + '\\n')\n"
        "    return [float(len(c)) for c in completions]\n"
        "def matches(prompts, completions, answer, **kw):\n"
        "    return [1.0 if c == a else 0.0 for c, a in zip(completions, answer)]\n"
    )
    return str(tmp_path / "scores.py")


def test_the_weighted_total_at_or_above_the_threshold_is_correct_one_call_per_prompt(tmp_path):
    path = _module(tmp_path)
    rows = [
        {"prompt_id": "q1", "prompt": "Q one", "completion": "7", "answer": "7"},  # 1 x 0.5 + 1 x 1 = 1.5
        {"prompt_id": "q1", "prompt": "Q one", "completion": "77", "answer": "7"},  # 2 x 0.5 + 0 = 1.0
        {"prompt_id": "q2", "prompt": "Q two", "completion": "abc", "answer": "x"},  # 1.5 + 0 = 1.5
        {"prompt_id": "q2", "prompt": "Q two", "completion": "x", "answer": "x"},  # 0.5 + 1 = 1.5
        {"prompt_id": "q1", "prompt": "Q one", "completion": "", "answer": "7"},  # 0
    ]
    got = score_with_functions(_frame(rows), [f"{path}:length", f"{path}:matches"], [0.5, 1.0], 1.5)
    assert got["correct"].tolist() == [1, 0, 1, 1, 0]
    assert score_with_functions(_frame(rows), [f"{path}:length", f"{path}:matches"], [], 1.5)["correct"].tolist() == [
        1,  # unweighted: 1 + 1 = 2
        1,  # 2 + 0
        1,  # 3 + 0
        1,  # 1 + 1
        0,  # 0 + 0
    ]
    # one call per prompt and scoring, each with that prompt's samples only (q1's three, q2's two)
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert calls == ["Q one|Q one|Q one", "Q two|Q two"] * 2


def test_a_row_without_a_prompt_is_scored_with_its_prompt_id_as_the_prompt(tmp_path):
    (tmp_path / "echo.py").write_text(
        "def is_q(prompts, completions, **kw):\n    return [1.0 if p == 'q9' else 0.0 for p in prompts]\n"
    )
    got = score_with_functions(
        _frame([{"prompt_id": "q9", "completion": "z"}]), [f"{tmp_path / 'echo.py'}:is_q"], [], 1.0
    )
    assert got["correct"].tolist() == [1]


def test_a_tasks_verifier_scores_each_completion_under_its_reward_settings_and_the_threshold():
    """Countdown numbers 2 3 4, target 10: "2*3+4" solves it; "2+3+4" is a well-formed wrong answer, worth the format
    reward 0.25 under escov's convention: correct only when the threshold is at most 0.25."""
    rows = [
        {"prompt_id": "c0", "numbers": [2, 3, 4], "target": "10", "completion": c} for c in ("2*3+4", "2+3+4", "hello")
    ]
    plain = score_with_task(_frame(rows), "countdown", 1.0)
    assert plain["correct"].tolist() == [1, 0, 0]
    lenient = score_with_task(_frame(rows), "countdown", 0.25, format_reward=0.25)
    assert lenient["correct"].tolist() == [1, 1, 0]
    assert plain["solution"].tolist()[:2] == lenient["solution"].tolist()[:2]  # the answers do not depend on it


def test_a_row_the_verifier_cannot_read_and_a_missing_column_are_named():
    rows = [{"prompt_id": "c0", "numbers": [2, 3, 4], "target": "ten", "completion": "2*3+4"}]
    with pytest.raises(InputError, match=r"^t.jsonl line 1: the countdown verifier cannot read this row: "):
        score_with_task(_frame(rows), "countdown", 1.0)
    with pytest.raises(InputError, match=r"^t.jsonl: column 'target' is missing \(--task countdown scores each"):
        score_with_task(_frame([{"prompt_id": "c0", "numbers": [2], "completion": "2"}]), "countdown", 1.0)
