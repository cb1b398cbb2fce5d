"""Scoring completions that come without a `correct` column: a task's verifier or a user's reward functions.

    --task NAME             one of escov's tasks (llm/tasks): its verifier scores each completion, and its
                            canonical answer and Maj@k vote fill `solution` and `vote`. The rows hold the fields
                            its verifier reads (VERIFIER_FIELDS: Countdown numbers and target, gsm8k gold, ...),
                            and the prompt style and reward convention are --prompt-style / --reward (escov's names).
    --reward-function F     reward functions as `llm train` takes them (TRL's batch contract, or verl's
                            compute_score; llm/tasks/reward_function.py): called once per prompt's samples with the
                            row's other columns as keyword lists; the weighted total >= --reward-threshold is correct.

Both import escov.llm's tasks lazily (they are only needed here); nothing loads torch. A progress bar shows on a
terminal (tqdm; TQDM_DISABLE=1 hides it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from tqdm import tqdm

from escov.paper_checks.coverage.table import InputError

SKIPPED = ("src", "pos", "model", "seed", "sample", "correct", "reward", "solution", "vote", "prompt", "completion")
# the fields each task's verifier reads from a row (llm/tasks: what its score, answer and vote take from Problem.meta)
VERIFIER_FIELDS = {
    "countdown": ("numbers", "target"),
    "countdown3": ("numbers", "target"),
    "subset_sum": ("numbers", "target"),
    "arithmetic": ("result",),
    "grid_paths": ("grid",),
    "gsm8k": ("gold",),
    "deepscaler": ("gold",),
}


def _meta(row: dict) -> dict:
    """The row's own columns (those not in SKIPPED and not missing), as a verifier or a reward function reads them;
    a list column read from parquet (an array) as a list."""
    meta = {k: v for k, v in row.items() if k not in SKIPPED and not (isinstance(v, float) and v != v)}
    return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in meta.items()}


def _need(df: pd.DataFrame, columns: tuple, why: str) -> None:
    for c in columns:
        if c not in df.columns:
            raise InputError(f"{df['src'].iloc[0].rsplit(' ', 1)[0]}: column {c!r} is missing ({why})")


def score_with_task(df: pd.DataFrame, task_name: str, threshold: float, **task_kwargs) -> pd.DataFrame:
    """correct, solution and vote of every row from the task's verifier (rows grouped by their verifier fields)."""
    from escov.llm.tasks import get_task
    from escov.llm.tasks.base import Problem

    if task_name not in VERIFIER_FIELDS:
        raise InputError(
            f"--task {task_name!r}: the analyzer scores with the verifier of {', '.join(VERIFIER_FIELDS)}; "
            "score other completions with --reward-function"
        )
    if VERIFIER_FIELDS[task_name] == ("gold",):  # a math task: each row holds its gold answer, no data file is read
        task_kwargs = task_kwargs | {"records_needed": False}
    task = get_task(task_name, **task_kwargs)
    fields = ("prompt_id", "completion") + VERIFIER_FIELDS[task_name]
    _need(df, fields, f"--task {task_name} scores each completion with them")
    correct, answers, votes = [], [], []
    for row in tqdm(df.to_dict("records"), desc=f"scoring with {task_name}", unit="completion", disable=None):
        try:
            problem = Problem(str(row["prompt_id"]), str(row.get("prompt", "")), _meta(row))
            text = row["completion"] if isinstance(row["completion"], str) else ""
            correct.append(int(task.score(problem, text) >= threshold))
            answers.append(task.answer(problem, text))
            votes.append(task.vote(problem, text))
        except (ValueError, TypeError, KeyError) as err:
            raise InputError(
                f"{row['src']} {row['pos']}: the {task_name} verifier cannot read this row: {err}"
            ) from None
    return df.assign(correct=correct, solution=answers, vote=votes)


def score_with_functions(
    df: pd.DataFrame, functions: list[str], weights: list[float] | None, threshold: float
) -> pd.DataFrame:
    """correct of every row: the reward functions' weighted total >= threshold, one call per prompt's samples."""
    from escov.llm.tasks.base import Problem
    from escov.llm.tasks.reward_function import RewardFunctions

    _need(df, ("prompt_id", "completion"), "--reward-function scores each completion")
    rewards = RewardFunctions(functions, weights or None)
    correct = pd.Series(0, index=df.index)
    groups = df.groupby("prompt_id", sort=False)
    for _, rows in tqdm(
        groups, total=groups.ngroups, desc="scoring with reward functions", unit="prompt", disable=None
    ):
        records = rows.to_dict("records")
        problems = [
            Problem(str(r["prompt_id"]), str(r.get("prompt", r["prompt_id"])), {"columns": _meta(r)}) for r in records
        ]
        total = rewards.score(problems, [str(r["completion"]) for r in records]).total
        correct[rows.index] = (total >= threshold).astype(int)
    return df.assign(correct=correct.to_numpy())
