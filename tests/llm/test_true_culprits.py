"""Every bad input of a TRL / verl user names its true culprit in one line (no usage block, no traceback), nothing is
accepted silently, a reward that hangs is stopped by reward_timeout or by a second Ctrl-C (the run folder removed
when nothing was measured), and TRL's names point to ours."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from escov.llm.cli import main
from escov.llm.tasks.base import Problem
from escov.llm.tasks.data_files import load_records
from escov.llm.tasks.reward_function import RewardFunctionError, RewardFunctions

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REWARDS = """
import time

def slow(prompts, completions, **kwargs):
    time.sleep(30)
    return [1.0] * len(completions)

def verl_no_score(data_source, solution_str, ground_truth, extra_info=None):
    return {"acc": 1.0}

def verl_ok(data_source, solution_str, ground_truth, extra_info=None):
    return float(solution_str == ground_truth)

def hangs(prompts, completions, **kwargs):
    open("called", "w").close()
    while True:
        try:
            time.sleep(0.1)
        except Exception:  # a reward that swallows what it can
            pass

def accuracy(prompts, completions, answer, **kwargs):
    return [float(c.strip() == a) for c, a in zip(completions, answer)]
"""
ROWS = [{"prompt": f"{i} + 1 =", "answer": str(i + 1)} for i in range(8)]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    (tmp_path / "my_rewards.py").write_text(REWARDS)
    (tmp_path / "needs_missing.py").write_text(
        "import surely_not_installed_pkg\n\ndef f(prompts, completions, **kw):\n    return [0.0] * len(completions)\n"
    )
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in ("my_rewards", "needs_missing"):
        sys.modules.pop(name, None)


def _err(args, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "usage:" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_a_reward_call_over_reward_timeout_stops_naming_the_function(folder):
    functions = RewardFunctions(["my_rewards:slow"], timeout=0.3)
    start = time.monotonic()
    with pytest.raises(RewardFunctionError) as err:
        functions.score([Problem("prompts/test/0", "p", {"columns": {}})], ["x"])
    assert time.monotonic() - start < 5
    assert str(err.value).startswith(
        "reward_function 'my_rewards:slow' did not return within reward_timeout = 0.3 s "
        "on the batch of 1 completions starting at data row prompts/test/0"
    )
    with pytest.raises(ValueError, match="reward_timeout must be a number of seconds >= 0"):
        RewardFunctions(["my_rewards:slow"], timeout=-1)


def test_verl_rewards_without_score_or_ground_truth_are_named(folder):
    row = Problem("prompts/test/3", "p", {"columns": {"reward_model": {"ground_truth": "4"}}})
    with pytest.raises(
        RewardFunctionError,
        match=r"returned a dict without 'score' \(\['acc'\]\) on data row "
        r"prompts/test/3",
    ):
        RewardFunctions(["my_rewards:verl_no_score"]).score([row], ["4"])
    bare = Problem("prompts/test/5", "p", {"columns": {"answer": "6"}})
    with pytest.raises(
        RewardFunctionError,
        match=r"has verl's signature, which needs a ground truth, but data row "
        r"prompts/test/5 has neither reward_model.ground_truth nor a "
        r"ground_truth column \(map one: --data_fields "
        r"ground_truth=COLUMN\)",
    ):
        RewardFunctions(["my_rewards:verl_ok"]).score([bare], ["6"])


def test_a_single_json_object_and_a_missing_dependency_are_named(folder):
    (folder / "one.json").write_text(json.dumps({"rows": ROWS}, indent=2))
    with pytest.raises(ValueError) as err:
        load_records(folder / "one.json")
    assert str(err.value) == (
        f"data file {folder / 'one.json'} holds one JSON object, not records (its key 'rows' "
        "holds a list: save that list as the file); give a list of records [{...}, {...}] "
        "(.json) or one record per line (.jsonl)"
    )
    with pytest.raises(ValueError) as err:
        RewardFunctions(["needs_missing:f"])
    assert str(err.value) == (
        "reward_function 'needs_missing:f': 'needs_missing' was found, but it imports "
        "'surely_not_installed_pkg', which is not installed (pip install it into this "
        "environment)"
    )


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--steps", "1", "--max_steps", "2"],
            "--max_steps is TRL's name for --steps, given 1 already; give one of them",
        ),
        (["--max_steps", "2", "--steps", "1"], "--max_steps is TRL's name for --steps, given 1 too; give one of them"),
        (["--algo", "grpo", "--lora_r", "8"], "grpo.lora_r = 8 does nothing without grpo.use_peft = true"),
        (
            ["--algo", "grpo", "--warmup_steps", "0.1"],
            "expected a number of steps, got '0.1'; for a share of the steps use --warmup_ratio 0.1",
        ),
        (["--lr", "0.1"], "--lr is TRL's name; use --learning_rate"),
        (["--log_completions"], "--log_completions is TRL's name; completions.jsonl keeps"),
        (["--repetition_penalty", "1.1"], "--repetition_penalty is TRL's name; not offered"),
        (["--steps", "x"], "argument --steps: expected an integer, got 'x'"),
        (["--reward_timeout", "5"], "reward_timeout limits reward functions (reward_function)"),
    ],
)
def test_flags_name_their_culprit_in_one_line(folder, tiny_model_dir, capsys, extra, message):
    err = _err(["train", "--model", str(tiny_model_dir), "--out", "run", *extra], capsys)
    assert message in err and err.startswith("python -m escov.llm train: error: ")


def test_resume_refuses_settings_and_a_config_file_and_its_own_flags_need_it(folder, tiny_model_dir, capsys):
    """--resume continues with the run's saved settings: a setting flag or --config beside it is refused, naming
    each; --allow_device_change, --allow_config_change and --re_evaluate without --resume are refused too."""
    (folder / "c.toml").write_text("steps = 3\n")
    for extra, given in (
        (["--config", "c.toml"], "['config']"),
        (["--steps", "3", "--es.sigma", "0.01"], "['es.sigma', 'steps']"),
        (["--device", "cpu", "--seed", "2"], "['seed']"),
    ):
        err = _err(["train", "--resume", "run", *extra], capsys)
        assert f"--resume continues a run with its saved config; do not combine it with {given}" in err, extra
    for flag in ("--allow_device_change", "--allow_config_change", "--re_evaluate"):
        err = _err(["train", "--model", str(tiny_model_dir), "--out", "run", flag], capsys)
        assert f"{flag} only applies with --resume" in err, flag


def test_toml_grpo_keys_of_an_es_run_are_refused(folder, tiny_model_dir, capsys):
    (folder / "es.toml").write_text('algo = "es"\n[grpo]\nnum_generations = 8\nbeta = 0.0\n')
    err = _err(["train", "--config", "es.toml", "--model", str(tiny_model_dir), "--out", "run"], capsys)
    assert "es.toml: [grpo] beta does nothing with algo = 'es' (read by algo grpo, es-grpo, grpo-es); drop it" in err


def test_resume_on_a_model_and_out_holding_other_files_name_the_folder(folder, tiny_model_dir, capsys):
    err = _err(["train", "--resume", str(tiny_model_dir)], capsys)
    assert f"--resume {tiny_model_dir}: not a run directory of `llm train` (its config.json is a model's" in err
    (folder / "notes").mkdir()
    (folder / "notes" / "todo.txt").write_text("x")
    err = _err(["train", "--model", str(tiny_model_dir), "--out", "notes", "--steps", "1"], capsys)
    assert (
        "--out notes is a folder with other files in it (not a run of `llm train`); give a new or empty folder"
    ) in err


def test_train_data_equal_to_test_data_is_warned(folder, tiny_model_dir, capsys):
    code = main(
        [
            "train",
            "--task",
            "prompts",
            "--data",
            "d.jsonl",
            "--test_data",
            "d.jsonl",
            "--reward_function",
            "my_rewards:accuracy",
            "--model",
            str(tiny_model_dir),
            "--out",
            "run",
            "--steps",
            "1",
            "--batch_size",
            "2",
            "--eval_samples",
            "2",
            "--eval_ks",
            "1",
            "--max_completion_length",
            "3",
            "--es.population_size",
            "2",
            "--threads",
            "1",
            "--no-progress",
        ]
    )
    assert code == 0
    assert (
        f"warning: data and test_data are the same file ({folder / 'd.jsonl'}): the test problems are training problems"
    ) in capsys.readouterr().err


def test_a_hung_reward_stops_at_the_second_ctrl_c_and_leaves_no_folder(folder, tiny_model_dir):
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "escov.llm",
            "train",
            "--task",
            "prompts",
            "--test_data",
            "d.jsonl",
            "--data",
            "d.jsonl",
            "--reward_function",
            "my_rewards:hangs",
            "--model",
            str(tiny_model_dir),
            "--out",
            "run",
            "--steps",
            "1",
            "--eval_samples",
            "2",
            "--eval_ks",
            "1",
            "--no-progress",
        ],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=folder,
    )
    deadline = time.monotonic() + 120
    while not (folder / "called").exists():  # the base evaluation calls the reward, which never returns
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert (
        "stopped at once by a second SIGINT, before the first step; nothing was kept (run the same command again)"
        in err
    )
    assert "Traceback" not in err and not (folder / "run").exists()
