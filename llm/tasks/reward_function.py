"""A reward written as a Python function and named by its import path (the `reward_function` setting).

    reward_function = "my_rewards:accuracy"          # a module on the Python path, then the function
    reward_function = "rewards/my_rewards.py:accuracy"  # or a .py file (relative to the working folder)

The function has TRL's reward signature: keyword arguments `prompts` and `completions` (lists of
equal length) plus every other column of the data record as a list of the same length, and it
returns one number per completion:

    def accuracy(prompts, completions, answer, **kwargs) -> list[float]: ...

Prompts and completions come as TRL gives them: strings for text prompts; for a prompt given as
chat messages, the prompt is its list of {"role", "content"} messages and the completion
`[{"role": "assistant", "content": text}]`. TRL also passes `completion_ids` and `trainer_state`;
they are not passed here, so a function names them only with a default (or takes **kwargs).

A completion counts as correct (Pass@k, Maj@k) when its reward is >= 1, as under every reward
convention (llm/tasks/base.py), so a function meant for Pass@k gives 1 for a correct answer.
The path is recorded in config.json (resume imports it again); the function itself never is.
"""
from __future__ import annotations

import importlib
import importlib.util
import math
from pathlib import Path
from typing import Callable

from escov.llm.tasks.base import Problem, Task

SETTING = "reward_function"


def check_path(path: str) -> str:
    """ValueError unless `path` has the form module:function (or file.py:function)."""
    if not isinstance(path, str):
        raise ValueError(f"{SETTING} must be a string 'module:function', got {path!r}")
    module, _, name = path.rpartition(":")
    if not module or not name.isidentifier():
        raise ValueError(f"{SETTING} must look like 'module:function' or 'file.py:function', got {path!r}")
    return path


def check_alone(path: str, reward: str = "escov", format_reward: float = 0.0) -> None:
    """A reward function replaces the task's reward convention: ValueError when one is also chosen."""
    if path and (reward != "escov" or format_reward):
        raise ValueError(f"{SETTING} replaces the reward convention; leave reward and format_reward unset, "
                         f"got reward={reward!r}, format_reward={format_reward!r}")


def load_function(path: str) -> Callable:
    """The function an import path names; ValueError naming the setting and the path otherwise."""
    check_path(path)
    module_name, _, name = path.rpartition(":")
    try:
        if module_name.endswith(".py"):
            file = Path(module_name)
            if not file.is_file():
                raise ValueError(f"{SETTING} {path!r}: no such file {file}")
            spec = importlib.util.spec_from_file_location(f"escov_reward_{file.stem}", file)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ValueError:
        raise
    except Exception as e:  # the user's module may fail in any way while it imports
        raise ValueError(f"{SETTING} {path!r}: cannot import {module_name!r} ({type(e).__name__}: {e})") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ValueError(f"{SETTING} {path!r}: {module_name!r} has no function {name!r}")
    return function


def trl_prompt(prompt: str):
    """The prompt as TRL hands it to a reward function: its chat messages, or its text."""
    messages = getattr(prompt, "messages", None)
    return [dict(m) for m in messages] if messages else str(prompt)


def trl_completion(prompt: str, completion: str):
    """The completion as TRL hands it: the text, or one assistant message after a chat-messages prompt."""
    return [{"role": "assistant", "content": completion}] if getattr(prompt, "messages", None) else completion


def call_reward(function: Callable, path: str, prompts: list, completions: list[str], columns: list[dict]) -> list[float]:
    """The function's rewards for completions[i] of prompts[i] (columns[i]: the record's other columns)."""
    names = sorted({k for c in columns for k in c})
    kwargs = {k: [c.get(k) for c in columns] for k in names}
    given = [trl_completion(p, c) for p, c in zip(prompts, completions)]
    rewards = function(prompts=[trl_prompt(p) for p in prompts], completions=given, **kwargs)
    if not isinstance(rewards, (list, tuple)) or len(rewards) != len(completions):
        raise ValueError(f"{SETTING} {path!r} must return a list of {len(completions)} numbers, got {str(rewards)[:80]}")
    out = []
    for r in rewards:
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r):
            raise ValueError(f"{SETTING} {path!r} returned {r!r}; every reward must be a finite number")
        out.append(float(r))
    return out


class ScoredByFunction(Task):
    """A task whose reward is a reward function (the task's problems, answers and votes are kept).

    The function sees each problem's data columns: `meta["columns"]` for records read from data
    files by the `prompts` task, else the problem's meta (Countdown: numbers, target; math: gold)."""

    def __init__(self, task: Task, path: str):
        self.task, self.path, self.name = task, check_path(path), task.name
        self._function = load_function(path)  # fails here, before any model loads

    def __getstate__(self):  # processes that receive the task (Ray) import the function again
        return {"task": self.task, "path": self.path, "name": self.name}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._function = load_function(self.path)

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        return self.task.problems(split, n, seed)

    def size(self, split: str) -> int | None:
        return self.task.size(split)

    def score(self, problem: Problem, completion: str) -> float:
        columns = problem.meta.get("columns", problem.meta)
        return call_reward(self._function, self.path, [problem.prompt], [completion], [columns])[0]

    def answer(self, problem: Problem, completion: str) -> str | None:
        return self.task.answer(problem, completion)

    def vote(self, problem: Problem, completion: str) -> str | None:
        return self.task.vote(problem, completion)
