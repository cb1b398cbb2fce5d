"""Records from local data (files, HF `datasets` folders and objects), and which records make the train and the test
split.

Sources, told apart by the path's suffix (all read locally: nothing is downloaded):
- `.jsonl`: one JSON object per line (what HF `datasets` `Dataset.to_json` writes);
- `.json`: one JSON array of objects, or JSON lines;
- `.parquet`: a Parquet table (what `Dataset.to_parquet` writes; a verl data file);
- a folder written by `Dataset.save_to_disk`, read with `datasets.load_from_disk`;
- (Python API) a `datasets.Dataset` object itself.
A name that is none of these (a hub name such as "openai/gsm8k") is a one-line error saying how to
save the dataset locally first.

A field mapping renames a file's fields to the names a task reads: `{"question": "prompt"}` reads
the task's `question` from the file's `prompt` column (in a TrainConfig: `data_fields =
"question=prompt"`). A column may be a dotted path into nested records:
`answer=reward_model.ground_truth` reads `record["reward_model"]["ground_truth"]` (a verl parquet).

Split rules (`data_split`) for the `data` / `test_data` files of a run:
- `files` (default): `data` is the train split, `test_data` the test split (either may be absent);
- `paper`: `data` holds both, its first `PAPER_TRAIN_RECORDS` (200) records are the train split and
  the rest the test split (the paper's Countdown file, VsonicV/es-at-scale `countdown.json`);
- `first-N`: the same with the first N records.

Every error names the file (and the record: its index from 0 in the file).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

DATA_SPLITS_HELP = "files | paper | first-N"
PAPER_TRAIN_RECORDS = 200  # the paper's Countdown file: records 0-199 train, 200-2199 evaluation


def load_records(path) -> list[dict]:
    """The records of a .jsonl / .json / .parquet file, a `save_to_disk` folder or a `datasets.Dataset`;
    ValueError naming the file (and line) otherwise."""
    if type(path).__name__ == "Dataset" and hasattr(path, "to_list"):  # a datasets.Dataset object
        return _checked_records(path.to_list(), "the given Dataset")
    p = Path(path)
    if p.is_dir():
        return _checked_records(_load_from_disk(p), str(p))
    if not p.is_file():
        if p.suffix.lower() in (".jsonl", ".json", ".parquet") or p.is_absolute() or str(path).startswith("."):
            raise ValueError(f"data file {str(path)!r} does not exist")
        raise ValueError(
            f"data {str(path)!r} is neither a local file nor a folder: datasets are read offline, "
            f"not downloaded; save it locally first, e.g. datasets.load_dataset({str(path)!r}, split="
            f"'train').to_parquet('train.parquet'), and give that file"
        )
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            records = pq.read_table(p).to_pylist()
        except Exception as e:  # pyarrow raises its own error types for damaged files
            raise ValueError(f"data file {p} is not a readable Parquet file ({type(e).__name__}: {e})") from None
    elif suffix in (".jsonl", ".json"):
        raw = p.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            line = raw[: err.start].count(b"\n") + 1
            raise ValueError(f"data file {p}: line {line} is not UTF-8 text (byte {err.start})") from None
        if suffix == ".json" and text.lstrip().startswith("["):
            try:
                records = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"data file {p} is not valid JSON ({e.msg} at line {e.lineno})") from None
        else:
            if suffix == ".json" and text.lstrip().startswith("{"):
                try:
                    whole = json.loads(text)
                except json.JSONDecodeError:
                    whole = None  # JSON lines in a .json file (as datasets writes them)
                if isinstance(whole, dict) and "\n" in text.strip():
                    lists = [k for k, v in whole.items() if isinstance(v, list)]
                    hint = f" (its key {lists[0]!r} holds a list: save that list as the file)" if lists else ""
                    raise ValueError(
                        f"data file {p} holds one JSON object, not records{hint}; give a list of records "
                        "[{...}, {...}] (.json) or one record per line (.jsonl)"
                    )
            records = []
            for line_no, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        raise ValueError(f"data file {p}: line {line_no} is not valid JSON ({e.msg})") from None
    else:
        raise ValueError(f"data file {p} must end in .jsonl, .json or .parquet, got {suffix!r}")
    return _checked_records(records, str(p))


def _load_from_disk(folder: Path) -> list[dict]:
    """The records of a folder that `Dataset.save_to_disk` wrote (a DatasetDict folder: name a split's folder)."""
    import datasets

    try:
        loaded = datasets.load_from_disk(str(folder))
    except Exception as e:  # datasets raises FileNotFoundError and its own types for other folders
        raise ValueError(
            f"data folder {folder} is not a folder written by datasets' save_to_disk "
            f"({type(e).__name__}: {str(e)[:120]})"
        ) from None
    if isinstance(loaded, datasets.DatasetDict):
        raise ValueError(
            f"data folder {folder} holds the splits {sorted(loaded)}; give one split's folder, "
            f"e.g. {folder / sorted(loaded)[0]}"
        )
    return loaded.to_list()


def _checked_records(records, where: str) -> list[dict]:
    """The records, each a dict whose text is valid Unicode: ValueError naming the file and the record (and
    the column) otherwise."""
    if not records:
        raise ValueError(f"data file {where} holds no records")
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise ValueError(f"data file {where}: record {i} must be a JSON object, got {type(record).__name__}")
        column = _column_with_bad_text(record)
        if column is not None:
            raise ValueError(
                f"data file {where}: record {i}, column {column!r} holds text that is not valid "
                "UTF-8 (a lone surrogate, such as the JSON escape \\ud800 alone)"
            )
    return records


def _column_with_bad_text(value, path: str = "") -> str | None:
    """The (dotted) column of the first string that UTF-8 cannot encode (a lone surrogate), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "(the record)"
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _column_with_bad_text(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def check_same_columns(rows: list[tuple[str, int, dict]]) -> None:
    """Every record of a file holds every column some record of that file holds (a reward function is
    called with each of them): ValueError naming the file, the first record that lacks one, and the column."""
    columns: dict[str, dict[str, int]] = {}  # file -> column -> a record that holds it
    for path, index, record in rows:
        for column in record:
            columns.setdefault(path, {}).setdefault(column, index)
    for path, index, record in rows:
        missing = [c for c in columns[path] if c not in record]
        if missing:
            raise ValueError(
                f"data file {path}: record {index} lacks the column {missing[0]!r} "
                f"(record {columns[path][missing[0]]} holds it)"
            )


def column_value(record: dict, column: str):
    """The record's value at `column`: a top-level key, else a dotted path into nested records
    ("reward_model.ground_truth"); None when it is absent."""
    if column in record:
        return record[column]
    value = record
    for part in column.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def field(record: dict, name: str, fields: dict[str, str] | None, where: str):
    """The value of the task's field `name` (read from the file's `fields[name]` when mapped)."""
    column = (fields or {}).get(name, name)
    value = column_value(record, column)
    if value is None:
        mapped = f" (mapped to the file's {column!r})" if column != name else ""
        raise ValueError(f"{where} lacks the field {name!r}{mapped}")
    return value


def parse_fields(text: str) -> dict[str, str] | None:
    """A field mapping written as "question=prompt,answer=solution" (the TrainConfig / flag form); "" -> None."""
    if not isinstance(text, str):
        raise ValueError(f"data_fields must be a string such as 'question=prompt,answer=solution', got {text!r}")
    if not text.strip():
        return None
    pairs = [item.split("=") for item in text.split(",")]
    if any(len(pair) != 2 or not pair[0].strip() or not pair[1].strip() for pair in pairs):
        raise ValueError(f"data_fields must look like 'question=prompt,answer=solution', got {text!r}")
    return {name.strip(): column.strip() for name, column in pairs}


def check_fields(fields, known: tuple[str, ...], task: str) -> dict[str, str]:
    if fields is None:
        return {}
    if not isinstance(fields, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items()):
        raise ValueError(f"fields must map field names to column names (strings), got {fields!r}")
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise ValueError(f"fields: task {task!r} reads {list(known)}, not {unknown}")
    return dict(fields)


def train_records_of(data_split: str) -> int | None:
    """How many leading records of `data` are the train split (None for the `files` rule)."""
    if data_split == "files":
        return None
    if data_split == "paper":
        return PAPER_TRAIN_RECORDS
    head = data_split[len("first-") :] if data_split.startswith("first-") else ""
    if head.isdigit() and int(head) >= 1:
        return int(head)
    raise ValueError(f"data_split must be one of {DATA_SPLITS_HELP} (N >= 1), got {data_split!r}")


def split_files(data, test_data, data_split: str = "files") -> dict[str, list[tuple[str, int, dict]]]:
    """split -> [(file, index in the file, record)] for the splits the files provide."""
    head = train_records_of(data_split)
    out: dict[str, list[tuple[str, int, dict]]] = {}
    if head is not None:
        if data is None or test_data is not None:
            raise ValueError(f"data_split {data_split!r} takes both splits from one file: give data, not test_data")
        records = load_records(data)
        if len(records) <= head:
            raise ValueError(
                f"data file {data}: data_split {data_split!r} needs more than {head} records, it holds {len(records)}"
            )
        rows = [(_name(data), i, r) for i, r in enumerate(records)]
        return {"train": rows[:head], "test": rows[head:]}
    for split, path in (("train", data), ("test", test_data)):
        if path is not None:
            out[split] = [(_name(path), i, r) for i, r in enumerate(load_records(path))]
    return out


def split_source(data, test_data, data_split: str, split: str) -> str | None:
    """How errors name the source of a split's records ("data file PATH"); None when the split is not
    read from a file (generated problems)."""
    path = data if train_records_of(data_split) is not None or split == "train" else test_data
    return f"data file {_name(path)}" if path else None


def _name(source) -> str:
    """How errors name a data source: its path, or "Dataset" for a datasets.Dataset object."""
    return "Dataset" if type(source).__name__ == "Dataset" else str(source)


def no_split_data(task: str, split: str) -> str:
    """The error for a split a data-file task does not have. Files give a train and a test split; the
    validation split (base.split_of) exists for generated tasks only: with files, settings are chosen on
    the train split."""
    if split == "validation":
        return (
            f"task {task!r} reads its problems from data files, which give a train and a test split but no "
            f"validation split: choose settings on the train split (--split train)"
        )
    return (
        f"task {task!r} has no {split} data: give {'data' if split == 'train' else 'test_data'} "
        f"or a data_split such as 'paper' or 'first-N'"
    )


def sample_split(task: str, splits: dict[str, list], split: str, n: int, seed: int, missing: str) -> list:
    """n problems of one split of a data-file task, drawn without replacement by a generator seeded with
    (task, split, seed); ValueError `missing` when the task has no data for the split, or when n exceeds
    what it holds."""
    if split not in splits:
        raise ValueError(missing)
    pool = splits[split]
    if n > len(pool):
        raise ValueError(f"n={n} problems requested but the {split} data holds {len(pool)}")
    return random.Random(f"{task}/{split}/{seed}").sample(pool, n)
