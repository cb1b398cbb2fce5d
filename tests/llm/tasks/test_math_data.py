"""GSM8K / DeepScaleR files: loading, validation errors that name the record and field, math-verify."""

import json
import threading
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from escov.llm.tasks import get_task


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


GSM = [
    {"question": "Tom has 3 apples and buys 4. How many?", "answer": "3+4=7\n#### 7"},
    {"question": "What is 1,000 + 234?", "answer": "#### 1,234"},
]
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


@pytest.mark.parametrize(
    "records, message",
    [
        ([{"question": "q", "answer": "#### 1"}, {"question": "q2"}], r"record 1 lacks the field 'answer'"),
        ([{"answer": "#### 1"}], r"record 0 lacks the field 'question'"),
        ([{"question": "q", "answer": "1"}], r"record 0: field 'answer' must end in '#### N'"),
        ([{"question": "", "answer": "#### 1"}], r"record 0: field 'question' must be a non-empty string"),
        ([{"question": "q", "answer": ["1"]}], r"record 0: field 'answer' must be a string or a number"),
    ],
)
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


def test_each_reward_convention_scores_boxed_unboxed_right_and_wrong_answers(tmp_path):
    """rewards.py: escov gives 1 when correct (boxed or not), format_reward for a wrong boxed answer, else 0;
    paper-gsm8k gives 1 for a correct boxed answer, 0.1 for a wrong one, 0 without a box (even when right)."""
    path = write_jsonl(tmp_path / "g.jsonl", GSM[:1])
    answers = {
        "right boxed": r"so \boxed{7}",
        "wrong boxed": r"so \boxed{8}",
        "right plain": "the answer is 7",
        "wrong plain": "the answer is 8",
    }
    expected = {
        ("escov", 0.0): [1.0, 0.0, 1.0, 0.0],
        ("escov", 0.25): [1.0, 0.25, 1.0, 0.0],
        ("paper-gsm8k", 0.0): [1.0, 0.1, 0.0, 0.0],
    }
    for (reward, format_reward), scores in expected.items():
        task = get_task("gsm8k", test_data=path, reward=reward, format_reward=format_reward)
        problem = task.problems("test", 1, seed=0)[0]
        assert [task.score(problem, a) for a in answers.values()] == scores, (reward, format_reward)
    for reward, format_reward in [("paper-gsm8k", 0.25), ("escov", 1.0)]:  # a format reward only under escov, below 1
        with pytest.raises(ValueError, match="format_reward"):
            get_task("gsm8k", test_data=path, reward=reward, format_reward=format_reward)


def test_the_completion_length_bound_is_the_tasks_own(tmp_path):
    """max_completion_chars bounds what score and answer read: a completion one character over it has no answer."""
    task = get_task("gsm8k", test_data=write_jsonl(tmp_path / "g.jsonl", GSM[:1]), max_completion_chars=100)
    problem = task.problems("test", 1, seed=0)[0]
    fits, over = "x" * 90 + r"\boxed{7}", "x" * 92 + r"\boxed{7}"
    assert (len(fits), len(over)) == (99, 101)
    assert task.score(problem, fits) == 1.0 and task.answer(problem, fits) == "7"
    assert task.score(problem, over) == 0.0 and task.answer(problem, over) is None
    assert get_task("gsm8k", test_data=tmp_path / "g.jsonl", max_completion_chars=1).size("test") == 1  # the least
    for bad in (0, True, 1.5, "100"):
        with pytest.raises(ValueError) as err:
            get_task("gsm8k", test_data=tmp_path / "g.jsonl", max_completion_chars=bad)
        assert str(err.value) == f"max_completion_chars must be an integer >= 1, got {bad!r}"


def test_gold_answers_of_each_format_by_hand():
    """gsm8k: the text after the last '####', stripped, thousands commas dropped; deepscaler: the answer as
    written, numbers as their text; errors name the record and the field."""
    from escov.llm.tasks.math_data import gold_answer

    assert gold_answer("gsm8k", {"question": "q", "answer": "a #### 2 #### 1,234 \n"}, "r") == ("q", "1234")
    assert gold_answer("gsm8k", {"question": "q", "answer": "3+4=7\n####7"}, "r") == ("q", "7")
    assert gold_answer("deepscaler", {"problem": "p", "answer": 4}, "r") == ("p", "4")
    assert gold_answer("deepscaler", {"problem": "p", "answer": 2.5}, "r") == ("p", "2.5")
    assert gold_answer("deepscaler", {"problem": "p", "answer": " x^2 "}, "r") == ("p", "x^2")
    assert gold_answer("deepscaler", {"text": "p", "sol": "3"}, "r", {"problem": "text", "answer": "sol"}) == ("p", "3")
    for record, message in [
        ({"question": "q", "answer": "7"}, "rec: field 'answer' must end in '#### N' (GSM8K format)"),
        ({"question": "q", "answer": "7 ####  "}, "rec: the gold answer is empty"),
        ({"question": " \n", "answer": "#### 7"}, "rec: field 'question' must be a non-empty string"),
        ({"question": 5, "answer": "#### 7"}, "rec: field 'question' must be a non-empty string"),
        ({"question": "q", "answer": True}, "rec: field 'answer' must be a string or a number"),
        ({"question": "q", "answer": None}, "rec lacks the field 'answer'"),
    ]:
        with pytest.raises(ValueError) as err:
            gold_answer("gsm8k", record, "rec")
        assert str(err.value) == message, record
    with pytest.raises(ValueError) as err:
        gold_answer("deepscaler", {"problem": "p", "answer": " "}, "rec")
    assert str(err.value) == "rec: the gold answer is empty"


def test_prompts_of_each_style():
    from escov.llm.tasks.math_data import format_prompt

    assert format_prompt("What is 2+2?", "plain") == (
        "What is 2+2?\nPlease reason step by step, and put your final answer within \\boxed{}."
    )
    assert format_prompt("What is 2+2?", "instruct") == (
        "What is 2+2?\nShow your reasoning in <think> </think> tags, then give the final answer within \\boxed{}."
    )
    paper = format_prompt(" What is 2+2? ", "paper")
    assert paper.chat and paper.messages == (
        {"role": "system", "content": "Please reason step by step, and put your final answer within \\boxed{}."},
        {"role": "user", "content": "What is 2+2?"},
    )
    with pytest.raises(ValueError, match="prompt_style must be one of"):
        format_prompt("q", "chat")


def test_a_task_refuses_an_unknown_format_and_no_data_naming_them(tmp_path):
    from escov.llm.tasks.math_data import MathData

    with pytest.raises(ValueError) as err:
        MathData("math", test_data=tmp_path / "g.jsonl")
    assert str(err.value) == "math dataset format must be one of ['deepscaler', 'gsm8k'], got 'math'"
    with pytest.raises(ValueError) as err:
        MathData("gsm8k")
    assert str(err.value) == (
        "task 'gsm8k' needs a data file: pass data and/or test_data (--data PATH, --test_data PATH)"
    )


def test_the_verifier_alone_reads_no_data_file_grades_a_rows_gold_and_has_no_problems():
    """records_needed=False (the coverage analyzer's --task gsm8k): the grade under the task's reward convention."""
    from escov.llm.tasks.base import Problem
    from escov.llm.tasks.math_data import MathData

    task = MathData("gsm8k", records_needed=False, format_reward=0.1)
    gold = Problem("g", "", {"gold": "#### 42"})
    assert [task.score(gold, c) for c in ("\\boxed{42}", "\\boxed{41}", "42")] == [1.0, 0.1, 1.0]
    with pytest.raises(ValueError, match="gsm8k"):
        task.problems("test", 1, 0)


def test_problems_keep_their_record_index_and_split_and_each_split_its_size(tmp_path):
    """A problem's id is format/split/index in its file; a record whose gold cannot be parsed leaves a gap."""
    records = [{"problem": f"p{i}", "answer": str(i)} for i in range(150)]
    records[3]["answer"] = "\\frac{"
    path = write_jsonl(tmp_path / "d.jsonl", records)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        task = get_task("deepscaler", data=path, data_split="first-100")
    assert (task.size("train"), task.size("test"), task.size("validation")) == (99, 50, 0)
    train = task.problems("train", 99, seed=0)
    assert sorted(int(p.id.split("/")[-1]) for p in train) == [i for i in range(100) if i != 3]
    assert {p.id.rsplit("/", 1)[0] for p in train} == {"deepscaler/train"}
    test = task.problems("test", 50, seed=0)
    assert {p.id for p in test} == {f"deepscaler/test/{i}" for i in range(100, 150)}
    assert all(
        p.meta["gold"] == p.id.split("/")[-1] and p.prompt.startswith(f"p{p.id.split('/')[-1]}\n") for p in train + test
    )
    assert task.unparseable == {"train": [(str(path), 3, "\\frac{")], "test": []}
    assert [str(w.message) for w in caught] == [
        f"data file {path}: 1 of 100 gold answers cannot be parsed by math-verify (record 3: '\\\\frac{{'); "
        "those records are left out"
    ]


def test_at_most_one_percent_of_golds_may_be_unparseable_and_three_are_shown(tmp_path):
    """1 of 100 unparseable golds is a warning; 2 of 100 (or 4 of 200, above 1%) an error that shows the first
    three, each cut to 60 characters."""
    long_bad = "\\frac{" + "1" * 80
    records = [{"problem": f"p{i}", "answer": str(i)} for i in range(200)]
    for i in (5, 7, 9, 11):
        records[i]["answer"] = long_bad
    path = write_jsonl(tmp_path / "d.jsonl", records)
    with pytest.raises(ValueError) as err:
        get_task("deepscaler", test_data=path)
    shown = repr(long_bad[:60])
    assert str(err.value) == (
        f"data file {path}: 4 of 200 gold answers cannot be parsed by math-verify (record 5: "
        f"{shown}; record 7: {shown}; record 9: {shown}); more than 1% of the file"
    )
    records[9]["answer"] = records[11]["answer"] = "1"
    with warnings.catch_warnings(record=True) as caught:  # 2 of 200: exactly 1%
        warnings.simplefilter("always")
        assert get_task("deepscaler", test_data=write_jsonl(path, records)).size("test") == 198
    assert len(caught) == 1 and "2 of 200 gold answers" in str(caught[0].message)


def test_problems_are_drawn_by_the_documented_generator_and_a_missing_split_is_named(tmp_path):
    """A split's problems (in file order) drawn without replacement by random.Random('format/split/seed')."""
    import random

    records = [{"question": f"q{i}", "answer": f"#### {i}"} for i in range(8)]
    task = get_task("gsm8k", test_data=write_jsonl(tmp_path / "g.jsonl", records))
    in_order = [f"gsm8k/test/{i}" for i in range(8)]
    for n, seed in [(3, 0), (8, 7)]:
        assert [p.id for p in task.problems("test", n, seed)] == random.Random(f"gsm8k/test/{seed}").sample(in_order, n)
    with pytest.raises(ValueError) as err:
        task.problems("train", 1, seed=0)
    assert str(err.value) == "task 'gsm8k' has no train data: give data or a data_split such as 'paper' or 'first-N'"
