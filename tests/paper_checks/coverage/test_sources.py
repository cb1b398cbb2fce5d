"""Reading sources into one table (paper_checks/coverage/sources.py): a plain file's defaults (model, seed, sample
ids), rewards against the threshold, named sources, reward columns summed, escov runs stacked as seeds of a table's
model, and each refusal's whole message; every count by hand."""

from __future__ import annotations

import json

import pytest

from escov.paper_checks.coverage.sources import ReadOptions, load
from escov.paper_checks.coverage.table import InputError


def _jsonl(path, rows: list[dict]):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_a_plain_file_gets_model_seed_and_sample_ids_and_rewards_meet_the_threshold(tmp_path):
    rows = [{"prompt_id": p, "reward": r} for p, rs in (("a", [0.2, 0.7, 0.5]), ("b", [0.0, 0.9, 0.1])) for r in rs]
    cov = load([_jsonl(tmp_path / "t.jsonl", rows)], ReadOptions(threshold=0.5))
    m = cov.models["model"]  # no model column, no name: "model"; no seed: 0; samples numbered in file order
    assert (m.n, m.seeds, m.prompt_ids, m.counts.tolist()) == (3, [0], ["a", "b"], [[2, 1]])
    named = load([f"mine={_jsonl(tmp_path / 'u.jsonl', rows)}"], ReadOptions(threshold=0.8))
    assert list(named.models) == ["mine"] and named.models["mine"].counts.tolist() == [[0, 1]]


def test_reward_columns_are_summed_and_a_reward_that_is_no_number_is_named(tmp_path):
    rows = [{"prompt_id": "a", "seed": 2, "acc": a, "fmt": f} for a, f in ((1.0, 0.0), (0.5, 0.5), (0.0, 0.5))]
    cov = load([_jsonl(tmp_path / "t.jsonl", rows)], ReadOptions(reward_columns=["acc", "fmt"], threshold=1.0))
    assert cov.models["model"].counts.tolist() == [[2]] and cov.models["model"].seeds == [2]
    with pytest.raises(InputError, match=r"t.jsonl: --reward-column 'nope' is not a column \(columns: "):
        load([str(tmp_path / "t.jsonl")], ReadOptions(reward_columns=["nope"]))
    bad = _jsonl(tmp_path / "bad.jsonl", [{"prompt_id": "a", "reward": 1}, {"prompt_id": "a", "reward": "high"}])
    with pytest.raises(InputError, match=r"bad.jsonl line 2, column 'reward': expected a number, got 'high'$"):
        load([bad], ReadOptions())


@pytest.mark.parametrize(
    "rows, message",
    [
        (
            [{"correct": 1}],
            "t.jsonl: column 'prompt_id' is missing (each row needs prompt_id, and correct, a reward, "
            "or a completion with --task/--reward-function)",
        ),
        (
            [{"prompt_id": "a"}],
            "t.jsonl: column 'correct' is missing (give correct 0/1, a reward column, or score the "
            "completions with --task or --reward-function)",
        ),
        (
            [{"prompt_id": "a", "correct": 1, "seed": "x"}],
            "t.jsonl line 1, column 'seed': expected an integer, got 'x'",
        ),
    ],
)
def test_a_row_missing_what_decides_it_is_refused_naming_the_file(tmp_path, rows, message):
    with pytest.raises(InputError) as err:
        load([_jsonl(tmp_path / "t.jsonl", rows)], ReadOptions())
    assert str(err.value).endswith(message) and str(err.value).startswith(str(tmp_path))


def test_an_escov_run_is_stacked_as_another_seed_of_a_tables_model(tmp_path):
    table = [
        {"model": "es", "seed": 0, "prompt_id": p, "correct": c}
        for p, cs in (("p0", [1, 0]), ("p1", [1, 1]))
        for c in cs
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "eval.json").write_text(
        json.dumps({"final": {"n": 2, "per_problem": [{"id": "p0", "correct": 0}, {"id": "p1", "correct": 2}]}})
    )
    (run / "config.json").write_text(json.dumps({"algo": "es", "seed": 4}))
    cov = load([_jsonl(tmp_path / "t.jsonl", table), str(run)], ReadOptions())
    es = cov.models["es"]
    assert es.seeds == [0, 4] and es.counts.tolist() == [[1, 2], [0, 2]]
    (run / "config.json").write_text(json.dumps({"algo": "es", "seed": 0}))
    with pytest.raises(InputError, match=r": model 'es' seed 0 appears twice$"):
        load([_jsonl(tmp_path / "t.jsonl", table), str(run)], ReadOptions())


def test_an_empty_file_is_refused_and_given_prompt_ids_win_over_prompts(tmp_path):
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    with pytest.raises(InputError) as err:
        load([str(empty)], ReadOptions())
    assert str(err.value) == f"{empty}: no rows"
    rows = [{"prompt_id": i, "prompt": "same text", "correct": c} for i, c in ((7, 1), (8, 0), (7, 1), (8, 1))]
    m = load([_jsonl(tmp_path / "t.jsonl", rows)], ReadOptions()).models["model"]
    assert m.prompt_ids == ["7", "8"] and m.counts.tolist() == [[2, 1]]  # integer ids read as their text
    rows = [{"prompt": {"q": "x", "a": 1}, "correct": 1}, {"prompt": {"a": 1, "q": "x"}, "correct": 0}]
    m = load([_jsonl(tmp_path / "c.jsonl", rows)], ReadOptions()).models["model"]
    assert m.prompt_ids == [json.dumps({"a": 1, "q": "x"}, sort_keys=True)] and m.counts.tolist() == [[1]]


def test_named_reward_columns_replace_a_files_own_reward_and_a_missing_value_is_no_zero(tmp_path):
    rows = [{"prompt_id": "a", "reward": 0.0, "acc": a} for a in (1.0, 1.0, 0.0)]
    cov = load([_jsonl(tmp_path / "t.jsonl", rows)], ReadOptions(reward_columns=["acc"]))
    assert cov.models["model"].counts.tolist() == [[2]]
    rows = [{"prompt_id": "a", "acc": 1.0, "fmt": 0.5}, {"prompt_id": "a", "other": 1}]
    with pytest.raises(InputError, match=r"u.jsonl line 2, column 'reward': expected a number, got no value$"):
        load([_jsonl(tmp_path / "u.jsonl", rows)], ReadOptions(reward_columns=["acc", "fmt"]))


def test_rows_without_a_seed_are_seed_0_beside_rows_with_one_and_seeds_read_as_integers(tmp_path):
    rows = [{"prompt_id": "a", "correct": c, "seed": s} for c, s in ((1, None), (0, None), (1, "3"), (1, "3"))]
    m = load([_jsonl(tmp_path / "t.jsonl", rows)], ReadOptions()).models["model"]
    assert m.seeds == [0, 3] and m.counts.tolist() == [[1], [2]]
    assert all(type(s) is int for s in m.seeds)
    rows = [{"prompt_id": "a", "correct": 1, "seed": s} for s in (1, 1, "two", "x")]
    with pytest.raises(InputError) as err:
        load([_jsonl(tmp_path / "u.jsonl", rows)], ReadOptions())
    assert str(err.value) == f"{tmp_path / 'u.jsonl'} line 3, column 'seed': expected an integer, got 'two'"


def test_a_tasks_settings_and_the_reward_functions_weights_reach_the_scoring(tmp_path):
    """Countdown 2 3 4 -> 10: "2+3+4" is well formed but wrong, worth format_reward 0.25 (correct at threshold
    0.25 only with that setting); two reward functions weighted 1 and 0 count the first alone."""
    rows = [{"prompt_id": "c", "numbers": [2, 3, 4], "target": 10, "completion": c} for c in ("2*3+4", "2+3+4")]
    path = _jsonl(tmp_path / "t.jsonl", rows)
    plain = load([path], ReadOptions(task="countdown", threshold=0.25)).models["model"]
    lenient = load([path], ReadOptions(task="countdown", threshold=0.25, task_kwargs={"format_reward": 0.25}))
    assert plain.counts.tolist() == [[1]] and lenient.models["model"].counts.tolist() == [[2]]
    (tmp_path / "r.py").write_text(
        "def one(prompts, completions, **kw):\n    return [1.0] * len(completions)\n"
        "def zero(prompts, completions, **kw):\n    return [0.0] * len(completions)\n"
    )
    functions = [f"{tmp_path / 'r.py'}:zero", f"{tmp_path / 'r.py'}:one"]
    weighted = ReadOptions(reward_functions=functions, reward_weights=[1.0, 0.0], threshold=0.5)
    assert load([path], weighted).models["model"].counts.tolist() == [[0]]
    assert load([path], ReadOptions(reward_functions=functions, threshold=0.5)).models["model"].counts.tolist() == [[2]]


def _escov_run(path, algo: str, seed: int, final: list[int], base: list[int] | None = None):
    path.mkdir()
    per = lambda counts: [{"id": f"p{i}", "correct": c} for i, c in enumerate(counts)]  # noqa: E731
    evals = {"final": {"n": 2, "seed": 9, "per_problem": per(final)}}
    if base is not None:
        evals["base"] = {"n": 2, "seed": 0, "per_problem": per(base)}
    (path / "eval.json").write_text(json.dumps(evals))
    (path / "config.json").write_text(json.dumps({"algo": algo, "seed": seed}))
    return str(path)


def test_several_escov_runs_and_tables_are_all_read_and_a_shared_base_counted_once(tmp_path):
    """Two ES runs (seeds 1 and 2) and a GRPO run, each with the same base evaluation, before a table of model
    "ref": every source is read, the base once, the label names every source."""
    runs = [
        _escov_run(tmp_path / "es1", "es", 1, [1, 2], base=[0, 1]),
        _escov_run(tmp_path / "es2", "es", 2, [2, 2], base=[0, 1]),
        _escov_run(tmp_path / "grpo", "grpo", 1, [2, 0], base=[0, 1]),
    ]
    table = _jsonl(tmp_path / "t.jsonl", [{"model": "ref", "prompt_id": f"p{i}", "correct": 1} for i in (0, 0, 1, 1)])
    cov = load(runs + [table], ReadOptions())
    assert sorted(cov.models) == ["base", "es", "grpo", "ref"]
    assert cov.models["es"].seeds == [1, 2] and cov.models["es"].counts.tolist() == [[1, 2], [2, 2]]
    assert cov.models["base"].counts.tolist() == [[0, 1]] and cov.models["ref"].counts.tolist() == [[2, 2]]
    assert cov.source == ", ".join(str(tmp_path / n) for n in ("es1", "es2", "grpo", "t.jsonl"))
    twice = _escov_run(tmp_path / "again", "grpo", 1, [0, 0])
    with pytest.raises(InputError, match=r": model 'grpo' seed 1 appears twice$"):
        load(runs + [twice], ReadOptions())


def test_a_format_given_is_read_as_that_format_and_a_vote_column_is_kept(tmp_path):
    verl_like = _jsonl(tmp_path / "0.jsonl", [{"input": "p", "output": "o", "score": 1.0}])
    assert load([verl_like], ReadOptions()).models["model"].counts.tolist() == [[1]]  # detected as verl
    with pytest.raises(InputError, match=r"column 'prompt_id' is missing"):
        load([verl_like], ReadOptions(format="plain"))
    rows = [{"prompt_id": "a", "correct": 1, "solution": s, "vote": v} for s, v in (("x", "10"), ("y", "10"))]
    (((_, _, votes),),) = load([_jsonl(tmp_path / "v.jsonl", rows)], ReadOptions()).models["model"].answers
    assert votes == ["10", "10"]


def test_two_files_without_sample_ids_are_numbered_each_and_a_refusal_names_every_source(tmp_path):
    a = _jsonl(tmp_path / "a.jsonl", [{"model": "x", "prompt_id": "p", "correct": c} for c in (1, 0)])
    b = _jsonl(tmp_path / "b.jsonl", [{"model": "y", "prompt_id": "p", "correct": c} for c in (1, 1)])
    cov = load([a, b], ReadOptions())
    assert cov.models["x"].counts.tolist() == [[1]] and cov.models["y"].counts.tolist() == [[2]]
    c = _jsonl(tmp_path / "c.jsonl", [{"model": "z", "prompt_id": "p", "correct": 1}])
    with pytest.raises(InputError) as err:
        load([a, c], ReadOptions())
    assert str(err.value).startswith(f"{a}, {c}: mixed sample counts: prompt 'p' of model 'x' (seed 0) has 2 samples")


def test_a_seed_written_as_a_number_or_as_text_is_one_seed_and_object_ids_are_their_json(tmp_path):
    rows = [{"prompt_id": "a", "correct": c, "seed": s} for c, s in ((1, 3), (0, "3"))]
    m = load([_jsonl(tmp_path / "t.jsonl", rows)], ReadOptions()).models["model"]
    assert (m.seeds, m.n, m.counts.tolist()) == ([3], 2, [[1]])
    rows = [{"prompt_id": p, "correct": 1} for p in ({"q": "x", "a": 1}, {"a": 1, "q": "x"}, ["b"])]
    m = load([_jsonl(tmp_path / "o.jsonl", rows + rows[2:])], ReadOptions()).models["model"]
    assert m.prompt_ids == [json.dumps({"a": 1, "q": "x"}, sort_keys=True), '["b"]'] and m.counts.tolist() == [[2, 2]]
