"""Our GRPO loss against TRL's GRPOTrainer.compute_loss on an identical batch (llm/trl_reference.py).

Skipped when trl is not installed. The batch is sampled from the tiny test model; advantages are
drawn at random (the test model rarely solves a problem, so its own advantages are mostly 0), the
policy and reference are perturbed copies of the model, so ratios move and some are clipped.
"""
import importlib.util

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


@pytest.mark.parametrize("loss_type,beta,on_policy", [("grpo", 0.04, False), ("bnpo", 0.04, False),
                                                      ("grpo", 0.0, False), ("grpo", 0.04, True)])
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
