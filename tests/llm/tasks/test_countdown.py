"""Countdown: reward against an independent brute force, generator properties, hostile completions."""

import functools
import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from escov.llm.tasks import get_task
from escov.llm.tasks.countdown import Countdown, _simplest_between, distinct_solutions, extract_answer, score


@functools.lru_cache(maxsize=16)  # one 4-number enumeration reuses its 14 parts; older examples are let go
def all_expressions(numbers: tuple) -> tuple:
    """Every fully parenthesized expression using each number once: (text, Fraction value or None, the same
    expression over one symbol per number, as text for sympy: parsed only where the value hits a target). The
    outermost operation splits the numbers into a left part (every subset of their positions) and the rest, each
    part's expressions enumerated the same way (and kept while the next ones are enumerated)."""
    if len(numbers) == 1:
        return ((str(numbers[0]), Fraction(numbers[0]), f"x{numbers[0]}"),)
    out = []
    positions = range(len(numbers))
    for size in range(1, len(numbers)):
        for left_at in itertools.combinations(positions, size):
            left = tuple(numbers[i] for i in left_at)
            right = tuple(numbers[i] for i in positions if i not in left_at)
            for lt, lv, ls in all_expressions(left):
                for rt, rv, rs in all_expressions(right):
                    for op in "+-*/":
                        if lv is None or rv is None or (op == "/" and rv == 0):
                            v = None
                        else:
                            v = {"+": lv + rv, "-": lv - rv, "*": lv * rv, "/": lv / rv if rv else None}[op]
                        out.append((f"({lt}{op}{rt})", v, f"({ls}{op}{rs})"))
    return tuple(out)


@settings(max_examples=24, deadline=None)  # each 4-number example enumerates its 7,680 expressions once
@given(st.lists(st.integers(1, 13), min_size=2, max_size=4, unique=True), st.integers(1, 40))
def test_distinct_solutions_match_brute_force(numbers, target):
    """Solutions = brute-force expressions hitting the target, grouped by symbolic equality."""
    brute = {}
    for text, value, sym in all_expressions(tuple(numbers)):
        if value == target:
            brute.setdefault(sympy.srepr(sympy.cancel(sympy.sympify(sym))), text)
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
        items[i : i + 2] = [f"({items[i]}{rnd.choice('+-*/')}{items[i + 1]})"]
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
        numbers = numbers[:i] + [numbers[i] + 1] + numbers[i + 1 :]
    used = numbers[:i] + [numbers[j]] + numbers[i + 1 :]  # numbers[i] replaced by a copy of numbers[j]
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


@pytest.mark.parametrize(
    "completion, expected",
    [
        ("25+3*7", 1.0),
        ("3*7+25", 1.0),
        (" (7*3)+25 ", 1.0),
        ("<think>hm</think><answer>25 + 7*3</answer>", 1.0),
        ("<answer>1</answer><answer>25+3*7</answer>", 1.0),
        ("<answer>25+3*7</answer><answer>1</answer>", 0.0),
        ("25+3*7=46", 0.0),
        ("25+21", 0.0),
        ("25+3*7+0", 0.0),
        ("25*3+7", 0.0),
        ("", 0.0),
        ("46", 0.0),
        ("__import__('os')", 0.0),
        ("25+3*7" + " " * 70_000, 0.0),
        ("25+3*7" + " " * 30_000, 1.0),
    ],
)
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


# ----------------------------------------------------------------------------- prompts, draws, votes and settings


def test_prompts_of_each_style_hold_the_numbers_and_target():
    from escov.llm.tasks.countdown import format_prompt

    assert format_prompt([3, 7, 25], 46) == format_prompt([3, 7, 25], 46, "plain") == "3,7,25->46:"
    instruct = format_prompt((3, 7, 25), "46", "instruct")
    assert instruct.startswith("Using the numbers [3, 7, 25], create an equation that equals 46. ")
    with pytest.raises(ValueError):
        format_prompt([3, 7, 25], 46, "chatty")


def test_drawn_instances_use_numbers_from_1_and_values_up_to_the_largest_target_in_their_split():
    """Over many draws of a small generator every edge is reached (numbers 1..4, values 1..5) and every
    instance lies in the split it was drawn for (the split rule applied here to its sorted numbers)."""
    from escov.llm.tasks.countdown import split_of

    task = Countdown(min_numbers=2, max_numbers=3, max_number=4, max_target=5, min_solutions=1)
    rng = random.Random(0)
    for split in ("train", "validation", "test"):
        draws = [task.sample_expression(rng, split) for _ in range(150)]
        assert all(split_of(",".join(map(str, sorted(numbers)))) == split for numbers, _, _ in draws)
        assert {x for numbers, _, _ in draws for x in numbers} == {1, 2, 3, 4}
        assert {value for _, _, value in draws} == {1, 2, 3, 4, 5}
        assert {len(numbers) for numbers, _, _ in draws} == {2, 3}
    assert {len(p.meta["numbers"]) for p in get_task("countdown").problems("test", 60, seed=0)} == {3, 4}


def test_votes_and_answers_read_the_tasks_style_and_length_limit():
    from escov.llm.tasks.countdown import MAX_COMPLETION_CHARS

    task = get_task("countdown")
    problem = task.problems("test", 1, seed=0)[0]
    other = "+".join(str(x + 100) for x in problem.meta["numbers"])  # numbers of another instance
    assert task.vote(problem, other) == task.answer(problem, other) is not None
    assert task.vote(problem, other) == task.vote(problem, "+".join(reversed(other.split("+"))))  # its canonical form
    longest = other + " " * (MAX_COMPLETION_CHARS - len(other))
    assert task.vote(problem, longest) == task.vote(problem, other) and task.vote(problem, longest + " ") is None
    assert task.vote(problem, None) is None and task.answer(problem, None) is None
    paper = get_task("countdown", prompt_style="paper")  # its prompt ends in <think>: an answer needs </think> first
    untagged_thinking = f"<answer>{other}</answer>"
    assert (
        task.vote(problem, untagged_thinking) == task.vote(problem, other)
        and paper.vote(problem, untagged_thinking) is None
    )
    assert paper.vote(problem, f" hm </think> <answer>{other}</answer>") == task.vote(problem, other)


@pytest.mark.parametrize(
    "style, reward, format_reward",
    [("plain", "escov", 0.25), ("paper", "es-at-scale-countdown", 0.0), ("instruct", "escov", 0.0)],
)
def test_a_tasks_score_is_the_reward_under_its_own_settings(style, reward, format_reward):
    from escov.llm.tasks import countdown

    task = get_task("countdown", prompt_style=style, reward=reward, format_reward=format_reward)
    problem = task.problems("test", 1, seed=0)[0]
    numbers, target = problem.meta["numbers"], problem.meta["target"]
    right = countdown.distinct_solutions(numbers, target)[0]
    wrong = "+".join(map(str, numbers)) if sum(numbers) != target else "*".join(map(str, numbers))
    for answer in (right, wrong):
        for completion in (
            answer,
            f"<think> x </think> <answer>{answer}</answer>",
            f" x </think>\n<answer>{answer}</answer>",
        ):
            assert task.score(problem, completion) == countdown.score(
                completion, numbers, target, format_reward, style=style, reward=reward
            )
    assert task.score(problem, wrong) == (format_reward if style == "plain" else 0.0)


def test_file_problems_are_drawn_the_same_for_a_seed_and_a_missing_split_names_its_setting():
    from pathlib import Path

    sample = Path(__file__).parents[2] / "data" / "countdown_sample.json"
    task = get_task("countdown", test_data=sample)
    ids = [p.id for p in task.problems("test", 5, seed=3)]
    assert ids == [p.id for p in get_task("countdown", test_data=sample).problems("test", 5, seed=3)]
    assert len({tuple(p.id for p in task.problems("test", 5, seed=s)) for s in range(6)}) > 1
    with pytest.raises(ValueError) as err:
        task.problems("train", 1, seed=0)
    assert (
        str(err.value) == "task 'countdown' has no train data: give data or a data_split such as 'paper' or 'first-N'"
    )
    with pytest.raises(ValueError) as err:
        get_task("countdown", data=sample).problems("test", 1, seed=0)
    assert (
        str(err.value)
        == "task 'countdown' has no test data: give test_data or a data_split such as 'paper' or 'first-N'"
    )


def test_the_answer_credit_of_each_convention_reads_past_the_thinking_its_style_expects():
    """es-at-scale's reward under the paper style (the prompt ends in <think>): no answer credit before a
    </think>, full credit after it; under the plain style the tags alone are read. The plain reader takes
    the whole completion when there are no tags, and a completion of exactly the length limit is read."""
    from escov.llm.tasks.countdown import MAX_COMPLETION_CHARS

    numbers, target, right = [2, 4, 3], 11, "2*4+3"
    es = "es-at-scale-countdown"
    assert score(f"<answer>{right}</answer>", numbers, target, style="paper", reward=es) < 1
    assert score(f" x </think>\n<answer>{right}</answer>", numbers, target, style="paper", reward=es) >= 1
    assert score(f"<answer>{right}</answer>", numbers, target, style="plain", reward=es) >= 1
    assert extract_answer(right) == extract_answer(f"<answer> {right} </answer>") == right
    longest = right + " " * (MAX_COMPLETION_CHARS - len(right))
    assert score(longest, numbers, target) == 1.0 and score(longest + " ", numbers, target) == 0.0


def test_an_answer_using_every_allowed_character_is_read_under_es_at_scale():
    """Its answer filter admits digits, + - * / ( ) and spaces: an answer made of all of them scores."""
    numbers, answer = [1234567890, 1, 1, 1, 1], "(1234567890 + 1 - 1) * 1 / 1"
    assert set(answer) == set("0123456789+-*/() ")
    assert score(f"<answer>{answer}</answer>", numbers, 1234567890, style="plain", reward="es-at-scale-countdown") >= 1


@pytest.mark.parametrize("numbers", [(5,), (3, 7), (2, 9), (4, 6), (3, 4, 7), (2, 3, 12), (1, 5, 6), (2, 8, 9)])
def test_distinct_solutions_of_small_instances_match_brute_force_at_every_reachable_target(numbers):
    """The brute-force property above on fixed instances of one to three distinct numbers (a second): for every
    positive whole target the expressions reach (and one they do not), the solutions are the brute-force
    ones grouped by symbolic equality, each scoring 1. Catches a wrong operand order, inverse or grouping
    in the solver without the 6-7 s of the four-number examples."""
    brute: dict[int, dict] = {}
    for text, value, sym in all_expressions(numbers):
        if value is not None and value > 0 and value.denominator == 1:
            brute.setdefault(int(value), {}).setdefault(sympy.srepr(sympy.cancel(sympy.sympify(sym))), text)
    unreachable = next(t for t in itertools.count(1) if t not in brute)
    for target in sorted(brute) + [unreachable]:
        found = distinct_solutions(list(numbers), target)
        assert len(found) == len(brute.get(target, {})), (numbers, target, found)
        assert all(score(text, list(numbers), target) == 1.0 for text in found), (numbers, target, found)


def test_a_few_problems_are_drawn_the_same_for_a_seed_and_otherwise_for_another_with_their_instance_as_id():
    """The fast form of the generator's properties above (a dozen problems, a second): the same (split, seed)
    gives the same problems, another seed others; each id names its numbers and target; train and test never
    share a number set."""
    task = Countdown()
    test = task.problems("test", 12, seed=3)
    assert [(p.id, p.prompt, p.meta) for p in task.problems("test", 12, seed=3)] == [
        (p.id, p.prompt, p.meta) for p in test
    ]
    assert [p.id for p in task.problems("test", 12, seed=4)] != [p.id for p in test]
    for p in test:
        assert p.id == f"countdown/{','.join(map(str, p.meta['numbers']))}={p.meta['target']}"
    train = task.problems("train", 12, seed=3)
    assert not {tuple(sorted(p.meta["numbers"])) for p in train} & {tuple(sorted(p.meta["numbers"])) for p in test}


def test_the_default_instances_are_the_documented_ones():
    """The task's definition (the module docstring and docs/llm.md): 3 or 4 numbers in [1, 50], targets in
    [1, 100], at least 3 distinct solutions. Every published test prompt is drawn from it."""
    task = Countdown()
    assert (task.min_numbers, task.max_numbers, task.max_number, task.max_target, task.min_solutions) == (
        3,
        4,
        50,
        100,
        3,
    )
    assert (task.format_reward, task.prompt_style, task.reward) == (0.0, "plain", "escov")


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(min_numbers=1, max_numbers=3), "need 2 <= min_numbers <= max_numbers <= 5, got 1, 3"),
        (dict(min_numbers=4, max_numbers=3), "need 2 <= min_numbers <= max_numbers <= 5, got 4, 3"),
        (dict(min_numbers=2, max_numbers=6), "need 2 <= min_numbers <= max_numbers <= 5, got 2, 6"),
        (dict(max_number=0), "max_number and max_target must be >= 1, got 0, 100"),
        (dict(max_target=0), "max_number and max_target must be >= 1, got 50, 0"),
        (dict(min_solutions=0), "min_solutions must be >= 1, got 0"),
        (dict(data_split="paper"), "data_split 'paper' needs a data file (data)"),
        (dict(reward="es-at-scale-countdown", format_reward=0.25), "format_reward is part of the reward convention"),
        (dict(fields={"question": "q"}), "fields: task 'countdown' reads"),
    ],
)
def test_each_bad_setting_is_refused_naming_it(settings, message):
    with pytest.raises(ValueError) as err:
        Countdown(**settings)
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize(
    "settings",
    [
        dict(min_numbers=2, max_numbers=2),
        dict(min_numbers=3, max_numbers=3),
        dict(min_numbers=5, max_numbers=5),
        dict(max_number=1, max_target=1),
        dict(min_solutions=1),
    ],
)
def test_each_setting_at_its_edge_is_accepted(settings):
    task = Countdown(**settings)
    assert all(getattr(task, k) == v for k, v in settings.items())


@pytest.mark.parametrize(
    "target, where, message",
    [
        (2.5, "target", "target must be an integer or a number written as a string, got 2.5"),
        ("abc", "target", "target is not a number: 'abc'"),
        ("1/0", "record 3: field 'target'", "record 3: field 'target' is not a number: '1/0'"),
    ],
)
def test_a_bad_target_is_refused_naming_where_it_came_from(target, where, message):
    from escov.llm.tasks.countdown import parse_target

    with pytest.raises(ValueError) as err:
        parse_target(target) if where == "target" else parse_target(target, where)
    assert str(err.value) == message


def test_a_target_below_one_is_read_as_the_simplest_fraction_within_the_tolerance():
    from escov.llm.tasks.countdown import parse_target

    assert parse_target("0.3333333333333333") == Fraction(1, 3)
    assert parse_target("-0.6666666666666666") == Fraction(-2, 3)
    assert parse_target(" 7 ") == 7 and parse_target("2.5") == Fraction(5, 2)
    with pytest.raises(ValueError) as err:
        distinct_solutions([1, 2], 0)
    assert str(err.value) == "target must be >= 1, got 0"
    with pytest.raises(ValueError) as err:
        distinct_solutions([], 3)
    assert str(err.value) == "numbers must be a non-empty list of ints, got []"
    assert distinct_solutions([5], 5) == ["5"] and distinct_solutions([5], 4) == []


# ------------------------------------------------------------------- Countdown: a number used twice in place of another

NUMBERS, TARGET = [2, 4, 3], 11  # 2 * 4 + 3 = 11
GOOD, TWICE, WRONG = "2*4+3", "4+4+3", "2+4+3"  # TWICE: 11 too, with 4 in place of 2; WRONG: 9


def _framed(answer: str, reward: str) -> str:
    return f" thinking </think>\n<answer>{answer}</answer>" if reward == "es-at-scale-countdown" else answer


@pytest.mark.parametrize("reward, style", [("escov", "plain"), ("es-at-scale-countdown", "paper")])
def test_a_number_used_twice_in_place_of_another_scores_as_a_wrong_answer(reward, style):
    def reward_of(answer):
        return score(_framed(answer, reward), NUMBERS, TARGET, style=style, reward=reward)

    assert eval_free_value(TWICE) == eval_free_value(GOOD) == TARGET  # the same value, so only the numbers differ
    assert reward_of(TWICE) == reward_of(WRONG)  # the same format, no answer credit
    assert reward_of(GOOD) - reward_of(WRONG) == pytest.approx(1.0)  # the answer's credit is exactly 1


def eval_free_value(expression: str) -> int:
    """The value of a sum / product of small integers, computed here by hand (no eval)."""
    return sum(int(np.prod([int(f) for f in term.split("*")])) for term in expression.split("+"))


@pytest.mark.parametrize("reward, style", [("escov", "plain"), ("es-at-scale-countdown", "paper")])
@pytest.mark.parametrize("malformed", ["2*4+", "(2*4+3", "2 4 3", "2*/4+3", "+", "()"])
def test_a_malformed_expression_scores_as_a_wrong_answer(reward, style, malformed):
    """Text from the answer's own characters that is no expression gets no answer credit (the format's only)."""

    def reward_of(answer):
        return score(_framed(answer, reward), NUMBERS, TARGET, style=style, reward=reward)

    assert reward_of(malformed) == reward_of(WRONG) < reward_of(GOOD)


def simplest_by_search(low: Fraction, high: Fraction) -> Fraction:
    """The fraction of smallest denominator in [low, high], by trying denominators 1, 2, ... in turn
    (the smallest numerator n/d >= low is the only candidate of each denominator)."""
    for d in itertools.count(1):
        n = math.ceil(low * d)
        if Fraction(n, d) <= high:
            return Fraction(n, d)


def test_the_simplest_fraction_between_two_bounds_equals_a_search():
    rng = np.random.default_rng(0)
    cases = [
        (Fraction(3), Fraction(3)),
        (Fraction(3), Fraction(7, 2)),
        (Fraction(23, 10), Fraction(5, 2)),
        (Fraction(5, 2), Fraction(3)),
        (Fraction(-7, 3), Fraction(-2)),
        (Fraction(1, 3), Fraction(1, 3)),
    ]
    for _ in range(400):
        low = Fraction(int(rng.integers(-500, 500)), int(rng.integers(1, 60)))
        cases.append((low, low + Fraction(int(rng.integers(0, 40)), int(rng.integers(1, 400)))))
    for low, high in cases:
        assert _simplest_between(low, high) == simplest_by_search(low, high), (low, high)
