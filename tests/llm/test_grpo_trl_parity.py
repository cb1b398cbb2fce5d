"""Our GRPO loss against TRL's GRPOTrainer.compute_loss on an identical batch (llm/trl_reference.py).

Skipped when trl is not installed. The batch is sampled from the tiny test model; advantages are
drawn at random (the test model rarely solves a problem, so its own advantages are mostly 0), the
policy and reference are perturbed copies of the model, so ratios move and some are clipped.
"""

import importlib.util

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="trl is not installed")


@pytest.fixture(scope="module")
def batch(tiny_model_dir):
    from escov.llm.trl_reference import Settings, identical_batch

    torch.set_num_threads(1)
    s = Settings(model=str(tiny_model_dir), batch=4, num_generations=4, max_new_tokens=10, policy_scale=0.05)
    task, problems, _, ours, trl_inputs = identical_batch(s)
    adv = torch.randn(len(ours["seq"]), generator=torch.Generator().manual_seed(0))
    return s, task, problems, ours, trl_inputs, adv


@pytest.mark.parametrize(
    "loss_type,beta,on_policy",
    [("grpo", 0.04, False), ("bnpo", 0.04, False), ("grpo", 0.0, False), ("grpo", 0.04, True)],
)
def test_trl_loss_and_gradient_match_ours(batch, loss_type, beta, on_policy):
    from escov.llm.trl_reference import loss_case

    s, task, problems, ours, trl_inputs, adv = batch
    r = loss_case(s, task, problems, ours, trl_inputs, adv, loss_type, beta, False, on_policy)
    if not on_policy:
        assert r["clip_fraction"] > 0.01  # the clipped branch is exercised
    assert r["loss_rel_diff"] < 1e-4 and r["grad_rel_diff"] < 1e-4, r


def test_trl_bias_corrected_kl_changes_the_gradient(batch):
    """TRL's default use_bias_correction_kl=True weights the KL by the ratio: same on-policy loss value
    (ratio 1), a different gradient. The comparison above must be able to see such a difference."""
    from escov.llm.trl_reference import loss_case

    s, task, problems, ours, trl_inputs, adv = batch
    r = loss_case(s, task, problems, ours, trl_inputs, adv, "grpo", 0.04, True, True)
    assert r["loss_rel_diff"] < 1e-4
    assert r["grad_rel_diff"] > 1e-2, r


# ----------------------------------------------------------------------------- TRL's variants

SCALES = ("group", "batch", "none")
TRL_LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo")  # ours that TRL 1.16 has (not clip_cov, kl_cov)


@pytest.fixture(scope="module")
def variant_trainers(batch, tmp_path_factory):
    """One TRL GRPOTrainer per (loss_type, epsilon_high, variant settings), made on demand and kept for the module."""
    from escov.llm.trl_reference import perturbed, trl_trainer

    s, task, problems, *_ = batch
    made = {}

    def get(loss_type, epsilon_high, variant=None):
        key = (loss_type, epsilon_high, tuple(sorted((variant or {}).items())))
        if key not in made:
            made[key] = trl_trainer(
                s,
                perturbed(s.model, s.policy_scale, s.seed + 1),
                task,
                problems,
                str(tmp_path_factory.mktemp("trl")),
                loss_type=loss_type,
                beta=0.04,
                epsilon_high=epsilon_high,
                variant=variant,
            )
        return made[key]

    return get


@pytest.mark.parametrize("mask_truncated", [False, True])
@pytest.mark.parametrize("epsilon_high", [None, 0.28])
@pytest.mark.parametrize("loss_type", TRL_LOSS_TYPES)
def test_trl_variants_match_ours(batch, variant_trainers, loss_type, epsilon_high, mask_truncated):
    """Every loss_type x (epsilon_high or not) x scale_rewards x mask_truncated_completions: loss and gradient
    equal TRL's compute_loss on the identical batch, with the advantages of each scale_rewards mode."""
    from escov.llm.grpo import group_advantages
    from escov.llm.trl_reference import loss_case

    if loss_type == "sapo" and epsilon_high:
        pytest.skip("sapo has no clip range: grpo.epsilon_high is refused with it")
    s, task, problems, ours, trl_inputs, _ = batch
    rewards = np.random.default_rng(1).choice([0.0, 0.5, 1.0], size=(s.batch, s.num_generations))
    finished = [c.finish_reason == "stop" for c in ours["completions"]]
    assert any(finished) and not all(finished), "the batch needs completions cut at the limit and stopped ones"
    seen = []
    for scale in SCALES:
        adv = torch.tensor(group_advantages(rewards, scale).reshape(-1), dtype=torch.float32)
        r = loss_case(
            s,
            task,
            problems,
            ours,
            trl_inputs,
            adv,
            loss_type,
            0.04,
            False,
            False,
            epsilon_high=epsilon_high,
            mask_truncated=mask_truncated,
            completions=ours["completions"],
            trainer=variant_trainers(loss_type, epsilon_high),
        )
        assert r["clip_fraction"] > 0.01  # the clipped branch is exercised
        assert r["loss_rel_diff"] < 1e-4 and r["grad_rel_diff"] < 1e-4, (scale, r)
        seen.append(r["loss_ours"])
    assert len(set(seen)) == 3  # the three advantage scalings give three different losses


# TRL's coverage-keeping options, each on the token and the sequence level (GSPO), with the loss types that take them
OPTIONS = {
    "none": {},
    "entropy_coef": {"entropy_coef": 0.1},
    "top_entropy_quantile": {"top_entropy_quantile": 0.2},
    "both": {"entropy_coef": 0.1, "top_entropy_quantile": 0.2},
}


@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "cispo", "sapo"])
def test_trl_entropy_options_and_sequence_level_match_ours(batch, variant_trainers, loss_type, level, option):
    """entropy_coef, top_entropy_quantile (both, or neither) x importance_sampling_level x the loss types: loss and
    gradient equal TRL's compute_loss; each option moves the loss off the loss without it, and the sequence level
    moves it off the token level (off-policy ratios)."""
    from escov.llm.trl_reference import loss_case

    s, task, problems, ours, trl_inputs, adv = batch
    epsilon_high = 1.1 if loss_type == "cispo" else None  # cispo's cap: some ratios above it, some below
    variant = OPTIONS[option] | {"importance_sampling_level": level}
    r = loss_case(
        s,
        task,
        problems,
        ours,
        trl_inputs,
        adv,
        loss_type,
        0.04,
        False,
        False,
        epsilon_high=epsilon_high,
        trainer=variant_trainers(loss_type, epsilon_high, variant),
        variant=variant,
    )
    assert r["loss_rel_diff"] < 1e-4 and r["grad_rel_diff"] < 1e-4, r
    if "top_entropy_quantile" in variant:
        assert 0.15 < r["selected_share"] < 0.3, r  # about the top 20% of the tokens by entropy
    plain = {"importance_sampling_level": "token"}
    if variant != plain:
        base = loss_case(
            s,
            task,
            problems,
            ours,
            trl_inputs,
            adv,
            loss_type,
            0.04,
            False,
            False,
            epsilon_high=epsilon_high,
            trainer=variant_trainers(loss_type, epsilon_high, plain),
            variant=plain,
        )
        assert abs(base["loss_ours"] - r["loss_ours"]) > 1e-6 * abs(base["loss_ours"]), (base, r)


def test_variants_differ_from_the_default(batch, variant_trainers):
    """The settings reach the loss: each variant moves it away from the default grpo loss on the same batch."""
    from escov.llm.trl_reference import loss_case

    s, task, problems, ours, trl_inputs, adv = batch
    loss = {}
    for key, kw in {
        "default": dict(),
        "epsilon_high": dict(epsilon_high=0.28),
        "mask": dict(mask_truncated=True, completions=ours["completions"]),
    }.items():
        loss[key] = loss_case(
            s,
            task,
            problems,
            ours,
            trl_inputs,
            adv,
            "grpo",
            0.04,
            False,
            False,
            trainer=variant_trainers("grpo", kw.get("epsilon_high")),
            **kw,
        )["loss_ours"]
    for lt in ("bnpo", "dr_grpo"):
        loss[lt] = loss_case(
            s, task, problems, ours, trl_inputs, adv, lt, 0.04, False, False, trainer=variant_trainers(lt, None)
        )["loss_ours"]
    assert len({round(v, 9) for v in loss.values()}) == len(loss), loss


def test_advantages_are_trls_with_the_population_std():
    """scale_rewards group / batch / none: TRL's formula (its nanstd over the group or the whole batch, here times
    sqrt((n - 1) / n): the population std) on the same rewards; an all-equal group gets 0 in every mode."""
    from trl.trainer.utils import nanstd

    from escov.llm.grpo import group_advantages

    rewards = torch.tensor(np.random.default_rng(2).choice([0.0, 0.3, 1.0], size=(5, 6)), dtype=torch.float64)
    rewards[0] = 0.3  # one all-equal group
    mean = rewards.mean(1, keepdim=True)
    g = rewards.shape[1]
    expected = {
        "group": (rewards - mean) / (nanstd(rewards, dim=1).unsqueeze(1) * ((g - 1) / g) ** 0.5 + 1e-4),
        "batch": (rewards - mean) / (nanstd(rewards) * ((rewards.numel() - 1) / rewards.numel()) ** 0.5 + 1e-4),
        "none": rewards - mean,
    }
    for mode, want in expected.items():
        got = group_advantages(rewards.numpy(), mode)
        # rtol 1e-6: nanstd's Bessel factor count / (count - 1) is computed in float32
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-6, atol=1e-12, err_msg=mode)
        assert np.all(got[0] == 0.0)


# the clip statistics (llm/grpo.py clip_region_sums: TRL's clip_ratio/low_mean, /high_mean and /region_mean) under a
# non-default epsilon_high, against the values TRL logs in compute_loss on the identical batch
def _policy_ratio(s, ours) -> tuple[torch.Tensor, torch.Tensor]:
    """The per-token ratio pi / pi_old of loss_case's policy on the batch, and the completion mask."""
    from escov.llm.rollout import completion_logprobs
    from escov.llm.trl_reference import perturbed

    policy = perturbed(s.model, s.policy_scale, s.seed + 1)
    with torch.no_grad():
        logp = completion_logprobs(policy, ours["seq"], ours["attention"], ours["mask"], s.temperature)
    logp = logp[0] if isinstance(logp, tuple) else logp
    return torch.exp(logp - ours["old"]), ours["mask"][:, 1:]


@pytest.mark.parametrize("epsilon_high", [0.28, 0.5])
def test_the_clip_shares_are_trls_under_epsilon_high(batch, variant_trainers, epsilon_high):
    from escov.llm.grpo import clip_region_sums
    from escov.llm.settings.grpo_config import GRPOConfig
    from escov.llm.trl_reference import loss_case

    s, task, problems, ours, trl_inputs, _ = batch
    ratio, mask = _policy_ratio(s, ours)
    # A > 0 on the completions with a token above 1 + epsilon (so the upper bound decides), A < 0 on the others
    above = ((ratio > 1 + s.epsilon).float() * mask).sum(1) > 0
    size = torch.tensor(np.abs(np.random.default_rng(2).normal(size=len(ours["seq"]))), dtype=torch.float32)
    adv = torch.where(above, size, -size)
    trainer = variant_trainers("grpo", epsilon_high)
    loss_case(
        s, task, problems, ours, trl_inputs, adv, "grpo", 0.04, False, False, epsilon_high=epsilon_high, trainer=trainer
    )
    logged = {k: v[-1] for k, v in trainer._metrics["eval"].items() if k.startswith("clip_ratio/")}
    cfg = GRPOConfig(epsilon=s.epsilon, epsilon_high=epsilon_high)
    low, high = clip_region_sums(ratio, adv, mask, cfg)
    n = float(mask.sum())
    # the bound matters here: tokens with A > 0 whose ratio lies between 1 + epsilon and 1 + epsilon_high
    between = ((ratio > 1 + s.epsilon) & (ratio <= 1 + epsilon_high) & (adv[:, None] > 0)).float() * mask
    assert between.sum() > 0 and high > 0 and low > 0
    assert low / n == pytest.approx(logged["clip_ratio/low_mean"], abs=1e-6)
    assert high / n == pytest.approx(logged["clip_ratio/high_mean"], abs=1e-6)
    assert (low + high) / n == pytest.approx(logged["clip_ratio/region_mean"], abs=1e-6)
