"""The held-out arithmetic task: exact integer answers, disjoint splits."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from escov.llm.tasks import get_task


@pytest.fixture(scope="module")
def task():
    return get_task("arithmetic")


def test_problems_and_scores(task):
    test = task.problems("test", 100, seed=0)
    train = task.problems("train", 300, seed=0)
    assert not {p.prompt for p in test} & {p.prompt for p in train}
    assert [p.id for p in task.problems("test", 100, seed=0)] == [p.id for p in test]
    for p in test:
        a, op, b = re.fullmatch(r"(\d+)([-+*])(\d+)=", p.prompt).groups()
        truth = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
        assert task.score(p, str(truth)) == 1.0
        assert task.score(p, f" <answer>{truth}</answer>") == 1.0
        assert task.score(p, str(truth + 1)) == 0.0
        assert task.answer(p, f"{truth}\n") == str(truth)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=50))
def test_random_completions_score_zero_or_one(s):
    task = get_task("arithmetic")
    p = task.problems("test", 1, seed=0)[0]
    r = task.score(p, s)
    assert r in (0.0, 1.0)
    if r == 1.0:
        assert str(p.meta["result"]) in s
    assert task.score(p, s + str(p.meta["result"])) in (0.0, 1.0)


def test_questions_follow_the_grammar_over_nearly_a_whole_split(task):
    """a + b and a - b with two-digit operands, a * b with a two-digit operand and a one-digit one from 2 to 9: every
    form is drawn and nothing outside it (850 of the test split's ~890 questions; the multipliers over 3,000 train
    ones)."""
    forms = set()
    for p in task.problems("test", 850, seed=0):
        a, op, b = re.fullmatch(r"(\d+)([-+*])(\d+)=", p.prompt).groups()
        assert 10 <= int(a) <= 99 and (2 <= int(b) <= 9 if op == "*" else 10 <= int(b) <= 99), p.prompt
        forms.add((op, len(b)))
    assert forms == {("+", 2), ("-", 2), ("*", 1)}
    multipliers = {int(p.prompt[:-1].split("*")[1]) for p in task.problems("train", 3000, seed=1) if "*" in p.prompt}
    assert multipliers == set(range(2, 10))


def test_asking_for_more_problems_than_a_split_holds_is_refused():
    with pytest.raises(ValueError, match="the test split of task arithmetic holds only about"):
        get_task("arithmetic").problems("test", 2000, seed=0)


def test_a_completion_longer_than_the_limit_scores_zero(task):
    from escov.llm.tasks.countdown import MAX_COMPLETION_CHARS

    p = task.problems("test", 1, seed=0)[0]
    answer = f"<answer>{p.meta['result']}</answer>"
    assert task.score(p, " " * (MAX_COMPLETION_CHARS - len(answer)) + answer) == 1.0
    assert task.score(p, " " * (MAX_COMPLETION_CHARS - len(answer) + 1) + answer) == 0.0
