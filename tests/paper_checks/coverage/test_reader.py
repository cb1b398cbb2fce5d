"""The trainers' completion readers (paper_checks/coverage/reader.py) on the cases the layout tests leave open: verl
without an `acc` column (its score against the threshold), a TRL log in its output folder with a step whose reward is
missing, and an escov run directory's base and final evaluations with their seeds and names; each count by hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from escov.paper_checks.coverage.sources import ReadOptions, load
from escov.paper_checks.coverage.table import InputError

SCORES = {"q0": [0.9, 0.2, 0.5, 0.0], "q1": [0.0, 0.0, 0.49, 0.0], "q2": [1.0, 0.6, 0.5, 0.51]}


def test_a_verl_dump_without_acc_is_correct_where_its_score_reaches_the_threshold(tmp_path):
    for step, shift in ((9, 0.0), (10, 0.1)):  # two dumps: 9.jsonl and 10.jsonl, each its own step
        lines = [
            {"input": f"prompt {p}", "output": f"out {i}", "score": s + shift, "step": step}
            for p, scores in SCORES.items()
            for i, s in enumerate(scores)
        ]
        (tmp_path / f"{step}.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    cov = load([str(tmp_path)], ReadOptions(threshold=0.5))
    assert sorted(cov.models) == ["step 10", "step 9"]
    for step, shift in ((9, 0.0), (10, 0.1)):
        m = cov.models[f"step {step}"]
        counts = dict(zip(m.prompt_ids, m.counts[0].tolist()))
        assert counts == {f"prompt {p}": sum(s + shift >= 0.5 for s in scores) for p, scores in SCORES.items()}


def test_a_trl_output_folders_logs_are_read_and_a_missing_reward_is_named(tmp_path):
    (tmp_path / "completions").mkdir()
    for step in (1, 2):
        rows = [
            {"step": step, "prompt": f"p{p}", "completion": f"c{i}", "accuracy": float(i < p + step - 1)}
            for p in range(3)
            for i in range(3)
        ]
        pd.DataFrame(rows).to_parquet(tmp_path / "completions" / f"completions_{step:05d}.parquet")
    cov = load([str(tmp_path)], ReadOptions(reward_columns=["accuracy"]))
    assert {name: m.counts[0].tolist() for name, m in cov.models.items()} == {"step 1": [0, 1, 2], "step 2": [1, 2, 3]}
    rows = [{"step": 3, "prompt": "p0", "completion": "c", "accuracy": None, "advantage": 0.0}]
    pd.DataFrame(rows).to_parquet(tmp_path / "completions" / "completions_00003.parquet")
    with pytest.raises(InputError, match=r"00003.parquet row 1, column 'reward': expected a number, got no value$"):
        load([str(tmp_path)], ReadOptions(reward_columns=["accuracy"]))


def test_an_escov_run_gives_its_base_and_final_counts_each_with_its_own_seed_and_name(tmp_path):
    per = lambda counts: [{"id": f"p{i}", "correct": c} for i, c in enumerate(counts)]  # noqa: E731
    evals = {
        "base": {"n": 8, "seed": 5, "per_problem": per([1, 0, 8])},
        "final": {"n": 8, "seed": 9, "per_problem": per([3, 2, 8])},
    }
    (tmp_path / "eval.json").write_text(json.dumps(evals))
    (tmp_path / "config.json").write_text(json.dumps({"algo": "es", "seed": 2}))
    cov = load([str(tmp_path)], ReadOptions())
    assert {n: (m.counts.tolist(), m.seeds, m.n) for n, m in cov.models.items()} == {
        "base": ([[1, 0, 8]], [5], 8),
        "es": ([[3, 2, 8]], [2], 8),  # the run's seed for its final model, the evaluation's for the base
    }
    named = load([f"mine={tmp_path}"], ReadOptions())
    assert sorted(named.models) == ["base", "mine"]
    (tmp_path / "eval.json").write_text(json.dumps({"final": {"seed": 1, "per_problem": per([1])}}))
    with pytest.raises(InputError, match=r"eval.json: evaluation 'final' lacks per_problem or n$"):
        load([str(tmp_path)], ReadOptions())
    (tmp_path / "eval.json").write_text(json.dumps({"other": {}}))
    with pytest.raises(InputError, match=r"eval.json: no base or final evaluation$"):
        load([str(tmp_path)], ReadOptions())


def test_each_layout_is_detected_from_what_it_holds(tmp_path):
    from escov.paper_checks.coverage.reader import detect

    def folder(name: str, files: dict) -> object:
        path = tmp_path / name
        for rel, text in files.items():
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            (path / rel).write_text(text)
        return path

    assert detect(folder("run", {"eval.json": "{}", "0.jsonl": "{}"})) == "escov"
    assert detect(folder("trl", {"completions/completions_00001.parquet": ""})) == "trl"
    assert detect(folder("trl-flat", {"completions_00001.parquet": ""})) == "trl"
    assert detect(folder("verl", {"3.jsonl": "{}"})) == "verl"
    with pytest.raises(InputError, match=r"a folder with no eval.json, TRL completions_\*.parquet or verl"):
        detect(folder("empty", {"notes.txt": "x"}))
    with pytest.raises(InputError, match=r"missing.jsonl: no such file$"):
        detect(tmp_path / "missing.jsonl")
    files = {
        "es.json": json.dumps([{"generated_text": "x", "input_text": "q"}]),
        "table.json": json.dumps([{"prompt_id": "q", "correct": 1}]),
        "verl.jsonl": json.dumps({"input": "q", "output": "a", "score": 1.0}) + "\n",
        "ids.jsonl": json.dumps({"input": "q", "output": "a", "score": 1.0, "prompt_id": "q"}) + "\n",
        "completions_00002.parquet": "",
        "other.parquet": "",
        "empty.jsonl": "",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    got = {name: detect(tmp_path / name) for name in files}
    assert got == {
        "es.json": "es-at-scale",
        "table.json": "plain",
        "verl.jsonl": "verl",
        "ids.jsonl": "plain",  # verl's keys with an explicit prompt id: a plain table
        "completions_00002.parquet": "trl",
        "other.parquet": "plain",
        "empty.jsonl": "plain",
    }
    (tmp_path / "bad.jsonl").write_text("not json\n")
    with pytest.raises(InputError, match=r"bad.jsonl line 1: not a JSON object$"):
        detect(tmp_path / "bad.jsonl")


def test_a_models_steps_become_models_of_their_own_only_when_it_has_several():
    from escov.paper_checks.coverage.reader import _steps_as_models

    df = pd.DataFrame({"model": ["a", "a", "b", "b"], "step": [10, 20, 5, 5]})
    assert _steps_as_models(df.copy())["model"].tolist() == ["a step 10", "a step 20", "b step 5", "b step 5"]
    one_each = pd.DataFrame({"model": ["a", "b"], "step": [10, 5]})
    assert _steps_as_models(one_each.copy())["model"].tolist() == ["a", "b"]
    unnamed = pd.DataFrame({"step": [1, 2]})
    assert _steps_as_models(unnamed)["model"].tolist() == ["step 1", "step 2"]


def test_each_trainers_missing_column_and_bad_value_is_named_with_its_file_and_place(tmp_path):
    from escov.paper_checks.coverage.reader import es_at_scale, trl, verl

    pd.DataFrame([{"step": 1, "prompt": "p", "score": 1.0}]).to_parquet(tmp_path / "completions_00001.parquet")
    with pytest.raises(InputError) as err:
        trl(tmp_path, [])
    assert str(err.value) == (
        f"{tmp_path / 'completions_00001.parquet'}: column 'completion' is missing (not a TRL completions log)"
    )
    pd.DataFrame([{"step": 1, "prompt": "p", "completion": "c", "acc": 1.0}]).to_parquet(tmp_path / "c.parquet")
    with pytest.raises(InputError) as err:
        trl(tmp_path / "c.parquet", ["accuracy"])
    assert str(err.value) == (
        f"{tmp_path / 'c.parquet'}: --reward-column 'accuracy' is not a column "
        "(columns: ['step', 'prompt', 'completion', 'acc', 'src', 'pos'])"
    )
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "3.jsonl").write_text(json.dumps({"input": "p", "output": "o"}) + "\n")
    with pytest.raises(InputError) as err:
        verl(tmp_path / "v")
    assert str(err.value) == f"{tmp_path / 'v' / '3.jsonl'}: column 'score' is missing (not a verl generations dump)"
    records = [{"input_text": "p", "generated_text": "g", "reward_info": {"answer_reward": 1.0}} for _ in range(3)]
    records[1]["reward_info"], records[2]["reward_info"] = {"format_reward": 1.0}, "no dict"  # the first is named
    (tmp_path / "e.json").write_text(json.dumps(records))
    with pytest.raises(InputError) as err:
        es_at_scale(tmp_path / "e.json")
    assert str(err.value) == f"{tmp_path / 'e.json'} record 2, column 'reward_info': expected answer_reward, a number"
    (tmp_path / "f.json").write_text(json.dumps([{"input_text": "p", "generated_text": "g"}]))
    with pytest.raises(InputError) as err:
        es_at_scale(tmp_path / "f.json")
    assert str(err.value) == (
        f"{tmp_path / 'f.json'}: column 'reward_info' is missing (not es-at-scale's eval_detailed_results.json)"
    )


def test_a_jsonl_file_with_blank_lines_keeps_every_row_at_its_line_and_a_bad_line_is_named(tmp_path):
    from escov.paper_checks.coverage.reader import read_records

    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n\n  \n{"a": 2}\n{"a": 3}\n\n')
    df = read_records(path)
    assert df["a"].tolist() == [1, 2, 3] and df["pos"].tolist() == [1, 4, 5] and set(df["src"]) == {f"{path} line"}
    path.write_text('{"a": 1}\n{"a": 2}\n')  # no blank line: read whole, row i at line i
    assert read_records(path)["pos"].tolist() == [1, 2]
    path.write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(InputError) as err:
        read_records(path)
    assert str(err.value) == f"{path} line 2: expected a JSON object, got list"
    path.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(InputError, match=rf"^{path} line 2: not JSON \("):
        read_records(path)
    bad = tmp_path / "b.json"
    bad.write_text("{")
    with pytest.raises(InputError, match=rf"^{bad}: not JSON \(Expecting property name"):
        read_records(bad)


def test_a_csv_rows_places_are_its_lines_after_the_header(tmp_path):
    from escov.paper_checks.coverage.reader import read_records

    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,x\n2,y\n")
    df = read_records(path)
    assert df["pos"].tolist() == [2, 3] and set(df["src"]) == {f"{path} line"} and df["a"].tolist() == [1, 2]


def test_chat_prompts_are_one_prompt_whatever_their_keys_order_and_a_parquet_list_reads_as_its_json(tmp_path):
    """TRL's conversational prompts: a list of messages, read from parquet as an array of dicts; the prompt's id is
    its JSON with sorted keys, so two rows whose messages list their keys in another order are one prompt."""
    from escov.paper_checks.coverage.reader import _text, trl

    one = [{"role": "user", "content": "solve 1"}]
    other_order = [{"content": "solve 1", "role": "user"}]
    assert _text(one) == _text(other_order) == json.dumps(one, sort_keys=True)
    rows = [
        {"step": 1, "prompt": p, "completion": [{"role": "assistant", "content": c}], "accuracy": a}
        for p, c, a in ((one, "x", 1.0), (other_order, "y", 0.0))
    ]
    pd.DataFrame(rows).to_parquet(tmp_path / "completions_00001.parquet")
    df = trl(tmp_path, [])
    assert df["prompt_id"].nunique() == 1 and df["prompt_id"][0] == json.dumps(one, sort_keys=True)
    assert df["completion"].tolist() == [
        json.dumps([{"content": c, "role": "assistant"}], sort_keys=True) for c in ("x", "y")
    ]
    assert df["reward"].tolist() == [1.0, 0.0] and df["model"].tolist() == ["step 1", "step 1"]


def test_verl_dumps_are_read_in_step_order_and_es_at_scale_answers_above_0_are_correct(tmp_path):
    from escov.paper_checks.coverage.reader import es_at_scale, verl

    for step in (10, 9):  # written out of order; "10" sorts before "9" as text
        (tmp_path / f"{step}.jsonl").write_text(
            json.dumps({"input": "p", "output": f"o{step}", "score": 1.0, "step": step}) + "\n"
        )
    df = verl(tmp_path)
    assert df["completion"].tolist() == ["o9", "o10"] and df["model"].tolist() == ["step 9", "step 10"]
    records = [
        {"input_text": f"p{i}", "generated_text": f"g{i}", "reward_info": {"answer_reward": r}}
        for i, r in enumerate((0.0, 0.5, -1.0, 2))
    ]
    (tmp_path / "e.json").write_text(json.dumps(records))
    df = es_at_scale(tmp_path / "e.json")
    assert df["correct"].tolist() == [0, 1, 0, 1]
    assert df["prompt_id"].tolist() == ["p0", "p1", "p2", "p3"] and df["completion"].tolist() == [
        "g0",
        "g1",
        "g2",
        "g3",
    ]


def test_an_escov_run_without_a_config_is_named_final_at_seed_0(tmp_path):
    from escov.paper_checks.coverage.reader import escov_run

    per = [{"id": 7, "correct": 3}, {"id": "b", "correct": 0}]
    (tmp_path / "eval.json").write_text(
        json.dumps({"base": {"n": 4, "per_problem": per}, "final": {"n": 4, "per_problem": per}})
    )
    base, final = escov_run(tmp_path, None)
    assert (base.name, final.name) == ("base", "final") and base.seeds == final.seeds == [0]
    assert final.prompt_ids == ["7", "b"] and final.counts.dtype == np.int64 and final.counts.tolist() == [[3, 0]]


def test_a_jsonl_object_over_several_lines_is_refused_at_its_first_line(tmp_path):
    """pyarrow reads a pretty-printed object as one row though it spans 3 lines: the row count then differs from the
    line count, and the line reader names the line that is no JSON object."""
    from escov.paper_checks.coverage.reader import read_records

    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n{\n "a": 2}\n')
    with pytest.raises(InputError, match=rf"^{path} line 2: not JSON \("):
        read_records(path)


def test_a_json_table_must_be_a_list_of_objects_and_an_unknown_suffix_is_named(tmp_path):
    from escov.paper_checks.coverage.reader import read_records

    for text in ('{"a": 1}', "[1, 2]", '[{"a": 1}, 2]'):
        (tmp_path / "t.json").write_text(text)
        with pytest.raises(InputError) as err:
            read_records(tmp_path / "t.json")
        assert str(err.value) == f"{tmp_path / 't.json'}: expected a JSON list of records"
    with pytest.raises(InputError) as err:
        read_records(tmp_path / "t.txt")
    assert (
        str(err.value) == f"{tmp_path / 't.txt'}: unknown table type '.txt' (expected .jsonl, .csv, .parquet or .json)"
    )


def test_a_source_is_named_by_what_comes_before_its_first_equals_sign_unless_the_path_exists(tmp_path):
    from escov.paper_checks.coverage.reader import split_source

    assert split_source("base=runs/lr=1e-4") == ("base", Path("runs/lr=1e-4"))
    assert split_source("missing.jsonl") == (None, Path("missing.jsonl"))
    (tmp_path / "lr=3").mkdir()
    assert split_source(str(tmp_path / "lr=3")) == (None, tmp_path / "lr=3")


def test_a_chat_message_holding_an_array_is_written_as_text():
    from escov.paper_checks.coverage.reader import _text

    message = [{"role": "user", "content": np.array([1, 2])}]
    assert json.loads(_text(message)) == [{"content": "[1 2]", "role": "user"}]  # the array as its printed text
    assert _text(message).index('"content"') < _text(message).index('"role"')  # keys sorted


def test_a_trl_log_with_a_correct_column_needs_no_reward_column_and_a_missing_reward_is_no_zero(tmp_path):
    from escov.paper_checks.coverage.reader import trl

    rows = [{"step": 1, "prompt": "p", "completion": "c", "correct": c, "fmt": 0.5, "acc": 1.0} for c in (1, 0)]
    pd.DataFrame(rows).to_parquet(tmp_path / "completions_00001.parquet")
    df = trl(tmp_path, [])  # two reward-like columns and correct: correct decides
    assert df["correct"].tolist() == [1, 0] and "reward" not in df.columns
    (tmp_path / "one").mkdir()
    rows = [{"step": 1, "prompt": "p", "completion": "c", "acc": a} for a in (1.0, None)]
    pd.DataFrame(rows).to_parquet(tmp_path / "one" / "completions_00001.parquet")
    assert trl(tmp_path / "one", [])["reward"].isna().tolist() == [False, True]  # the only reward column, not 0


def test_a_verl_dump_may_be_given_as_its_file(tmp_path):
    from escov.paper_checks.coverage.reader import verl

    (tmp_path / "7.jsonl").write_text(json.dumps({"input": "p", "output": "o", "score": 1.0, "step": 7}) + "\n")
    (tmp_path / "8.jsonl").write_text(json.dumps({"input": "p", "output": "q", "score": 0.0, "step": 8}) + "\n")
    df = verl(tmp_path / "7.jsonl")
    assert df["completion"].tolist() == ["o"] and df["reward"].tolist() == [1.0]
