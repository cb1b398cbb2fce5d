"""Blocks of generated Countdown instances by their number of distinct solutions (a run's `eval_solutions`).

The block (split, k) of a generated Countdown task holds the instances of the split (llm/tasks/base.py split_of on
the sorted number set) with exactly k distinct solutions (llm/tasks/countdown.py distinct_solutions: distinct up to
commutativity, associativity and sign). A task draws its problems with at least `min_solutions` (3 by default), so
the blocks k = 1 and k = 2 are instances no draw of the task has ever given: prompts no earlier measurement read.

    countdown_of(task)        the generated Countdown a task draws from (None: it cannot give blocks)
    block_problems(task, split, n, seed, k)
                              the first n instances of the block in the task's own draw order: the stream of
                              Countdown.problems(split, ., seed) (random.Random("countdown/SPLIT/SEED") through
                              sample_expression, an instance taken once), keeping those with exactly k solutions;
                              the same instances, in the same order, as Countdown(min_solutions=k).problems with
                              its n_solutions == k kept
    block_size(task, split, k)  the exact size of the block, by enumeration: every number multiset of the split,
                              every integer value in [1, max_target] some full-use expression reaches, counted with
                              distinct_solutions (tasks of at most ENUMERATED_NUMBERS numbers; seconds)

Exhaustion: a draw that has met COUNT_AFTER_DISTINCT instances, or COUNT_AFTER_MISSES repeats in a row, without
finding n takes the block's exact size once (3-number tasks) and refuses n above it, naming the count; a task of
more numbers falls back on the task's own rule (base.check_not_exhausted: MAX_DRAWS_WITHOUT_NEW repeats in a row).
A draw of n within the block (128 of countdown3's 368 test instances with exactly 2 solutions) never enumerates.
"""

from __future__ import annotations

import functools
import itertools
import random
from fractions import Fraction

from escov.llm.tasks.base import MAX_DRAWS_WITHOUT_NEW, Problem, Task, check_count, check_split, split_of
from escov.llm.tasks.countdown import Countdown, distinct_solutions, format_prompt

ENUMERATED_NUMBERS = 3  # block_size enumerates tasks of at most this many numbers (4 numbers: tens of minutes)
COUNT_AFTER_DISTINCT = 6000  # distinct instances met before the exact size is taken (128 of 368 need about 2,500)
COUNT_AFTER_MISSES = 1000  # repeats in a row before the exact size is taken (a small task's split runs dry)


def countdown_of(task: Task) -> Countdown | None:
    """The generated Countdown a task draws its problems from: the task itself, or the task a reward function
    wraps (llm/tasks/reward_function.py); None for any other task or for Countdown read from data files."""
    inner = getattr(task, "task", task)
    return inner if isinstance(inner, Countdown) and not inner.from_files else None


def _settings(task: Countdown) -> tuple:
    return task.min_numbers, task.max_numbers, task.max_number, task.max_target, task.prompt_style


def _values(numbers: tuple[int, ...]) -> set[Fraction]:
    """Every value of an expression using each number once (all splits, orders and operators; exact)."""
    if len(numbers) == 1:
        return {Fraction(numbers[0])}
    out: set[Fraction] = set()
    rest = numbers[1:]
    for r in range(len(rest)):  # the first number's side holds it and r of the others
        for picked in itertools.combinations(range(len(rest)), r):
            left = (numbers[0],) + tuple(rest[i] for i in picked)
            right = tuple(x for i, x in enumerate(rest) if i not in picked)
            for x in _values(left):
                for y in _values(right):
                    out.update((x + y, x * y, x - y, y - x))
                    if y:
                        out.add(x / y)
                    if x:
                        out.add(y / x)
    return out


@functools.lru_cache(maxsize=16)
def _block_size(settings: tuple, split: str, k: int) -> int:
    min_numbers, max_numbers, max_number, max_target, _ = settings
    count = 0
    for size in range(min_numbers, max_numbers + 1):
        for numbers in itertools.combinations_with_replacement(range(1, max_number + 1), size):
            if split_of(",".join(map(str, numbers))) != split:
                continue
            for value in _values(numbers):
                if value.denominator == 1 and 1 <= value <= max_target:
                    count += len(distinct_solutions(list(numbers), int(value))) == k
    return count


def block_size(task: Task, split: str, k: int) -> int:
    """The number of instances of the split with exactly k distinct solutions (module docstring)."""
    countdown = _checked(task, k)
    if countdown.max_numbers > ENUMERATED_NUMBERS:
        raise ValueError(f"block sizes are enumerated for at most {ENUMERATED_NUMBERS} numbers")
    return _block_size(_settings(countdown), check_split(split), k)


def _checked(task: Task, k: int) -> Countdown:
    countdown = countdown_of(task)
    if countdown is None:
        raise ValueError(
            f"eval_solutions draws generated Countdown instances by their solution count; task "
            f"{getattr(task, 'name', task)!r} cannot (give eval_solutions = 0)"
        )
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"eval_solutions must be an integer >= 1 here, got {k!r}")
    return countdown


def block_problems(task: Task, split: str, n: int, seed: int, k: int) -> list[Problem]:
    """The first n instances of the split with exactly k solutions, in the task's draw order (module docstring);
    ValueError naming the block's size when it holds fewer."""
    countdown = _checked(task, k)
    check_split(split)
    check_count(n)
    return [Problem(p.id, p.prompt, dict(p.meta)) for p in _drawn(_settings(countdown), split, n, seed, k)]


def _refusal(split: str, k: int, held: int, n: int, about: str = "") -> str:
    return (
        f"eval_solutions = {k}: the {split} split holds {about}{held} instances with exactly {k} distinct "
        f"solutions and {n} were asked for (eval_problems or the curve's prompts): ask for {held} or fewer"
    )


@functools.lru_cache(maxsize=32)
def _drawn(settings: tuple, split: str, n: int, seed: int, k: int) -> tuple[Problem, ...]:
    min_numbers, max_numbers, max_number, max_target, prompt_style = settings
    task = Countdown(min_numbers, max_numbers, max_number, max_target, min_solutions=k, prompt_style=prompt_style)
    rng = random.Random(f"countdown/{split}/{seed}")  # Countdown.problems' stream (llm/tasks/countdown.py)
    out: list[Problem] = []
    seen: set[tuple] = set()
    misses, counted = 0, max_numbers > ENUMERATED_NUMBERS  # a block too large to enumerate is never counted
    while len(out) < n:
        if not counted and (len(seen) >= COUNT_AFTER_DISTINCT or misses >= COUNT_AFTER_MISSES):
            counted, held = True, _block_size(settings, split, k)
            if held < n:
                raise ValueError(_refusal(split, k, held, n))
        numbers, _, target = task.sample_expression(rng, split)
        key = (tuple(sorted(numbers)), target)
        if key in seen:
            misses += 1
            if misses >= MAX_DRAWS_WITHOUT_NEW:  # the task's own rule (base.check_not_exhausted)
                raise ValueError(_refusal(split, k, len(out), n, about="about "))
            continue
        misses = 0
        seen.add(key)
        solutions = len(distinct_solutions(numbers, target))
        if solutions == k:
            out.append(
                Problem(
                    id=f"countdown/{','.join(map(str, numbers))}={target}",
                    prompt=format_prompt(numbers, target, prompt_style),
                    meta={"numbers": numbers, "target": target, "n_solutions": solutions},
                )
            )
    return tuple(out)
