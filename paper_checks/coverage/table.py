"""The analyzer's one stored table: (model, seed, prompt, sample, correct, solution, vote), checked, then counted.

Readers (reader.py) hand over a pandas DataFrame with the columns below (`src` and `pos` name each row's
file and place in it: "table.jsonl line" and 12); `Coverage.from_rows` checks it and counts it. A source that
stores counts only (an escov eval.json) builds the counts directly (`ModelCounts`).

    model      str  the model (or checkpoint) that wrote the completion; "model" when the file names none
    seed       int  the training seed of that model (0 when there is one); seeds of a model share its prompts
    prompt_id  str  the prompt
    sample     str  the sample's id within (model, seed, prompt); unique there
    correct    int  1 when the completion is correct, else 0
    solution   object (optional) its canonical solution or final answer (None: none), for distinct solutions
               and answer entropy (a source's `solution_id` column)
    vote       object (optional) its Maj@k vote (the solution when the task defines no other)

Every check names the file, the row and the column and what was expected (InputError, one line).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

REQUIRED = ("model", "seed", "prompt_id", "sample", "correct", "src", "pos")


class InputError(ValueError):
    """Bad input: the message is one line naming the file, the row and the column."""


def place(df: pd.DataFrame, i: int) -> str:
    """Where row i (by position) of a table came from: "table.jsonl line 12"."""
    return f"{df['src'].iloc[i]} {df['pos'].iloc[i]}"


@dataclass
class ModelCounts:
    """One model's correct counts: counts[s, p] of n samples for seed s, prompt prompt_ids[p]."""

    name: str
    n: int
    prompt_ids: list
    counts: np.ndarray  # [seeds, prompts] int
    seeds: list = field(default_factory=lambda: [0])
    answers: list | None = None  # [seed][prompt] -> (solutions, correct flags, votes) of its n samples


def _binary(df: pd.DataFrame) -> np.ndarray:
    values = df["correct"]
    if pd.api.types.is_bool_dtype(values):
        values = values.astype(np.int64)
    numeric = pd.to_numeric(values, errors="coerce")  # Python booleans among other values read as 0 and 1
    bad = ~numeric.isin([0, 1])
    if bad.any():
        i = int(np.argmax(bad.to_numpy()))
        value = df["correct"].iloc[i]
        raise InputError(
            f"{place(df, i)}, column 'correct': expected 0 or 1, "
            f"got {value.item() if isinstance(value, np.generic) else value!r}"
        )
    return numeric.to_numpy().astype(np.int64)


def _check_unique_samples(df: pd.DataFrame) -> None:
    dup = df.duplicated(subset=["model", "seed", "prompt_id", "sample"], keep=False)
    if dup.any():
        rows = df[dup]
        first = rows.iloc[0]
        same = rows[
            (rows.model == first.model)
            & (rows.seed == first.seed)
            & (rows.prompt_id == first.prompt_id)
            & (rows["sample"] == first["sample"])
        ]
        raise InputError(
            f"{place(same, 1)}, column 'sample': duplicate sample id {first['sample']!r} of "
            f"prompt {first.prompt_id!r} (model {first.model!r}, seed {first.seed}); "
            f"first at {place(same, 0)}"
        )


def _one_sample_count(df: pd.DataFrame, source: str) -> int:
    sizes = df.groupby(["model", "seed", "prompt_id"], sort=False).size()
    if sizes.nunique() > 1:
        common = int(sizes.mode().iloc[0])
        (model, seed, prompt), size = next((key, s) for key, s in sizes.items() if s != common)
        rows = df[(df.model == model) & (df.seed == seed) & (df.prompt_id == prompt)]
        last = place(rows, len(rows) - 1)
        raise InputError(
            f"{source}: mixed sample counts: prompt {prompt!r} of model {model!r} (seed {seed}) has "
            f"{size} samples (its last at {last}), the others {common}; every prompt needs the same n"
        )
    return int(sizes.iloc[0])


@dataclass
class Coverage:
    """Every model's counts over one shared prompt set, with one n."""

    source: str
    models: dict  # name -> ModelCounts

    @property
    def n(self) -> int:
        return next(iter(self.models.values())).n

    @classmethod
    def from_rows(cls, df: pd.DataFrame, source: str) -> "Coverage":
        missing = [c for c in REQUIRED if c not in df.columns]
        if missing:
            raise InputError(
                f"{source}: column {missing[0]!r} is missing (each row needs prompt_id and correct, "
                f"or a reward, or --task/--reward-function to score its completion)"
            )
        if df.empty:
            raise InputError(f"{source}: no rows")
        df = df.copy()
        df["correct"] = _binary(df)
        for column in ("prompt_id", "sample", "model"):
            na = df[column].isna()
            if na.any():
                raise InputError(
                    f"{place(df, int(np.argmax(na.to_numpy())))}, column {column!r}: expected a value, got none"
                )
            if not pd.api.types.is_string_dtype(df[column]):
                df[column] = df[column].astype(str)
        _check_unique_samples(df)
        n = _one_sample_count(df, source)
        with_answers = "solution" in df.columns
        models = {}
        for name, rows in df.groupby("model", sort=False):
            prompt_codes, prompt_index = pd.factorize(rows["prompt_id"])
            seed_codes, seed_index = pd.factorize(rows["seed"], sort=True)
            prompts, seeds = [str(p) for p in prompt_index], [int(s) for s in seed_index]
            cell = seed_codes * len(prompts) + prompt_codes
            size = len(seeds) * len(prompts)
            counts = np.bincount(cell, weights=rows["correct"].to_numpy(), minlength=size).astype(np.int64)
            present = np.bincount(cell, minlength=size) > 0
            if not present.all():
                s, p = divmod(int(np.argmin(present)), len(prompts))
                raise InputError(
                    f"{source}: model {name!r} seed {seeds[s]} has no samples of prompt {prompts[p]!r} "
                    "that its other seeds have"
                )
            answers = _answers(rows, seeds, prompts) if with_answers else None
            models[name] = ModelCounts(str(name), n, prompts, counts.reshape(len(seeds), len(prompts)), seeds, answers)
        return cls(source, models).checked()

    def checked(self) -> "Coverage":
        """The models share one prompt set and one n (InputError naming the first difference)."""
        first = next(iter(self.models.values()))
        for m in self.models.values():
            if m.n != first.n:
                raise InputError(
                    f"{self.source}: mixed sample counts: model {m.name!r} has {m.n} samples per prompt, "
                    f"model {first.name!r} {first.n}"
                )
            missing = set(first.prompt_ids) ^ set(m.prompt_ids)
            if missing:
                p = sorted(missing)[0]
                has, lacks = (first, m) if p in set(first.prompt_ids) else (m, first)
                raise InputError(
                    f"{self.source}: model {lacks.name!r} has no samples of prompt {p!r} that model "
                    f"{has.name!r} has; every model must answer the same prompts"
                )
        return self

    def aligned(self, name: str) -> np.ndarray:
        """Model `name`'s counts [seeds, prompts] in the first model's prompt order."""
        first, m = next(iter(self.models.values())), self.models[name]
        order = {p: i for i, p in enumerate(m.prompt_ids)}
        return m.counts[:, [order[p] for p in first.prompt_ids]]


def _answers(rows: pd.DataFrame, seeds: list, prompts: list) -> list:
    """[seed][prompt] -> (solutions, correct flags, votes), in row order."""
    votes = rows["vote"] if "vote" in rows.columns else rows["solution"]
    out = {(s, p): ([], [], []) for s in seeds for p in prompts}
    columns = (rows["seed"], rows["prompt_id"], rows["solution"], rows["correct"], votes)
    for s, p, a, c, v in zip(*(c.to_numpy(dtype=object) for c in columns)):
        slot = out[(s, p)]
        slot[0].append(None if _missing(a) else a)
        slot[1].append(bool(c))
        slot[2].append(None if _missing(v) else v)
    return [[out[(s, p)] for p in prompts] for s in seeds]


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))
