"""GRPO steps on a real HFEngine with the tiny model: the policy-gradient direction, zero-signal
batches, and keeping a separate engine in sync with load_weights."""
import numpy as np
import torch
from transformers import AutoModelForCausalLM

from llm.engines.hf import HFEngine
from llm.grpo import GRPO, GRPOConfig, group_advantages
from llm.rollout import completion_logprobs, pad_batch
from tasks_for_tests import CountdownScoredBy


def starts_with_digit() -> CountdownScoredBy:
    """Reward 1 for a completion whose first character is a digit, else 0 (a signal the tiny model can follow)."""
    return CountdownScoredBy("starts-with-digit", lambda completion: 1.0 if completion[:1].isdigit() else 0.0)


def _grpo(engine, policy, task, **kw):
    cfg = GRPOConfig(**{"num_generations": 6, "learning_rate": 3e-2, "beta": 0.0} | kw)
    cfg.validate()
    ref = None
    if cfg.beta > 0:
        ref = AutoModelForCausalLM.from_pretrained(engine.model_dir, dtype=torch.float32)
    return GRPO(cfg, engine, task, policy, ref, engine.prompt_token_ids, temperature=1.0, max_new_tokens=5,
                seed=0, pad_id=engine.tokenizer.pad_token_id)


def _surrogate(grpo, problems, out):
    """sum_i A_i log pi(y_i | x_i) / T_i on fixed samples: what one on-policy step ascends."""
    adv = torch.tensor(group_advantages(out.rewards).reshape(-1))
    p_ids = [grpo.encode(p.prompt) for p in problems for _ in range(grpo.cfg.num_generations)]
    c_ids = [c.token_ids for row in out.completions for c in row]
    seq, att, mask = pad_batch(p_ids, c_ids, grpo.pad_id)
    with torch.no_grad():
        lp = completion_logprobs(grpo.policy, seq, att, mask, 1.0).double()
    return float((adv * lp.sum(1) / mask[:, 1:].sum(1).clamp(min=1)).sum())


def test_a_step_ascends_the_policy_gradient_surrogate(tiny_model_dir):
    engine = HFEngine(tiny_model_dir)
    task = starts_with_digit()
    grpo = _grpo(engine, engine.model, task, learning_rate=1e-4)  # a small step: the first-order change dominates
    problems = task.problems("train", 6, seed=1)
    out = grpo.step(problems, step=0)
    assert 0 < out.rollouts.rewards.mean() < 1, "the test needs a batch with both rewards"
    fresh = HFEngine(tiny_model_dir)  # the policy before the step (grpo's policy is the updated engine model)
    start = _grpo(fresh, fresh.model, task)
    assert _surrogate(grpo, problems, out.rollouts) > _surrogate(start, problems, out.rollouts)
    assert np.isfinite(out.loss) and out.grad_norm > 0


def test_all_equal_rewards_leave_the_weights_unchanged(tiny_model_dir):
    engine = HFEngine(tiny_model_dir)
    task = CountdownScoredBy("constant", lambda completion: 0.1)
    grpo = _grpo(engine, engine.model, task, beta=0.04)  # policy equals its reference: the KL gradient is 0 too
    before = {n: p.detach().clone() for n, p in engine.model.named_parameters()}
    out = grpo.step(task.problems("train", 3, seed=0), step=0)
    assert out.loss == 0.0 and out.kl == 0.0
    assert all(torch.equal(p.detach(), before[n]) for n, p in engine.model.named_parameters())


def test_a_separate_engine_receives_the_updated_weights(tiny_model_dir):
    engine = HFEngine(tiny_model_dir, dtype=torch.bfloat16)  # not the fp32 policy: synced by load_weights
    policy = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    task = starts_with_digit()
    grpo = _grpo(engine, policy, task, num_iterations=2)
    assert not grpo.shares_engine_model
    out = grpo.step(task.problems("train", 4, seed=2), step=0)
    assert out.grad_norm > 0
    live = dict(engine.model.named_parameters())
    for n, p in policy.named_parameters():
        assert torch.equal(live[n].detach(), p.detach().to(torch.bfloat16)), n
