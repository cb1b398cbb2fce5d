"""`llm eval` as users expect: `--run RUN` evaluates a run's checkpoint as the run did and says that it reproduces
eval.json (final, base) or the eval_steps validation, every number equal; a run's checkpoint evaluated with another
seed names the seed that reproduces it; the first line states the problems, samples and T; a data file is evaluated
whole; no training notes; no loading bar with --no-progress; wrong inputs name their flag."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from escov.llm.cli import main

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _main(args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as stop:
            code = stop.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def run(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("evalrun") / "run"
    code, _, err = _main(
        [
            "train",
            "--algo",
            "grpo",
            "--model",
            str(tiny_model_dir),
            "--out",
            str(out),
            "--steps",
            "3",
            "--batch_size",
            "2",
            "--train_pool",
            "8",
            "--threads",
            "1",
            "--max_completion_length",
            "5",
            "--checkpoint_every",
            "1",
            "--probe",
            "false",
            "--eval_problems",
            "3",
            "--eval_samples",
            "4",
            "--eval_ks",
            "1,4",
            "--heldout_task",
            "",
            "--threshold_keep",
            "50",
            "--format_reward",
            "0.1",
            "--grpo.num_generations",
            "4",
            "--learning_rate",
            "0.02",
            "--eval_steps",
            "1",
            "--eval_temperature",
            "0.7",
            "--seed",
            "7",
            "--no-progress",
        ]
    )
    assert code == 0, err[-2000:]
    return out


def _record(path):
    return json.loads((path / "eval.json").read_text())


@pytest.mark.parametrize("checkpoint, part", [(None, "final"), ("0", "base"), ("1", "validation"), ("2", "validation")])
def test_eval_run_reproduces_the_runs_own_evaluation(run, tmp_path, checkpoint, part):
    from escov.llm.rollout import derive_seed

    args = ["eval", "--run", str(run), "--out", str(tmp_path / "ev"), "--no-progress"]
    code, printed, err = _main(args + (["--checkpoint", checkpoint] if checkpoint else []))
    assert code == 0, err[-2000:]
    ours = _record(tmp_path / "ev")
    if part == "validation":
        theirs = next(
            json.loads(line)
            for line in (run / "metrics.jsonl").read_text().splitlines()
            if json.loads(line)["step"] == int(checkpoint)
        )["validation"]
    else:
        theirs = _record(run)[part]
    seed = derive_seed(7, "eval") % 2**31  # the run's evaluation seed, written out
    assert ours["seed"] == seed and ours["n"] == 4 and ours["temperature"] == 0.7 and ours["num_problems"] == 3
    for key in ("pass_at_k", "maj_at_k", "reward_mean", "mean_token_entropy"):
        assert ours[key] == theirs[key], key
    assert printed.splitlines()[0].startswith(
        f"llm eval: 3 test problems of task countdown x 4 samples at T=0.7, up to 5 new tokens, seed {seed}; run {run}"
    )
    assert "reproduces " in printed and "differs" not in printed
    assert "Loading weights" not in err and "note:" not in err


def test_a_runs_checkpoint_with_another_seed_names_the_seed_that_reproduces_it(run, tmp_path):
    from escov.llm.rollout import derive_seed

    code, printed, err = _main(
        [
            "eval",
            "--model",
            str(run / "checkpoints" / "step-2"),
            "--max_completion_length",
            "5",
            "--eval_samples",
            "2",
            "--eval_ks",
            "1",
            "--eval_problems",
            "2",
            "--out",
            str(tmp_path / "ev"),
            "--no-progress",
        ]
    )
    assert code == 0, err[-2000:]
    assert (
        f"whose evaluations sample with seed {derive_seed(7, 'eval') % 2**31} (this one: 0); `llm eval --run "
        f"{run.resolve()} --checkpoint 2` evaluates it as the run did"
    ) in printed
    assert printed.splitlines()[0] == (
        "llm eval: 2 test problems of task countdown x 2 samples at T=1, up to 5 new tokens, seed 0"
    )


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--eval_samples", "8"], "--run evaluates as the run did, with its own settings; drop --eval_samples"),
        (["--checkpoint", "5"], "--checkpoint 5: RUN has checkpoints [1, 2, 3] (0: the base model)"),
        # a flag given at a value that reads as false is given all the same; the task's settings are the run's too
        (["--eval_temperature", "0"], "--run evaluates as the run did, with its own settings; drop --eval_temperature"),
        (["--task", "countdown3"], "--run evaluates as the run did, with its own settings; drop --task"),
    ],
)
def test_eval_run_refuses_what_the_run_decides(run, tmp_path, extra, message):
    code, _, err = _main(["eval", "--run", str(run), "--out", str(tmp_path / "ev"), *extra])
    assert code == 2 and message.replace("RUN", str(run)) in err and "Traceback" not in err


def test_a_run_directory_given_as_model_names_run(run, tmp_path):
    code, _, err = _main(["eval", "--model", str(run), "--out", str(tmp_path / "ev")])
    assert code == 2
    assert (
        f"error: --model {run} is a run directory of `llm train`, not a model: give one of its checkpoints "
        f"({run / 'checkpoints' / 'step-N'}), or `llm eval --run {run}`"
    ) in err


def test_a_data_file_is_evaluated_whole_without_training_notes(tiny_model_dir, tmp_path, monkeypatch):
    rows = [{"prompt": f"{i} + 1 =", "answer": str(i + 1)} for i in range(70)]  # more than eval_problems' 64
    (tmp_path / "all.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "eval_run_rewards.py").write_text(
        "def exact(prompts, completions, answer, **kw):\n"
        "    return [float(c.strip() == a) for c, a in zip(completions, answer)]\n"
    )
    monkeypatch.chdir(tmp_path)
    code, printed, err = _main(
        [
            "eval",
            "--model",
            str(tiny_model_dir),
            "--task",
            "prompts",
            "--data",
            "all.jsonl",
            "--reward_function",
            "eval_run_rewards:exact",
            "--eval_samples",
            "1",
            "--eval_ks",
            "1",
            "--max_completion_length",
            "3",
            "--out",
            "ev",
            "--no-progress",
        ]
    )
    assert code == 0, err[-2000:]
    assert printed.splitlines()[0].startswith("llm eval: 70 test problems of data file all.jsonl x 1 samples at T=1")
    assert _record(tmp_path / "ev")["num_problems"] == 70 and "note:" not in err


def test_the_comparison_with_the_runs_record_says_reproduces_only_when_every_number_is_equal():
    from escov.llm.eval_run import comparison

    ours = {"pass_at_k": {"1": 0.5, "4": 0.75}, "maj_at_k": {"4": 0.25}, "reward_mean": 0.5}
    same = {"pass_at_k": {"1": 0.5, "4": 0.75}, "maj_at_k": {"4": 0.25}, "reward_mean": 0.5, "mean_token_entropy": 1}
    assert comparison(ours, same, "eval.json's final") == (
        "reproduces eval.json's final: pass@1 0.500 = 0.500  pass@4 0.750 = 0.750  maj@4 0.250 = 0.250  "
        "reward 0.500 = 0.500"
    )
    other = same | {"pass_at_k": {"1": 0.5, "4": 0.5}}
    assert comparison(ours, other, "eval.json's final") == (
        "differs from eval.json's final: pass@1 0.500 = 0.500  pass@4 0.750 vs 0.500  maj@4 0.250 = 0.250  "
        "reward 0.500 = 0.500 (same problems, samples and seed: other threads, device or library versions change the "
        "sampled tokens)"
    )
    assert comparison(ours, {"pass_at_k": {"1": 0.5}}, "x").startswith(
        "differs from x: pass@1 0.500 = 0.500  pass@4 0.750 vs n/a"
    )
    assert comparison(ours, None, "x") == ""


def test_a_checkpoint_is_a_step_folder_in_a_runs_checkpoints_folder(tmp_path):
    from escov.llm.eval_run import run_of_checkpoint

    run = tmp_path / "run"
    (run / "checkpoints" / "step-3").mkdir(parents=True)
    (run / "elsewhere" / "step-3").mkdir(parents=True)
    (run / "config.json").write_text("{}")
    assert run_of_checkpoint(str(run / "checkpoints" / "step-3")) == (run.resolve(), 3)
    assert run_of_checkpoint(str(run / "elsewhere" / "step-3")) is None
    assert run_of_checkpoint(str(run / "checkpoints")) is None
    (run / "config.json").unlink()
    assert run_of_checkpoint(str(run / "checkpoints" / "step-3")) is None
