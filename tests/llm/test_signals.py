"""Signals that always work, on real `llm train` processes: a second SIGTERM (or SIGINT) ends a run at
once even inside a reward function that never returns, and a SIGTERM during the final evaluation exits
non-zero without recording it, so that a resume measures it again."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# a TRL-style reward that hangs (a Python loop that never returns) while the file "hang" exists, and in the
# final stage (after the run's one step and its checkpoint) takes 0.3 s a call; it touches "called" when called,
# and "final-stage" in the final stage
REWARDS = """
import time
from pathlib import Path

def digits(prompts, completions, **kwargs):
    Path("called").touch()
    while Path("hang").exists():
        time.sleep(0.01)
    if Path("run/checkpoints/step-1/trainer_state.json").exists():
        Path("final-stage").touch()
        time.sleep(0.3)
    return [float(c[:1].isdigit()) for c in completions]
"""
PROMPTS = ["12+3=", "4*4=", "9-1=", "7+7=", "5*3=", "8-2="]


def _start(model, cwd: Path, *args) -> subprocess.Popen:
    (cwd / "my_rewards.py").write_text(REWARDS)
    (cwd / "d.jsonl").write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS))
    settings = [
        "--model",
        str(model),
        "--task",
        "prompts",
        "--data",
        "d.jsonl",
        "--data_split",
        "first-4",
        "--reward_function",
        "my_rewards:digits",
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
        "4",
        "--checkpoint_every",
        "1",
        "--step_samples",
        "2",
        "--probe",
        "false",
        "--probe_prompts",
        "1",
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
        "8",
        "--grpo.num_generations",
        "2",
        "--no-progress",
    ]  # one ES iteration
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(cwd)]), OMP_NUM_THREADS="1")
    return subprocess.Popen(
        [sys.executable, "-m", "escov.llm", "train", *(args or [*settings, "--out", "run"])],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 240) -> None:
    deadline = time.time() + seconds
    while not path.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert path.exists() and proc.poll() is None, f"{path.name} never appeared: {proc.communicate()[1][-2000:]}"


def test_a_second_signal_ends_a_run_inside_a_reward_function_that_never_returns(tiny_model_dir, tmp_path):
    (tmp_path / "hang").touch()
    proc = _start(tiny_model_dir, tmp_path)
    _wait_for(tmp_path / "called", proc)  # the base evaluation's first reward call: it never returns
    os.kill(proc.pid, signal.SIGTERM)
    time.sleep(1.0)
    assert proc.poll() is None  # the first signal waits for a safe point, which the hung call never reaches
    os.kill(proc.pid, signal.SIGINT)  # a second signal of either kind ends it at once
    try:
        _, err = proc.communicate(timeout=10)
    finally:
        proc.kill()  # only when it did not end
        proc.wait()
    assert proc.returncode == 128 + signal.SIGINT, err[-2000:]  # the shell's code for SIGINT, with a message
    assert "SIGTERM: stopping at the next safe point" in err
    assert "a second SIGINT (Ctrl-C) or SIGTERM stops at once" in err
    assert "stopped at once by a second SIGINT" in err and "Traceback" not in err


def test_a_signal_in_the_final_evaluation_exits_non_zero_and_a_resume_measures_it(tiny_model_dir, tmp_path):
    proc = _start(tiny_model_dir, tmp_path)
    _wait_for(tmp_path / "final-stage", proc)  # a reward call of the final evaluation (each takes 0.3 s)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "Traceback" not in err and "during the final evaluation" in err
    assert "final" not in json.loads((tmp_path / "run" / "eval.json").read_text())
    resumed = _start(tiny_model_dir, tmp_path, "--resume", "run", "--no-progress")
    _, err = resumed.communicate(timeout=240)
    assert resumed.returncode == 0, err[-2000:]
    ev = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert ev["final"]["num_problems"] == 2 and ev["final"]["grading_timeouts"] == 0
