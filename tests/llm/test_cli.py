"""`python -m escov.llm eval|pretrain`: end-to-end runs on the tiny model, and clear errors for bad input
that come before any model is loaded."""

import json
import subprocess
import sys

import pytest
from safetensors.torch import load_file

from escov.llm.cli import main


def run(args, capsys):
    """(exit code, stderr) of the CLI."""
    try:
        code = main(args)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


def test_eval_countdown_end_to_end(tiny_model_dir, tmp_path, capsys):
    code, _ = run(
        [
            "eval",
            "--model",
            str(tiny_model_dir),
            "--task",
            "countdown",
            "--n",
            "4",
            "--k",
            "1,2,4",
            "--num-problems",
            "5",
            "--out",
            str(tmp_path),
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0
    result = json.loads((tmp_path / "eval.json").read_text())
    assert result["task"] == "countdown" and result["num_problems"] == 5 and result["n"] == 4
    assert set(result["pass_at_k"]) == set(result["maj_at_k"]) == {"1", "2", "4"}
    assert len(result["per_problem"]) == 5 and result["max_new_tokens"] == 24  # llm train's default
    assert (tmp_path / "eval.png").stat().st_size > 0


def test_eval_gsm8k_file(tiny_model_dir, tmp_path, capsys):
    data = tmp_path / "gsm.jsonl"
    data.write_text(json.dumps({"question": "1+1?", "answer": "#### 2"}) + "\n")
    code, _ = run(
        [
            "eval",
            "--model",
            str(tiny_model_dir),
            "--task",
            "gsm8k",
            "--test_data",
            str(data),
            "--eval_problems",
            "1",
            "--n",
            "2",
            "--k",
            "1,2",
            "--max-new-tokens",
            "4",
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0
    assert json.loads((tmp_path / "o" / "eval.json").read_text())["num_problems"] == 1


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--task", "countdown", "--n", "4", "--k", "1,8"],
            "n (samples per problem) must be >= the largest k: n=4 < k=8",
        ),
        (["--task", "countdown", "--k", "1,x"], "--k must be comma-separated integers"),
        (["--task", "gsm8k"], "task 'gsm8k' needs a data file: pass data and/or test_data"),
        (["--task", "gsm8k", "--test_data", "MISSING"], "does not exist"),
        (
            ["--task", "arithmetic", "--test_data", "x.jsonl"],
            "task 'arithmetic' generates its problems; it takes no ['test_data']",
        ),
        (["--task", "countdown", "--test_data", "NO_TARGET"], "record 1 lacks the field 'target'"),
        (["--task", "countdown", "--test_data", "BAD_TARGET"], "record 0: field 'target' is not a number: 'ninety'"),
        (["--task", "countdown", "--data", "NO_TARGET", "--data-split", "paper"], "needs more than 200 records"),
        (["--task", "gsm8k", "--test_data", "EMPTY"], "holds no records"),
        (["--task", "gsm8k", "--test_data", "BAD"], "record 1 lacks the field 'answer'"),
        (["--task", "deepscaler", "--test_data", "BAD"], "record 0 lacks the field 'problem'"),
        # --data alone is the file to evaluate (all of it): the missing model is the first bad input
        (["--task", "gsm8k", "--data", "GSM"], "model directory"),
    ],
)
def test_bad_input_fails_before_loading_a_model(tmp_path, capsys, extra, message):
    """The model path does not exist either: the reported error is about the first bad input, so
    the checks run before the model directory is even looked at."""
    (tmp_path / "empty.jsonl").write_text("")
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"question": "q", "answer": "#### 1"}, {"question": "q2"}])
    no_target = write_jsonl(tmp_path / "cd1.jsonl", [{"numbers": [1, 2], "target": "3"}, {"numbers": [1, 2]}])
    bad_target = write_jsonl(tmp_path / "cd2.jsonl", [{"numbers": [1, 2], "target": "ninety"}])
    paths = {
        "MISSING": str(tmp_path / "missing.jsonl"),
        "EMPTY": str(tmp_path / "empty.jsonl"),
        "BAD": bad,
        "NO_TARGET": no_target,
        "BAD_TARGET": bad_target,
        "GSM": write_jsonl(tmp_path / "gsm.jsonl", [{"question": "q", "answer": "#### 1"}]),
    }
    extra = [paths.get(a, a) for a in extra]
    code, err = run(["eval", "--model", str(tmp_path / "no-model")] + extra, capsys)
    assert code == 2
    assert message in err


def test_bad_model_and_task(tmp_path, capsys):
    code, err = run(["eval", "--model", str(tmp_path / "no-model"), "--task", "countdown"], capsys)
    assert code == 2 and "does not exist" in err
    code, err = run(["eval", "--model", str(tmp_path), "--task", "countdown"], capsys)
    assert code == 2 and "no config.json" in err
    code, err = run(["eval", "--model", str(tmp_path), "--task", "sudoku"], capsys)
    assert code == 2 and "invalid choice: 'sudoku'" in err
    code, err = run(["pretrain", "--out", str(tmp_path), "--preset", "huge"], capsys)
    assert code == 2 and "invalid choice: 'huge'" in err


def test_pretrain_cli_is_deterministic(tiny_model_dir, tmp_path):
    """The CLI with the fixture's preset and seed (and its default of one thread) reproduces the fixture's
    weights exactly. Both run in fresh processes: a process that has started an in-process vLLM engine (this
    session may have) trains the same preset to other weights (measured: another weights hash)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "escov.llm",
            "pretrain",
            "--out",
            str(tmp_path),
            "--preset",
            "test",
            "--seed",
            "0",
            "--no-progress",
        ],
        check=True,
        capture_output=True,
        timeout=1800,
    )
    a, b = load_file(str(tmp_path / "model.safetensors")), load_file(str(tiny_model_dir / "model.safetensors"))
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    stats = json.loads((tmp_path / "pretrain.json").read_text())
    assert stats["preset"] == "test" and stats["loss"][-1] < stats["loss"][0]
    assert (tmp_path / "loss.png").stat().st_size > 0


def test_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "escov.llm", "--help"], capture_output=True, text=True, check=True)
    assert "pretrain" in out.stdout and "eval" in out.stdout
