"""The coverage table (paper_checks/coverage/table.py) built from rows written here: each model's counts per seed and
prompt by hand, its answers in row order, and each refusal's whole message naming the file, row and column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from escov.paper_checks.coverage.table import Coverage, InputError, ModelCounts


def _rows(spec: list[tuple]) -> pd.DataFrame:
    """(model, seed, prompt, sample, correct[, solution]) rows, "t.jsonl line i" their place."""
    cols = ["model", "seed", "prompt_id", "sample", "correct", "solution"][: len(spec[0])]
    df = pd.DataFrame(spec, columns=cols)
    df["src"], df["pos"] = "t.jsonl", [f"line {i + 1}" for i in range(len(df))]
    return df


def test_each_models_counts_are_its_correct_samples_per_seed_and_prompt():
    rows = [
        ("rl", 7, "b", 0, 1, "x"),
        ("rl", 3, "a", 0, 0, None),
        ("rl", 7, "a", 0, True, "y"),
        ("rl", 3, "b", 0, 1, "x"),
        ("rl", 7, "b", 1, 1, "z"),
        ("rl", 3, "a", 1, 1, "y"),
        ("rl", 7, "a", 1, 0, float("nan")),
        ("rl", 3, "b", 1, 0, "w"),
        ("base", 0, "a", 0, 0, None),
        ("base", 0, "a", 1, 0, None),
        ("base", 0, "b", 0, 1, "x"),
        ("base", 0, "b", 1, 1, "x"),
    ]
    cov = Coverage.from_rows(_rows(rows), "t.jsonl")
    rl = cov.models["rl"]
    assert (rl.n, rl.seeds, rl.prompt_ids) == (2, [3, 7], ["b", "a"])  # seeds sorted, prompts in first-seen order
    assert rl.counts.tolist() == [[1, 1], [2, 1]]  # seed 3: b 1, a 1; seed 7: b 2, a 1
    assert rl.answers[1][1] == (["y", None], [True, False], ["y", None])  # seed 7, prompt a: in row order
    assert cov.aligned("base").tolist() == [[2, 0]]  # base's counts in rl's prompt order (b, a)
    assert cov.models["base"].counts.tolist() == [[0, 2]]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda df: df.assign(correct=[1, 2, 0, 1, 1, 0]), "t.jsonl line 2, column 'correct': expected 0 or 1, got 2"),
        (
            lambda df: df.assign(correct=[1, "yes", 0, 1, 1, 0]),
            "t.jsonl line 2, column 'correct': expected 0 or 1, got 'yes'",
        ),
        (
            lambda df: df.assign(sample=[0, 0, 0, 1, 0, 1]),
            "t.jsonl line 2, column 'sample': duplicate sample id '0' of prompt 'a' "
            "(model 'm', seed 0); first at t.jsonl line 1",
        ),
        (
            lambda df: df.assign(prompt_id=["a", None, "b", "b", "c", "c"]),
            "t.jsonl line 2, column 'prompt_id': expected a value, got none",
        ),
        (
            lambda df: df.assign(model=["m", "m", "m", None, "m", "m"]),
            "t.jsonl line 4, column 'model': expected a value, got none",
        ),
        (
            lambda df: df.assign(sample=[0, 1, 0, None, 0, 1]),
            "t.jsonl line 4, column 'sample': expected a value, got none",
        ),
        (
            lambda df: df.iloc[:5],
            "t.jsonl: mixed sample counts: prompt 'c' of model 'm' (seed 0) has 1 samples (its last at "
            "t.jsonl line 5), the others 2; every prompt needs the same n",
        ),
        (lambda df: df.iloc[:0], "t.jsonl: no rows"),
        (
            lambda df: df.drop(columns="sample"),
            "t.jsonl: column 'sample' is missing (each row needs prompt_id and correct, "
            "or a reward, or --task/--reward-function to score its completion)",
        ),
    ],
)
def test_a_bad_table_is_refused_naming_its_file_row_and_column(change, message):
    df = _rows([("m", 0, p, i, (i + j) % 2) for j, p in enumerate("abc") for i in range(2)])  # 3 prompts x 2
    with pytest.raises(InputError) as err:
        Coverage.from_rows(change(df), "t.jsonl")
    assert str(err.value) == message


def test_a_seed_without_a_prompt_its_other_seeds_have_is_refused():
    df = _rows([("m", 0, "a", 0, 1), ("m", 0, "b", 0, 0), ("m", 1, "a", 0, 1), ("m", 1, "a", 1, 1)][:3])
    df = pd.concat([df, _rows([("m", 1, "c", 0, 1)])], ignore_index=True)
    with pytest.raises(InputError, match=r"^t.jsonl: model 'm' seed 0 has no samples of prompt 'c' that its other"):
        Coverage.from_rows(df, "t.jsonl")


def test_models_must_share_their_prompts_and_their_sample_count():
    a = ModelCounts("a", 4, ["p", "q"], np.array([[1, 2]]))
    with pytest.raises(InputError) as err:
        Coverage("s", {"a": a, "b": ModelCounts("b", 4, ["p"], np.array([[1]]))}).checked()
    assert (
        str(err.value)
        == "s: model 'b' has no samples of prompt 'q' that model 'a' has; every model must answer the same prompts"
    )
    with pytest.raises(InputError) as err:
        Coverage("s", {"a": a, "b": ModelCounts("b", 4, ["p", "q", "r"], np.array([[1, 1, 1]]))}).checked()
    assert (
        str(err.value)
        == "s: model 'a' has no samples of prompt 'r' that model 'b' has; every model must answer the same prompts"
    )
    with pytest.raises(InputError) as err:
        Coverage("s", {"a": a, "b": ModelCounts("b", 8, ["p", "q"], np.array([[1, 1]]))}).checked()
    assert str(err.value) == "s: mixed sample counts: model 'b' has 8 samples per prompt, model 'a' 4"
    with pytest.raises(InputError) as err:  # fewer samples than the first model, as more
        Coverage("s", {"a": a, "b": ModelCounts("b", 2, ["p", "q"], np.array([[1, 1]]))}).checked()
    assert str(err.value) == "s: mixed sample counts: model 'b' has 2 samples per prompt, model 'a' 4"


def test_a_duplicate_is_placed_at_its_own_second_row_among_other_duplicates():
    df = _rows([("m", 0, "a", 0, 1), ("m", 0, "b", 0, 0), ("m", 0, "a", 0, 0), ("m", 0, "b", 0, 1)])
    with pytest.raises(InputError) as err:
        Coverage.from_rows(df, "t.jsonl")
    assert str(err.value) == (
        "t.jsonl line 3, column 'sample': duplicate sample id '0' of prompt 'a' (model 'm', seed 0); first at "
        "t.jsonl line 1"
    )


def test_a_short_prompt_is_placed_at_its_own_last_row_and_python_booleans_count_as_0_and_1():
    df = _rows([("m", 0, p, i, 1) for p in "abc" for i in range(2)]).drop(index=1).reset_index(drop=True)
    with pytest.raises(
        InputError, match=r"prompt 'a' of model 'm' \(seed 0\) has 1 samples \(its last at t.jsonl line 1\)"
    ):
        Coverage.from_rows(df, "t.jsonl")
    mixed = _rows([("m", 0, "a", 0, True), ("m", 0, "a", 1, 0), ("m", 0, "b", 0, False), ("m", 0, "b", 1, 1)])
    assert mixed["correct"].dtype == object
    assert Coverage.from_rows(mixed, "t.jsonl").models["m"].counts.tolist() == [[1, 1]]


def test_the_last_seed_missing_the_last_prompt_is_refused_and_counts_names_and_source_are_kept():
    df = _rows([("m", 0, "a", 0, 1), ("m", 0, "b", 0, 1), ("m", 1, "a", 0, 0)])
    with pytest.raises(InputError, match=r"^t.jsonl: model 'm' seed 1 has no samples of prompt 'b' that its other"):
        Coverage.from_rows(df, "t.jsonl")
    cov = Coverage.from_rows(_rows([("m", 0, "a", 0, 1), ("m", 0, "b", 0, 0), ("m", 0, "b", 1, 1)][:2]), "src")
    assert cov.source == "src" and cov.models["m"].name == "m" and cov.models["m"].counts.dtype == np.int64


def test_without_a_vote_column_each_answer_votes_for_its_solution():
    df = _rows([("m", 0, "a", i, c, s) for i, (c, s) in enumerate(((1, "x"), (0, "y"), (1, None)))])
    (((solutions, correct, votes),),) = Coverage.from_rows(df, "t.jsonl").models["m"].answers
    assert solutions == votes == ["x", "y", None] and correct == [True, False, True]


def test_mixed_sample_counts_name_the_first_odd_prompt_in_file_order_at_its_last_row():
    """Prompts b (1 sample, written first) and a (1 sample) beside c, d and e (2 samples each): b is named, at its own
    last row."""
    df = _rows([("m", 0, "b", 0, 1), ("m", 0, "c", 0, 1), ("m", 0, "c", 1, 1), ("m", 0, "a", 0, 1)])
    df = pd.concat([df, _rows([("m", 0, p, i, 1) for p in "de" for i in range(2)])], ignore_index=True)
    df["pos"] = [f"line {i + 1}" for i in range(len(df))]
    with pytest.raises(InputError) as err:
        Coverage.from_rows(df, "t.jsonl")
    assert str(err.value) == (
        "t.jsonl: mixed sample counts: prompt 'b' of model 'm' (seed 0) has 1 samples (its last at t.jsonl line 1), "
        "the others 2; every prompt needs the same n"
    )
    rows = [("m", 0, "c", i, 1) for i in range(3)] + [("m", 0, "e", i, 1) for i in range(2)]
    df = _rows(rows + [("m", 0, "f", i, 0) for i in range(3)])  # e's 2 samples at lines 4 and 5, the others 3
    with pytest.raises(
        InputError, match=r"prompt 'e' of model 'm' \(seed 0\) has 2 samples \(its last at t.jsonl line 5\)"
    ):
        Coverage.from_rows(df, "t.jsonl")
