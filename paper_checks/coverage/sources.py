"""From `[NAME=]PATH` sources to one checked Coverage: read (reader.py), score where asked (scoring.py), count."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from escov.paper_checks.coverage import reader
from escov.paper_checks.coverage.table import Coverage, InputError, place

DEFAULT_THRESHOLD = 1.0  # a completion is correct when its reward is >= 1 (llm/tasks/base.py)


@dataclass
class ReadOptions:
    format: str = "auto"
    reward_columns: list = field(default_factory=list)
    threshold: float = DEFAULT_THRESHOLD
    task: str | None = None
    task_kwargs: dict = field(default_factory=dict)
    reward_functions: list = field(default_factory=list)
    reward_weights: list = field(default_factory=list)


def _rows(path: Path, fmt: str, options: ReadOptions) -> pd.DataFrame:
    if fmt == "trl":
        return reader.trl(path, options.reward_columns)
    if fmt == "verl":
        return reader.verl(path)
    return reader.es_at_scale(path) if fmt == "es-at-scale" else reader.plain(path)


def _complete(df: pd.DataFrame, name: str | None, path: Path, options: ReadOptions) -> pd.DataFrame:
    """Defaults (model, seed, sample) and the correct column, from a task, reward functions or a reward."""
    if df.empty:
        raise InputError(f"{path}: no rows")
    if "prompt_id" not in df.columns and "prompt" in df.columns:  # TRL's layout: the prompt is its own id
        df["prompt_id"] = df["prompt"].map(reader._text)
    if options.reward_columns:  # the columns named replace a file's own reward column
        missing = [c for c in options.reward_columns if c not in df.columns]
        if missing:
            raise InputError(f"{path}: --reward-column {missing[0]!r} is not a column (columns: {list(df.columns)})")
        df["reward"] = df[options.reward_columns].sum(axis=1, min_count=1)
    if "prompt_id" not in df.columns:
        raise InputError(
            f"{path}: column 'prompt_id' is missing (each row needs prompt_id, and correct, a reward, "
            "or a completion with --task/--reward-function)"
        )
    if name is not None:
        df["model"] = name
    elif "model" not in df.columns:
        df["model"] = "model"
    df["seed"] = df["seed"].fillna(0) if "seed" in df.columns else 0  # a row without a seed: seed 0
    bad = pd.to_numeric(df["seed"], errors="coerce").isna()
    if bad.any():
        raise InputError(
            f"{place(df, int(np.argmax(bad.to_numpy())))}, column 'seed': expected an integer, "
            f"got {df['seed'][bad].iloc[0]!r}"
        )
    df["seed"] = df["seed"].astype(np.int64)
    if not pd.api.types.is_string_dtype(df["prompt_id"]):
        df["prompt_id"] = df["prompt_id"].map(lambda p: p if isinstance(p, str) else reader._text(p))
    if options.task:
        from escov.paper_checks.coverage.scoring import score_with_task

        return score_with_task(df, options.task, options.threshold, **options.task_kwargs)
    if options.reward_functions:
        from escov.paper_checks.coverage.scoring import score_with_functions

        return score_with_functions(df, options.reward_functions, options.reward_weights, options.threshold)
    if "correct" not in df.columns:
        if "reward" not in df.columns:
            raise InputError(
                f"{path}: column 'correct' is missing (give correct 0/1, a reward column, or score the "
                "completions with --task or --reward-function)"
            )
        reward = pd.to_numeric(df["reward"], errors="coerce")
        if reward.isna().any():
            i = int(np.argmax(reward.isna().to_numpy()))
            value = df["reward"].iloc[i]
            got = "no value" if pd.isna(value) else repr(value)
            raise InputError(f"{place(df, i)}, column 'reward': expected a number, got {got}")
        df["correct"] = (reward >= options.threshold).astype(int)
    return df


def load(specs: list[str], options: ReadOptions) -> Coverage:
    """Every source read and checked, as one Coverage (InputError: one line naming the file, row and column)."""
    frames, counted = [], []
    for spec in specs:
        name, path = reader.split_source(spec)
        fmt = reader.detect(path) if options.format == "auto" else options.format
        if fmt == "escov":
            counted += reader.escov_run(path, name)
            continue
        frames.append(_complete(_rows(path, fmt, options), name, path, options))
    label = ", ".join(str(reader.split_source(s)[1]) for s in specs)
    models = {}
    if frames:
        keep = ["model", "seed", "prompt_id", "sample", "correct", "src", "pos"] + [
            c for c in ("solution", "vote") if any(c in f.columns for f in frames)
        ]
        table = pd.concat([f.reindex(columns=keep) for f in frames], ignore_index=True)
        table["sample"] = table["sample"].astype(object)
        unnumbered = table["sample"].isna()
        if unnumbered.any():  # samples without ids: numbered in file order within (model, seed, prompt), all files
            auto = table[unnumbered].groupby(["model", "seed", "prompt_id"], sort=False).cumcount()
            table.loc[unnumbered, "sample"] = ["#" + str(i) for i in auto]
        models = dict(Coverage.from_rows(table, label).models)
    for m in counted:
        if m.name in models:
            if (
                models[m.name].n == m.n
                and list(models[m.name].prompt_ids) == m.prompt_ids
                and m.seeds[0] not in models[m.name].seeds
            ):
                models[m.name].counts = np.vstack([models[m.name].counts, m.counts])
                models[m.name].seeds.append(m.seeds[0])
            elif not (m.seeds[0] in models[m.name].seeds and m.name == "base"):
                raise InputError(f"{label}: model {m.name!r} seed {m.seeds[0]} appears twice")
        else:
            models[m.name] = m
    return Coverage(label, models).checked()
