"""Scoring completions without a `correct` column (paper_checks/coverage/scoring.py): reward functions called once
per prompt with its samples and the row's other columns, weighted and compared with the threshold; a task's verifier
with its reward settings and threshold; each correct flag written down by hand."""

from __future__ import annotations

import io
import json
import re
import sys

import numpy as np
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


def test_countdowns_verifier_fills_the_canonical_solution_and_the_value_vote():
    """Numbers 2 3 4, target 10: "2*3+4" and "4+3*2" are one reasoning path (the same canonical answer) and both
    vote for the value 10; "2+3+4" is another path voting 9 (it uses exactly the numbers); "9" is no expression of
    them (its own canonical form); "hello" has no answer and no vote."""
    texts = ("2*3+4", "4+3*2", "2+3+4", "hello")
    got = score_with_task(
        _frame([{"prompt_id": "c0", "numbers": [2, 3, 4], "target": "10", "completion": c} for c in texts]),
        "countdown",
        1.0,
    )
    assert got["correct"].tolist() == [1, 1, 0, 0]
    solution, vote = got["solution"].tolist(), got["vote"].tolist()
    assert solution[0] == solution[1] and isinstance(solution[2], str) and solution[2] != solution[0]
    assert vote[:3] == ["value=10", "value=10", "value=9"] and pd.isna(solution[3]) and pd.isna(vote[3])


def test_a_missing_or_non_string_completion_is_an_empty_answer_scored_wrong():
    rows = [{"prompt_id": "c0", "numbers": [2, 3, 4], "target": "10", "completion": c} for c in ("2*3+4", None)]
    got = score_with_task(_frame(rows), "countdown", 1.0)
    assert got["correct"].tolist() == [1, 0] and pd.isna(got["solution"][1]) and pd.isna(got["vote"][1])


def test_a_parquet_list_column_reaches_the_verifier_as_a_list():
    """Parquet reads a list column as an array; Countdown's verifier takes a list of ints."""
    rows = [{"prompt_id": "c0", "numbers": np.array([2, 3, 4]), "target": 10, "completion": "2*3+4"}]
    got = score_with_task(_frame(rows), "countdown3", 1.0)
    assert got["correct"].tolist() == [1] and got["vote"].tolist() == ["value=10"]


@pytest.mark.parametrize(
    ("task", "row", "right", "wrong"),
    [
        ("subset_sum", {"numbers": [5, 7, 9], "target": 16}, "9+7", "5,9"),  # 7 + 9 = 16; 5 + 9 = 14
        ("arithmetic", {"result": 12}, "12", "13"),
        ("gsm8k", {"gold": "42"}, "so the answer is \\boxed{42}", "\\boxed{41}"),
        ("deepscaler", {"gold": "\\frac{1}{2}"}, "\\boxed{0.5}", "\\boxed{2}"),
        ("grid_paths", {"grid": "S.|.G"}, "RD", "RR"),  # S top left, G bottom right: right then down
    ],
)
def test_each_tasks_verifier_reads_its_own_fields_and_names_each_missing_one(task, row, right, wrong):
    rows = [{"prompt_id": "p0", "completion": c} | row for c in (right, wrong)]
    got = score_with_task(_frame(rows), task, 1.0)
    assert got["correct"].tolist() == [1, 0]
    for field in row:
        without = [{k: v for k, v in r.items() if k != field} for r in rows]
        with pytest.raises(InputError, match=rf"^t.jsonl: column '{field}' is missing \(--task {task} scores each"):
            score_with_task(_frame(without), task, 1.0)


def test_a_task_without_a_verifier_of_its_own_is_refused_naming_the_way_to_score_it():
    rows = [{"prompt_id": "p0", "completion": "x"}]
    with pytest.raises(InputError, match=r"^--task 'prompts': the analyzer scores with the verifier of countdown, "):
        score_with_task(_frame(rows), "prompts", 1.0)
    with pytest.raises(InputError, match=r"score other completions with --reward-function$"):
        score_with_task(_frame(rows), "nope", 1.0)


def test_a_missing_column_names_the_file_even_when_its_path_holds_spaces():
    rows = [{"prompt_id": "c0", "numbers": [2], "completion": "2"}]
    with pytest.raises(InputError, match=r"^my runs/a b\.jsonl: column 'target' is missing"):
        score_with_task(_frame(rows, "my runs/a b.jsonl"), "countdown", 1.0)
    with pytest.raises(InputError, match=r"^my runs/a b\.jsonl: column 'completion' is missing \(--reward-function"):
        score_with_functions(_frame([{"prompt_id": "q"}], "my runs/a b.jsonl"), ["m:f"], [], 1.0)


def test_reward_functions_see_exactly_the_rows_own_columns_in_the_order_prompts_first_appear(tmp_path):
    """The keyword lists a reward function gets: every column but the table's own (src, pos, model, seed, sample,
    prompt, completion, ...; TRL's completion_ids and trainer_state aside), values as the rows hold them (a string
    target stays a string, a float stays), a value missing from every row of the call left out; one call per prompt,
    in the order prompts first appear in the file."""
    seen = tmp_path / "seen.jsonl"
    (tmp_path / "spy.py").write_text(
        "import json\n"
        "def spy(prompts, completions, **kw):\n"
        "    data = {k: v for k, v in kw.items() if k not in ('completion_ids', 'trainer_state')}\n"
        f"    with open({str(seen)!r}, 'a') as f:\n"
        "        f.write(json.dumps({'prompts': prompts, 'kw': data}, sort_keys=True) + '\\n')\n"
        "    return [float(c == 'yes') for c in completions]\n"
    )
    rows = [
        {"prompt_id": "z", "prompt": "Z", "completion": "yes", "target": "10", "weight": 0.5, "model": "m", "seed": 1},
        {"prompt_id": "a", "prompt": "A", "completion": "no", "target": "3", "weight": float("nan"), "model": "m"},
        {"prompt_id": "z", "prompt": "Z", "completion": "no", "target": "10", "weight": 0.25, "model": "m", "seed": 2},
    ]
    got = score_with_functions(_frame(rows), [f"{tmp_path / 'spy.py'}:spy"], [], 1.0)
    assert got["correct"].tolist() == [1, 0, 0] and got["correct"].dtype.kind == "i"
    calls = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [c["prompts"] for c in calls] == [["Z", "Z"], ["A"]]
    assert [c["kw"] for c in calls] == [
        {"prompt_id": ["z", "z"], "target": ["10", "10"], "weight": [0.5, 0.25]},
        {"prompt_id": ["a"], "target": ["3"]},
    ]


def test_a_tasks_correct_column_holds_integers():
    rows = [{"prompt_id": "c0", "numbers": [2, 3, 4], "target": "10", "completion": "2*3+4"}]
    assert score_with_task(_frame(rows), "countdown", 1.0)["correct"].dtype.kind == "i"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_shows_on_a_terminal_only_counting_completions_or_prompts(tmp_path, monkeypatch, capsys):
    (tmp_path / "one.py").write_text("def one(prompts, completions, **kw):\n    return [1.0 for _ in completions]\n")
    rows = [{"prompt_id": p, "numbers": [2, 3, 4], "target": "10", "completion": "2*3+4"} for p in ("a", "b", "a")]
    score_with_task(_frame(rows), "countdown", 1.0)
    score_with_functions(_frame(rows), [f"{tmp_path / 'one.py'}:one"], [], 1.0)
    assert capsys.readouterr().err == ""  # not a terminal: no bar
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    score_with_task(_frame(rows), "countdown", 1.0)
    score_with_functions(_frame(rows), [f"{tmp_path / 'one.py'}:one"], [], 1.0)
    bars = terminal.getvalue()
    assert re.search(r"scoring with countdown: 100%\|[^|]*\| 3/3 \[[^\]]*completion/s\]", bars)
    assert re.search(r"scoring with reward functions: 100%\|[^|]*\| 2/2 \[[^\]]*prompt/s\]", bars)


def test_a_reward_function_that_raises_is_named_with_the_prompt_id_of_the_row(tmp_path):
    from escov.llm.tasks.reward_function import RewardFunctionError

    (tmp_path / "bad.py").write_text(
        "def picky(prompts, completions, **kw):\n    return [1.0 if c != 'boom' else 1 / 0 for c in completions]\n"
    )
    rows = [{"prompt_id": p, "completion": c} for p, c in (("q1", "ok"), ("q7", "fine"), ("q7", "boom"))]
    with pytest.raises(RewardFunctionError, match=r"raised ZeroDivisionError: division by zero on data row q7, "):
        score_with_functions(_frame(rows), [f"{tmp_path / 'bad.py'}:picky"], [], 1.0)
