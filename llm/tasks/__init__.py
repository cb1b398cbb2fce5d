"""Tasks with verifiable rewards: Countdown, grid paths, subset sum, held-out arithmetic, GSM8K and DeepScaleR files.

`get_task(name, **kwargs)` builds one by name; each is a `llm.tasks.base.Task`. Data files:
`get_task("countdown" | "gsm8k" | "deepscaler", data=TRAIN_FILE, test_data=TEST_FILE, data_split=...,
fields={...})` (llm/tasks/data_files.py); `prompt_style` (llm/tasks/reasoning_format.py) and `reward`
(llm/tasks/rewards.py) choose the prompt and the reward convention. `reward_function="module:function"`
(llm/tasks/reward_function.py; also a callable, or a list of either, with `reward_weights`) replaces
any task's reward by functions of TRL's signature; the `prompts` task (llm/tasks/prompts.py) is your
own data, scored by such functions. `grid_paths` and `subset_sum` are generated tasks whose correct
solutions and their strategies are enumerated exactly.

    base.py              the task interface: problems with a prompt, a reward, an answer
    correctness.py       what is correct with reward functions: correct_reward >= correct_threshold
    countdown.py         Countdown: the given numbers, each once, with + - * / to hit the target
    countdown_verdicts.py  Countdown's reward for many completions at once, fast (the coverage analyzer's scorer)
    solution_blocks.py   Countdown's instances with exactly k distinct solutions, in its draw order (eval_solutions)
    grid_paths.py        grid paths: a shortest path of U/D/L/R moves, every one enumerated, winding classes
    subset_sum.py        subset sum: numbers summing to a target, every solution enumerated, planted strategies
    solution_coverage.py exact coverage measures of the counted tasks: solution and class shares, rare share
    arithmetic.py        held-out arithmetic, the forgetting probe ("47+58=" -> "105")
    math_data.py         GSM8K / DeepScaleR-style math files, graded with math-verify
    math_grader.py       bounded grading of math answers in a worker process
    safe_arith.py        exact evaluation of untrusted arithmetic text (whitelist ast, Fractions)
    data_files.py        records from local data files and datasets folders; which make train and test
    prompts.py           your own prompts, scored by your own reward function: the `prompts` task
    reasoning_format.py  prompt styles, and where in a completion the answer may sit
    rewards.py           reward conventions: how a graded completion becomes a reward (`reward`)
    reward_function.py   rewards written as Python functions, called as TRL's GRPOTrainer calls them
    user_modules.py      where a user's module is found, for importing it and for hashing its source
"""

from __future__ import annotations

from escov.llm.tasks.base import Problem, Task

TASKS = ("countdown", "arithmetic", "gsm8k", "deepscaler", "countdown3", "prompts", "grid_paths", "subset_sum")
DATA_KWARGS = ("data", "test_data", "data_split", "fields")


def get_task(
    name: str,
    reward_function=(),
    reward_weights=None,
    correct_reward: str = "",
    correct_threshold: float = 1.0,
    reward_timeout: float = 0.0,
    **kwargs,
) -> Task:
    """The task called `name` (one of TASKS); kwargs go to its constructor. With `reward_function`
    (import paths or callables, one or a list) the task's reward is theirs, weighted by reward_weights, and
    correct_reward / correct_threshold choose what counts as correct (llm/tasks/correctness.py)."""
    from escov.llm.tasks.correctness import check_correct_settings
    from escov.llm.tasks.reward_function import as_list

    check_correct_settings(correct_reward, correct_threshold, bool(as_list(reward_function)) or name == "prompts")
    correct = {
        "correct_reward": correct_reward,
        "correct_threshold": correct_threshold,
        "reward_timeout": reward_timeout,
    }
    if name == "prompts":
        from escov.llm.tasks.prompts import prompts_task

        return prompts_task(reward_function, reward_weights=reward_weights, **correct, **kwargs)
    if as_list(reward_function):
        from escov.llm.tasks.reward_function import ScoredByFunction, check_alone

        check_alone(reward_function, kwargs.get("reward", "escov"), kwargs.get("format_reward", 0.0))
        return ScoredByFunction(_builtin_task(name, **kwargs), reward_function, reward_weights, **correct)
    if reward_weights:
        raise ValueError("reward_weights are given without a reward_function")
    return _builtin_task(name, **kwargs)


def _builtin_task(name: str, **kwargs) -> Task:
    if name == "countdown":
        from escov.llm.tasks.countdown import Countdown

        return Countdown(**kwargs)
    if (
        name == "countdown3"
    ):  # 3-number instances only: the easier base (its Pass@32 in the paper's range; Pass@1 below it)
        from escov.llm.tasks.countdown import Countdown

        return Countdown(min_numbers=3, max_numbers=3, **kwargs)
    if name in ("arithmetic", "grid_paths", "subset_sum"):
        given = sorted(k for k in kwargs if k in DATA_KWARGS and kwargs[k] not in (None, "files"))
        if given:
            raise ValueError(f"task {name!r} generates its problems; it takes no {given}")
        if kwargs.get("prompt_style", "plain") != "plain" or kwargs.get("reward", "escov") != "escov":
            raise ValueError(f"task {name!r} has only the plain prompt style and the escov reward")
        kwargs = {k: v for k, v in kwargs.items() if k not in DATA_KWARGS}
    if name == "arithmetic":
        from escov.llm.tasks.arithmetic import Arithmetic

        return Arithmetic()
    if name == "grid_paths":
        from escov.llm.tasks.grid_paths import GridPaths

        return GridPaths(**kwargs)
    if name == "subset_sum":
        from escov.llm.tasks.subset_sum import SubsetSum

        return SubsetSum(**kwargs)
    if name in ("gsm8k", "deepscaler"):
        from escov.llm.tasks.math_data import MathData

        return MathData(name, **kwargs)
    raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")


__all__ = ["Problem", "Task", "TASKS", "get_task"]
