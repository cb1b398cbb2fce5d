"""The readers on files laid out as each trainer's own writer lays them out (TRL's GRPOTrainer log, verl's
_dump_generations, es-at-scale's eval_detailed_results.json, escov's eval.json), and scoring by a task's
verifier or a user's reward function; each read checked against counts the test knows."""

import json

import numpy as np
import pandas as pd
import pytest

from escov.paper_checks.coverage.reader import detect
from escov.paper_checks.coverage.sources import ReadOptions, load
from escov.paper_checks.coverage.table import InputError

CORRECT = {"q0": [1, 0, 0, 1], "q1": [0, 0, 0, 0], "q2": [1, 1, 1, 0]}  # per prompt, its 4 samples


def counts_of(cov, model):
    m = cov.models[model]
    return dict(zip(m.prompt_ids, m.counts[0].tolist()))


def test_csv_and_parquet_with_rewards_and_steps(tmp_path):
    """A plain table with a reward (correct when >= 1) and a step column: each step is a model."""
    rows = [
        {"step": step, "prompt_id": p, "reward": 1.0 * f + (0.1 if step else 0.0)}
        for step in (0, 40)
        for p, flags in CORRECT.items()
        for f in flags
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "t.csv", index=False)
    pd.DataFrame(rows).to_parquet(tmp_path / "t.parquet")
    for name in ("t.csv", "t.parquet"):
        cov = load([str(tmp_path / name)], ReadOptions())
        assert sorted(cov.models) == ["step 0", "step 40"]
        assert counts_of(cov, "step 40") == {p: sum(f) for p, f in CORRECT.items()}


def test_trl_completions_log(tmp_path):
    """TRL 1.16 GRPOTrainer, log_completions=True: OUTPUT_DIR/completions/completions_{step:05d}.parquet with
    step, prompt, completion, one column per reward function (its __name__), advantage."""
    (tmp_path / "completions").mkdir()
    for step in (10, 20):
        rows = [
            {
                "step": step,
                "prompt": [{"role": "user", "content": f"solve {p}"}],
                "completion": [{"role": "assistant", "content": f"answer {i}"}],
                "accuracy_reward": float(f if step == 20 else 0),
                "advantage": 0.0,
            }
            for p, flags in CORRECT.items()
            for i, f in enumerate(flags)
        ]
        pd.DataFrame(rows).to_parquet(tmp_path / "completions" / f"completions_{step:05d}.parquet")
    assert detect(tmp_path) == "trl"
    cov = load([str(tmp_path)], ReadOptions())
    assert sorted(cov.models) == ["step 10", "step 20"]
    got = counts_of(cov, "step 20")
    assert sorted(got.values()) == sorted(sum(f) for f in CORRECT.values())
    assert all("solve" in p for p in got)  # the chat prompt's text is its id


def test_trl_log_with_two_reward_columns_needs_one_named(tmp_path):
    rows = [{"step": 1, "prompt": "p", "completion": "c", "accuracy": 1.0, "format": 0.5, "advantage": 0.0}]
    pd.DataFrame(rows).to_parquet(tmp_path / "completions_00001.parquet")
    with pytest.raises(InputError, match="--reward-column"):
        load([str(tmp_path / "completions_00001.parquet")], ReadOptions())
    cov = load([str(tmp_path / "completions_00001.parquet")], ReadOptions(reward_columns=["accuracy", "format"]))
    assert cov.models["step 1"].counts.tolist() == [[1]]


def test_verl_validation_dump(tmp_path):
    """verl's RayPPOTrainer._dump_generations: <global_step>.jsonl, one line per sample with input, output,
    gts, score, step and the reward's extra infos (here acc, which then decides)."""
    lines = [
        {"input": f"prompt {p}", "output": f"out {i}", "gts": "42", "score": 0.9 * f, "step": 0, "acc": bool(f)}
        for p, flags in CORRECT.items()
        for i, f in enumerate(flags)
    ]
    (tmp_path / "0.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    assert detect(tmp_path) == "verl"
    cov = load([f"base={tmp_path}"], ReadOptions())
    assert counts_of(cov, "base") == {f"prompt {p}": sum(f) for p, f in CORRECT.items()}


def test_es_at_scale_eval_json(tmp_path):
    """es-at-scale eval_countdown_vllm.py --save_responses: eval_detailed_results.json, one greedy or sampled
    response per prompt; correct when reward_info.answer_reward > 0. Four files make four samples."""
    specs = []
    for i in range(4):
        records = [
            {
                "input_text": f"numbers {p}",
                "target_text": "24",
                "generated_text": "x",
                "model_response": "x",
                "numbers": [1, 2],
                "target": 24,
                "reward": 1.1 * flags[i],
                "reward_info": {"format_reward": 1.0, "answer_reward": float(flags[i])},
            }
            for p, flags in CORRECT.items()
        ]
        path = tmp_path / f"run{i}" / "eval_detailed_results.json"
        path.parent.mkdir()
        path.write_text(json.dumps(records, indent=2))
        specs.append(f"es={path}")
    assert detect(tmp_path / "run0" / "eval_detailed_results.json") == "es-at-scale"
    cov = load(specs, ReadOptions())
    assert counts_of(cov, "es") == {f"numbers {p}": sum(f) for p, f in CORRECT.items()}


def test_escov_run_directory(tmp_path):
    """An escov run's eval.json: the base and final evaluations' per-problem correct counts out of n."""
    evaluation = {"n": 4, "seed": 5, "per_problem": [{"id": p, "correct": sum(f)} for p, f in CORRECT.items()]}
    final = {"n": 4, "seed": 5, "per_problem": [{"id": p, "correct": 4} for p in CORRECT]}
    (tmp_path / "eval.json").write_text(json.dumps({"base": evaluation, "final": final}))
    (tmp_path / "config.json").write_text(json.dumps({"algo": "grpo", "seed": 3}))
    cov = load([str(tmp_path)], ReadOptions())
    assert counts_of(cov, "base") == {p: sum(f) for p, f in CORRECT.items()}
    assert counts_of(cov, "grpo") == {p: 4 for p in CORRECT} and cov.models["grpo"].seeds == [3]


def test_countdown_verifier_scores_and_canonicalises(tmp_path):
    """--task countdown: correct from escov's verifier; 2*3+4 and 3*2+4 are one solution, 4*3-2 another."""
    completions = ["2*3+4", "3*2+4", "4*3-2", "2+3+4", "oops"]
    rows = [{"prompt_id": "c0", "numbers": [2, 3, 4], "target": 10, "completion": c} for c in completions]
    (tmp_path / "cd.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cov = load([f"base={tmp_path / 'cd.jsonl'}"], ReadOptions(task="countdown"))
    assert cov.models["base"].counts.tolist() == [[3]]
    solutions, correct, _ = cov.models["base"].answers[0][0]
    assert correct == [True, True, True, False, False]
    assert len({s for s, ok in zip(solutions, correct) if ok}) == 2


def test_user_reward_function_with_trl_contract(tmp_path):
    (tmp_path / "my_rewards.py").write_text(
        "def exact(prompts, completions, answer, **kwargs):\n"
        "    return [1.0 if c.strip() == a else 0.0 for c, a in zip(completions, answer)]\n"
    )
    rows = [
        {"prompt_id": p, "answer": "7", "completion": "7" if f else "8"} for p, flags in CORRECT.items() for f in flags
    ]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cov = load([str(tmp_path / "t.jsonl")], ReadOptions(reward_functions=[f"{tmp_path / 'my_rewards.py'}:exact"]))
    assert counts_of(cov, "model") == {p: sum(f) for p, f in CORRECT.items()}
    assert cov.models["model"].answers is None  # a user's gold `answer` column is not a canonical solution


def test_solution_ids_give_distinct_solutions_and_answer_entropy(tmp_path):
    from escov.paper_checks.coverage.measure import MeasureOptions, measure

    rows = [
        {"model": m, "prompt_id": "q", "sample": i, "correct": int(s != "x"), "solution_id": s}
        for m, sols in (("base", ["a", "b", "c", "x"]), ("rl", ["a", "a", "a", "x"]))
        for i, s in enumerate(sols)
    ]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = measure(load([str(tmp_path / "t.jsonl")], ReadOptions()), MeasureOptions("base", replicates=50))
    assert report["models"]["base"]["distinct_correct"]["mean"] == 3
    assert report["models"]["rl"]["distinct_correct"]["mean"] == 1
    assert report["models"]["base"]["answer_entropy"]["mean"] == pytest.approx(np.log(4))
    rl_entropy = -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))
    assert report["models"]["rl"]["answer_entropy"]["mean"] == pytest.approx(rl_entropy)
    assert report["models"]["rl"]["maj_at_k"]["4"]["mean"] == 1.0  # "a" wins the vote and is correct


def test_the_readme_command_on_trl_style_files(tmp_path, capsys):
    """The README's command: one file per model in TRL's completion-log layout (prompt, completion, a reward
    column named after its function), the reward column named on the command line."""
    from escov.paper_checks.coverage.cli import main

    for model, flags_of in (("base", CORRECT), ("grpo", {"q0": [1, 1, 1, 1], "q1": [0, 0, 0, 0], "q2": [0] * 4})):
        rows = [
            {
                "step": 0,
                "prompt": [{"role": "user", "content": p}],
                "completion": "x",
                "format_reward": 0.5,
                "accuracy_reward": float(f),
                "advantage": 0.0,
            }
            for p, flags in flags_of.items()
            for f in flags
        ]
        pd.DataFrame(rows).to_parquet(tmp_path / f"{model}.parquet")
    assert (
        main(
            [
                f"base={tmp_path / 'base.parquet'}",
                f"grpo={tmp_path / 'grpo.parquet'}",
                "--reference",
                "base",
                "--reward-column",
                "accuracy_reward",
                "--json",
                str(tmp_path / "cov.json"),
            ]
        )
        == 0
    )
    out = json.loads((tmp_path / "cov.json").read_text())
    assert out["models"]["base"]["pass_at_k"]["4"]["mean"] == pytest.approx(2 / 3)
    assert out["models"]["grpo"]["solvability"] == {
        "preserved": 1,
        "gained": 0,
        "lost": 1,
        "neither": 1,
        "srr": 0.5,
        "ndr": 0.0,
        "nscr": -0.5,
    }
