"""Readers: completions tables in the formats trainers write, as the rows of table.py.

Each source is `[NAME=]PATH`; NAME, when given, is the model of every row the source holds.

    plain        .jsonl / .csv / .parquet (or a .json list of records): columns prompt_id (or prompt, its text the
                 id), and correct (0/1) or reward (or --reward-column's, summed when repeated; correct when the
                 reward >= --reward-threshold, default 1, escov's and TRL recipes' convention),
                 or completion (scored by --task / --reward-function); optional model, seed, step, sample,
                 solution_id (its canonical solution or final answer), vote. Without `sample`, a prompt's samples are
                 numbered in file order. A `step` column without `model` makes each step a model ("step 40").
    trl          TRL's GRPOTrainer with log_completions=True: OUTPUT_DIR/completions/completions_<step>.parquet
                 (columns step, prompt, completion, one column per reward function named after it, advantage;
                 trl/trainer/grpo_trainer.py); the reward is --reward-column's (summed when repeated), or the one
                 reward column when there is one; each step is a model.
    verl         verl's validation dumps (trainer.validation_data_dir): <global_step>.jsonl, lines with input,
                 output, score, step (and gts, and reward extra infos) written by RayPPOTrainer._dump_generations;
                 correct is the `acc` extra info where the reward function returns one, else score >= threshold.
    es-at-scale  es-at-scale's eval_detailed_results.json (eval_countdown_vllm.py --save_responses): a list of
                 {input_text, generated_text, reward, reward_info: {answer_reward, format_reward}}; correct when
                 answer_reward > 0 (its own accuracy); one sample per prompt per file, so name each file's model.
    escov        a run directory of `python -m escov.llm train` (eval.json: the per-problem correct counts of its
                 `base` and `final` evaluations; models "base" and the run's algo, or NAME; seed from config.json).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from escov.paper_checks.coverage.table import InputError, ModelCounts, place

FORMATS = ("auto", "plain", "trl", "verl", "es-at-scale", "escov")
TRL_FIXED = ("step", "prompt", "completion", "advantage", "image")


def split_source(spec: str) -> tuple[str | None, Path]:
    """`NAME=PATH` -> (NAME, PATH); `PATH` -> (None, PATH) (a path holding '=' is taken whole when it exists)."""
    if "=" in spec and not Path(spec).exists():
        name, path = spec.split("=", 1)
        return name, Path(path)
    return None, Path(spec)


def detect(path: Path) -> str:
    """The format of a path (module docstring), from what it holds."""
    if path.is_dir():
        if (path / "eval.json").is_file():
            return "escov"
        if list(path.glob("completions/completions_*.parquet")) or list(path.glob("completions_*.parquet")):
            return "trl"
        if list(path.glob("*.jsonl")):
            return "verl"
        raise InputError(f"{path}: a folder with no eval.json, TRL completions_*.parquet or verl <step>.jsonl in it")
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if path.suffix == ".json":
        data = _read_json(path)
        if isinstance(data, list) and data and isinstance(data[0], dict) and "generated_text" in data[0]:
            return "es-at-scale"
        return "plain"
    if path.suffix == ".parquet" and path.name.startswith("completions_"):
        return "trl"
    if path.suffix == ".jsonl":
        with open(path, encoding="utf-8") as f:
            first = f.readline()
        try:
            keys = json.loads(first) if first.strip() else {}
        except json.JSONDecodeError:
            raise InputError(f"{path} line 1: not a JSON object") from None
        if isinstance(keys, dict) and {"input", "output", "score"} <= set(keys) and "prompt_id" not in keys:
            return "verl"
    return "plain"


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: not JSON ({err})") from None


def read_records(path: Path) -> pd.DataFrame:
    """A .jsonl/.csv/.parquet/.json table as a DataFrame with its rows' places in column `at`."""
    if path.suffix == ".jsonl":
        fast = _jsonl_by_arrow(path)
        if fast is not None:
            return fast
        rows = []
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise InputError(f"{path} line {i}: not JSON ({err.msg})") from None
                if not isinstance(row, dict):
                    raise InputError(f"{path} line {i}: expected a JSON object, got {type(row).__name__}")
                row["pos"] = i
                rows.append(row)
        return pd.DataFrame(rows).assign(src=f"{path} line")
    if path.suffix == ".csv":
        df = pd.read_csv(path)
        return df.assign(src=f"{path} line", pos=np.arange(2, len(df) + 2))
    if path.suffix == ".parquet":
        df = pd.read_parquet(path)
        return df.assign(src=f"{path} row", pos=np.arange(1, len(df) + 1))
    if path.suffix == ".json":
        data = _read_json(path)
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise InputError(f"{path}: expected a JSON list of records")
        df = pd.DataFrame(data)
        return df.assign(src=f"{path} record", pos=np.arange(1, len(df) + 1))
    raise InputError(f"{path}: unknown table type {path.suffix!r} (expected .jsonl, .csv, .parquet or .json)")


def _jsonl_by_arrow(path: Path) -> pd.DataFrame | None:
    """The table by pyarrow's JSON reader (C++, tens of times faster) when the file has no blank line (so that
    row i is line i + 1); None when it cannot read it, and the line-by-line reader then names the bad line."""
    import pyarrow as pa
    import pyarrow.json as pj

    data = path.read_bytes()
    body = data.rstrip(b" \t\r\n")
    if not body or re.search(rb"(^|\n)[ \t\r]*\n", body):
        return None
    try:
        table = pj.read_json(pa.BufferReader(data))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != body.count(b"\n") + 1:
        return None
    df = table.to_pandas()
    return df.assign(src=f"{path} line", pos=np.arange(1, len(df) + 1))


def _text(value) -> str:
    """A prompt or completion as text: chat messages (TRL's conversational format) as their JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        value = value.tolist()
    return json.dumps(value, sort_keys=True, default=str)


def _steps_as_models(df: pd.DataFrame) -> pd.DataFrame:
    if "step" in df.columns and "model" not in df.columns:
        df["model"] = ["step " + str(s) for s in df["step"]]
    elif "step" in df.columns and df.groupby("model")["step"].nunique().max() > 1:
        df["model"] = [f"{m} step {s}" for m, s in zip(df["model"], df["step"])]
    return df


def plain(path: Path) -> pd.DataFrame:
    df = read_records(path)
    if "solution_id" in df.columns:
        df = df.rename(columns={"solution_id": "solution"})
    return _steps_as_models(df)


def trl(path: Path, reward_columns: list[str]) -> pd.DataFrame:
    files = (
        sorted(path.glob("completions/completions_*.parquet")) or sorted(path.glob("completions_*.parquet"))
        if path.is_dir()
        else [path]
    )
    df = pd.concat([read_records(file) for file in files], ignore_index=True)
    for column in ("step", "prompt", "completion"):
        if column not in df.columns:
            raise InputError(f"{files[0]}: column {column!r} is missing (not a TRL completions log)")
    candidates = [c for c in df.columns if c not in TRL_FIXED + ("src", "pos") and pd.api.types.is_numeric_dtype(df[c])]
    chosen = reward_columns or (candidates if len(candidates) == 1 else [])
    if not chosen and "correct" not in df.columns:
        raise InputError(f"{files[0]}: cannot tell the reward column among {candidates}; name it with --reward-column")
    for c in chosen:
        if c not in df.columns:
            raise InputError(f"{files[0]}: --reward-column {c!r} is not a column (columns: {list(df.columns)})")
    if chosen:
        df["reward"] = df[chosen].sum(axis=1, min_count=1)
    df["prompt_id"] = [_text(p) for p in df["prompt"]]
    df["completion"] = [_text(c) for c in df["completion"]]
    return _steps_as_models(df)


def verl(path: Path) -> pd.DataFrame:
    files = sorted(path.glob("*.jsonl"), key=lambda p: (len(p.stem), p.stem)) if path.is_dir() else [path]
    df = pd.concat([read_records(file) for file in files], ignore_index=True)
    for column in ("input", "output", "score"):
        if column not in df.columns:
            raise InputError(f"{files[0]}: column {column!r} is missing (not a verl generations dump)")
    df["prompt_id"], df["completion"] = df["input"].map(_text), df["output"].map(_text)
    if "acc" in df.columns:
        df["correct"] = df["acc"]
    else:
        df["reward"] = df["score"]
    return _steps_as_models(df)


def es_at_scale(path: Path) -> pd.DataFrame:
    df = read_records(path)
    for column in ("input_text", "generated_text", "reward_info"):
        if column not in df.columns:
            raise InputError(f"{path}: column {column!r} is missing (not es-at-scale's eval_detailed_results.json)")
    answer = [info.get("answer_reward") if isinstance(info, dict) else None for info in df["reward_info"]]
    bad = [i for i, a in enumerate(answer) if not isinstance(a, (int, float))]
    if bad:
        raise InputError(f"{place(df, bad[0])}, column 'reward_info': expected answer_reward, a number")
    df["correct"] = [int(a > 0) for a in answer]
    df["prompt_id"], df["completion"] = df["input_text"].map(_text), df["generated_text"].map(_text)
    return df


def escov_run(path: Path, name: str | None) -> list[ModelCounts]:
    """The base and final evaluations of an escov run directory as counts (no completions needed)."""
    data = _read_json(path / "eval.json")
    config = _read_json(path / "config.json") if (path / "config.json").is_file() else {}
    out = []
    for label, model in (("base", "base"), ("final", name or config.get("algo", "final"))):
        ev = data.get(label)
        if not isinstance(ev, dict):
            continue
        rows = ev.get("per_problem")
        if not isinstance(rows, list) or not isinstance(ev.get("n"), int):
            raise InputError(f"{path / 'eval.json'}: evaluation {label!r} lacks per_problem or n")
        counts = np.array([[r["correct"] for r in rows]], dtype=np.int64)
        seed = int(config.get("seed", 0)) if label == "final" else int(ev.get("seed", 0))
        out.append(ModelCounts(model, ev["n"], [str(r["id"]) for r in rows], counts, [seed]))
    if not out:
        raise InputError(f"{path / 'eval.json'}: no base or final evaluation")
    return out
