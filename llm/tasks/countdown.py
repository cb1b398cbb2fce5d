"""Countdown: combine the given numbers, each exactly once, with + - * / and parentheses, to hit the target.

Generated instances (the default) are sampled forward: draw 3 or 4 numbers in [1, max_number],
combine them in a random order and random tree with random operators, and keep the value as target
when it is an integer in [1, max_target]. An instance enters a split only if it has at least
`min_solutions` solutions that differ beyond commutativity/associativity (counted by exhaustive
enumeration over all trees, orders and operators in exact rationals). The split of an instance is
fixed by its sorted numbers, so train and test never share a number set.

Instances from data files (`data`, `test_data`, `data_split`; llm/tasks/data_files.py) are taken as
they are: fields `numbers` (a list of integers) and `target` (an integer, or a string such as
"98" or "266.6666666666667"), any ranges, no solution count required. The paper's file
(VsonicV/es-at-scale, archive/countdown/data/countdown.json) is read with `data_split = "paper"`.

Targets are exact rationals. A decimal target is the simplest fraction within a relative
`TARGET_TOLERANCE` (1e-12) of it: the file's decimals are floats computed from small fractions,
a few units in the last place off ("2.833333333333334" is 17/6, "266.6666666666667" is 800/3),
while distinct values of expressions over numbers below 100 differ far more than that.

Reward (`reward`, llm/tasks/rewards.py): `escov` gives 1 when the answer uses the numbers exactly
once (as a multiset) and evaluates exactly to the target, else `format_reward` (default 0) for a
whitelisted but wrong expression, else 0; `es-at-scale-countdown` adds 0.1 x es-at-scale's format
score to an answer reward of 0 or 1. The answer is the content of the last <answer>...</answer>
block after any thinking (llm/tasks/reasoning_format.py); under the `plain` prompt style a bare
expression counts too (the tiny model's format: "3,7,25->46:" -> "25+3*7").
"""

from __future__ import annotations

import functools
import math
import random
from fractions import Fraction

from escov.llm.tasks.base import Problem, Task, check_count, check_not_exhausted, check_split, split_of
from escov.llm.tasks.data_files import check_fields, field, no_split_data, split_files
from escov.llm.tasks.reasoning_format import (
    MAX_COMPLETION_CHARS,
    PROMPT_STYLES,
    after_thinking,
    check_style,
    es_at_scale_format_score,
    last_tagged,
    raw_prompt,
)
from escov.llm.tasks.rewards import ES_AT_SCALE_FORMAT_WEIGHT, check_reward
from escov.llm.tasks.safe_arith import (
    LEAF_PRECEDENCE,
    PRECEDENCE,
    Canon,
    UnsafeExpression,
    apply_op,
    canonical,
    combine,
    evaluate,
    join_text,
    leaf,
    literals,
    parse_expression,
)

__all__ = [
    "MAX_COMPLETION_CHARS",
    "PROMPT_STYLES",
    "Countdown",
    "distinct_solutions",
    "extract_answer",
    "format_prompt",
    "parse_target",
    "score",
]

TARGET_TOLERANCE = 1e-12
FIELDS = ("numbers", "target")
_OPS = ("+", "-", "*", "/")
_ES_AT_SCALE_CHARS = frozenset("0123456789+-*/() ")
_INSTRUCT = (
    "Using the numbers {numbers}, create an equation that equals {target}. You can use "
    "basic arithmetic operations (+, -, *, /) and each number must be used exactly once. "
    "Show your work in <think> </think> tags. And return the final answer in "
    "<answer> </answer> tags, for example <answer> (1 + 2) / 3 </answer>."
)
# the `context` of every record of the paper's file, word for word (no space after two of the full stops)
_PAPER = (
    "You are a helpful assistant. You first think about the reasoning process in your mind and then "
    "provide the user with the answer.Using the numbers {numbers}, create an equation that equals "
    "{target}. You can use basic arithmetic operations (+, -, *, /) and each number can only be used "
    "once. Show your work in <think> </think> tags. And return the final answer in <answer> </answer> "
    "tags, for example <answer> (1 + 2) / 3 </answer>.Let me solve this step by step.\n<think>"
)


def paper_numbers(numbers: list[int]) -> str:
    """The numbers as the paper's file writes them: "[44 19 35]", "[ 8 16 56]" (right-aligned to the widest)."""
    width = max(len(str(x)) for x in numbers)
    return "[" + " ".join(str(x).rjust(width) for x in numbers) + "]"


def format_prompt(numbers: list[int], target, style: str = "plain") -> str:
    """The prompt of an instance; `target` is written as given (an int, or the file's string)."""
    check_style(style)
    if style == "plain":
        return f"{','.join(map(str, numbers))}->{target}:"
    if style == "instruct":
        return _INSTRUCT.format(numbers=list(numbers), target=target)
    return raw_prompt(_PAPER.format(numbers=paper_numbers(numbers), target=target))


def extract_answer(completion: str, style: str = "plain") -> str | None:
    """The answer text: the stripped content of the last <answer> block after any thinking; under
    the plain style, else the whole stripped completion; None when there is none (linear time)."""
    region = after_thinking(completion, starts_in_think=style == "paper")
    if region is None:
        return None
    tagged = last_tagged(region)
    if tagged is not None:
        return tagged.strip()
    return region.strip() if style == "plain" else None


def _simplest_between(low: Fraction, high: Fraction) -> Fraction:
    """The fraction with the smallest denominator in [low, high] (continued fractions; low <= high)."""
    floor = math.floor(low)
    if floor == low or floor + 1 <= high:
        return Fraction(floor if floor == low else floor + 1)
    return floor + 1 / _simplest_between(1 / (high - floor), 1 / (low - floor))


def parse_target(target, where: str = "target") -> Fraction:
    """The exact rational value of a target: an int, a Fraction, or a string ("98", "-3", "27.4",
    "266.6666666666667"); ValueError naming `where` otherwise. See TARGET_TOLERANCE in the docstring."""
    if isinstance(target, Fraction):
        return target
    if isinstance(target, int) and not isinstance(target, bool):
        return Fraction(target)
    if not isinstance(target, str):
        raise ValueError(f"{where} must be an integer or a number written as a string, got {target!r}")
    text = target.strip()
    try:
        exact = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{where} is not a number: {target!r}") from None
    if exact.denominator == 1:
        return exact
    slack = abs(exact) * Fraction(TARGET_TOLERANCE)
    if exact > 0:
        return _simplest_between(exact - slack, exact + slack)
    return -_simplest_between(-exact - slack, -exact + slack)


def _check_instance(numbers, target) -> Fraction:
    if (
        not isinstance(numbers, (list, tuple))
        or not numbers
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in numbers)
    ):
        raise ValueError(f"numbers must be a non-empty list of ints, got {numbers!r}")
    return parse_target(target)


def score(
    completion: str,
    numbers: list[int],
    target,
    format_reward: float = 0.0,
    *,
    style: str = "plain",
    reward: str = "escov",
) -> float:
    """The reward of a completion for an instance under a reward convention (module docstring). Never evaluates code."""
    value = _check_instance(numbers, target)
    check_reward(reward, "countdown", format_reward)
    if not isinstance(completion, str) or len(completion) > MAX_COMPLETION_CHARS:
        return 0.0
    if reward == "es-at-scale-countdown":
        region = after_thinking(completion, starts_in_think=style == "paper")
        content = last_tagged(region) if region is not None else None
        answer_ok = bool(content) and set(content) <= _ES_AT_SCALE_CHARS and _hits(content, numbers, value)
        fmt = es_at_scale_format_score(completion, starts_in_think=style == "paper")
        return ES_AT_SCALE_FORMAT_WEIGHT * fmt + float(answer_ok)
    answer = extract_answer(completion, style)
    if answer is None:
        return 0.0
    try:
        tree = parse_expression(answer)
        correct = sorted(literals(tree)) == sorted(numbers) and evaluate(tree) == value
    except UnsafeExpression:
        return 0.0
    return 1.0 if correct else format_reward


def _hits(answer: str, numbers, value: Fraction) -> bool:
    """The answer uses each number once and equals value (False for anything that is not an expression)."""
    try:
        tree = parse_expression(answer.strip())
        return sorted(literals(tree)) == sorted(numbers) and evaluate(tree) == value
    except UnsafeExpression:
        return False


def random_expression(numbers: list[int], rng: random.Random) -> tuple[str, Fraction] | None:
    """A random expression using every number once (random order, tree and operators), or None on x/0."""
    items = [(str(x), LEAF_PRECEDENCE, Fraction(x)) for x in numbers]
    while len(items) > 1:
        i, j = rng.sample(range(len(items)), 2)
        (ta, pa, va), (tb, pb, vb) = items[i], items[j]
        op = rng.choice(_OPS)
        try:
            value = apply_op(op, va, vb)
        except UnsafeExpression:
            return None
        items = [it for k, it in enumerate(items) if k not in (i, j)]
        items.append((join_text(op, ta, pa, tb, pb), PRECEDENCE[op], value))
    return items[0][0], items[0][2]


def _combinations(left: dict, right: dict):
    """(op, x, y) for every ordered way to join an entry of `left` with one of `right`."""
    for a in left.values():
        for b in right.values():
            yield from (("+", a, b), ("*", a, b), ("-", a, b), ("-", b, a), ("/", a, b), ("/", b, a))


def _splits(mask: int):
    """Unordered pairs (sub, mask ^ sub) of non-empty disjoint sub-masks covering mask."""
    sub = (mask - 1) & mask
    while sub:
        if sub < mask ^ sub:
            yield sub, mask ^ sub
        sub = (sub - 1) & mask


@functools.lru_cache(maxsize=8192)
def _subset_tables(numbers: tuple[int, ...]) -> list[dict[str, tuple[Fraction, Canon, str, int]]]:
    """For every proper subset (bitmask) of the numbers: canonical key -> (value, form, text, precedence).

    Dynamic programming over subsets; each subset keeps one text per canonical form, so
    commutative/associative rewrites are merged as they are built.
    """
    k = len(numbers)
    table: list[dict] = [{} for _ in range(1 << k)]
    for i, x in enumerate(numbers):
        table[1 << i][str(x)] = (Fraction(x), leaf(x), str(x), LEAF_PRECEDENCE)
    for mask in range(1, (1 << k) - 1):
        if mask & (mask - 1):
            out = table[mask]
            for sub, other in _splits(mask):
                for op, x, y in _combinations(table[sub], table[other]):
                    c = combine(op, x[1], y[1])
                    if c.key not in out:
                        try:
                            value = apply_op(op, x[0], y[0])
                        except UnsafeExpression:
                            continue
                        out[c.key] = (value, c, join_text(op, x[2], x[3], y[2], y[3]), PRECEDENCE[op])
    return table


def _by_value(entries: dict) -> dict[Fraction, list]:
    out: dict[Fraction, list] = {}
    for entry in entries.values():
        out.setdefault(entry[0], []).append(entry)
    return out


def distinct_solutions(numbers: list[int], target: int) -> list[str]:
    """One expression per canonical solution (distinct up to commutativity, associativity, sign).

    Exhaustive over all orders, trees and operators in exact rationals. The last join x op y is
    found by solving for y (y = t - x, t/x, x - t, x + t, x/t, t*x) and looking it up, so the
    cost is linear, not quadratic, in the sizes of the two halves. Needs target >= 1.
    """
    _check_instance(numbers, target)
    if target < 1:
        raise ValueError(f"target must be >= 1, got {target}")
    numbers = tuple(sorted(numbers))
    if len(numbers) == 1:
        return [str(numbers[0])] if numbers[0] == target else []
    table, full, t = _subset_tables(numbers), (1 << len(numbers)) - 1, Fraction(target)
    found: dict[str, str] = {}
    for sub, other in _splits(full):
        right = _by_value(table[other])
        for x in table[sub].values():
            v = x[0]
            wanted = [("+", False, t - v), ("-", False, v - t), ("-", True, v + t)]
            if v != 0:  # x * y = t, x / y = t (so y != 0) and y / x = t all need x != 0
                wanted += [("*", False, t / v), ("/", False, v / t), ("/", True, t * v)]
            for op, y_first, y_value in wanted:
                for y in right.get(y_value, ()):
                    a, b = (y, x) if y_first else (x, y)
                    found.setdefault(combine(op, a[1], b[1]).key, join_text(op, a[2], a[3], b[2], b[3]))
    return sorted(found.values())


class Countdown(Task):
    name = "countdown"

    def __init__(
        self,
        min_numbers: int = 3,
        max_numbers: int = 4,
        max_number: int = 50,
        max_target: int = 100,
        min_solutions: int = 3,
        format_reward: float = 0.0,
        prompt_style: str = "plain",
        reward: str = "escov",
        data=None,
        test_data=None,
        data_split: str = "files",
        fields: dict[str, str] | None = None,
    ):
        if not 2 <= min_numbers <= max_numbers <= 5:
            raise ValueError(f"need 2 <= min_numbers <= max_numbers <= 5, got {min_numbers}, {max_numbers}")
        if max_number < 1 or max_target < 1:
            raise ValueError(f"max_number and max_target must be >= 1, got {max_number}, {max_target}")
        if min_solutions < 1:
            raise ValueError(f"min_solutions must be >= 1, got {min_solutions}")
        self.reward = check_reward(reward, self.name, format_reward)
        self.prompt_style = check_style(prompt_style)
        self.min_numbers, self.max_numbers = min_numbers, max_numbers
        self.max_number, self.max_target = max_number, max_target
        self.min_solutions, self.format_reward = min_solutions, format_reward
        self.fields = check_fields(fields, FIELDS, self.name)
        self.from_files = data is not None or test_data is not None
        self.splits: dict[str, list[Problem]] = {}
        if self.from_files:
            for split, rows in split_files(data, test_data, data_split).items():
                self.splits[split] = [self._file_problem(split, *row) for row in rows]
        elif data_split != "files":
            raise ValueError(f"data_split {data_split!r} needs a data file (data)")

    def _file_problem(self, split: str, path: str, index: int, record: dict) -> Problem:
        where = f"data file {path}: record {index}"
        numbers = field(record, "numbers", self.fields, where)
        if (
            not isinstance(numbers, (list, tuple))
            or not numbers
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in numbers)
        ):
            raise ValueError(f"{where}: field 'numbers' must be a non-empty list of integers, got {numbers!r}")
        raw_target = field(record, "target", self.fields, where)
        target = parse_target(raw_target, f"{where}: field 'target'")
        label = record.get("id", index)
        return Problem(
            id=f"countdown/{split}/{label}",
            prompt=format_prompt(list(numbers), raw_target, self.prompt_style),
            meta={"numbers": list(numbers), "target": target},
        )

    def sample_expression(self, rng: random.Random, split: str) -> tuple[list[int], str, int]:
        """(numbers, expression, value): a random full-use expression with an integer value in
        [1, max_target] over a number set of the split. The pretraining corpus is built from these."""
        check_split(split)
        while True:
            count = rng.randint(self.min_numbers, self.max_numbers)
            numbers = [rng.randint(1, self.max_number) for _ in range(count)]
            if split_of(",".join(map(str, sorted(numbers)))) != split:
                continue
            drawn = random_expression(numbers, rng)
            if drawn is None:
                continue
            text, value = drawn
            if value.denominator == 1 and 1 <= value <= self.max_target:
                return numbers, text, int(value)

    def size(self, split: str) -> int | None:
        check_split(split)
        return len(self.splits.get(split, [])) if self.from_files else None

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        check_split(split)
        check_count(n)
        if self.from_files:
            if split not in self.splits:
                raise ValueError(no_split_data(self.name, split))
            pool = self.splits[split]
            if n > len(pool):
                raise ValueError(f"n={n} problems requested but the {split} data holds {len(pool)}")
            return random.Random(f"countdown/{split}/{seed}").sample(pool, n)
        return [
            Problem(p.id, p.prompt, dict(p.meta))
            for p in _generated(
                (
                    self.min_numbers,
                    self.max_numbers,
                    self.max_number,
                    self.max_target,
                    self.min_solutions,
                    self.prompt_style,
                ),
                split,
                n,
                seed,
            )
        ]

    def score(self, problem: Problem, completion: str) -> float:
        return score(
            completion,
            problem.meta["numbers"],
            problem.meta["target"],
            self.format_reward,
            style=self.prompt_style,
            reward=self.reward,
        )

    def _tree(self, completion: str):
        if not isinstance(completion, str) or len(completion) > MAX_COMPLETION_CHARS:
            return None
        answer = extract_answer(completion, self.prompt_style)
        try:
            return None if answer is None else parse_expression(answer)
        except UnsafeExpression:
            return None

    def answer(self, problem: Problem, completion: str) -> str | None:
        """The canonical form of the answer expression (one reasoning path); None when there is none."""
        tree = self._tree(completion)
        try:
            return None if tree is None else canonical(tree).key
        except UnsafeExpression:
            return None

    def vote(self, problem: Problem, completion: str) -> str | None:
        """Maj@k vote: the value the answer evaluates to when it uses exactly the given numbers (so all
        correct answers agree), else its canonical form (a vote of its own)."""
        tree = self._tree(completion)
        if tree is None:
            return None
        try:
            if sorted(literals(tree)) == sorted(problem.meta["numbers"]):
                return f"value={evaluate(tree)}"
            return canonical(tree).key
        except UnsafeExpression:
            return None


@functools.lru_cache(maxsize=64)
def _generated(settings: tuple, split: str, n: int, seed: int) -> tuple[Problem, ...]:
    """The n generated problems of (split, seed) for a Countdown with these settings, kept for the
    process: finding every solution of hundreds of instances costs seconds, and the runs of a
    reproduction that share a worker process ask for the same train pool and test problems again."""
    min_numbers, max_numbers, max_number, max_target, min_solutions, prompt_style = settings
    task = Countdown(min_numbers, max_numbers, max_number, max_target, min_solutions, prompt_style=prompt_style)
    rng = random.Random(f"countdown/{split}/{seed}")
    out: list[Problem] = []
    seen: set[tuple] = set()  # instances drawn before, taken or with too few solutions
    misses = 0
    while len(out) < n:
        numbers, _, target = task.sample_expression(rng, split)
        key = (tuple(sorted(numbers)), target)
        if key in seen:
            misses += 1
            check_not_exhausted(
                misses,
                len(out),
                n,
                f"the {split} split of task countdown "
                f"({min_numbers}-{max_numbers} numbers, at least {min_solutions} solutions)",
            )
            continue
        misses = 0
        seen.add(key)
        solutions = distinct_solutions(numbers, target)
        if len(solutions) < min_solutions:
            continue
        out.append(
            Problem(
                id=f"countdown/{','.join(map(str, numbers))}={target}",
                prompt=format_prompt(numbers, target, prompt_style),
                meta={"numbers": numbers, "target": target, "n_solutions": len(solutions)},
            )
        )
    return tuple(out)
