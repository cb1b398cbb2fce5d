"""The task interface shared by trainers and evaluation: problems with a prompt, a reward, an answer.

A `Task` hands out `Problem`s for a split ("train" or "test"; the two never overlap), scores a
completion (the reward: 1 for correct, 0 for anything wrong or malformed, optionally a small
format reward in between), and extracts a normalized final answer (for Maj@k and for counting
distinct answers) and a Maj@k vote (`vote`; the answer unless the task says otherwise: Countdown
votes on values). A completion is correct when its reward is >= 1.
"""
from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

SPLITS = ("train", "test")
TEST_FRACTION_BUCKETS = 10  # one bucket of ten (10%) of instance keys belongs to the test split


@dataclass(frozen=True)
class Problem:
    id: str
    prompt: str
    meta: dict = field(default_factory=dict)  # what the verifier needs: numbers/target, gold answer


@dataclass
class RewardScores:
    """Rewards of a batch of completions: the total (what training and Pass@k use) and, for reward
    functions (llm/tasks/reward_function.py), each function's own rewards by name (NaN: does not apply)."""
    total: np.ndarray                                # [n]
    parts: dict = field(default_factory=dict)         # name -> [n]


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split


def check_count(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n (number of problems) must be an integer >= 1, got {n!r}")
    return n


def split_of(key: str) -> str:
    """Deterministic train/test assignment of an instance key (10% test), stable across runs."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return "test" if int.from_bytes(digest, "little") % TEST_FRACTION_BUCKETS == 0 else "train"


def is_correct_reward(reward):
    """Whether a reward (or an array of them) means a correct answer: reward >= 1 (a well-formed wrong
    answer may earn a format reward below 1)."""
    return reward >= 1.0


class Task(ABC):
    name: str

    @abstractmethod
    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        """n distinct problems of the split, deterministic given seed."""

    @abstractmethod
    def score(self, problem: Problem, completion: str) -> float:
        """Reward of a completion; 0 for anything malformed."""

    @abstractmethod
    def answer(self, problem: Problem, completion: str) -> str | None:
        """Normalized final answer, or None when the completion has none."""

    def score_batch(self, problems: list[Problem], completions: list[str], completion_ids=None,
                    step: int = 0) -> RewardScores:
        """Rewards of completions[i] of problems[i] in one call (reward functions get the whole batch, as in
        TRL; completion_ids: their token ids; step: the training step). A built-in task scores one by one."""
        return RewardScores(total=np.array([float(self.score(p, c)) for p, c in zip(problems, completions)]))

    @property
    def reward_names(self) -> list[str]:
        """Names of the reward functions whose rewards RewardScores.parts holds (none for a built-in reward)."""
        return []

    def size(self, split: str) -> int | None:
        """Number of problems in the split, or None when problems are generated without limit."""
        check_split(split)
        return None

    def vote(self, problem: Problem, completion: str) -> str | None:
        """The Maj@k vote of a completion: its normalized answer unless a task says otherwise."""
        return self.answer(problem, completion)

    def is_correct(self, problem: Problem, completion: str) -> bool:
        return bool(is_correct_reward(self.score(problem, completion)))
