"""GSM8K / DeepScaleR files: loading, validation errors that name the record and field, math-verify."""
import json
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from escov.llm.tasks import get_task


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


GSM = [{"question": "Tom has 3 apples and buys 4. How many?", "answer": "3+4=7\n#### 7"},
       {"question": "What is 1,000 + 234?", "answer": "#### 1,234"}]
DSR = [{"problem": "What is 1/2 + 1/4?", "answer": "\\frac{3}{4}"}, {"problem": "2+2?", "answer": 4}]


def test_gsm8k_jsonl(tmp_path):
    task = get_task("gsm8k", test_data=write_jsonl(tmp_path / "g.jsonl", GSM))
    assert task.size("test") == 2
    probs = task.problems("test", 2, seed=0)
    by_gold = {p.meta["gold"]: p for p in probs}
    assert set(by_gold) == {"7", "1234"}
    p = by_gold["7"]
    assert p.prompt.startswith(GSM[0]["question"]) and "\\boxed{}" in p.prompt
    assert task.score(p, "So the answer is \\boxed{7}.") == 1.0
    assert task.score(p, "The answer is 7") == 1.0
    assert task.score(p, "\\boxed{8}") == 0.0
    assert task.score(p, "no idea") == 0.0
    assert task.score(by_gold["1234"], "\\boxed{1234}") == 1.0
    assert task.answer(p, "\\boxed{7}") == task.answer(p, "The answer is 7") == "7"
    assert task.answer(p, "no idea") is None
    with pytest.raises(ValueError, match="has no train data: give data"):
        task.problems("train", 1, seed=0)
    with pytest.raises(ValueError, match="holds 2"):
        task.problems("test", 3, seed=0)


def test_deepscaler_parquet_and_equivalent_forms(tmp_path):
    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist([{"problem": r["problem"], "answer": str(r["answer"])} for r in DSR]), path)
    task = get_task("deepscaler", data=path)
    p = [q for q in task.problems("train", 2, seed=0) if q.meta["gold"] == "\\frac{3}{4}"][0]
    assert task.score(p, "We get \\boxed{0.75}") == 1.0
    assert task.score(p, "We get \\boxed{\\frac{6}{8}}") == 1.0
    assert task.score(p, "We get \\boxed{\\frac{2}{3}}") == 0.0


def test_scoring_off_the_main_thread(tmp_path):
    """math-verify's alarm works only in the main thread; off it we score without the alarm."""
    task = get_task("gsm8k", test_data=write_jsonl(tmp_path / "g.jsonl", GSM))
    p = [q for q in task.problems("test", 2, seed=0) if q.meta["gold"] == "7"][0]
    out = []
    t = threading.Thread(target=lambda: out.append((task.score(p, "\\boxed{7}"), task.score(p, "\\boxed{9}"))))
    t.start()
    t.join()
    assert out == [(1.0, 0.0)]
    assert task.score(p, "x" * 30_000 + "\\boxed{7}") == 1.0  # long chain-of-thought is normal
    assert task.score(p, "x" * 70_000 + "\\boxed{7}") == 0.0  # over the length bound


@pytest.mark.parametrize("records, message", [
    ([{"question": "q", "answer": "#### 1"}, {"question": "q2"}], r"record 1 lacks the field 'answer'"),
    ([{"answer": "#### 1"}], r"record 0 lacks the field 'question'"),
    ([{"question": "q", "answer": "1"}], r"record 0: field 'answer' must end in '#### N'"),
    ([{"question": "", "answer": "#### 1"}], r"record 0: field 'question' must be a non-empty string"),
    ([{"question": "q", "answer": ["1"]}], r"record 0: field 'answer' must be a string or a number"),
])
def test_bad_records_name_record_and_field(tmp_path, records, message):
    with pytest.raises(ValueError, match=message):
        get_task("gsm8k", test_data=write_jsonl(tmp_path / "bad.jsonl", records))


def test_bad_files(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        get_task("gsm8k", test_data=tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="holds no records"):
        get_task("gsm8k", test_data=tmp_path / "empty.jsonl")
    (tmp_path / "broken.jsonl").write_text('{"question": "q", "answer": "#### 1"}\n{oops\n')
    with pytest.raises(ValueError, match="line 2 is not valid JSON"):
        get_task("gsm8k", test_data=tmp_path / "broken.jsonl")
    (tmp_path / "data.csv").write_text("question,answer\n")
    with pytest.raises(ValueError, match=r"\.jsonl, \.json or \.parquet"):
        get_task("gsm8k", test_data=tmp_path / "data.csv")
    with pytest.raises(ValueError, match="needs a data file"):
        get_task("deepscaler")
    with pytest.raises(ValueError, match="record 0 lacks the field 'problem'"):
        get_task("deepscaler", test_data=write_jsonl(tmp_path / "g.jsonl", GSM))


def test_json_array_file(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(DSR))
    assert get_task("deepscaler", test_data=tmp_path / "a.json").size("test") == 2
