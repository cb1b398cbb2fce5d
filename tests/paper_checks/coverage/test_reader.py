"""The trainers' completion readers (paper_checks/coverage/reader.py) on the cases the layout tests leave open: verl
without an `acc` column (its score against the threshold), a TRL log in its output folder with a step whose reward is
missing, and an escov run directory's base and final evaluations with their seeds and names; each count by hand."""

from __future__ import annotations

import json

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
    with pytest.raises(InputError, match=r"completions_00003.parquet row 1, column 'reward': expected a number, got "):
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
