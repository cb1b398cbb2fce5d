"""`paper_checks report` on a user's own runs (paper_checks/own_runs.py): runs of different settings are never seeds of
one method (a DAPO+LoRA run and a Dr.GRPO run of seed 0; ES at two sigmas; two reward sets), each group is named by
what tells it apart, and each group's rewards and Pass@k base -> final come with intervals checked by hand; the
paper's claims only when asked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from escov.llm.config import ESConfig, TrainConfig
from escov.paper_checks.cli import main as cli_main
from escov.paper_checks.evidence import variant
from escov.paper_checks.own_runs import group_runs
from escov.paper_checks.report import build_report
from escov.paper_checks.rundir import load_run

N = 4  # samples per prompt
PROMPTS = 6


def _evaluation(counts, accuracy: float, rule: str = "accuracy >= 1") -> dict:
    counts = np.asarray(counts)
    return {
        "task": "prompts",
        "num_problems": PROMPTS,
        "n": N,
        "ks": [1],
        "temperature": 1.0,
        "correct": rule,
        "pass_at_k": {"1": float((counts / N).mean())},
        "maj_at_k": {"1": 0.0},
        "rewards": {
            "accuracy": {"mean": accuracy, "std": 0.1, "applied": 1.0},
            "formatted": {"mean": 0.9, "std": 0.1, "applied": 1.0},
        },
        "per_problem": [{"id": f"prompts/test/{i}", "correct": int(c)} for i, c in enumerate(counts)],
    }


def write_run(root: Path, name: str, seed: int, base_counts, final_counts, base_acc, final_acc, **settings) -> Path:
    run = root / name
    run.mkdir(parents=True)
    cfg = TrainConfig(
        **{
            "task": "prompts",
            "test_data": "test.jsonl",
            "model": "base",
            "out": str(run),
            "seed": seed,
            "reward_function": ("my_rewards:accuracy", "my_rewards:formatted"),
            "eval_samples": N,
            "eval_ks": (1,),
            "eval_problems": PROMPTS,
        }
        | settings
    )
    (run / "config.json").write_text(json.dumps(cfg.to_dict()))
    (run / "metrics.jsonl").write_text(
        json.dumps(
            {"step": 1, "phase": cfg.algo, "reward_mean": 0.1, "pass_at_1": 0.1, "entropy": 1.0, "drift_rel": 0.0}
        )
        + "\n"
    )
    (run / "eval.json").write_text(
        json.dumps({"base": _evaluation(base_counts, base_acc), "final": _evaluation(final_counts, final_acc)})
    )
    return run


def _grpo(**grpo):
    from escov.llm.config import GRPOConfig

    return GRPOConfig(**grpo)


@pytest.mark.filterwarnings("error::UserWarning")  # matplotlib's "No artists with labels" legend warning included
def test_a_dapo_lora_run_and_a_dr_grpo_run_of_one_seed_are_two_groups(tmp_path):
    base = [0, 1, 2, 0, 1, 0]
    dapo = write_run(
        tmp_path,
        "dapo",
        0,
        base,
        [1, 2, 2, 1, 1, 0],
        0.1,
        0.3,
        algo="grpo",
        grpo=_grpo(loss_type="dapo", epsilon_high=0.28, use_peft=True),
    )
    dr = write_run(tmp_path, "dr", 0, base, [0, 1, 3, 0, 2, 0], 0.1, 0.2, algo="grpo", grpo=_grpo(loss_type="dr_grpo"))
    assert variant(load_run(dapo).config) == "grpo[dapo,clip-high-0.28,lora-r16]"
    assert variant(load_run(dr).config) == "grpo[dr_grpo]"
    report = build_report([dapo, dr], tmp_path / "report")
    groups = {g["name"]: g["seeds"] for g in report["own_runs"]["groups"]}
    assert groups == {"grpo[dapo,clip-high-0.28,lora-r16]": [0], "grpo[dr_grpo]": [0]}
    text = (tmp_path / "report" / "REPORT.md").read_text()
    assert "## Your runs" in text and "## All claims" not in text and "x2" not in text
    assert "claims" not in report  # the paper's claims only when asked
    with_claims = build_report([dapo, dr], tmp_path / "claims", claims=True)
    assert with_claims["claims"] and "own_runs" in with_claims
    runs_line = next(
        line for line in (tmp_path / "claims" / "REPORT.md").read_text().splitlines() if line.startswith("Runs: ")
    )
    assert runs_line == "Runs: `grpo[dapo,clip-high-0.28,lora-r16]` x1, `grpo[dr_grpo]` x1"


def test_es_at_two_sigmas_and_two_reward_sets_are_named_apart(tmp_path):
    c = [1] * PROMPTS
    runs = [
        write_run(tmp_path, f"s{sigma}-{seed}", seed, c, c, 0.1, 0.1, es=ESConfig(sigma=sigma))
        for sigma in (1e-3, 1.5e-3)
        for seed in (0, 1)
    ]
    runs.append(
        write_run(
            tmp_path, "one-reward", 0, c, c, 0.1, 0.1, es=ESConfig(sigma=1e-3), reward_function=("my_rewards:accuracy",)
        )
    )
    groups = {g.name: sorted(r.seed for r in g.runs) for g in group_runs([load_run(r) for r in runs])}
    assert groups == {
        "es (es.sigma=0.001, reward_function=my_rewards:accuracy,my_rewards:formatted)": [0, 1],
        "es (es.sigma=0.0015, reward_function=my_rewards:accuracy,my_rewards:formatted)": [0, 1],
        "es (es.sigma=0.001, reward_function=my_rewards:accuracy)": [0],
    }


def test_each_groups_rewards_and_pass_at_k_change_with_intervals_computed_by_hand(tmp_path):
    rng = np.random.default_rng(3)
    base_counts = rng.integers(0, N + 1, size=(3, PROMPTS))
    final_counts = np.minimum(base_counts + rng.integers(0, 3, size=(3, PROMPTS)), N)
    base_acc, final_acc = [0.10, 0.12, 0.08], [0.30, 0.25, 0.41]
    runs = [
        write_run(tmp_path, f"r{s}", s, base_counts[s], final_counts[s], base_acc[s], final_acc[s]) for s in range(3)
    ]
    code = cli_main(["report", *map(str, runs), "--out", str(tmp_path / "report")])
    assert code == 0
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    (c,) = report["own_runs"]["comparison"]
    assert c["seeds"] == [0, 1, 2] and c["correct"] == "accuracy >= 1"
    d = np.array(final_acc) - np.array(base_acc)
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    acc = c["rewards"]["accuracy"]
    assert acc["base"] == pytest.approx(np.mean(base_acc)) and acc["final"] == pytest.approx(np.mean(final_acc))
    assert acc["change"]["mean"] == pytest.approx(d.mean())
    assert [acc["change"]["lo"], acc["change"]["hi"]] == pytest.approx([d.mean() - half, d.mean() + half])
    assert c["rewards"]["formatted"]["change"]["mean"] == 0.0
    p1 = c["pass_at_k"]["1"]
    diffs = (final_counts - base_counts) / N  # Pass@1 of a prompt: its share of correct samples
    assert p1["change"]["mean"] == pytest.approx(diffs.mean())
    assert p1["change"]["lo"] < diffs.mean() < p1["change"]["hi"] and p1["change"]["seeds"] == 3
    assert p1["change"]["prompts"] == PROMPTS
    text = (tmp_path / "report" / "REPORT.md").read_text()
    assert (
        f"| reward `accuracy` (mean) | {np.mean(base_acc):.3f} | {np.mean(final_acc):.3f} | {d.mean():+.3f} "
        f"[{d.mean() - half:+.3f}, {d.mean() + half:+.3f}] |" in text
    )
