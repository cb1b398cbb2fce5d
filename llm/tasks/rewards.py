"""Reward conventions: how a graded completion becomes a reward, by name (`reward` setting).

A completion is correct exactly when its reward is >= 1 under every convention (Task.is_correct).

- `escov` (default, every task): 1 when correct; otherwise `format_reward` (default 0) when the
  answer is well formed but wrong (Countdown: a whitelisted expression; math: a `\\boxed{}` answer),
  else 0. Math answers may be boxed or not (math-verify finds them).
- `es-at-scale-countdown` (Countdown; VsonicV/es-at-scale's countdown_grader): 0.1 x format score
  + answer reward, from 0 to 1.1. Format score 1 for `<think>...</think>\\n<answer>...</answer>`
  exactly, else 0.1 for a think block plus 0.5 for an answer block (llm/tasks/reasoning_format.py);
  answer reward 1 when the last `<answer>` holds only "0-9+-*/() " and uses each number once and
  equals the target (compared here as exact rationals, not with their float tolerance of 1e-5).
- `paper-gsm8k` (math tasks; yunpengba7/understanding-es's training reward, the paper's): 1 when
  the last `\\boxed{}` answer is correct, 0.1 when a `\\boxed{}` answer is present but wrong, 0
  otherwise ("The answer is 18." without a box gets 0).
"""

from __future__ import annotations

REWARDS = {
    "escov": ("countdown", "countdown3", "arithmetic", "gsm8k", "deepscaler", "grid_paths", "subset_sum"),
    "es-at-scale-countdown": ("countdown", "countdown3"),
    "paper-gsm8k": ("gsm8k", "deepscaler"),
}
ES_AT_SCALE_FORMAT_WEIGHT = 0.1
PAPER_BOXED_WRONG_REWARD = 0.1


def check_reward(reward: str, task: str, format_reward: float = 0.0) -> str:
    """ValueError unless the convention exists, applies to the task, and format_reward fits it."""
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {list(REWARDS)}, got {reward!r}")
    if task not in REWARDS[reward]:
        raise ValueError(f"reward {reward!r} is for the tasks {list(REWARDS[reward])}, not {task!r}")
    if not isinstance(format_reward, (int, float)) or isinstance(format_reward, bool) or not 0 <= format_reward < 1:
        raise ValueError(f"format_reward must lie in [0, 1), got {format_reward!r}")
    if format_reward and reward != "escov":
        raise ValueError(f"format_reward is part of the reward convention {reward!r}; set it only with reward 'escov'")
    return reward
