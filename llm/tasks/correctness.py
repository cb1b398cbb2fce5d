"""Which completions count as correct when reward functions score a task: the `correct_reward` and
`correct_threshold` settings, the rule of Pass@k, Maj@k, the solved share, per-step Pass@1 and every verdict.

    correct_reward = "accuracy"      # a reward function's name (as its metric rewards/<name>/mean)
    correct_threshold = 1.0          # a completion is correct when that reward is >= this

correct_reward is one of
- "" (default): the task's own verifier for a built-in task (Countdown, GSM8K, ...: its reward >= the
  threshold), else (the `prompts` task, which has none) the first reward function;
- "verifier": the built-in task's verifier;
- "total": the weighted total of the reward functions (TRL's sum; a format reward or a length penalty
  then moves what counts as correct);
- the name of one of the reward functions.
A completion the chosen function does not apply to (None or NaN) is not correct. Without reward functions a
built-in task's reward decides (>= 1, llm/tasks/base.py), and these settings must stay at their defaults.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from escov.llm.tasks.base import CORRECT_THRESHOLD, is_correct_reward

TOTAL, VERIFIER = "total", "verifier"


@dataclass(frozen=True)
class Correctness:
    """The resolved rule: `reward` ("total", "verifier" or a reward function's name) >= `threshold`."""

    reward: str
    threshold: float = CORRECT_THRESHOLD

    def describe(self) -> str:
        return f"{self.reward} >= {self.threshold:g}"

    def judge(self, total: np.ndarray, parts: dict, verifier: np.ndarray | None = None) -> np.ndarray:
        """bool [n]: the chosen reward (total, the verifier's, or a function's; NaN: not correct) >= threshold."""
        if self.reward == TOTAL:
            values = total
        elif self.reward == VERIFIER:
            values = verifier
        else:
            values = parts[self.reward]
        return is_correct_reward(values, self.threshold)  # NaN >= t is False


def check_threshold(threshold) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ValueError(f"correct_threshold must be a finite number, got {threshold!r}")
    return float(threshold)


def check_correct_settings(correct_reward, correct_threshold, uses_functions: bool) -> None:
    """ValueError for a non-string correct_reward, a threshold that is not a finite number, or either given
    without reward functions (a built-in task's own reward decides: >= 1)."""
    if not isinstance(correct_reward, str):
        raise ValueError(
            f"correct_reward must be a reward function's name, 'verifier' or 'total', got {correct_reward!r}"
        )
    check_threshold(correct_threshold)
    if not uses_functions and (correct_reward or correct_threshold != CORRECT_THRESHOLD):
        raise ValueError(
            "correct_reward / correct_threshold choose among reward functions (reward_function); "
            f"without them the task's own reward decides (correct at >= {CORRECT_THRESHOLD:g})"
        )


def resolve(correct_reward: str, threshold: float, names: list[str], has_verifier: bool) -> Correctness:
    """The rule the settings give for reward functions called `names`; ValueError naming the choices otherwise."""
    threshold = check_threshold(threshold)
    if not correct_reward:
        return Correctness(VERIFIER if has_verifier else names[0], threshold)
    choices = names + [TOTAL] + ([VERIFIER] if has_verifier else [])
    if correct_reward not in choices:
        extra = "" if has_verifier or correct_reward != VERIFIER else " (task 'prompts' has no verifier of its own)"
        raise ValueError(
            f"correct_reward {correct_reward!r} is none of the reward functions' names or 'total'"
            f"{extra}; choose one of {choices}"
        )
    return Correctness(correct_reward, threshold)
