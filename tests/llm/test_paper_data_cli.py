"""The paper's data through the command line: the Countdown file sample and GSM8K files (Parquet, as
HF datasets writes them), evaluated and trained with the paper's configs on a random Qwen2 model."""

import json
from pathlib import Path

import datasets
import pytest

from escov.llm.cli import main

DATA = Path(__file__).parents[1] / "data"
CONFIGS = Path(__file__).parents[2] / "configs"
SMALL = [
    "--steps",
    "1",
    "--batch_size",
    "2",
    "--train_pool",
    "4",
    "--max_completion_length",
    "6",
    "--eval_problems",
    "3",
    "--eval_samples",
    "2",
    "--eval_ks",
    "1,2",
    "--es.population_size",
    "4",
    "--grpo.num_generations",
    "2",
    "--probe_prompts",
    "2",
    "--probe_members",
    "2",
    "--probe_samples",
    "2",
    "--probe_center_samples",
    "2",
    "--step_samples",
    "2",
    "--threads",
    "1",
    "--threshold_keep",
    "50",
]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _without(flags: list[str], *names: str) -> list[str]:
    """flags less the named ones and their values (GRPO refuses the flags only ES reads)."""
    out, skip = [], False
    for item in flags:
        if skip:
            skip = False
        elif item in names:
            skip = True
        else:
            out.append(item)
    return out


@pytest.fixture(scope="module")
def qwen2_dir(random_qwen2_dir):
    return random_qwen2_dir


@pytest.fixture(scope="module")
def gsm8k_parquet(tmp_path_factory):
    out = tmp_path_factory.mktemp("gsm8k")
    for split in ("train", "test"):
        rows = [json.loads(line) for line in (DATA / f"gsm8k_{split}.jsonl").read_text().splitlines()]
        datasets.Dataset.from_list(rows).to_parquet(out / f"{split}.parquet")
    return out


def cli(args) -> int:
    try:
        return main(args)
    except SystemExit as e:
        return e.code


def test_eval_the_papers_countdown_file(qwen2_dir, tmp_path):
    assert (
        cli(
            [
                "eval",
                "--model",
                str(qwen2_dir),
                "--task",
                "countdown",
                "--test_data",
                str(DATA / "countdown_sample.json"),
                "--eval_problems",
                "22",
                "--prompt-style",
                "paper",
                "--n",
                "2",
                "--k",
                "1,2",
                "--max-new-tokens",
                "4",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    result = json.loads((tmp_path / "eval.json").read_text())
    assert result["num_problems"] == 22 and result["prompt_style"] == "paper"
    assert {r["id"] for r in result["per_problem"]} == {
        f"countdown/test/{r['id']}" for r in json.loads((DATA / "countdown_sample.json").read_text())
    }


@pytest.mark.parametrize(
    "config, data",
    [
        ("paper-countdown-es.toml", "countdown"),
        ("paper-gsm8k-grpo.toml", "gsm8k"),
        pytest.param("paper-countdown-grpo.toml", "countdown", marks=pytest.mark.slow),
        pytest.param("paper-gsm8k-es.toml", "gsm8k", marks=pytest.mark.slow),
    ],
)
def test_train_with_the_papers_configs(qwen2_dir, gsm8k_parquet, tmp_path, config, data):
    if data == "countdown":
        files = ["--data", str(DATA / "countdown_sample.json"), "--data_split", "first-8"]
    else:
        files = ["--data", str(gsm8k_parquet / "train.parquet"), "--test_data", str(gsm8k_parquet / "test.parquet")]
    run = tmp_path / "run"
    small = SMALL if "-es" in config else _without(SMALL, "--es.population_size", "--step_samples")  # ES-only flags
    assert (
        cli(["train", "--config", str(CONFIGS / config), "--model", str(qwen2_dir), "--out", str(run)] + files + small)
        == 0
    )
    cfg = json.loads((run / "config.json").read_text())
    expected = {"countdown": ("paper", "escov", 0.1), "gsm8k": ("paper", "paper-gsm8k", 0.0)}[data]
    assert (cfg["prompt_style"], cfg["reward"], cfg["format_reward"]) == expected
    assert cfg["data"] == files[1] and cfg["es"]["sigma"] == 1.5e-3
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows and all(0.0 <= r["reward_mean"] <= 1.0 for r in rows)
    ev = json.loads((run / "eval.json").read_text())
    assert ev["base"]["num_problems"] == ev["final"]["num_problems"] == 3
    assert ev["final"]["task"] == data
