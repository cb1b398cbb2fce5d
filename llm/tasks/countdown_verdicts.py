"""Countdown's escov reward for many completions at once, fast: score_batch(completions, numbers, target) gives, for
each completion, exactly what llm.tasks.countdown.score gives (tests/llm/tasks/test_countdown_verdicts.py compares the
two on 50,000 random strings), for the coverage analyzer and the verifier benchmark.

Why it is faster, verdicts unchanged: an instance and its convention are checked once per batch; an answer whose
maximal digit runs are not the instance's numbers is refused before parsing when format_reward is 0 (a parsed
expression's literals are exactly its digit runs, so it would score 0 either way); and the verdict of an answer is
cached per (answer, sorted numbers, target), since the samples of one prompt repeat their answers.

It lives beside countdown.py, not in it: the shipped base models' cache key hashes the code that builds them
(llm/tinymodel.py, llm/tasks/countdown.py, llm/tasks/arithmetic.py; paper_checks/reproduce/bases.py), and a faster
scorer does not change a base.
"""

from __future__ import annotations

import functools
from fractions import Fraction

from escov.llm.tasks.countdown import _check_instance, extract_answer, score
from escov.llm.tasks.reasoning_format import MAX_COMPLETION_CHARS
from escov.llm.tasks.rewards import check_reward
from escov.llm.tasks.safe_arith import (
    DIGIT_RUN,
    MAX_LITERAL_DIGITS,
    UnsafeExpression,
    evaluate,
    literals,
    parse_expression,
)

__all__ = ["VERDICTS_CACHED", "score_batch"]

VERDICTS_CACHED = 1 << 16  # answers whose verdict is remembered (_verdict), per process


def score_batch(
    completions, numbers: list[int], target, format_reward: float = 0.0, *, style: str = "plain", reward: str = "escov"
) -> list[float]:
    """countdown.score of each of an instance's completions (the instance and the convention checked once)."""
    value = _check_instance(numbers, target)
    check_reward(reward, "countdown", format_reward)
    if reward != "escov":
        return [score(c, numbers, target, format_reward, style=style, reward=reward) for c in completions]
    key = tuple(sorted(numbers))
    return [_escov_reward(c, key, value, format_reward, style) for c in completions]


def _escov_reward(completion, numbers: tuple[int, ...], value: Fraction, format_reward: float, style: str) -> float:
    """The escov reward of one completion; numbers sorted."""
    if not isinstance(completion, str) or len(completion) > MAX_COMPLETION_CHARS:
        return 0.0
    answer = extract_answer(completion, style)
    if answer is None:
        return 0.0
    if not format_reward and not _digit_runs_are(answer, numbers):
        return 0.0  # refused or wrong: 0 either way (a parsed expression's literals are its digit runs)
    correct = _verdict(answer, numbers, value)
    if correct is None:
        return 0.0
    return 1.0 if correct else format_reward


def _digit_runs_are(answer: str, numbers: tuple[int, ...]) -> bool:
    """Whether the answer's maximal digit runs, read as integers and sorted, are the sorted numbers; runs too
    long to be literals make it False. An expression the parser accepts has exactly its digit runs as literals."""
    runs = DIGIT_RUN.findall(answer)
    if len(runs) != len(numbers) or any(len(r) > MAX_LITERAL_DIGITS for r in runs):
        return False
    return tuple(sorted(map(int, runs))) == numbers


@functools.lru_cache(maxsize=VERDICTS_CACHED)
def _verdict(answer: str, numbers: tuple[int, ...], value: Fraction) -> bool | None:
    """None when the answer is not a whitelisted expression (or its evaluation is refused: division by zero,
    magnitude); else whether it uses the sorted `numbers` once each and evaluates to value. A pure function of
    its arguments, cached: the samples of one prompt repeat their answers (scores unchanged, only faster)."""
    try:
        tree = parse_expression(answer)
        return sorted(literals(tree)) == list(numbers) and evaluate(tree) == value
    except UnsafeExpression:
        return None
