"""Countdown: reward against an independent brute force, generator properties, hostile completions."""
import itertools
import random
from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings, strategies as st

from llm.tasks import get_task
from llm.tasks.countdown import Countdown, distinct_solutions, extract_answer, score


def all_expressions(numbers):
    """Every fully parenthesized expression using each number once: (text, Fraction value or None)."""
    if len(numbers) == 1:
        yield str(numbers[0]), Fraction(numbers[0]), sympy.Symbol(f"x{numbers[0]}")
        return
    for perm in set(itertools.permutations(numbers)):
        for cut in range(1, len(perm)):
            for lt, lv, ls in all_expressions(perm[:cut]):
                for rt, rv, rs in all_expressions(perm[cut:]):
                    for op in "+-*/":
                        if lv is None or rv is None or (op == "/" and rv == 0):
                            v = None
                        else:
                            v = {"+": lv + rv, "-": lv - rv, "*": lv * rv, "/": lv / rv if rv else None}[op]
                        s = {"+": ls + rs, "-": ls - rs, "*": ls * rs, "/": ls / rs}[op]
                        yield f"({lt}{op}{rt})", v, s


@settings(max_examples=8, deadline=None)
@given(st.lists(st.integers(1, 13), min_size=2, max_size=4, unique=True), st.integers(1, 40))
def test_distinct_solutions_match_brute_force(numbers, target):
    """Solutions = brute-force expressions hitting the target, grouped by symbolic equality."""
    brute = {}
    for text, value, sym in all_expressions(tuple(numbers)):
        if value == target:
            brute.setdefault(sympy.srepr(sympy.cancel(sym)), text)
    found = distinct_solutions(numbers, target)
    assert len(found) == len(brute)
    for text in found:
        assert score(text, numbers, target) == 1.0
    for text in brute.values():
        assert score(text, numbers, target) == 1.0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=3, max_size=4), st.integers(1, 100), st.randoms(use_true_random=False))
def test_score_is_one_exactly_for_full_use_expressions_on_target(numbers, target, rnd):
    """A random expression over a random sub/super-multiset of the numbers scores 1 iff it uses the
    multiset exactly and its sympy value is the target."""
    used = list(numbers)
    if rnd.random() < 0.3:
        used = used[:-1] if rnd.random() < 0.5 else used + [rnd.randint(1, 50)]
    items = [str(x) for x in used]
    rnd.shuffle(items)
    while len(items) > 1:
        i = rnd.randrange(len(items) - 1)
        items[i:i + 2] = [f"({items[i]}{rnd.choice('+-*/')}{items[i + 1]})"]
    text = items[0]
    try:
        value = sympy.sympify(text, rational=True)  # test-side oracle on a string the test built
    except ZeroDivisionError:
        value = None
    expected = value is not None and value.is_finite and sorted(used) == sorted(numbers) and value == target
    assert score(text, numbers, target) == (1.0 if expected else 0.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 10**7), min_size=3, max_size=4), st.data())
def test_a_number_used_twice_in_place_of_another_scores_zero(numbers, data):
    """Same length, same set of values, the right sum: 5+3+3 for [5, 5, 3] still uses the multiset wrongly."""
    i = data.draw(st.integers(0, len(numbers) - 1))
    j = data.draw(st.sampled_from([k for k in range(len(numbers)) if k != i]))
    if numbers[i] == numbers[j]:
        numbers = numbers[:i] + [numbers[i] + 1] + numbers[i + 1:]
    used = numbers[:i] + [numbers[j]] + numbers[i + 1:]  # numbers[i] replaced by a copy of numbers[j]
    assert sorted(used) != sorted(numbers) and len(used) == len(numbers)
    assert score("+".join(map(str, numbers)), numbers, sum(numbers)) == 1.0  # the honest sum scores 1
    assert score("+".join(map(str, used)), numbers, sum(used)) == 0.0


@settings(max_examples=200, deadline=None)
@given(st.integers(10**6, 10**11), st.integers(1, 3))
def test_a_value_within_a_millionth_of_the_target_scores_zero(big, gap):
    """Exact arithmetic: 10000000/9999999 is not 1, however close (large numbers make it closer than 1e-6)."""
    numbers = [big, big - gap]
    assert abs(big / (big - gap) - 1) < 1e-5
    assert score(f"{big}/{big - gap}", numbers, 1) == 0.0
    assert score(f"({big}-{big - gap})/{gap}", [big, big - gap, gap], 1) == 1.0  # exactly 1 scores 1


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_completions_score_zero_or_one(s):
    r = score(s, [3, 7, 25], 46)
    assert r in (0.0, 1.0)
    if r == 1.0:
        assert sorted(int(t) for t in __import__("re").findall(r"\d+", extract_answer(s))) == [3, 7, 25]


@pytest.mark.parametrize("completion, expected", [
    ("25+3*7", 1.0), ("3*7+25", 1.0), (" (7*3)+25 ", 1.0), ("<think>hm</think><answer>25 + 7*3</answer>", 1.0),
    ("<answer>1</answer><answer>25+3*7</answer>", 1.0), ("<answer>25+3*7</answer><answer>1</answer>", 0.0),
    ("25+3*7=46", 0.0), ("25+21", 0.0), ("25+3*7+0", 0.0), ("25*3+7", 0.0), ("", 0.0), ("46", 0.0),
    ("__import__('os')", 0.0), ("25+3*7" + " " * 70_000, 0.0), ("25+3*7" + " " * 30_000, 1.0),
])
def test_score_examples(completion, expected):
    assert score(completion, [3, 7, 25], 46) == expected


def test_format_reward_only_for_wellformed_wrong_answers():
    assert score("25+3+7", [3, 7, 25], 46, format_reward=0.1) == 0.1
    assert score("hello", [3, 7, 25], 46, format_reward=0.1) == 0.0
    assert score("25+3*7", [3, 7, 25], 46, format_reward=0.1) == 1.0
    with pytest.raises(ValueError, match="format_reward"):
        score("1", [1], 1, format_reward=1.0)


@pytest.mark.parametrize("numbers, target", [([], 3), ([1.5, 2], 3), ("1,2", 3), ([1, 2], 3.0), ([True, 2], 3)])
def test_bad_instances_raise(numbers, target):
    with pytest.raises(ValueError):
        score("1+2", numbers, target)


@pytest.fixture(scope="module")
def task():
    return Countdown()


def test_problems_are_deterministic_disjoint_and_multi_solution(task):
    train = task.problems("train", 60, seed=1)
    test = task.problems("test", 60, seed=1)
    assert [p.id for p in task.problems("test", 60, seed=1)] == [p.id for p in test]
    assert [p.id for p in task.problems("test", 60, seed=2)] != [p.id for p in test]
    train_sets = {tuple(sorted(p.meta["numbers"])) for p in train}
    assert not train_sets & {tuple(sorted(p.meta["numbers"])) for p in test}
    assert len({p.id for p in test}) == 60
    for p in test:
        nums, target = p.meta["numbers"], p.meta["target"]
        assert 3 <= len(nums) <= 4 and all(1 <= x <= 50 for x in nums) and 1 <= target <= 100
        assert p.prompt == f"{','.join(map(str, nums))}->{target}:"
        sols = distinct_solutions(nums, target)
        assert len(sols) == p.meta["n_solutions"] >= task.min_solutions == 3
        assert task.score(p, sols[0]) == 1.0
        assert task.answer(p, sols[0]) != task.answer(p, sols[1])


def test_answer_merges_rewrites(task):
    p = task.problems("test", 1, seed=0)[0]
    assert task.answer(p, "3+7") == task.answer(p, "<answer>7+3</answer>")
    assert task.answer(p, "not an expression") is None


def test_instruct_prompt_and_bad_arguments():
    p = Countdown(prompt_style="instruct").problems("test", 1, seed=0)[0]
    assert "<answer>" in p.prompt and str(p.meta["target"]) in p.prompt
    with pytest.raises(ValueError, match="prompt_style"):
        Countdown(prompt_style="chat")
    with pytest.raises(ValueError, match="split"):
        Countdown().problems("valid", 3, seed=0)
    with pytest.raises(ValueError, match="n"):
        Countdown().problems("test", 0, seed=0)
    with pytest.raises(ValueError, match="known tasks: countdown, arithmetic, gsm8k, deepscaler"):
        get_task("count")


def test_sample_expression_is_a_valid_solution():
    rng = random.Random(0)
    task = Countdown()
    for _ in range(200):
        numbers, text, value = task.sample_expression(rng, "train")
        assert score(text, numbers, value) == 1.0
