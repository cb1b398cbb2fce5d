"""What a GRPO user watches, in metrics.jsonl and the final summary: the learning rate of every step against a
cosine schedule with warmup computed by hand, the step's truncated share against the step's own rollouts sampled
again, the clip shares (TRL's clip_ratio/low and /high) on hand-made ratios, periodic validation every eval_steps,
and the final summary's base -> final."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from escov.llm.config import GRPOConfig
from escov.llm.grpo import clip_region_sums

pytestmark = pytest.mark.usefixtures("one_torch_thread")

STEPS, WARMUP_RATIO, LR = 5, 0.3, 0.02


def cosine_with_warmup(k: int, total: int, ratio: float) -> float:
    """transformers' get_cosine_schedule_with_warmup multiplier at optimizer step k, written out again."""
    warmup = math.ceil(ratio * total)
    if k < warmup:
        return k / warmup
    return 0.5 * (1 + math.cos(math.pi * (k - warmup) / (total - warmup)))


@pytest.fixture(scope="module")
def grpo_run(tiny_model_dir, tmp_path_factory):
    from escov.llm.cli import main

    out = tmp_path_factory.mktemp("grpo") / "run"
    args = [
        "train",
        "--algo",
        "grpo",
        "--model",
        str(tiny_model_dir),
        "--out",
        str(out),
        "--steps",
        str(STEPS),
        "--batch_size",
        "2",
        "--train_pool",
        "8",
        "--threads",
        "1",
        "--max_completion_length",
        "5",
        "--checkpoint_every",
        "5",
        "--probe",
        "false",
        "--eval_problems",
        "3",
        "--eval_samples",
        "2",
        "--eval_ks",
        "1",
        "--heldout_task",
        "",
        "--threshold_keep",
        "50",
        "--format_reward",
        "0.1",
        "--grpo.num_generations",
        "4",
        "--learning_rate",
        str(LR),
        "--lr_scheduler_type",
        "cosine",
        "--warmup_ratio",
        str(WARMUP_RATIO),
        "--grpo.num_iterations",
        "1",
        "--eval_steps",
        "2",
        "--no-progress",
    ]
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(args) == 0
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return out, rows, printed.getvalue()


def test_every_step_records_the_scheduled_learning_rate(grpo_run):
    _, rows, _ = grpo_run
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    want = [LR * cosine_with_warmup(k, STEPS, WARMUP_RATIO) for k in range(STEPS)]
    assert want[0] == 0.0 and want[1] == pytest.approx(LR / 2) and want[2] == pytest.approx(LR)  # warmup: 2 steps
    assert [r["learning_rate"] for r in rows] == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_the_truncated_share_is_the_steps_own_rollouts(grpo_run, tiny_model_dir):
    """Step 1's samples come from the base weights: drawn again from the run's batch and rollout seeds, the share
    that stopped at max_completion_length is the row's."""
    from escov.llm.config import load_config
    from escov.llm.engines.hf import HFEngine
    from escov.llm.rollout import derive_seed

    out, rows, _ = grpo_run
    cfg = load_config(out)
    task = cfg.make_task()
    pool = task.problems("train", cfg.train_pool, seed=cfg.seed)
    idx = np.random.default_rng(derive_seed(cfg.seed, 0, "batch")).choice(len(pool), cfg.batch_size, replace=False)
    batch = [pool[i] for i in sorted(idx)]
    engine = HFEngine(tiny_model_dir)
    samples = engine.generate(
        [p.prompt for p in batch], n=4, temperature=1.0, max_new_tokens=5, seed=derive_seed(cfg.seed, 0, "grpo-rollout")
    )
    cut = [c.finish_reason == "length" for row in samples for c in row]
    assert rows[0]["truncated_share"] == pytest.approx(sum(cut) / len(cut))
    assert all(0.0 <= r["truncated_share"] <= 1.0 for r in rows)


def test_clip_shares_count_the_tokens_whose_clip_binds():
    cfg = GRPOConfig(epsilon=0.2, epsilon_high=0.28)
    ratio = torch.tensor([[0.7, 0.9, 1.3, 1.1], [0.7, 1.25, 1.3, 0.5]])
    adv = torch.tensor([-1.0, 1.0])
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]])
    # row 0 (A < 0): only the low clip binds, at 0.7; row 1 (A > 0): only the high clip, at 1.3 (1.25 is inside)
    assert clip_region_sums(ratio, adv, mask, cfg) == (1.0, 1.0)
    assert clip_region_sums(ratio, -adv, mask, cfg) == (1.0, 1.0)  # row 0's 1.3 binds high; row 1's masked 0.5 not
    assert clip_region_sums(ratio, torch.zeros(2), mask, cfg) == (0.0, 0.0)


def test_rows_carry_the_clip_shares(grpo_run):
    _, rows, _ = grpo_run
    for r in rows:
        assert 0.0 <= r["grpo_clip_low_share"] + r["grpo_clip_high_share"] <= r["grpo_clip_fraction"] + 1e-12
        assert r["grpo_clip_low_share"] == r["grpo_clip_high_share"] == 0.0  # one iteration: ratio = 1 exactly


def test_eval_steps_validates_every_n_steps_with_the_final_evaluations_samples(grpo_run):
    out, rows, _ = grpo_run
    assert [r["step"] for r in rows if "validation" in r] == [2, 4]  # step 5 is the final evaluation's
    ev = json.loads((out / "eval.json").read_text())
    for r in rows:
        if "validation" in r:
            v = r["validation"]
            assert v["num_problems"] == ev["final"]["num_problems"] == 3 and v["n"] == 2
            assert set(v["pass_at_k"]) == {"1"} and 0.0 <= v["pass_at_k"]["1"] <= 1.0
            assert v["correct"] == "reward >= 1" and "per_problem" not in v


def test_the_final_summary_shows_base_to_final(grpo_run):
    out, _, printed = grpo_run
    ev = json.loads((out / "eval.json").read_text())
    base, final = ev["base"], ev["final"]
    assert (
        f"base -> final: reward {base['reward_mean']:.3f} -> {final['reward_mean']:.3f}  length "
        f"{base['mean_response_tokens']:.3f} -> {final['mean_response_tokens']:.3f} tokens"
    ) in printed
    assert f"Pass@1 {base['pass_at_k']['1']:.3f} -> {final['pass_at_k']['1']:.3f}" in printed
