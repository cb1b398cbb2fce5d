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
PROBLEMS = [([3, 5, 7], 15, "3+5+7"), ([2, 9, 4], 14, "2*9-4"), ([6, 1, 8], 15, "6+1+8"), ([4, 4, 2], 14, "4*4-2"),
            ([9, 3, 5], 11, "9-3+5"), ([7, 2, 6], 20, "7*2+6")]  # numbers, target, a solution


def _verl_parquet(path: Path) -> None:
    records = [{"data_source": "countdown", "ability": "arithmetic",
                "prompt": [{"role": "user", "content": f"{','.join(map(str, numbers))}->{target}:"}],
                "reward_model": {"style": "rule", "ground_truth": solution}, "extra_info": {"index": i}}
               for i, (numbers, target, solution) in enumerate(PROBLEMS)]
    datasets.Dataset.from_list(records).to_parquet(path)


def _train(args, cwd: Path, stop_at: str | None = None) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]), str(cwd)]))
    if stop_at:
        env["ESCOV_TEST_STOP_AT"] = stop_at
    return subprocess.Popen([sys.executable, "-m", "escov.llm", "train", *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _lines(path: Path, drop=()) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in drop} for line in path.read_text().splitlines()]


def test_verl_parquet_and_trl_reward_function_train_and_resume_from_the_command_line(tiny_model_dir, tmp_path):
    _verl_parquet(tmp_path / "train.parquet")
    (tmp_path / "my_rewards.py").write_text(REWARDS)
    settings = ["--model", str(tiny_model_dir), "--task", "prompts", "--data", "train.parquet", "--data_split", "first-4",
                "--reward_function", "my_rewards:verl_accuracy", "--algo", "es", "--steps", "1", "--batch_size", "2",
                "--train_pool", "4", "--threads", "1", "--max_completion_length", "6", "--checkpoint_every", "2",
                "--step_samples", "2", "--probe_prompts", "1", "--probe_members", "2", "--probe_samples", "2",
                "--probe_center_samples", "2", "--eval_problems", "2", "--eval_samples", "2", "--eval_ks", "1",
                "--heldout_task", "", "--threshold_keep", "50", "--es.population_size", "4", "--es.sigma", "0.02",
                "--completions_every", "2", "--report_to", "tensorboard"]
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
    assert json.loads((run / "config.json").read_text())["reward_function"] == f"{reward_file}:verl_accuracy"
    typed = json.loads((run / "inputs.json").read_text())["inputs"]["reward_function"]["given"]
    assert typed == "my_rewards:verl_accuracy"
    rows = _lines(ref / "metrics.jsonl", TIMING_KEYS)
    assert rows == _lines(run / "metrics.jsonl", TIMING_KEYS) and len(rows) == 8
    assert max(r["reward_mean"] for r in rows) > 0, "the reward function's rewards must reach the run"
    assert _lines(ref / "completions.jsonl") == _lines(run / "completions.jsonl")
    assert {r["source"] for r in _lines(run / "completions.jsonl")} == {"eval/base", "eval/base_greedy", "train",
                                                                         "eval/final", "eval/final_greedy"}
    w_ref, w_run = (load_file(d / "checkpoints" / "step-8" / "model.safetensors") for d in (ref, run))
    assert all(torch.equal(w_ref[n], w_run[n]) for n in w_ref)
    # the tracker of the resumed run shows one history: the events after its checkpoint were hidden
    events = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0})
    events.Reload()
    logged = [(e.step, e.value) for e in events.Scalars("train/reward_mean")]
    assert logged == [(r["step"], pytest.approx(r["reward_mean"], rel=1e-6)) for r in rows]
    base = load_file(Path(tiny_model_dir) / "model.safetensors")
    assert any(not torch.equal(base[n], w_ref[n]) for n in base), "training must move the weights"
