"""End to end from the command line: a verl-style parquet (the prompt as chat messages, the answer
under reward_model.ground_truth) and a TRL-style reward function named by its import path train
the tiny model, and a run killed mid-way resumes (the reward function restored from config.json)
to exactly the uninterrupted run's metrics, completions, weights and TensorBoard history."""

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import torch
from safetensors.torch import load_file

from escov.llm.rundir import TIMING_KEYS

EventAccumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator").EventAccumulator

REWARDS = '''
def verl_accuracy(prompts, completions, reward_model, **kwargs):
    """TRL signature, conversational completions; 1 for the ground truth, else half the digit share."""
    out = []
    for completion, truth in zip(completions, reward_model):
        text = completion[0]["content"].strip()
        out.append(1.0 if text == truth["ground_truth"] else 0.5 * sum(c.isdigit() for c in text) / max(len(text), 1))
    return out
'''
PROBLEMS = [
    ([3, 5, 7], 15, "3+5+7"),
    ([2, 9, 4], 14, "2*9-4"),
    ([6, 1, 8], 15, "6+1+8"),
    ([4, 4, 2], 14, "4*4-2"),
    ([9, 3, 5], 11, "9-3+5"),
    ([7, 2, 6], 20, "7*2+6"),
]  # numbers, target, a solution


def _verl_parquet(path: Path) -> None:
    records = [
        {
            "data_source": "countdown",
            "ability": "arithmetic",
            "prompt": [{"role": "user", "content": f"{','.join(map(str, numbers))}->{target}:"}],
            "reward_model": {"style": "rule", "ground_truth": solution},
            "extra_info": {"index": i},
        }
        for i, (numbers, target, solution) in enumerate(PROBLEMS)
    ]
    datasets.Dataset.from_list(records).to_parquet(path)


def _train(args, cwd: Path, stop_at: str | None = None) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]), str(cwd)]))
    if stop_at:
        env["ESCOV_TEST_STOP_AT"] = stop_at
    return subprocess.Popen(
        [sys.executable, "-m", "escov.llm", "train", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _lines(path: Path, drop=()) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in drop} for line in path.read_text().splitlines()]


def test_verl_parquet_and_trl_reward_function_train_and_resume_from_the_command_line(tiny_model_dir, tmp_path):
    _verl_parquet(tmp_path / "train.parquet")
    (tmp_path / "my_rewards.py").write_text(REWARDS)
    settings = [
        "--model",
        str(tiny_model_dir),
        "--task",
        "prompts",
        "--data",
        "train.parquet",
        "--data_split",
        "first-4",
        "--reward_function",
        "my_rewards:verl_accuracy",
        "--algo",
        "es",
        "--steps",
        "1",
        "--batch_size",
        "2",
        "--train_pool",
        "4",
        "--threads",
        "1",
        "--max_completion_length",
        "6",
        "--checkpoint_every",
        "2",
        "--step_samples",
        "2",
        "--probe_prompts",
        "1",
        "--probe_members",
        "2",
        "--probe_samples",
        "2",
        "--probe_center_samples",
        "2",
        "--eval_problems",
        "2",
        "--eval_samples",
        "2",
        "--eval_ks",
        "1",
        "--heldout_task",
        "",
        "--threshold_keep",
        "50",
        "--es.population_size",
        "4",
        "--es.sigma",
        "0.02",
        "--completions_every",
        "2",
        "--report_to",
        "tensorboard",
    ]
    reference = _train([*settings, "--out", "ref"], tmp_path)
    killed = _train([*settings, "--out", "killed"], tmp_path, stop_at="step-5")
    for proc, code in ((reference, 0), (killed, -9)):
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == code, err.decode()[-2000:]
    assert not (tmp_path / "killed" / "eval.json").read_text().count('"final"')
    resumed = _train(["--resume", "killed"], tmp_path)
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err.decode()[-2000:]

    ref, run = tmp_path / "ref", tmp_path / "killed"
    # config.json names the module by its file (a resume from any folder finds it); inputs.json keeps it as typed
    reward_file = (tmp_path / "my_rewards.py").resolve()
    assert json.loads((run / "config.json").read_text())["reward_function"] == [f"{reward_file}:verl_accuracy"]
    typed = json.loads((run / "inputs.json").read_text())["inputs"]["reward_function[0]"]["given"]
    assert typed == "my_rewards:verl_accuracy"
    rows = _lines(ref / "metrics.jsonl", TIMING_KEYS)
    assert rows == _lines(run / "metrics.jsonl", TIMING_KEYS) and len(rows) == 8
    assert max(r["reward_mean"] for r in rows) > 0, "the reward function's rewards must reach the run"
    assert _lines(ref / "completions.jsonl") == _lines(run / "completions.jsonl")
    assert {r["source"] for r in _lines(run / "completions.jsonl")} == {
        "eval/base",
        "eval/base_greedy",
        "train",
        "eval/final",
        "eval/final_greedy",
    }
    w_ref, w_run = (load_file(d / "checkpoints" / "step-8" / "model.safetensors") for d in (ref, run))
    assert all(torch.equal(w_ref[n], w_run[n]) for n in w_ref)
    # the tracker of the resumed run shows one history: the events after its checkpoint were hidden
    events = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0})
    events.Reload()
    logged = [(e.step, e.value) for e in events.Scalars("train/reward_mean")]
    assert logged == [(r["step"], pytest.approx(r["reward_mean"], rel=1e-6)) for r in rows]
    base = load_file(Path(tiny_model_dir) / "model.safetensors")
    assert any(not torch.equal(base[n], w_ref[n]) for n in base), "training must move the weights"


# ----------------------------------------------------------------------------- the README's own-data command

README_REWARDS = '''
def accuracy(prompts, completions, reward_model, **kwargs):
    texts = [c[0]["content"] for c in completions]   # chat prompts: completions are assistant messages
    return [1.0 if t.strip() == rm["ground_truth"] else 0.0 for t, rm in zip(texts, reward_model)]

def digits(prompts, completions, data_source, **kwargs):
    """A shaped reward on the 'add' rows only (None: does not apply)."""
    texts = [c[0]["content"] for c in completions]
    return [None if s == "sub" else sum(ch.isdigit() for ch in t) / max(len(t), 1) for t, s in zip(texts, data_source)]

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """verl's signature."""
    return {"score": 1.0 if solution_str.strip() == ground_truth else 0.1 * sum(c.isdigit() for c in solution_str)}

def raises(prompts, completions, extra_info, **kwargs):
    return [1.0 / (info["index"] - 5) for info in extra_info]
'''
VERL_ROWS = [
    {
        "data_source": "add" if i % 2 else "sub",
        "prompt": [{"role": "user", "content": f"{i}+{i % 7}="}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": str(i + i % 7)},
        "extra_info": {"index": i},
    }
    for i in range(48)
]
# the README's command, as printed there, then what keeps a test short (one step, two samples per prompt)
README_COMMAND = ["train", "--task", "prompts", "--data", "train.parquet", "--test_data", "test.parquet"]
README_TAIL = ["--model", "MODEL", "--out", "runs/mine", "--report_to", "tensorboard"]
SHORT = ["--steps", "1", "--eval_samples", "2", "--eval_ks", "1", "--threads", "1", "--no-progress"]
TWO_FUNCTIONS = [
    "--reward_function",
    "my_rewards:accuracy",
    "--reward_function",
    "my_rewards:digits",
    "--reward_weights",
    "1.0",
    "--reward_weights",
    "0.5",
]


@pytest.fixture
def own_data(tmp_path, monkeypatch):
    """A folder with a 48-row verl-style train.parquet and test.parquet (pyarrow) and my_rewards.py, as the current
    folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name in ("train.parquet", "test.parquet"):
        pq.write_table(pa.Table.from_pylist(VERL_ROWS), tmp_path / name)
    (tmp_path / "my_rewards.py").write_text(README_REWARDS)
    monkeypatch.chdir(tmp_path)  # found from the current folder, as `escov llm train` finds it
    yield tmp_path
    sys.modules.pop("my_rewards", None)


def _readme_run(model, algo: str, rewards: list[str], capsys) -> tuple[int, str]:
    from escov.llm.cli import main

    tail = [str(model) if a == "MODEL" else a for a in README_TAIL]
    loss = ["--grpo.loss_type", "dr_grpo"] if algo == "grpo" else []  # the GRPO variant
    code = main([*README_COMMAND, *rewards, *tail, "--algo", algo, *loss, *SHORT])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "algo, rewards",
    [
        ("es", TWO_FUNCTIONS),
        ("grpo", ["--reward_function", "my_rewards:compute_score"]),
        ("grpo", TWO_FUNCTIONS),
        ("es", ["--reward_function", "my_rewards:compute_score"]),
    ],
)
def test_the_readme_command_trains_on_48_rows_and_reports_each_reward(own_data, tiny_model_dir, capsys, algo, rewards):
    code, err = _readme_run(tiny_model_dir, algo, rewards, capsys)
    assert code == 0, err[-2000:]
    assert "note: the train data holds 48 records: train_pool = 48" in err
    assert "note: the test data holds 48 records: eval_problems = 48" in err
    run = own_data / "runs" / "mine"
    names = ["accuracy", "digits"] if rewards is TWO_FUNCTIONS else ["compute_score"]
    config = json.loads((run / "config.json").read_text())
    # found in the current folder (not on the Python path here, as under the `escov` script): named by its file
    source = (own_data / "my_rewards.py").resolve()
    assert config["reward_function"] == [f"{source}:{r.split(':')[1]}" for r in rewards if r.startswith("my_rewards")]
    assert (config["probe"], config["heldout_task"], config["threshold_keep"]) == (False, "", [])
    row = _lines(run / "metrics.jsonl")[0]
    assert sorted(row["rewards"]) == names and sorted(row["by_data_source"]) == ["add", "sub"]
    assert 0 <= row["reward_zero_std_share"] <= 1 and row["mean_response_tokens"] > 0
    ev = json.loads((run / "eval.json").read_text())
    for label in ("base", "final"):
        assert sorted(ev[label]["rewards"]) == names and ev[label]["correct_threshold"] == 1.0
    final = ev["final"]
    if rewards is TWO_FUNCTIONS:  # digits applies to the 24 'add' rows only; the total is TRL's weighted nansum
        assert final["rewards"]["digits"]["applied"] == 0.5
        assert final["reward_mean"] == pytest.approx(
            final["rewards"]["accuracy"]["mean"] + 0.5 * 0.5 * final["rewards"]["digits"]["mean"]
        )
    else:
        assert final["reward_mean"] == pytest.approx(final["rewards"]["compute_score"]["mean"])
    assert "probe.json" not in os.listdir(run) and "heldout" not in ev and ev["thresholded"] == []
    events = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0})
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {f"train/rewards/{n}/mean" for n in names} | {f"eval/final/rewards/{n}/mean" for n in names} <= set(tags)
    assert events.Scalars(f"train/rewards/{names[0]}/mean")[0].value == pytest.approx(row["rewards"][names[0]]["mean"])


def test_a_reward_that_raises_is_one_line_naming_it_and_leaves_nothing(own_data, tiny_model_dir, capsys):
    with pytest.raises(SystemExit) as stop:
        _readme_run(tiny_model_dir, "grpo", ["--reward_function", "my_rewards:raises"], capsys)
    assert stop.value.code == 2
    error = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    source = (own_data / "my_rewards.py").resolve()
    assert (
        len(error) == 1
        and f"reward_function '{source}:raises' raised ZeroDivisionError: float division by zero on "
        "data row prompts/test/5, completion "
        in error[0]
    )
    assert 'File "my_rewards.py", line 16, in raises' in error[0]
    assert not (own_data / "runs" / "mine").exists()


def test_es_says_when_its_update_is_zero(own_data, tiny_model_dir, capsys):
    """A constant reward gives every member the same reward: ES warns once and the summary counts the iterations."""
    (own_data / "flat.py").write_text("def flat(prompts, completions, **kw):\n    return [0.0] * len(completions)\n")
    from escov.llm.cli import main

    code = main(
        [
            *README_COMMAND,
            "--reward_function",
            "flat:flat",
            "--model",
            str(tiny_model_dir),
            "--out",
            "runs/flat",
            "--algo",
            "es",
            *SHORT,
            "--es.population_size",
            "4",
            "--batch_size",
            "2",
        ]
    )
    out = capsys.readouterr()
    sys.modules.pop("flat", None)
    assert code == 0
    assert out.err.count("warning: ES iteration") == 1 and "all 4 members got the same reward (0)" in out.err
    rows = _lines(own_data / "runs" / "flat" / "metrics.jsonl")
    assert len(rows) == 8 and all(r["es_zero_update"] and r["es_update_norm"] == 0 for r in rows)
    assert "ES: 8 of 8 iterations had all members' rewards equal: a zero update" in out.out


def test_llm_eval_reports_the_rewards_reads_data_fields_and_refuses_to_overwrite(own_data, tiny_model_dir, capsys):
    from escov.llm.cli import main

    args = [
        "eval",
        "--model",
        str(tiny_model_dir),
        "--task",
        "prompts",
        "--test_data",
        "test.parquet",
        "--reward_function",
        "my_rewards:accuracy",
        "--reward_function",
        "my_rewards:digits",
        "--reward_weights",
        "1",
        "--reward_weights",
        "0.5",
        "--data_fields",
        "answer=reward_model.ground_truth",
        "--n",
        "2",
        "--k",
        "1",
        "--out",
        "ev",
        "--no-progress",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    result = json.loads((own_data / "ev" / "eval.json").read_text())
    assert sorted(result["rewards"]) == ["accuracy", "digits"] and result["max_new_tokens"] == 24  # train's default
    assert result["temperature"] == 1.0 and result["data_fields"] == "answer=reward_model.ground_truth"
    assert "(correct: accuracy >= 1)" in printed and "accuracy " in printed and "add: reward" in printed
    with pytest.raises(SystemExit):
        main(args)
    assert "--out ev already holds eval.json, eval.png; give another --out, or --overwrite" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for default in (
        "(default: 32, as `llm train`)",
        "(default: 1,16,32)",
        "(default: 24, as `llm train`)",
        "(default: 1.0, as `llm train`)",
        "(default: refuse)",
    ):
        assert default in shown
