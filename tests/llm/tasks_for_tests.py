"""Tasks the LLM tests share: Countdown prompts with a reward the test chooses.

The Ray tests send these tasks to actors in other processes, which cannot import this file: they
register it with `ray.cloudpickle.register_pickle_by_value` so that the classes and functions
here travel by value.
"""

from __future__ import annotations

from collections.abc import Callable

from escov.llm.tasks import get_task
from escov.llm.tasks.base import Problem, Task


class CountdownScoredBy(Task):
    """Countdown problems; the reward of a completion is `reward(completion)`; no final answer."""

    def __init__(self, name: str, reward: Callable[[str], float]):
        self.name, self.reward, self.inner = name, reward, get_task("countdown")

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        return self.inner.problems(split, n, seed)

    def score(self, problem: Problem, completion: str) -> float:
        return self.reward(completion)

    def answer(self, problem: Problem, completion: str) -> None:
        return None


def digit_share(completion: str) -> float:
    """Share of the completion's characters that are digits (0 for an empty completion)."""
    return sum(ch.isdigit() for ch in completion) / len(completion) if completion else 0.0


def digit_share_task() -> CountdownScoredBy:
    """Reward = share of digits: a dense signal that the tiny model's perturbations move."""
    return CountdownScoredBy("digit-share", digit_share)
