"""The task interface shared by trainers and evaluation: problems with a prompt, a reward, an answer.

A `Task` hands out `Problem`s for a split ("train", "validation" or "test"; no two overlap), scores a
completion (the reward: 1 for correct, 0 for anything wrong or malformed, optionally a small
format reward in between), and extracts a normalized final answer (for Maj@k and for counting
distinct answers) and a Maj@k vote (`vote`; the answer unless the task says otherwise: Countdown
votes on values). A completion is correct when its reward is >= 1 (CORRECT_THRESHOLD); with reward
functions the run chooses the reward and threshold that decide it (llm/tasks/correctness.py) and
RewardScores.correct carries the decision: `correct_of` is the one rule every measurement reads.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

SPLITS = ("train", "validation", "test")
HELD_OUT_BUCKETS = 10  # one bucket of ten (10%) of instance keys is held out of training ...
HELD_OUT_HALVES = 2  # ... and halved into the validation and the test split (5% each)


@dataclass(frozen=True)
class Problem:
    id: str
    prompt: str
    meta: dict = field(default_factory=dict)  # what the verifier needs: numbers/target, gold answer


@dataclass
class RewardScores:
    """Rewards of a batch of completions: the total (what training and Pass@k use) and, for reward
    functions (llm/tasks/reward_function.py), each function's own rewards by name (NaN: does not apply)."""

    total: np.ndarray  # [n]
    parts: dict = field(default_factory=dict)  # name -> [n]
    correct: np.ndarray | None = None  # [n] bool, when the task decides it otherwise than total >= 1


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split


def check_count(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n (number of problems) must be an integer >= 1, got {n!r}")
    return n


def split_of(key: str) -> str:
    """Deterministic split of an instance key, stable across runs: with h the key's 64-bit blake2b digest,
    "train" when h mod 10 != 0 (90%); of the held-out tenth, "test" when (h div 10) mod 2 == 0 and
    "validation" otherwise (5% each). Settings are chosen on validation (or train) prompts; test prompts
    are read by the answer alone. The train split is the same as before validation existed, so the
    pretraining corpus (drawn from train) is unchanged."""
    digest = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
    if digest % HELD_OUT_BUCKETS:
        return "train"
    return "test" if (digest // HELD_OUT_BUCKETS) % HELD_OUT_HALVES == 0 else "validation"


MAX_DRAWS_WITHOUT_NEW = 20_000  # a generated split that yields no new problem in this many draws in a row is exhausted


def check_not_exhausted(misses: int, found: int, wanted: int, what: str) -> None:
    """ValueError when `misses` draws in a row gave no new problem: the split holds about `found` problems
    (fewer than the `wanted`), and drawing on would never end."""
    if misses >= MAX_DRAWS_WITHOUT_NEW:
        raise ValueError(
            f"{what} holds only about {found} distinct problems ({MAX_DRAWS_WITHOUT_NEW} draws in a row "
            f"gave none new), {wanted} were requested: ask for {found} or fewer"
        )


CORRECT_THRESHOLD = 1.0  # a built-in task's completion is correct when its reward is >= this


def is_correct_reward(reward, threshold: float = CORRECT_THRESHOLD):
    """Whether a reward (or an array of them) means a correct answer: reward >= threshold (a well-formed
    wrong answer may earn a format reward below 1)."""
    return np.asarray(reward, dtype=float) >= threshold


def correct_of(scores: RewardScores) -> np.ndarray:
    """Which completions of a batch are correct (bool [n]): the task's decision (scores.correct) when it made
    one, else total >= CORRECT_THRESHOLD. Pass@k, Maj@k, the solved share, per-step Pass@1 and every verdict
    read this."""
    if scores.correct is not None:
        return np.asarray(scores.correct, dtype=bool)
    return is_correct_reward(scores.total)


class Task(ABC):
    name: str
    has_verifier = True  # whether score() grades a completion itself (the `prompts` task's reward functions do)

    @abstractmethod
    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        """n distinct problems of the split, deterministic given seed."""

    @abstractmethod
    def score(self, problem: Problem, completion: str) -> float:
        """Reward of a completion; 0 for anything malformed."""

    @abstractmethod
    def answer(self, problem: Problem, completion: str) -> str | None:
        """Normalized final answer, or None when the completion has none."""

    def score_batch(
        self, problems: list[Problem], completions: list[str], completion_ids=None, step: int = 0
    ) -> RewardScores:
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
        return bool(correct_of(self.score_batch([problem], [completion]))[0])
