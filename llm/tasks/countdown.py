"""Countdown: combine the given numbers, each exactly once, with + - * / and parentheses, to hit the target.

Instances are sampled forward: draw 3 or 4 numbers in [1, max_number], combine them in a random
order and random tree with random operators, and keep the value as target when it is an integer
in [1, max_target]. An instance enters a split only if it has at least `min_solutions`
solutions that differ beyond commutativity/associativity (counted by exhaustive enumeration over
all trees, orders and operators in exact rationals). The split of an instance is fixed by its
sorted numbers, so train and test never share a number set.

Reward: 1 when the answer uses the numbers exactly once (as a multiset) and evaluates exactly to
the target, else 0 (or `format_reward` for a well-formed but wrong expression; 0 by default).
The answer is the content of the last <answer>...</answer> block when there is one, otherwise
the whole completion (the tiny model's plain format: "3,7,25->46:" -> "25+3*7").
"""
from __future__ import annotations

import functools
import random
from fractions import Fraction

from llm.tasks.base import Problem, Task, check_count, check_split, split_of
from llm.tasks.safe_arith import (LEAF_PRECEDENCE, PRECEDENCE, Canon, UnsafeExpression, apply_op,
                                  canonical, combine, evaluate, join_text, leaf, literals,
                                  parse_expression)

MAX_COMPLETION_CHARS = 20_000
PROMPT_STYLES = ("plain", "instruct")
_OPS = ("+", "-", "*", "/")
_INSTRUCT = ("Using the numbers {numbers}, create an equation that equals {target}. You can use "
             "basic arithmetic operations (+, -, *, /) and each number must be used exactly once. "
             "Show your work in <think> </think> tags. And return the final answer in "
             "<answer> </answer> tags, for example <answer> (1 + 2) / 3 </answer>.")


def format_prompt(numbers: list[int], target: int, style: str = "plain") -> str:
    if style == "plain":
        return f"{','.join(map(str, numbers))}->{target}:"
    if style == "instruct":
        return _INSTRUCT.format(numbers=list(numbers), target=target)
    raise ValueError(f"prompt_style must be one of {PROMPT_STYLES}, got {style!r}")


def extract_answer(completion: str) -> str:
    """Content of the last <answer>...</answer> block, else the stripped completion (linear time)."""
    end = completion.rfind("</answer>")
    start = completion.rfind("<answer>", 0, end) if end >= 0 else -1
    if start >= 0:
        return completion[start + len("<answer>"):end].strip()
    return completion.strip()


def _check_instance(numbers, target) -> None:
    if not isinstance(numbers, (list, tuple)) or not numbers or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in numbers):
        raise ValueError(f"numbers must be a non-empty list of ints, got {numbers!r}")
    if isinstance(target, bool) or not isinstance(target, int):
        raise ValueError(f"target must be an int, got {target!r}")


def score(completion: str, numbers: list[int], target: int, format_reward: float = 0.0) -> float:
    """1.0 if the completion's answer uses each number exactly once and equals target, else 0.0.

    A whitelisted but wrong expression earns `format_reward` (default 0). Never evaluates code.
    """
    _check_instance(numbers, target)
    if not 0.0 <= format_reward < 1.0:
        raise ValueError(f"format_reward must lie in [0, 1), got {format_reward}")
    if not isinstance(completion, str) or len(completion) > MAX_COMPLETION_CHARS:
        return 0.0
    try:
        tree = parse_expression(extract_answer(completion))
        correct = sorted(literals(tree)) == sorted(numbers) and evaluate(tree) == target
    except UnsafeExpression:
        return 0.0
    return 1.0 if correct else format_reward


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

    def __init__(self, min_numbers: int = 3, max_numbers: int = 4, max_number: int = 50,
                 max_target: int = 100, min_solutions: int = 3, format_reward: float = 0.0,
                 prompt_style: str = "plain"):
        if not 2 <= min_numbers <= max_numbers <= 5:
            raise ValueError(f"need 2 <= min_numbers <= max_numbers <= 5, got {min_numbers}, {max_numbers}")
        if max_number < 1 or max_target < 1:
            raise ValueError(f"max_number and max_target must be >= 1, got {max_number}, {max_target}")
        if min_solutions < 1:
            raise ValueError(f"min_solutions must be >= 1, got {min_solutions}")
        if not 0.0 <= format_reward < 1.0:
            raise ValueError(f"format_reward must lie in [0, 1), got {format_reward}")
        format_prompt([1], 1, prompt_style)  # validates the style
        self.min_numbers, self.max_numbers = min_numbers, max_numbers
        self.max_number, self.max_target = max_number, max_target
        self.min_solutions, self.format_reward = min_solutions, format_reward
        self.prompt_style = prompt_style

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

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        check_split(split)
        check_count(n)
        rng = random.Random(f"countdown/{split}/{seed}")
        out: list[Problem] = []
        seen: set[tuple] = set()
        while len(out) < n:
            numbers, _, target = self.sample_expression(rng, split)
            key = (tuple(sorted(numbers)), target)
            if key in seen:
                continue
            solutions = distinct_solutions(numbers, target)
            if len(solutions) < self.min_solutions:
                continue
            seen.add(key)
            out.append(Problem(
                id=f"countdown/{','.join(map(str, numbers))}={target}",
                prompt=format_prompt(numbers, target, self.prompt_style),
                meta={"numbers": numbers, "target": target, "n_solutions": len(solutions)}))
        return out

    def score(self, problem: Problem, completion: str) -> float:
        return score(completion, problem.meta["numbers"], problem.meta["target"], self.format_reward)

    def answer(self, problem: Problem, completion: str) -> str | None:
        """The canonical form of the answer expression (None when it is not a valid expression)."""
        if not isinstance(completion, str) or len(completion) > MAX_COMPLETION_CHARS:
            return None
        try:
            return canonical(parse_expression(extract_answer(completion))).key
        except UnsafeExpression:
            return None
