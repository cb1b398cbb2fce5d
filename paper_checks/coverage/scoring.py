"""Scoring completions that come without a `correct` column: a task's verifier or a user's reward functions.

    --task NAME             one of escov's tasks (llm/tasks): its verifier scores each completion, and its
                            canonical answer and Maj@k vote fill `solution` and `vote`. The rows hold the fields
                            the task's verifier reads (Countdown: numbers, target; gsm8k/deepscaler: gold), and
                            the prompt style and reward convention are --prompt-style / --reward (escov's names).
    --reward-function F     reward functions as `llm train` takes them (TRL's batch contract, or verl's
                            compute_score; llm/tasks/reward_function.py): called once per prompt's samples with the
                            row's other columns as keyword lists; the weighted total >= --reward-threshold is correct.

Both import escov.llm's tasks lazily (they are only needed here); nothing loads torch. A progress bar shows on a
terminal (tqdm; TQDM_DISABLE=1 hides it).
"""

from __future__ import annotations

import pandas as pd
from tqdm import tqdm

from escov.paper_checks.coverage.table import InputError

SKIPPED = ("src", "pos", "model", "seed", "sample", "correct", "reward", "solution", "vote", "prompt", "completion")


def _meta(row: dict, task_name: str | None) -> dict:
    meta = {k: v for k, v in row.items() if k not in SKIPPED and not (isinstance(v, float) and v != v)}
    if task_name in ("countdown", "countdown3") and "target" in meta:
        from escov.llm.tasks.countdown import parse_target

        meta["target"] = parse_target(meta["target"])
        meta["numbers"] = [int(x) for x in meta.get("numbers", [])]
    return meta


def _need(df: pd.DataFrame, columns: tuple, why: str) -> None:
    for c in columns:
        if c not in df.columns:
            raise InputError(f"{df['src'].iloc[0].rsplit(' ', 1)[0]}: column {c!r} is missing ({why})")


def score_with_task(df: pd.DataFrame, task_name: str, threshold: float, **task_kwargs) -> pd.DataFrame:
    """correct, solution and vote of every row from the task's verifier (rows grouped by their verifier fields)."""
    from escov.llm.tasks import get_task
    from escov.llm.tasks.base import Problem

    task = get_task(task_name, **task_kwargs)
    fields = {"countdown": ("numbers", "target"), "countdown3": ("numbers", "target")}.get(task_name, ("gold",))
    _need(df, ("prompt_id", "completion") + fields, f"--task {task_name} scores each completion with them")
    correct, answers, votes = [], [], []
    for row in tqdm(df.to_dict("records"), desc=f"scoring with {task_name}", unit="completion", disable=None):
        try:
            problem = Problem(str(row["prompt_id"]), str(row.get("prompt", "")), _meta(row, task_name))
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
            Problem(str(r["prompt_id"]), str(r.get("prompt", r["prompt_id"])), {"columns": _meta(r, None)})
            for r in records
        ]
        total = rewards.score(problems, [str(r["completion"]) for r in records]).total
        correct[rows.index] = (total >= threshold).astype(int)
    return df.assign(correct=correct.to_numpy())
