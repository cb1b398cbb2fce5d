"""GRPO's coverage-keeping variants as users spell them: `llm train --help` names each; a short GRPO run with each
spelling (and a combination) finishes on the tiny model and logs the variant's statistics; a combination that
makes no sense is refused in one line naming both settings; what a variant keeps across steps survives a
checkpoint of the optimizer state."""

import io
import json

import numpy as np
import pytest
import torch

from escov.llm.cli import main as llm_main
from escov.llm.config import GRPOConfig
from escov.llm.engines.hf import HFEngine
from escov.llm.grpo import GRPO
from escov.llm.settings_help import trl_epilog
from tests.llm.tasks_for_tests import CountdownScoredBy

RUN = [
    "train",
    "--algo",
    "grpo",
    "--steps",
    "1",
    "--batch_size",
    "2",
    "--train_pool",
    "4",
    "--threads",
    "1",
    "--max_completion_length",
    "5",
    "--probe",
    "false",
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
    "--grpo.num_generations",
    "4",
    "--learning_rate",
    "1e-2",
    "--beta",
    "0.0",
    "--no-progress",
]

# the spelling -> the statistics its metrics row must hold (and what must hold of them)
SPELLINGS = {
    "--entropy_coef 0.01": ("entropy", "entropy_coef"),
    "--top_entropy_quantile 0.2": ("entropy", "token_share"),
    "--importance_sampling_level sequence": ("ratio_mean",),
    "--loss_type cispo": ("ratio_mean", "cispo_clip_ratio"),
    "--loss_type sapo": ("ratio_mean",),
    "--adv_estimator grpo_passk": ("adv_nonzero_share",),
    "--loss_type clip_cov": ("cov_share",),
    "--loss_type kl_cov": ("cov_share",),
    "--loss_type dapo --entropy_coef 0.01 --adv_estimator grpo_passk": ("entropy", "entropy_coef", "adv_nonzero_share"),
    "--adv_estimator pkpo --pass_k 2 --zero_success_gating true": ("adv_nonzero_share", "gated_share"),
}


def test_help_names_every_variant():
    """The --help epilog names every variant of the table with its source (the flags themselves are checked
    with every setting by tests/llm/test_train_cli.py)."""
    text = " ".join(trl_epilog().split())
    for name in (
        "--entropy_coef",
        "--use_adaptive_entropy",
        "--entropy_coef_min/max/delta",
        "--top_entropy_quantile",
        "--importance_sampling_level sequence",
        "GSPO",
        "cispo",
        "sapo",
        "grpo_passk",
        "passk_analytic",
        "pkpo",
        "PKPO",
        "clip_cov",
        "kl_cov",
        "--zero_success_gating",
        "--outcome_bonus_coef",
        "Chen et al. 2025",
        "Walder & Karkhanis 2025",
        "Song, Kempe, Munos 2025",
        "verl",
        "TRL",
    ):
        assert name in text, name


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_a_grpo_run_with_each_variant_finishes_and_logs_its_statistics(tiny_model_dir, tmp_path, spelling):
    run = tmp_path / "run"
    assert llm_main([*RUN, "--model", str(tiny_model_dir), "--out", str(run), *spelling.split()]) == 0
    row = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    stats = row["grpo_variants"]
    assert set(SPELLINGS[spelling]) <= set(stats), stats
    assert all(np.isfinite(v) for v in stats.values())
    config = json.loads((run / "config.json").read_text())["grpo"]
    for flag, value in zip(spelling.split()[::2], spelling.split()[1::2]):
        assert str(config[flag.lstrip("-")]).lower() == value, (flag, config)
    if "entropy_coef" in stats:
        assert stats["entropy_coef"] == 0.01 and stats["entropy"] > 0
    if "token_share" in stats:
        assert 0.1 < stats["token_share"] < 0.35  # about the top 20% of tokens by entropy
    if "cov_share" in stats:
        assert 0 <= stats["cov_share"] <= 0.1  # max(1, 0.0002 N) tokens of the batch at most


@pytest.mark.parametrize(
    "flags, both",
    [
        (
            "--loss_type clip_cov --importance_sampling_level sequence",
            ("loss_type clip_cov", "importance_sampling_level"),
        ),
        ("--adv_estimator grpo_passk --scale_rewards batch", ("grpo_passk", "scale_rewards batch")),
        ("--adv_estimator passk_analytic --scale_rewards none", ("passk_analytic", "scale_rewards")),
        ("--loss_type sapo --epsilon_high 0.28", ("epsilon_high", "loss_type sapo")),
        ("--clip_cov_ratio 0.01", ("clip_cov_ratio", "loss_type clip_cov")),
        ("--kl_cov_ratio 0.01 --loss_type clip_cov", ("kl_cov_ratio", "loss_type kl_cov")),
        ("--ppo_kl_coef 2", ("ppo_kl_coef", "loss_type kl_cov")),
        ("--sapo_temperature_neg 2", ("sapo_temperature_neg", "loss_type sapo")),
        ("--entropy_target 0.5 --entropy_coef 0.01", ("entropy_target", "use_adaptive_entropy")),
        ("--pass_k 2", ("pass_k", "adv_estimator passk_analytic")),
        ("--adv_estimator pkpo --pass_k 4", ("pkpo", "pass_k", "num_generations")),
        ("--adv_estimator pkpo --scale_rewards batch", ("pkpo", "scale_rewards batch")),
        ("--adv_estimator passk_analytic --pass_k 9", ("pass_k", "num_generations")),
        ("--clip_cov_lb 6 --loss_type clip_cov", ("clip_cov_lb", "clip_cov_ub")),
    ],
)
def test_a_combination_that_makes_no_sense_is_refused_naming_both(tmp_path, capsys, flags, both):
    with pytest.raises(SystemExit) as exit_:
        llm_main([*RUN, "--model", str(tmp_path), "--out", str(tmp_path / "run"), *flags.split()])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()  # the error in one line, no usage block
    assert (
        len(err) == 1
        and err[0].startswith("python -m escov.llm train: error: flags: grpo.")
        and all(name in err[0] for name in both)
    ), err
    assert not (tmp_path / "run").exists()


def test_the_variants_state_survives_a_checkpoint_of_the_optimizer(tiny_model_dir):
    """Adaptive entropy, zero-success gating and the outcome bonus keep their state in the optimizer's state dict:
    saved (torch.save) and loaded (weights_only, as resume does) into a fresh GRPO, it is the same state."""
    task = CountdownScoredBy("first-char-digit", lambda c: 1.0 if c[:1].isdigit() else 0.0)
    task.answer = lambda problem, completion: completion[:1] or None
    cfg = GRPOConfig(
        num_generations=4,
        learning_rate=1e-2,
        beta=0.0,
        entropy_coef=0.01,
        use_adaptive_entropy=True,
        entropy_target=10.0,
        zero_success_gating=True,
        outcome_bonus_coef=0.5,
    )
    cfg.validate()

    def grpo():
        engine = HFEngine(str(tiny_model_dir))
        return GRPO(
            cfg,
            engine,
            task,
            engine.model,
            None,
            engine.prompt_token_ids,
            temperature=1.0,
            max_new_tokens=4,
            seed=0,
            pad_id=engine.tokenizer.pad_token_id,
            phase_steps=3,
        )

    first = grpo()
    problems = task.problems("train", 3, 0)
    for step in range(2):
        out = first.step(problems, step)
    state = first.optimizer.param_groups[0]["escov_variants"]
    assert state["entropy"]["coef"] == pytest.approx(0.01 + 2 * 0.005)  # entropy below the target twice
    assert out.variants["entropy_coef"] == pytest.approx(0.015)  # applied: the coefficient after step 1
    assert sum(sum(c.values()) for c in state["counts"].values()) == 2 * 3 * 4  # every answer counted
    assert state["solved"] == sorted({p.prompt for p in problems} & set(state["solved"]))
    buffer = io.BytesIO()
    torch.save(first.optimizer.state_dict(), buffer)
    buffer.seek(0)
    second = grpo()
    second.optimizer.load_state_dict(torch.load(buffer, weights_only=True))
    assert second.optimizer.param_groups[0]["escov_variants"] == state


def test_plain_grpo_keeps_no_variant_state(tiny_model_dir):
    """With every variant off, the optimizer state holds nothing of theirs (plain runs' checkpoints as before)."""
    task = CountdownScoredBy("first-char-digit", lambda c: 1.0 if c[:1].isdigit() else 0.0)
    engine = HFEngine(str(tiny_model_dir))
    cfg = GRPOConfig(num_generations=4, learning_rate=1e-2, beta=0.0)
    grpo = GRPO(
        cfg,
        engine,
        task,
        engine.model,
        None,
        engine.prompt_token_ids,
        temperature=1.0,
        max_new_tokens=4,
        seed=0,
        pad_id=engine.tokenizer.pad_token_id,
    )
    out = grpo.step(task.problems("train", 2, 0), 0)
    assert "escov_variants" not in grpo.optimizer.state_dict()["param_groups"][0] and out.variants == {}
