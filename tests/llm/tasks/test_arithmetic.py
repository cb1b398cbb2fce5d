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
