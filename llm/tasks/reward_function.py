"""Rewards written as Python functions, called as TRL's GRPOTrainer calls them (the `reward_function`
and `reward_weights` settings).

    reward_function = ["my_rewards:accuracy", "my_rewards:brevity"]   # modules found from the current folder
    reward_weights = [1.0, 0.5]                                       # default: 1 each
    reward_function = "rewards/my_rewards.py:accuracy"                # or a .py file; one function may be a string

On the command line the flags repeat: `--reward_function my_rewards:accuracy --reward_function
my_rewards:brevity --reward_weights 1.0 --reward_weights 0.5`. The Python API (llm.tasks.get_task)
also takes the functions themselves.

TRL's contract: each function is called once per batch of completions, with keyword arguments
`prompts`, `completions`, `completion_ids` (lists of equal length: one entry per completion, a prompt
repeated for each of its samples), every other column of the data record as a list of the same
length, and `trainer_state` (an object whose `global_step` is the training step; 0 before training).
It returns one reward per completion (a list, a tuple or a numpy array); `None` (or NaN) means "this
function does not apply to this completion". The total reward is TRL's: the weighted sum over the
functions that apply (sum of w_j r_j with None entries left out; a completion no function applies to
gets 0).

    def accuracy(prompts, completions, answer, **kwargs) -> list[float | None]: ...

Prompts and completions come as TRL gives them: strings for text prompts; for a prompt given as
chat messages, the prompt is its list of {"role", "content"} messages and the completion
`[{"role": "assistant", "content": text}]`.

verl's reward signature, `compute_score(data_source, solution_str, ground_truth, extra_info=None)`,
is recognized by its parameter `solution_str` and called once per completion with the record's
`data_source`, the completion's text, `reward_model["ground_truth"]` (or a `ground_truth` column)
and `extra_info`; it may return a number or a dict holding "score" (as verl allows).

A function that raises stops the run with one line naming the function, the data row, the
completion and the function's own traceback lines. A completion counts as correct (Pass@k, Maj@k)
by the run's `correct_reward` and `correct_threshold` (llm/tasks/correctness.py; default: a built-in
task's verifier, else the first function's reward >= 1), not by the weighted total. Paths are
recorded in config.json (resume imports them again); the functions themselves never are.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import math
import os
import signal
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from escov.llm.tasks import user_modules
from escov.llm.tasks.base import CORRECT_THRESHOLD, Problem, RewardScores, Task
from escov.llm.tasks.correctness import VERIFIER

SETTING = "reward_function"
VERL_PARAMETER = "solution_str"  # verl's compute_score(data_source, solution_str, ground_truth, extra_info)


def check_path(path: str) -> str:
    """ValueError unless `path` has the form module:function (or file.py:function)."""
    if not isinstance(path, str):
        raise ValueError(f"{SETTING} must be a string 'module:function', got {path!r}")
    module, _, name = path.rpartition(":")
    if not module or not name.isidentifier():
        raise ValueError(f"{SETTING} must look like 'module:function' or 'file.py:function', got {path!r}")
    return path


def as_list(functions) -> list:
    """The reward functions as a list: one path or callable, or a list / tuple of them ("" and () none)."""
    if isinstance(functions, (list, tuple)):
        return list(functions)
    return [functions] if functions else []


def check_weights(functions: list, weights) -> list[float]:
    """The weights (default 1 each); ValueError unless there is one finite number per function."""
    if weights is None or (isinstance(weights, (list, tuple)) and not weights):
        return [1.0] * len(functions)
    weights = list(weights) if isinstance(weights, (list, tuple, np.ndarray)) else [weights]
    if not functions:
        raise ValueError("reward_weights are given without a reward_function")
    if len(weights) != len(functions):
        raise ValueError(
            f"reward_weights must hold one number per reward function: {len(functions)} functions, "
            f"got {len(weights)} weights {weights}"
        )
    for w in weights:
        if isinstance(w, bool) or not isinstance(w, (int, float, np.number)) or not math.isfinite(w):
            raise ValueError(f"reward_weights must be finite numbers, got {weights}")
    return [float(w) for w in weights]


def check_alone(functions, reward: str = "escov", format_reward: float = 0.0) -> None:
    """A reward function replaces the task's reward convention: ValueError when one is also chosen."""
    if as_list(functions) and (reward != "escov" or format_reward):
        raise ValueError(
            f"{SETTING} replaces the reward convention; leave reward and format_reward unset, "
            f"got reward={reward!r}, format_reward={format_reward!r}"
        )


def load_function(path: str) -> Callable:
    """The function an import path names; ValueError naming the setting and the path otherwise."""
    check_path(path)
    module_name, _, name = path.rpartition(":")
    try:
        if module_name.endswith(".py"):
            file = user_modules.source_file(module_name)
            if not file.is_file():
                raise ValueError(f"{SETTING} {path!r}: no such file {file}")
            spec = importlib.util.spec_from_file_location(f"escov_reward_{file.stem}", file)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = user_modules.import_module(module_name)
    except ValueError:
        raise
    except ModuleNotFoundError as e:
        parents = {".".join(module_name.split(".")[:i]) for i in range(1, module_name.count(".") + 2)}
        if e.name and e.name not in parents and not module_name.endswith(".py"):
            local = Path(f"{e.name.split('.')[0]}.py").is_file() or Path(e.name.split(".")[0]).is_dir()
            why = (
                "is a file of the current folder, not on the Python path (PYTHONPATH=. puts it there)"
                if local
                else "is not installed (pip install it into this environment)"
            )
            raise ValueError(
                f"{SETTING} {path!r}: {module_name!r} was found, but it imports {e.name!r}, which {why}"
            ) from None
        if e.name and module_name.endswith(".py"):
            raise ValueError(
                f"{SETTING} {path!r}: {module_name!r} imports {e.name!r}, which is not installed "
                "(pip install it into this environment)"
            ) from None
        raise ValueError(
            f"{SETTING} {path!r}: cannot import {module_name!r} ({e}); a module is looked up on the "
            f"Python path and in the current folder; for a file elsewhere give "
            f"'path/to/{module_name.split('.')[-1]}.py:{name}'"
        ) from None
    except Exception as e:  # the user's module may fail in any way while it imports
        raise ValueError(f"{SETTING} {path!r}: cannot import {module_name!r} ({type(e).__name__}: {e})") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ValueError(f"{SETTING} {path!r}: {module_name!r} has no function {name!r}")
    return function


def import_path(function: Callable) -> str:
    """'module:function' for a function defined at the top level of an importable module (how config.json
    records a callable); ValueError otherwise."""
    module, name = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
    if (
        not callable(function)
        or not module
        or module == "__main__"
        or not name.isidentifier()
        or getattr(importlib.import_module(module), name, None) is not function
    ):
        raise ValueError(
            f"{SETTING}: {function!r} cannot be recorded as 'module:function' (define it at the top "
            "of a module that imports; or pass the task built by llm.tasks.get_task(..., "
            "reward_function=f) to llm.train.train)"
        )
    return f"{module}:{name}"


def trl_prompt(prompt: str):
    """The prompt as TRL hands it to a reward function: its chat messages, or its text."""
    messages = getattr(prompt, "messages", None)
    return [dict(m) for m in messages] if messages else str(prompt)


def trl_completion(prompt: str, completion: str):
    """The completion as TRL hands it: the text, or one assistant message after a chat-messages prompt."""
    return [{"role": "assistant", "content": completion}] if getattr(prompt, "messages", None) else completion


def is_verl(function: Callable) -> bool:
    """Whether the function has verl's compute_score signature (a parameter named solution_str)."""
    try:
        return VERL_PARAMETER in inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature: TRL's
        return False


@dataclass(frozen=True)
class TrainerState:
    """What a reward function gets as `trainer_state`: the part of TRL's TrainerState that applies here."""

    global_step: int = 0


def columns_of(problem: Problem) -> dict:
    """A problem's data columns: the record's (task 'prompts'), else the problem's meta (Countdown: numbers, target)."""
    return problem.meta.get("columns", problem.meta)


class RewardFunctionError(ValueError):
    """A reward function raised or returned something unusable; the message is one line."""


class RewardTimeout(BaseException):
    """A reward function call outlived reward_timeout (a BaseException: the function's `except Exception` does not
    swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise RewardTimeout in the block after `seconds` (0: no limit). SIGALRM's timer works in the main thread only
    (where `llm train` calls the rewards); elsewhere, and where the platform has no SIGALRM, the block is not
    limited."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum, frame):
        raise RewardTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _user_frames(err: BaseException) -> str:
    """The traceback lines of the user's code (the frames below this module's call), most recent last."""
    here = Path(__file__).resolve()
    frames = []
    for f in traceback.extract_tb(err.__traceback__):
        if Path(f.filename).resolve() != here:
            if frames and (frames[-1].filename, frames[-1].lineno) == (f.filename, f.lineno):
                continue  # a comprehension's frame on its function's line: the function's is shown
            frames.append(f)
    shown = []
    for f in frames[-3:]:
        try:
            name = os.path.relpath(f.filename)
        except ValueError:  # another drive (Windows)
            name = f.filename
        shown.append(f'File "{name}", line {f.lineno}, in {f.name}' + (f": {f.line.strip()}" if f.line else ""))
    return " <- ".join(reversed(shown)) if shown else "(no Python frames)"


def _row(problem: Problem, completion: str) -> str:
    return f"data row {problem.id}, completion {completion[:60]!r}{'...' if len(completion) > 60 else ''}"


class RewardFunctions:
    """Reward functions (import paths or callables) with their weights, called once per batch (TRL's contract)."""

    def __init__(self, functions, weights=None, timeout: float = 0.0):
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout < math.inf:
            raise ValueError(f"reward_timeout must be a number of seconds >= 0 (0: no limit), got {timeout!r}")
        self.timeout = float(timeout)
        given = as_list(functions)
        if not given:
            raise ValueError(f"{SETTING}: give at least one reward function ('module:function')")
        self.specs = [check_path(f) if isinstance(f, str) else f for f in given]
        for f in self.specs:
            if not isinstance(f, str) and not callable(f):
                raise ValueError(f"{SETTING} must be 'module:function' or a callable, got {f!r}")
        self.weights = check_weights(self.specs, weights)
        self._load()

    def _load(self) -> None:
        self.functions = [load_function(f) if isinstance(f, str) else f for f in self.specs]
        names = [getattr(f, "__name__", type(f).__name__) for f in self.functions]
        # metric names: the function's name (TRL's), made unique by its position when two share one
        self.names = [n if names.count(n) == 1 else f"{n}_{i}" for i, n in enumerate(names)]
        self.verl = [is_verl(f) for f in self.functions]

    def __getstate__(self):  # processes that receive the task (Ray) import the functions again
        return {"specs": self.specs, "weights": self.weights, "timeout": self.timeout}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._load()

    def label(self, j: int) -> str:
        spec = self.specs[j]
        return spec if isinstance(spec, str) else self.names[j]

    def score(
        self,
        problems: list[Problem],
        completions: list[str],
        completion_ids: list[list[int]] | None = None,
        step: int = 0,
    ) -> RewardScores:
        """Every function's rewards for completions[i] of problems[i] (NaN: does not apply) and the weighted total."""
        n = len(completions)
        parts = {}
        for j, function in enumerate(self.functions):
            if self.verl[j]:
                values = [self._call_verl(j, p, c) for p, c in zip(problems, completions)]
            else:
                values = self._call_trl(j, problems, completions, completion_ids, step)
            parts[self.names[j]] = self._check(j, values, n, problems, completions)
        # there is at least one function (__init__): a completion none applies to sums to 0
        total = np.nansum(np.stack([parts[name] * w for name, w in zip(self.names, self.weights)]), axis=0)
        return RewardScores(total=total, parts=parts)

    def _call_trl(self, j: int, problems, completions, completion_ids, step: int):
        function = self.functions[j]

        def call(rows: list[int]):
            columns = [columns_of(problems[i]) for i in rows]
            names = sorted({k for c in columns for k in c})
            kwargs = {k: [c.get(k) for c in columns] for k in names}
            kwargs.pop("completion_ids", None)
            kwargs.pop("trainer_state", None)
            return function(
                prompts=[trl_prompt(problems[i].prompt) for i in rows],
                completions=[trl_completion(problems[i].prompt, completions[i]) for i in rows],
                completion_ids=[list(completion_ids[i]) if completion_ids is not None else [] for i in rows],
                trainer_state=TrainerState(global_step=step),
                **kwargs,
            )

        everything = list(range(len(completions)))
        try:
            with time_limit(self.timeout):
                return call(everything)
        except RewardTimeout:
            raise RewardFunctionError(
                self._timed_out(
                    j, f"the batch of {len(completions)} completions starting at {_row(problems[0], completions[0])}"
                )
            ) from None
        except Exception as err:  # the user's code: find the row that raises, name it with its own traceback
            for i in everything:
                try:
                    call([i])
                except Exception as single:
                    raise RewardFunctionError(self._raised(j, single, problems[i], completions[i])) from None
            raise RewardFunctionError(self._raised(j, err, problems[0], completions[0], batch=True)) from None

    def _call_verl(self, j: int, problem: Problem, completion: str):
        columns = columns_of(problem)
        model = columns.get("reward_model")
        truth = (
            model["ground_truth"]
            if isinstance(model, dict) and "ground_truth" in model
            else columns.get("ground_truth")
        )
        held = "ground_truth" in columns or (isinstance(model, dict) and "ground_truth" in model)
        if truth is None and not held:
            raise RewardFunctionError(
                f"{SETTING} {self.label(j)!r} has verl's signature, which needs a ground truth, "
                f"but data row {problem.id} has neither reward_model.ground_truth nor a "
                "ground_truth column (map one: --data_fields ground_truth=COLUMN)"
            )
        try:
            with time_limit(self.timeout):
                value = self.functions[j](
                    data_source=columns.get("data_source"),
                    solution_str=completion,
                    ground_truth=truth,
                    extra_info=columns.get("extra_info"),
                )
        except RewardTimeout:
            raise RewardFunctionError(self._timed_out(j, _row(problem, completion))) from None
        except Exception as err:
            raise RewardFunctionError(self._raised(j, err, problem, completion)) from None
        if isinstance(value, dict) and "score" not in value:
            raise RewardFunctionError(
                f"{SETTING} {self.label(j)!r} returned a dict without 'score' "
                f"({sorted(value)[:5]}) on {_row(problem, completion)}; verl reads the reward "
                "from its 'score'"
            )
        return value.get("score") if isinstance(value, dict) else value

    def _timed_out(self, j: int, where: str) -> str:
        return (
            f"{SETTING} {self.label(j)!r} did not return within reward_timeout = {self.timeout:g} s on {where}; "
            "a reward that waits on something (a server, a lock) should give up itself, or raise the limit"
        )

    def _raised(self, j: int, err: BaseException, problem: Problem, completion: str, batch: bool = False) -> str:
        where = f"the batch starting at {_row(problem, completion)}" if batch else _row(problem, completion)
        message = " ".join(str(err).split())[:200]
        return f"{SETTING} {self.label(j)!r} raised {type(err).__name__}: {message} on {where}; {_user_frames(err)}"

    def _check(self, j: int, values, n: int, problems, completions) -> np.ndarray:
        """The rewards as floats (None and NaN: NaN, does not apply); RewardFunctionError for anything else.
        verl's values come as a list of n, one call's each: only their entries can be wrong."""
        label = self.label(j)
        if isinstance(values, np.ndarray):
            values = values.tolist() if values.ndim == 1 else values
        if isinstance(values, (list, tuple)) and len(values) == n:
            out = np.empty(n)
            for i, r in enumerate(values):
                if r is None:
                    out[i] = np.nan
                elif isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, float, np.number)) or math.isinf(r):
                    raise RewardFunctionError(
                        f"{SETTING} {label!r} returned {r!r:.60} on "
                        f"{_row(problems[i], completions[i])}; "
                        "every reward must be a finite number or None (does not apply)"
                    )
                else:
                    out[i] = float(r)
            return out
        raise RewardFunctionError(
            f"{SETTING} {label!r} must return a list of {n} numbers (one per completion), got {str(values)[:80]}"
        )


class ScoredByFunction(Task):
    """A task whose reward is reward functions' (the task's problems, answers and votes are kept).

    The functions see each problem's data columns: `meta["columns"]` for records read from data
    files by the `prompts` task, else the problem's meta (Countdown: numbers, target; math: gold)."""

    def __init__(
        self,
        task: Task,
        functions,
        weights=None,
        correct_reward: str = "",
        correct_threshold: float = CORRECT_THRESHOLD,
        reward_timeout: float = 0.0,
    ):
        from escov.llm.tasks.correctness import resolve

        self.task, self.name = task, task.name
        self.rewards = RewardFunctions(functions, weights, reward_timeout)  # fails here, before any model loads
        # which completions are correct (llm/tasks/correctness.py): the task's verifier, else the first function
        self.correctness = resolve(correct_reward, correct_threshold, self.rewards.names, task.has_verifier)

    @property
    def reward_names(self) -> list[str]:
        return list(self.rewards.names)

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        return self.task.problems(split, n, seed)

    def size(self, split: str) -> int | None:
        return self.task.size(split)

    def score(self, problem: Problem, completion: str) -> float:
        return float(self.rewards.score([problem], [completion]).total[0])

    def score_batch(
        self, problems: list[Problem], completions: list[str], completion_ids=None, step: int = 0
    ) -> RewardScores:
        """The functions' rewards, with each completion's correctness under the run's rule (self.correctness)."""
        scores = self.rewards.score(problems, completions, completion_ids, step)
        verifier = None
        if self.correctness.reward == VERIFIER:
            verifier = np.array([float(self.task.score(p, c)) for p, c in zip(problems, completions)])
        scores.correct = self.correctness.judge(scores.total, scores.parts, verifier)
        return scores

    def answer(self, problem: Problem, completion: str) -> str | None:
        return self.task.answer(problem, completion)

    def vote(self, problem: Problem, completion: str) -> str | None:
        return self.task.vote(problem, completion)
