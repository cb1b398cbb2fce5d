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
    with pytest.raises(ValueError, match=r"reads \['question', 'answer'\], not \['solution'\]"):
        get_task("gsm8k", test_data=path, fields={"solution": "a"})


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


@pytest.mark.parametrize("text, message", [
    ('[{"numbers": [1, 2], "target": 3}, 7]', "record 1 must be a JSON object, got int"),
    ('[{"numbers": [1, 2], "target": 3}', "is not valid JSON"),
    ('[{"numbers": [1, 2.5], "target": 3}]', "record 0: field 'numbers' must be a non-empty list of integers"),
    ('[{"numbers": [1, 2], "target": [3]}]', "record 0: field 'target' must be an integer or a number written as a string"),
    ('[{"numbers": [1, 2], "target": "3/0"}]', "record 0: field 'target' is not a number"),
    ('[{"numbers": [1, 2]}]', "record 0 lacks the field 'target'"),
])
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
    cfg = TrainConfig(task="gsm8k", data=str(path), data_split="first-2", data_fields="question=q,answer=a",
                      prompt_style="paper", reward="paper-gsm8k")
    kwargs = cfg.task_kwargs()
    assert kwargs == {"data": str(path), "data_split": "first-2", "fields": {"question": "q", "answer": "a"},
                      "prompt_style": "paper", "reward": "paper-gsm8k"}
    task = get_task("gsm8k", **kwargs)
    assert (task.size("train"), task.size("test")) == (2, 3)
    assert TrainConfig().task_kwargs() == {}  # the generated Countdown task, as before
    for bad, message in [({"data_fields": "question"}, "data_fields must look like"),
                         ({"data_split": "half"}, "data_split must be one of"),
                         ({"prompt_style": "chat"}, "prompt_style must be one of"),
                         ({"reward": "paper-gsm8k"}, "reward 'paper-gsm8k' is for the tasks")]:
        with pytest.raises(ValueError, match=message):
            TrainConfig(**bad)
