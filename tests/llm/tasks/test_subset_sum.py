"""Subset sum: the enumeration against brute force over multiplicities, the verifier against the enumeration, the
exact guess rate against Monte Carlo, hostile outputs, split disjointness, and a one-step `llm train`."""

import itertools
import math
import random
from collections import Counter
from fractions import Fraction

import pytest

from escov.llm.tasks import get_task
from escov.llm.tasks.base import SPLITS, split_of
from escov.llm.tasks.subset_sum import SubsetSum, canonical, key_of, random_guess_rate, score, solutions, strategy
from tests.llm.tasks.test_grid_paths import SHORT_RUN


def brute_solutions(numbers, target) -> set:
    """Every sub-multiset summing to target, by choosing how many copies of each distinct value (0..its count)."""
    counts = sorted(Counter(numbers).items())
    out = set()
    for uses in itertools.product(*(range(c + 1) for _, c in counts)):
        chosen = tuple(x for (x, _), u in zip(counts, uses) for _ in range(u))
        if chosen and sum(chosen) == target:
            out.add(chosen)
    return out


def test_enumeration_matches_brute_force_over_all_multiplicities():
    rng = random.Random(0)
    for _ in range(300):
        numbers = [rng.randint(1, 6) for _ in range(rng.randint(2, 7))]
        target = rng.randint(1, sum(numbers) + 2)
        found = solutions(numbers, target)
        assert set(found) == brute_solutions(numbers, target) and found == sorted(found)  # sorted, as documented
    assert solutions([2, 2, 3], 5) == [(2, 3)]  # a repeated number gives one solution, not one per copy
    assert solutions([2, 2, 3], 4) == [(2, 2)] and solutions([2, 2, 3], 7) == [(2, 2, 3)]
    assert solutions([4, 1, 3, 2], 5) == [(1, 4), (2, 3)]  # each solution and the list in sorted order


def test_verifier_accepts_exactly_the_enumerated_set():
    task = SubsetSum()
    rng = random.Random(1)
    for problem in task.problems("train", 60, seed=2):
        numbers, target = problem.meta["numbers"], problem.meta["target"]
        found = set(solutions(numbers, target))
        assert found and len(found) == problem.meta["n_solutions"]
        for chosen in found:
            shuffled = list(chosen)
            rng.shuffle(shuffled)
            assert task.score(problem, canonical(chosen)) == 1.0
            assert task.score(problem, " + ".join(map(str, shuffled))) == 1.0
            assert task.answer(problem, "+".join(map(str, shuffled))) == canonical(chosen)
        values = sorted(set(numbers)) + [target, max(numbers) + 1]
        for size in range(1, len(numbers) + 2):  # every multiset of these values up to m + 1 numbers
            for chosen in itertools.combinations_with_replacement(values, size):
                assert task.score(problem, ",".join(map(str, chosen))) == float(tuple(sorted(chosen)) in found)


@pytest.mark.parametrize(
    "completion",
    [
        None,
        b"3,4",
        7,
        "",
        " ",
        "3,,4",
        ",3,4",
        "3,4,",
        "3;4",
        "3 4",
        "-3,10",
        "3.0,4",
        "__import__('os')",
        "3,4" * 40_000,
        "1" * 300,
        "３,４",
        "3,4\n3,4",
        "03,4",
        "7",
    ],
)
def test_hostile_outputs_score_zero(completion):
    numbers, target = [3, 4, 10], 7
    assert score(completion, numbers, target) == 0.0
    assert score("4,3", numbers, target) == 1.0


def test_random_guess_rate_is_exact_and_agrees_with_monte_carlo():
    numbers, target = [1, 2, 3, 4, 5, 5], 10  # position subsets hitting 10, counted by hand below
    hits = sum(sum(c) == 10 for r in range(1, 7) for c in itertools.combinations(numbers, r))
    assert random_guess_rate(numbers, target) == Fraction(hits, 63)
    rng = random.Random(3)
    draws, wins = 200_000, 0
    for _ in range(draws):
        mask = rng.randrange(1, 64)
        wins += sum(x for i, x in enumerate(numbers) if mask >> i & 1) == target
    rate = float(random_guess_rate(numbers, target))
    assert abs(wins / draws - rate) < 4 * math.sqrt(rate * (1 - rate) / draws)  # four standard errors


def test_strategy_and_rare_only_instances():
    assert strategy([3, 4, 10], (3, 4)) == "rare" and strategy([3, 4, 10], (3, 10)) == "dominant"
    problems = SubsetSum().problems("validation", 100, seed=0)
    rare_only = [
        p
        for p in problems
        if all(max(p.meta["numbers"]) not in s for s in solutions(p.meta["numbers"], p.meta["target"]))
    ]
    assert 5 < len(rare_only) < 95  # both kinds of prompt exist


def test_splits_follow_the_recorded_rule_are_disjoint_and_deterministic():
    task = get_task("subset_sum")
    keys = {}
    for split in SPLITS:
        problems = task.problems(split, 80, seed=0)
        keys[split] = {key_of(p.meta["numbers"], p.meta["target"]) for p in problems}
        assert len(keys[split]) == 80 and all(split_of(k) == split for k in keys[split])
        assert [p.prompt for p in problems] == [p.prompt for p in SubsetSum().problems(split, 80, seed=0)]
    assert not keys["train"] & keys["validation"] and not keys["train"] & keys["test"]
    assert not keys["validation"] & keys["test"]


def test_an_instances_key_is_its_numbers_sorted_so_an_order_never_moves_it_to_another_split():
    assert key_of([12, 3, 7, 3], 22) == key_of([3, 12, 3, 7], 22) == "3,3,7,12=22"
    # every ordering of one split's instance is in that split: the prompt's order is not the instance
    for problem in SubsetSum().problems("test", 20, seed=0):
        numbers, target = problem.meta["numbers"], problem.meta["target"]
        assert split_of(key_of(numbers[::-1], target)) == "test"
        assert problem.id == f"subset_sum/{','.join(map(str, sorted(numbers)))}={target}"


def test_min_solutions_is_a_lower_bound_that_its_own_count_meets():
    """Generated instances have at least min_solutions enumerated solutions, and instances with exactly that many
    are kept (common ones: among 60 validation prompts, for 1 and for 3)."""
    for least in (1, 3):
        problems = SubsetSum(min_solutions=least).problems("validation", 60, seed=0)
        counts = [len(solutions(p.meta["numbers"], p.meta["target"])) for p in problems]
        assert counts == [p.meta["n_solutions"] for p in problems]
        assert min(counts) == least


def test_bad_settings_are_one_line_errors():
    with pytest.raises(ValueError, match="generates its problems"):
        get_task("subset_sum", test_data="x.json")
    for m in (1, 17, 40):
        with pytest.raises(ValueError, match=rf"^m must lie in \[2, 16\], got {m}$"):
            SubsetSum(m=m)
    SubsetSum(m=2), SubsetSum(m=16)
    with pytest.raises(ValueError, match=r"^max_number and min_solutions must be >= 1, got 0, 1$"):
        SubsetSum(max_number=0)
    with pytest.raises(ValueError, match=r"^max_number and min_solutions must be >= 1, got 20, 0$"):
        SubsetSum(min_solutions=0)


def test_one_step_train_from_the_command_line(tiny_model_dir, tmp_path, capsys):
    from escov.llm.cli import main

    run = tmp_path / "run"
    assert main(["train", "--task", "subset_sum", "--model", str(tiny_model_dir), "--out", str(run), *SHORT_RUN]) == 0
    assert "subset_sum (base -> final" in capsys.readouterr().out


def test_targets_lie_above_the_largest_number_unless_asked_otherwise():
    # a target below the largest number makes an instance rare-only on its face (the largest cannot be used)
    above = SubsetSum().problems("test", 200, seed=0)
    assert all(p.meta["target"] > max(p.meta["numbers"]) for p in above)
    anywhere = SubsetSum(target_above_largest=False).problems("test", 200, seed=0)
    assert any(p.meta["target"] <= max(p.meta["numbers"]) for p in anywhere)
    assert get_task("subset_sum", target_above_largest=False).settings[-1] is False
    # rare-only instances remain, none of them readable from the target alone
    rare = [
        p for p in above if all(max(p.meta["numbers"]) not in s for s in solutions(p.meta["numbers"], p.meta["target"]))
    ]
    assert len(rare) >= 10


@pytest.mark.parametrize(
    "completion, chosen",
    [
        ("9+3,5", (3, 5, 9)),
        (" 12 , 7 ", (7, 12)),
        ("5,5", (5, 5)),
        ("05,3", None),  # a leading zero
        ("3,,5", None),
        ("", None),
        ("3-5", None),
        ("1" * 7, None),  # a number of more than six digits
        (None, None),
    ],
)
def test_an_answer_is_its_numbers_sorted_or_none(completion, chosen):
    from escov.llm.tasks.subset_sum import parse_answer

    assert parse_answer(completion) == chosen


def test_the_defaults_the_draws_and_the_guess_rate_by_hand():
    """Five numbers in [1, 20] by default (1 among them in some instances), one solution at least, the target above the
    largest; two seeds draw two sets; a random guesser's rate counts every non-empty subset of positions."""
    assert SubsetSum().settings == (5, 20, 1, True)
    problems = SubsetSum().problems("validation", 80, seed=0)
    numbers = [x for p in problems for x in p.meta["numbers"]]
    assert min(numbers) == 1 and max(numbers) <= 20 and {len(p.meta["numbers"]) for p in problems} == {5}
    assert all(p.prompt == "{" + ",".join(map(str, p.meta["numbers"])) + f"}}={p.meta['target']}:" for p in problems)
    assert problems[0].prompt.startswith("{") and "," in problems[0].prompt  # "{3,7,12,5,9}=21:"
    assert [p.id for p in SubsetSum().problems("test", 5, seed=1)] != [p.id for p in SubsetSum().problems("test", 5, 2)]
    assert random_guess_rate([5, 3], 5) == Fraction(1, 3)  # {5} of {5}, {3}, {5, 3}
    assert random_guess_rate([5, 3], 8) == Fraction(1, 3)  # {5, 3}
    assert random_guess_rate([2, 3, 5], 5) == Fraction(2, 7)  # {5}, {2, 3} of 7 subsets
    SubsetSum(max_number=1)  # a range of one number is a range
    with pytest.raises(ValueError, match="^task 'subset_sum' has only the plain prompt style and the escov reward"):
        SubsetSum(prompt_style="instruct")
    with pytest.raises(ValueError, match="^task 'subset_sum' has only the plain prompt style and the escov reward"):
        SubsetSum(format_reward=0.1)


def test_answers_at_the_length_limits():
    from escov.llm.tasks.reasoning_format import MAX_COMPLETION_CHARS
    from escov.llm.tasks.subset_sum import MAX_ANSWER_CHARS, parse_answer

    at_limit = "1," * (MAX_ANSWER_CHARS // 2 - 1) + "12"  # exactly MAX_ANSWER_CHARS characters
    assert len(at_limit) == MAX_ANSWER_CHARS and parse_answer(at_limit) is not None
    assert parse_answer(at_limit + "3") is None
    padded = "5" + " " * (MAX_COMPLETION_CHARS - 1)  # the longest completion read, spaces removed
    assert parse_answer(padded) == (5,) and parse_answer(padded + " ") is None
