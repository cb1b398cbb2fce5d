"""Subset sum: choose some of the given numbers (each at most as often as it is given) that add up to the target.

Instance: m numbers (default 5, each in [1, max_number], repeats allowed) and a target, the sum of a random
non-empty subset of them (drawn forward, so every instance has a solution), above the largest number
(`target_above_largest`, default on: else an instance whose target lies below its largest number is rare-only on its
face, and a model need not learn the rare strategy to solve it: 12 of the first look's 19 rare-only validation
prompts were such). Prompt: "{3,7,12,5,9}=21:".
Answer: the chosen numbers joined by "," or "+" in any order ("12,9", "9+7+5"); spaces are ignored.

Correct: the answer's numbers form a non-empty sub-multiset of the given numbers and sum to the target.
Canonical solution id: the chosen numbers sorted ascending, joined by "," ("5,7,9"). Every solution is
enumerated exactly (`solutions`: each of the 2^m subsets of positions, kept once per sorted value tuple).

Strategies (planted in the tiny base model's corpus, llm/tinymodel_planted.py): "dominant" = the solution
contains the largest given number, "rare" = it does not; `subset size` is recorded beside. Rare-only
instances are those where no solution contains the largest number.

Random guesser: a uniformly random non-empty subset of the m positions (2^m - 1 of them); its success rate
is exactly #(position subsets summing to the target) / (2^m - 1) (`random_guess_rate`).

Splits: the instance key is "sorted numbers=target"; base.split_of(key) puts it in train (90%), validation
or test (5% each), so no instance is in two splits. Reward `escov` only, prompt style `plain`, generated only.
"""

from __future__ import annotations

import functools
import random
import re
from fractions import Fraction

from escov.llm.tasks.base import Problem, Task, check_count, check_not_exhausted, check_split, split_of
from escov.llm.tasks.reasoning_format import MAX_COMPLETION_CHARS
from escov.llm.tasks.rewards import check_reward

MAX_ANSWER_CHARS = 256  # a longer answer (spaces removed) is wrong without being read
MAX_NUMBERS = 16  # m of a generated instance (2^m subsets are enumerated)
STRATEGIES = ("dominant", "rare")
_ANSWER = re.compile(r"[1-9]\d{0,5}(?:[,+][1-9]\d{0,5})*")  # positive integers, no leading zero
_SPACE = re.compile(r"\s+")


def key_of(numbers, target: int) -> str:
    """An instance's key (its split rule's input): "3,5,7,9,12=21"."""
    return f"{','.join(map(str, sorted(numbers)))}={target}"


def format_prompt(numbers, target: int) -> str:
    return "{" + ",".join(map(str, numbers)) + f"}}={target}:"


def canonical(chosen) -> str:
    """The canonical id of a chosen multiset: its numbers sorted ascending, joined by ","."""
    return ",".join(map(str, sorted(chosen)))


@functools.lru_cache(maxsize=4096)
def _solutions(numbers: tuple[int, ...], target: int) -> tuple[tuple[int, ...], ...]:
    found = set()
    for mask in range(1, 1 << len(numbers)):
        chosen = [x for i, x in enumerate(numbers) if mask >> i & 1]
        if sum(chosen) == target:
            found.add(tuple(sorted(chosen)))
    return tuple(sorted(found))


def solutions(numbers, target: int) -> list[tuple[int, ...]]:
    """Every solution as a sorted tuple (distinct sub-multisets summing to target), in sorted order."""
    return list(_solutions(tuple(sorted(numbers)), target))


def strategy(numbers, chosen) -> str:
    """ "dominant" when the chosen numbers contain the largest given number, else "rare"."""
    return "dominant" if max(numbers) in chosen else "rare"


def random_guess_rate(numbers, target: int) -> Fraction:
    """Exact success rate of a uniform non-empty subset of positions: hits / (2^m - 1)."""
    m = len(numbers)
    hits = sum(sum(x for i, x in enumerate(numbers) if mask >> i & 1) == target for mask in range(1, 1 << m))
    return Fraction(hits, (1 << m) - 1)


def parse_answer(completion) -> tuple[int, ...] | None:
    """The numbers a completion chooses, sorted, or None when it is not a list of numbers joined by "," or "+"
    (too long, empty, a leading zero, anything else). Never evaluates anything."""
    if not isinstance(completion, str) or len(completion) > MAX_COMPLETION_CHARS:
        return None
    text = _SPACE.sub("", completion)
    if len(text) > MAX_ANSWER_CHARS or not _ANSWER.fullmatch(text):
        return None
    return tuple(sorted(int(x) for x in re.split(r"[,+]", text)))


def is_solution(numbers, target: int, chosen) -> bool:
    """Whether chosen is a non-empty sub-multiset of numbers summing to target."""
    if not chosen or sum(chosen) != target:
        return False
    left = sorted(numbers)
    for x in chosen:
        if x not in left:
            return False
        left.remove(x)
    return True


def score(completion, numbers, target: int) -> float:
    """1.0 when the completion chooses a solution of the instance, else 0.0."""
    chosen = parse_answer(completion)
    return float(chosen is not None and is_solution(numbers, target, chosen))


class SubsetSum(Task):
    name = "subset_sum"

    def __init__(
        self,
        m: int = 5,
        max_number: int = 20,
        min_solutions: int = 1,
        target_above_largest: bool = True,
        reward: str = "escov",
        format_reward: float = 0.0,
        prompt_style: str = "plain",
    ):
        if not 2 <= m <= MAX_NUMBERS:
            raise ValueError(f"m must lie in [2, {MAX_NUMBERS}], got {m}")
        if max_number < 1 or min_solutions < 1:
            raise ValueError(f"max_number and min_solutions must be >= 1, got {max_number}, {min_solutions}")
        check_reward(reward, self.name, format_reward)
        if format_reward or prompt_style != "plain":
            raise ValueError(
                "task 'subset_sum' has only the plain prompt style and the escov reward without format_reward"
            )
        self.settings = (m, max_number, min_solutions, bool(target_above_largest))

    def sample_instance(self, rng: random.Random, split: str) -> tuple[list[int], int]:
        """(numbers, target) of the split meeting the settings (the pretraining corpus is built from these)."""
        check_split(split)
        m, max_number, min_solutions, above_largest = self.settings
        while True:
            numbers = [rng.randint(1, max_number) for _ in range(m)]
            chosen = [x for x in numbers if rng.random() < 0.5] or [rng.choice(numbers)]
            target = sum(chosen)
            if above_largest and target <= max(numbers):
                continue
            if split_of(key_of(numbers, target)) == split and len(solutions(numbers, target)) >= min_solutions:
                return numbers, target

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        check_split(split)
        check_count(n)
        return [Problem(p.id, p.prompt, dict(p.meta)) for p in _generated(self.settings, split, n, seed)]

    def score(self, problem: Problem, completion: str) -> float:
        return score(completion, problem.meta["numbers"], problem.meta["target"])

    def answer(self, problem: Problem, completion: str) -> str | None:
        """The canonical id of the chosen numbers, or None when the completion chooses none."""
        chosen = parse_answer(completion)
        return None if chosen is None else canonical(chosen)


@functools.lru_cache(maxsize=64)
def _generated(settings: tuple, split: str, n: int, seed: int) -> tuple[Problem, ...]:
    task = SubsetSum(*settings)
    rng = random.Random(f"subset_sum/{split}/{seed}")
    out: dict[str, Problem] = {}
    misses = 0
    while len(out) < n:
        numbers, target = task.sample_instance(rng, split)
        key = key_of(numbers, target)
        if key in out:
            misses += 1
            check_not_exhausted(misses, len(out), n, f"the {split} split of task subset_sum")
            continue
        misses = 0
        out[key] = Problem(
            id=f"subset_sum/{key}",
            prompt=format_prompt(numbers, target),
            meta={"numbers": numbers, "target": target, "n_solutions": len(solutions(numbers, target))},
        )
    return tuple(out.values())
