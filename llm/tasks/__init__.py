"""Tasks with verifiable rewards: Countdown, held-out arithmetic, GSM8K and DeepScaleR files.

`get_task(name, **kwargs)` builds one by name; each is a `llm.tasks.base.Task`.
"""
from __future__ import annotations

from llm.tasks.base import Problem, Task

TASKS = ("countdown", "arithmetic", "gsm8k", "deepscaler", "countdown3")


def get_task(name: str, **kwargs) -> Task:
    """The task called `name` (one of TASKS); kwargs go to its constructor (data files for gsm8k/deepscaler)."""
    if name == "countdown":
        from llm.tasks.countdown import Countdown
        return Countdown(**kwargs)
    if name == "countdown3":  # 3-number instances only: a base near the paper's (Pass@1 ~0.4, Pass@32 ~0.8)
        from llm.tasks.countdown import Countdown
        return Countdown(min_numbers=3, max_numbers=3, **kwargs)
    if name == "arithmetic":
        from llm.tasks.arithmetic import Arithmetic
        return Arithmetic(**kwargs)
    if name in ("gsm8k", "deepscaler"):
        from llm.tasks.math_data import MathData
        return MathData(name, **kwargs)
    raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")


__all__ = ["Problem", "Task", "TASKS", "get_task"]
