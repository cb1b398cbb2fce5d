"""Countdown from the paper's own file (a sample of VsonicV/es-at-scale countdown.json, tests/data):
every record loads, the paper's prompt is the file's context word for word, reference solutions
score by an independent check, and non-integer targets are exact rationals."""

import json
import re
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
import sympy

from escov.llm.tasks import get_task
from escov.llm.tasks.countdown import parse_target, score

SAMPLE = Path(__file__).parents[2] / "data" / "countdown_sample.json"
RECORDS = json.loads(SAMPLE.read_text())


def reference_is_valid(record) -> bool:
    """Independent of the task: numbers used counted by a regex, value by sympy's exact arithmetic
    compared with the target's float (the file's own precision)."""
    used = Counter(int(t) for t in re.findall(r"\d+", record["solution"]))
    value = sympy.sympify(record["solution"], rational=True)  # test-side oracle on the file's own text
    return used == Counter(record["numbers"]) and abs(float(value) - float(record["target"])) < 1e-9


@pytest.fixture
def task():
    """Loaded afresh for each test (22 records, milliseconds), so every test reaches the loader."""
    return get_task("countdown", test_data=SAMPLE, prompt_style="paper")


def test_every_record_loads_with_the_papers_prompt(task):
    assert task.size("test") == len(RECORDS) == 22
    by_id = {p.id: p for p in task.problems("test", len(RECORDS), seed=0)}
    for r in RECORDS:
        p = by_id[f"countdown/test/{r['id']}"]
        assert p.prompt == r["context"]  # the file's context, generated from numbers and target
        assert p.prompt.chat is False  # fed as raw text, as es-at-scale does


def test_reference_solutions_score_by_an_independent_check(task):
    by_id = {p.id: p for p in task.problems("test", len(RECORDS), seed=0)}
    with_solution = [r for r in RECORDS if r["solution"] is not None]
    valid = [reference_is_valid(r) for r in with_solution]
    assert 0 < sum(valid) < len(valid)  # the sample holds both kinds
    for r, ok in zip(with_solution, valid):
        completion = f" reasoning </think>\n<answer>{r['solution']}</answer>"
        assert task.score(by_id[f"countdown/test/{r['id']}"], completion) == (1.0 if ok else 0.0), r["id"]


@pytest.mark.parametrize(
    "text, value",
    [
        ("98", Fraction(98)),
        ("-11", Fraction(-11)),
        ("27.4", Fraction(137, 5)),
        ("266.6666666666667", Fraction(800, 3)),
        ("2.833333333333334", Fraction(17, 6)),
        ("-15.727272727272727", Fraction(-173, 11)),
        ("20.163934426229506", Fraction(1230, 61)),
        ("0.1", Fraction(1, 10)),
        (7, Fraction(7)),
    ],
)
def test_targets_are_exact_rationals(text, value):
    assert parse_target(text) == value


def test_string_and_fraction_targets_score():
    assert score("(44 + 19) + 35", [44, 19, 35], "98") == 1.0
    assert score("(15 / 61) * (99 - 17)", [15, 61, 17, 99], "20.163934426229506") == 1.0
    assert score("(15 / 61) * (99 - 16)", [15, 61, 16, 99], "20.163934426229506") == 0.0
    assert score("(2 + (51 / 18)) - 2", [2, 51, 18, 2], "2.833333333333334") == 1.0


def test_paper_split_rule_and_generator_rules_are_separate():
    task = get_task("countdown", data=SAMPLE, data_split="first-8")
    assert (task.size("train"), task.size("test")) == (8, 14)
    train_ids = {p.id for p in task.problems("train", 8, seed=0)}
    assert train_ids == {f"countdown/train/{i}" for i in range(8)}
    # any ranges, no solution count: record 276 has no solution, 365 a negative target
    test_ids = {p.id for p in task.problems("test", 14, seed=0)}
    assert {"countdown/test/276", "countdown/test/365"} <= test_ids
    with pytest.raises(ValueError, match="holds 8"):
        task.problems("train", 9, seed=0)
    with pytest.raises(ValueError, match="no test data"):
        get_task("countdown", data=SAMPLE).problems("test", 1, seed=0)
    assert get_task("countdown").min_solutions == 3  # the generator keeps its own rule


def test_maj_at_k_votes_on_values():
    """Answers a, b, c, d (four distinct correct solutions) and w, w (one wrong answer twice): Maj@6 = 1,
    where a vote on canonical forms would elect w."""
    from escov.llm.tasks.countdown import distinct_solutions
    from escov.theory.metrics import maj_at_k

    task = get_task("countdown")
    problem = next(p for p in task.problems("test", 50, seed=0) if p.meta["n_solutions"] >= 4)
    numbers, target = problem.meta["numbers"], problem.meta["target"]
    a, b, c, d = distinct_solutions(numbers, target)[:4]
    w = "+".join(map(str, numbers)) if sum(numbers) != target else "*".join(map(str, numbers))
    completions = [a, b, c, d, w, w]
    correct = [task.is_correct(problem, x) for x in completions]
    assert correct == [True] * 4 + [False] * 2
    assert len({task.answer(problem, x) for x in completions}) == 5  # five distinct reasoning paths
    assert maj_at_k([task.vote(problem, x) for x in completions], correct, 6) == 1.0
    assert maj_at_k([task.answer(problem, x) for x in completions], correct, 6) == 0.0


def _load(tmp_path, records, **kw):
    path = tmp_path / "countdown.json"
    path.write_text(json.dumps(records))
    return get_task("countdown", test_data=path, **kw), path


def test_file_problems_hold_the_records_numbers_exact_target_and_id(tmp_path):
    records = [{"id": "a7", "numbers": [3, 4, 5], "target": "27.4"}, {"numbers": [1, 2, 9], "target": -8}]
    task, _ = _load(tmp_path, records)
    by_id = {p.id: p for p in task.problems("test", 2, seed=0)}
    assert set(by_id) == {"countdown/test/a7", "countdown/test/1"}  # a record without an id: its index
    assert by_id["countdown/test/a7"].meta == {"numbers": [3, 4, 5], "target": Fraction(137, 5)}
    assert by_id["countdown/test/1"].meta == {"numbers": [1, 2, 9], "target": Fraction(-8)}
    assert task.score(by_id["countdown/test/1"], "<answer>1-9</answer>") == 0.0  # 2 unused
    assert task.size("test") == 2 and task.size("train") == 0 and get_task("countdown").size("test") is None


def test_mapped_field_names_are_read(tmp_path):
    task, _ = _load(tmp_path, [{"nums": [2, 3, 4], "goal": 20}], fields={"numbers": "nums", "target": "goal"})
    assert task.problems("test", 1, seed=0)[0].meta == {"numbers": [2, 3, 4], "target": Fraction(20)}


@pytest.mark.parametrize("position", [1, 2])
@pytest.mark.parametrize("numbers", [[], "3,4,5", [3, True, 5], [3, 4.0, 5], 7])
def test_a_record_with_bad_numbers_names_file_record_and_value(tmp_path, position, numbers):
    records = [{"numbers": [1, 2, 3], "target": 6}] * 3
    records[position] = {"numbers": numbers, "target": 6}
    with pytest.raises(ValueError) as err:
        _load(tmp_path, records)
    path = tmp_path / "countdown.json"
    assert str(err.value) == (
        f"data file {path}: record {position}: field 'numbers' must be a non-empty list of integers, got {numbers!r}"
    )


def test_a_record_with_a_bad_or_missing_target_names_file_record_and_field(tmp_path):
    path = tmp_path / "countdown.json"
    with pytest.raises(ValueError) as err:
        _load(tmp_path, [{"numbers": [1, 2, 3], "target": 6}, {"numbers": [1, 2, 3], "target": "six"}])
    assert str(err.value) == f"data file {path}: record 1: field 'target' is not a number: 'six'"
    with pytest.raises(ValueError, match=f"^data file {path}: record 0 lacks the field 'target'"):
        _load(tmp_path, [{"numbers": [1, 2, 3]}])
    with pytest.raises(ValueError, match=f"^data file {path}: record 0 lacks the field 'numbers'"):
        _load(tmp_path, [{"target": 6}])
