"""Data files as tasks: JSON / JSONL / Parquet as HF datasets writes them, field mappings, split
rules, and one-line errors that name the file and the record."""

import json

import datasets
import pytest

from escov.llm.tasks import get_task
from escov.llm.tasks.data_files import load_records, split_files

RECORDS = [{"q": f"What is {i} + 1?", "a": f"... #### {i + 1}"} for i in range(5)]


@pytest.mark.parametrize("writer", ["to_json", "to_parquet", "json_array"])
def test_every_format_loads_the_same_records(tmp_path, writer):
    dataset = datasets.Dataset.from_list(RECORDS)
    if writer == "to_json":
        path = tmp_path / "d.jsonl"
        dataset.to_json(path)  # JSON lines, as HF datasets writes them
    elif writer == "to_parquet":
        path = tmp_path / "d.parquet"
        dataset.to_parquet(path)
    else:
        path = tmp_path / "d.json"
        path.write_text(json.dumps(RECORDS))
    assert load_records(path) == RECORDS


def test_field_mapping_reads_other_column_names(tmp_path):
    path = tmp_path / "d.parquet"
    datasets.Dataset.from_list(RECORDS).to_parquet(path)
    task = get_task("gsm8k", test_data=path, fields={"question": "q", "answer": "a"})
    golds = sorted(int(p.meta["gold"]) for p in task.problems("test", 5, seed=0))
    assert golds == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match=r"record 0 lacks the field 'question' \(mapped to the file's 'text'\)"):
        get_task("gsm8k", test_data=path, fields={"question": "text", "answer": "a"})
    with pytest.raises(ValueError) as err:
        get_task("gsm8k", test_data=path, fields={"solution": "a"})
    assert str(err.value) == "fields: task 'gsm8k' reads ['question', 'answer'], not ['solution']"


def test_split_rules(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps(RECORDS))
    by_rule = split_files(path, None, "first-2")
    assert [i for _, i, _ in by_rule["train"]] == [0, 1] and [i for _, i, _ in by_rule["test"]] == [2, 3, 4]
    files = split_files(path, path, "files")
    assert len(files["train"]) == len(files["test"]) == 5
    assert set(split_files(None, path)) == {"test"}
    with pytest.raises(ValueError, match="needs more than 200 records, it holds 5"):
        split_files(path, None, "paper")
    with pytest.raises(ValueError, match="give data, not test_data"):
        split_files(path, path, "first-2")
    with pytest.raises(ValueError, match="data_split must be one of files | paper | first-N"):
        split_files(path, None, "first-0")


@pytest.mark.parametrize(
    "text, message",
    [
        ('[{"numbers": [1, 2], "target": 3}, 7]', "record 1 must be a JSON object, got int"),
        ('[{"numbers": [1, 2], "target": 3}', "is not valid JSON"),
        ('[{"numbers": [1, 2.5], "target": 3}]', "record 0: field 'numbers' must be a non-empty list of integers"),
        (
            '[{"numbers": [1, 2], "target": [3]}]',
            "record 0: field 'target' must be an integer or a number written as a string",
        ),
        ('[{"numbers": [1, 2], "target": "3/0"}]', "record 0: field 'target' is not a number"),
        ('[{"numbers": [1, 2]}]', "record 0 lacks the field 'target'"),
    ],
)
def test_bad_countdown_records_name_file_and_record(tmp_path, text, message):
    path = tmp_path / "cd.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        get_task("countdown", test_data=path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_damaged_parquet_file_is_one_line(tmp_path):
    path = tmp_path / "d.parquet"
    path.write_bytes(b"PAR1 not really parquet")
    with pytest.raises(ValueError, match="is not a readable Parquet file"):
        load_records(path)


def test_train_config_passes_data_settings_to_the_task(tmp_path):
    from escov.llm.config import TrainConfig

    path = tmp_path / "d.jsonl"
    datasets.Dataset.from_list(RECORDS).to_json(path)
    cfg = TrainConfig(
        task="gsm8k",
        data=str(path),
        data_split="first-2",
        data_fields="question=q,answer=a",
        prompt_style="paper",
        reward="paper-gsm8k",
    )
    kwargs = cfg.task_kwargs()
    assert kwargs == {
        "data": str(path),
        "data_split": "first-2",
        "fields": {"question": "q", "answer": "a"},
        "prompt_style": "paper",
        "reward": "paper-gsm8k",
    }
    task = get_task("gsm8k", **kwargs)
    assert (task.size("train"), task.size("test")) == (2, 3)
    assert TrainConfig().task_kwargs() == {}  # the generated Countdown task, as before
    for bad, message in [
        ({"data_fields": "question"}, "data_fields must look like"),
        ({"data_split": "half"}, "data_split must be one of"),
        ({"prompt_style": "chat"}, "prompt_style must be one of"),
        ({"reward": "paper-gsm8k"}, "reward 'paper-gsm8k' is for the tasks"),
    ]:
        with pytest.raises(ValueError, match=message):
            TrainConfig(**bad)


def test_every_record_of_a_file_must_hold_every_column_of_that_file():
    """check_same_columns names the first record that lacks a column and the first record that holds it;
    columns are compared within a file, not across files."""
    from escov.llm.tasks.data_files import check_same_columns

    check_same_columns([("a", 0, {"x": 1}), ("a", 1, {"x": 2}), ("b", 0, {"y": 3})])  # files differ: fine
    rows = [("a", 0, {"x": 1}), ("a", 1, {"x": 2}), ("a", 2, {"x": 3, "y": 4}), ("a", 3, {"x": 3, "z": 5})]
    with pytest.raises(ValueError) as err:
        check_same_columns(rows)
    assert str(err.value) == "data file a: record 0 lacks the column 'y' (record 2 holds it)"  # its first missing


def test_a_split_source_is_named_by_the_file_its_records_come_from():
    from escov.llm.tasks.data_files import split_source

    assert split_source("tr.jsonl", "te.jsonl", "files", "train") == "data file tr.jsonl"
    assert split_source("tr.jsonl", "te.jsonl", "files", "test") == "data file te.jsonl"
    assert split_source("tr.jsonl", None, "paper", "test") == "data file tr.jsonl"  # both splits from data
    assert split_source("tr.jsonl", None, "first-3", "train") == "data file tr.jsonl"
    assert split_source("tr.jsonl", None, "files", "test") is None  # no test file
    assert split_source(None, None, "files", "train") is None  # generated problems
    assert split_source(datasets.Dataset.from_list(RECORDS), None, "files", "train") == "data file Dataset"


def message_of(call, *args) -> str:
    with pytest.raises(ValueError) as err:
        call(*args)
    return str(err.value)


def test_a_missing_file_a_hub_name_and_an_unknown_suffix_are_told_apart(tmp_path, monkeypatch):
    """A name with a data suffix (any case), an absolute path or one starting with '.' is a missing file; any
    other name is taken for a hub name (the offline error); an existing file of another suffix is refused."""
    monkeypatch.chdir(tmp_path)
    for missing in ("d.JSON", "d.jsonl", "./d", str(tmp_path / "d")):
        assert message_of(load_records, missing) == f"data file {missing!r} does not exist"
    assert message_of(load_records, "org/name") == (
        "data 'org/name' is neither a local file nor a folder: datasets are read offline, not downloaded; save it "
        "locally first, e.g. datasets.load_dataset('org/name', split='train').to_parquet('train.parquet'), and "
        "give that file"
    )
    (tmp_path / "d.csv").write_text("a\n1\n")
    assert message_of(load_records, tmp_path / "d.csv") == (
        f"data file {tmp_path / 'd.csv'} must end in .jsonl, .json or .parquet, got '.csv'"
    )
    (tmp_path / "UP.JSONL").write_text('{"a": 1}\n')
    assert load_records(tmp_path / "UP.JSONL") == [{"a": 1}]


def test_json_text_errors_name_the_line(tmp_path):
    """JSON lines: blank lines are skipped but counted; bytes that are not UTF-8 are named by line and byte
    offset; a JSON array (after any leading whitespace) is parsed whole, else the file is read as JSON lines."""
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"a": "\xff"}\n')  # the bad byte at offset 9 + 1 + 7 = 17, on line 3
    assert message_of(load_records, path) == f"data file {path}: line 3 is not UTF-8 text (byte 17)"
    path.write_text('{"a": 1}\n\n  \n{"a": 2}\n{"a" 3}\n')
    assert message_of(load_records, path) == f"data file {path}: line 5 is not valid JSON (Expecting ':' delimiter)"
    array = tmp_path / "d.json"
    array.write_text('\n  [{"a": 1},\n {"a": 2}]')
    assert load_records(array) == [{"a": 1}, {"a": 2}]
    array.write_text('[{"a": 1},\n{"a" 2}]')
    assert message_of(load_records, array) == f"data file {array} is not valid JSON (Expecting ':' delimiter at line 2)"
    array.write_text('{"a": 1}\n{"a": 2}\n')  # .json holding JSON lines
    assert load_records(array) == [{"a": 1}, {"a": 2}]
    path.write_text('[{"a": 1}]\n')  # JSON lines: an array on a line is one record
    assert message_of(load_records, path) == f"data file {path}: record 0 must be a JSON object, got list"


def test_records_must_be_objects_of_valid_text(tmp_path):
    path = tmp_path / "d.json"
    path.write_text("[]")
    assert message_of(load_records, path) == f"data file {path} holds no records"
    path.write_text('[{"a": 1}, [1]]')
    assert message_of(load_records, path) == f"data file {path}: record 1 must be a JSON object, got list"
    path.write_text('[{"a": "ok"}, {"a": "ok", "meta": {"tags": ["x", "\\ud800"]}}]')  # a lone surrogate, nested
    assert message_of(load_records, path) == (
        f"data file {path}: record 1, column 'meta.tags.1' holds text that is not valid UTF-8 (a lone surrogate, "
        "such as the JSON escape \\ud800 alone)"
    )
    path.write_text('[{"q": "\\ud800"}]')
    assert "record 0, column 'q' holds text" in message_of(load_records, path)
    path.write_text('[{"q": "fine \\u00e9", "n": [1, {"b": null}]}]')
    assert load_records(path) == [{"q": "fine \u00e9", "n": [1, {"b": None}]}]


def test_a_damaged_parquet_file_names_the_file_and_pyarrows_error(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    path.write_bytes(b"PAR1 not really parquet")
    with pytest.raises(Exception) as arrow:
        pq.read_table(path)
    assert message_of(load_records, path) == (
        f"data file {path} is not a readable Parquet file ({type(arrow.value).__name__}: {arrow.value})"
    )


def test_columns_are_top_level_keys_first_then_dotted_paths():
    from escov.llm.tasks.data_files import column_value, field

    record = {"a.b": 1, "a": {"b": 2, "c": {"d": 0}}, "n": 5}
    assert column_value(record, "a.b") == 1  # the top-level key wins
    assert column_value(record, "a.c.d") == 0
    assert column_value(record, "n.x") is None and column_value(record, "a.x") is None
    assert column_value(record, "zz") is None
    assert field(record, "answer", {"answer": "a.c.d"}, "rec") == 0  # a value 0 is there, not missing
    assert field(record, "n", None, "rec") == 5
    assert message_of(field, record, "answer", None, "rec") == "rec lacks the field 'answer'"
    assert message_of(field, record, "answer", {"answer": "a.x"}, "rec") == (
        "rec lacks the field 'answer' (mapped to the file's 'a.x')"
    )


def test_field_mappings_as_text_and_as_dicts():
    from escov.llm.tasks.data_files import check_fields, parse_fields

    assert parse_fields(" question = prompt , answer=reward_model.ground_truth ") == {
        "question": "prompt",
        "answer": "reward_model.ground_truth",
    }
    assert parse_fields("") is None and parse_fields("  ") is None
    for bad in ("question", "question=prompt=x", "=prompt", "question= ", "question=prompt,"):
        assert message_of(parse_fields, bad) == (
            f"data_fields must look like 'question=prompt,answer=solution', got {bad!r}"
        )
    assert (
        message_of(parse_fields, 3) == "data_fields must be a string such as 'question=prompt,answer=solution', got 3"
    )
    known = ("question", "answer")
    assert check_fields(None, known, "gsm8k") == {}
    given = {"answer": "a"}
    assert check_fields(given, known, "gsm8k") == given
    for bad in (["answer"], {"answer": 1}, {1: "a"}):
        assert message_of(check_fields, bad, known, "gsm8k") == (
            f"fields must map field names to column names (strings), got {bad!r}"
        )
    assert message_of(check_fields, {"zeta": "z", "beta": "b", "answer": "a"}, known, "gsm8k") == (
        "fields: task 'gsm8k' reads ['question', 'answer'], not ['beta', 'zeta']"
    )


def test_split_rules_by_hand(tmp_path):
    from escov.llm.tasks.data_files import train_records_of

    assert [train_records_of(r) for r in ("files", "paper", "first-1", "first-12")] == [None, 200, 1, 12]
    for bad in ("first-0", "first-", "first-x", "first--1", "first_10", "12", "last-3", "Files"):
        assert message_of(train_records_of, bad) == (
            f"data_split must be one of files | paper | first-N (N >= 1), got {bad!r}"
        )
    path = tmp_path / "d.json"
    path.write_text(json.dumps(RECORDS))  # 5 records: first-4 splits 4 and 1, first-5 none
    split = split_files(path, None, "first-4")
    assert split == {"train": [(str(path), i, RECORDS[i]) for i in range(4)], "test": [(str(path), 4, RECORDS[4])]}
    assert message_of(split_files, path, None, "first-5") == (
        f"data file {path}: data_split 'first-5' needs more than 5 records, it holds 5"
    )
    assert message_of(split_files, None, None, "paper") == (
        "data_split 'paper' takes both splits from one file: give data, not test_data"
    )
    assert split_files(None, None) == {}


def test_a_split_is_drawn_by_its_documented_generator_and_refused_when_absent_or_short():
    """sample_split draws n of the split without replacement with random.Random('task/split/seed')."""
    import random

    from escov.llm.tasks.data_files import no_split_data, sample_split

    pool = list(range(10))
    splits = {"train": pool}
    for n, seed in [(3, 0), (10, 5)]:
        assert sample_split("t", splits, "train", n, seed, "none") == random.Random(f"t/train/{seed}").sample(pool, n)
    assert message_of(sample_split, "t", splits, "test", 1, 0, "no test split") == "no test split"
    assert message_of(sample_split, "t", splits, "train", 11, 0, "none") == (
        "n=11 problems requested but the train data holds 10"
    )
    assert no_split_data("gsm8k", "validation") == (
        "task 'gsm8k' reads its problems from data files, which give a train and a test split but no validation "
        "split: choose settings on the train split (--split train)"
    )
    assert no_split_data("gsm8k", "train") == (
        "task 'gsm8k' has no train data: give data or a data_split such as 'paper' or 'first-N'"
    )
    assert no_split_data("gsm8k", "test") == (
        "task 'gsm8k' has no test data: give test_data or a data_split such as 'paper' or 'first-N'"
    )


def test_an_empty_dataset_object_is_named_in_its_error():
    assert message_of(load_records, datasets.Dataset.from_list([])) == "data file the given Dataset holds no records"
