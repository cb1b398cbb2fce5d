"""GRPO steps on a real HFEngine with the tiny model: the policy-gradient direction, zero-signal
batches, and keeping a separate engine in sync with load_weights."""

import time

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

from escov.llm.engines.hf import HFEngine
from escov.llm.grpo import GRPO, GRPOConfig, group_advantages
from escov.llm.rollout import completion_logprobs, pad_batch
from escov.theory.errors import NonFiniteError
from tests.llm.tasks_for_tests import CountdownScoredBy


def starts_with_digit() -> CountdownScoredBy:
    """Reward 1 for a completion whose first character is a digit, else 0 (a signal the tiny model can follow)."""
    return CountdownScoredBy("starts-with-digit", lambda completion: 1.0 if completion[:1].isdigit() else 0.0)


def _grpo(engine, policy, task, temperature=1.0, **kw):
    cfg = GRPOConfig(**{"num_generations": 6, "learning_rate": 3e-2, "beta": 0.0} | kw)
    cfg.validate()
    ref = None
    if cfg.beta > 0:
        ref = AutoModelForCausalLM.from_pretrained(engine.model_dir, dtype=torch.float32)
    return GRPO(
        cfg,
        engine,
        task,
        policy,
        ref,
        engine.prompt_token_ids,
        temperature=temperature,
        max_new_tokens=5,
        seed=0,
        pad_id=engine.tokenizer.pad_token_id,
    )


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


@pytest.mark.parametrize(
    "micro_batch_size, loss_type, scale, temperature",
    [(64, "grpo", True, 1.0), (5, "bnpo", True, 1.0), (64, "grpo", False, 1.0), (64, "grpo", True, 0.7)],
)
def test_one_steps_loss_kl_gradient_and_update_equal_their_values_by_hand(
    tiny_model_dir, micro_batch_size, loss_type, scale, temperature
):
    """One on-policy step (mu = 1, so every ratio is 1 and nothing is clipped), written out here: per token
    l_t = -ratio_t A_i + beta k3_t (ratio_t = pi / pi_old = 1 in value, d ratio_t = d log pi_t) with
    k3_t = exp(ref_t - lp_t) - (ref_t - lp_t) - 1, A_i = (r_i - mean) / (std + 1e-4) in each group (r_i - mean without
    scale_rewards); loss = mean over completions of the mean over their tokens ("grpo") or the mean over all tokens
    ("bnpo"); kl = mean k3 per token. The update is AdamW's first step on the gradient g of that loss clipped to
    max_grad_norm: theta (1 - lr wd) - lr g_c / (|g_c| + 1e-8). Micro-batches change none of it; the log-probs of
    policy, old policy and reference are those of the sampling temperature (logits / T, as TRL)."""
    import copy

    engine = HFEngine(tiny_model_dir)
    before = copy.deepcopy(engine.model)
    reference = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # a reference away from the policy, so the KL term is not zero
        for p in reference.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen))
    task = starts_with_digit()
    lr, beta, wd, max_norm, groups = 2e-3, 0.04, 0.1, 0.5, 6  # lr unlike AdamW's default (1e-3)
    cfg = GRPOConfig(
        num_generations=groups,
        learning_rate=lr,
        beta=beta,
        weight_decay=wd,
        max_grad_norm=max_norm,
        micro_batch_size=micro_batch_size,
        loss_type=loss_type,
        scale_rewards=scale,
    )
    cfg.validate()
    grpo = GRPO(
        cfg,
        engine,
        task,
        engine.model,
        reference,
        engine.prompt_token_ids,
        temperature=temperature,
        max_new_tokens=5,
        seed=0,
        pad_id=engine.tokenizer.pad_token_id,
    )
    problems = task.problems("train", 6, seed=1)  # the batch of the first test: both rewards
    start = time.perf_counter()
    out = grpo.step(problems, step=0)
    assert 0.0 < out.seconds <= time.perf_counter() - start  # the step's own wall time

    rewards = np.asarray(out.rollouts.rewards, dtype=float)  # [prompts, groups]
    adv = rewards - rewards.mean(1, keepdims=True)
    if scale:  # scale_rewards: divided by the group's population std (+ 1e-4)
        adv = adv / (rewards.std(1, keepdims=True) + 1e-4)
    assert np.abs(adv).max() > 0, "the test needs a group with both rewards"
    p_ids = [engine.prompt_token_ids(p.prompt) for p in problems for _ in range(groups)]
    c_ids = [c.token_ids for row in out.rollouts.completions for c in row]
    seq, att, mask = pad_batch(p_ids, c_ids, engine.tokenizer.pad_token_id)
    m = mask[:, 1:].float()
    lp = completion_logprobs(before, seq, att, mask, temperature)
    with torch.no_grad():
        ref = completion_logprobs(reference, seq, att, mask, temperature)
    k3 = torch.exp(ref - lp) - (ref - lp) - 1
    ratio = torch.exp(lp - lp.detach())  # 1, with the policy gradient's derivative: d ratio = d log pi
    per_token = -ratio * torch.tensor(adv.reshape(-1), dtype=torch.float32)[:, None] + beta * k3
    if loss_type == "grpo":
        loss = ((per_token * m).sum(1) / m.sum(1)).mean()
    else:
        loss = (per_token * m).sum() / m.sum()
    assert out.loss == pytest.approx(float(loss), rel=1e-5, abs=1e-7)
    assert out.kl == pytest.approx(float((k3 * m).sum() / m.sum()), rel=1e-5) and out.kl > 0
    assert out.clip_fraction == 0.0
    names = [n for n, _ in before.named_parameters()]
    grads = torch.autograd.grad(loss, list(before.parameters()), allow_unused=True)
    norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads if g is not None)))
    assert out.grad_norm == pytest.approx(norm, rel=1e-4)
    scale = min(1.0, max_norm / (norm + 1e-6))
    after = dict(engine.model.named_parameters())
    for name, p0, g in zip(names, before.parameters(), grads):
        if g is None:
            continue
        gc = g * scale
        expected = p0.detach() * (1 - lr * wd) - lr * gc / (gc.abs() + 1e-8)
        clear = gc.abs() > 1e-5  # elsewhere g_c / (|g_c| + 1e-8) is sensitive to rounding in g
        torch.testing.assert_close(after[name].detach()[clear], expected[clear], rtol=0, atol=1e-6, msg=name)
        assert (after[name].detach() - p0.detach() * (1 - lr * wd)).abs().max() <= lr * 1.001, name  # float32 rounding


def test_the_gradient_is_clipped_to_max_grad_norm_before_the_update(tiny_model_dir):
    """AdamW's first step moves a weight by lr * g / (|g| + 1e-8): about lr wherever the gradient is not tiny,
    whatever its scale. Clipped to a norm of 1e-12 (far below Adam's 1e-8), every |g_c| <= 1e-12 and no
    weight moves by more than lr * 1e-4; unclipped (max_grad_norm 0), some weight moves by nearly lr."""
    lr = 1e-3
    moved = {}
    for max_norm in (1e-12, 0.0):
        engine = HFEngine(tiny_model_dir)
        before = {n: p.detach().clone() for n, p in engine.model.named_parameters()}
        task = starts_with_digit()
        grpo = _grpo(engine, engine.model, task, learning_rate=lr, max_grad_norm=max_norm)
        out = grpo.step(task.problems("train", 6, seed=1), step=0)
        assert out.grad_norm > 1e-6  # the unclipped norm is reported either way
        moved[max_norm] = max(float((p.detach() - before[n]).abs().max()) for n, p in engine.model.named_parameters())
    assert moved[1e-12] <= lr * 1e-4 and moved[0.0] > 0.5 * lr, moved


def test_beta_above_zero_without_a_reference_is_refused_naming_the_setting(tiny_model_dir):
    engine = HFEngine(tiny_model_dir)
    cfg = GRPOConfig(num_generations=4, learning_rate=1e-3, beta=0.04)
    with pytest.raises(ValueError, match=r"^reference model is required when grpo\.beta > 0$"):
        GRPO(
            cfg,
            engine,
            starts_with_digit(),
            engine.model,
            None,
            engine.prompt_token_ids,
            temperature=1.0,
            max_new_tokens=5,
            seed=0,
            pad_id=engine.tokenizer.pad_token_id,
        )


def _first_rollouts(model_dir, seed: int, step: int):
    engine = HFEngine(model_dir)
    task = starts_with_digit()
    grpo = GRPO(
        GRPOConfig(num_generations=4, learning_rate=1e-3, beta=0.0),
        engine,
        task,
        engine.model,
        None,
        engine.prompt_token_ids,
        temperature=1.0,
        max_new_tokens=8,
        seed=seed,
        pad_id=engine.tokenizer.pad_token_id,
    )
    out = grpo.step(task.problems("train", 3, seed=5), step=step)
    return [[c.token_ids for c in row] for row in out.rollouts.completions]


def test_a_steps_samples_are_drawn_from_the_run_seed_and_the_step(tiny_model_dir):
    """The same (seed, step) draws the same completions; another step or another run seed draws others, from
    the same weights (each on a fresh engine). A seed that ignored either would repeat samples across steps
    or across the seeds of a design."""
    reference = _first_rollouts(tiny_model_dir, seed=0, step=3)
    assert _first_rollouts(tiny_model_dir, seed=0, step=3) == reference
    assert _first_rollouts(tiny_model_dir, seed=0, step=4) != reference
    assert _first_rollouts(tiny_model_dir, seed=1, step=3) != reference


def test_a_step_that_fails_before_its_update_leaves_the_state_intact_and_names_the_step(tiny_model_dir):
    """state_is_intact() tells the trainer whether the policy and optimizer are still those before the step
    (llm/train.py keeps them, else it goes back to the checkpoint): False after a step that updated, True
    again when the next step fails at its rewards, before any optimizer step; the error names that step."""
    engine = HFEngine(tiny_model_dir)
    poisoned = {"on": False}
    task = CountdownScoredBy("nan-later", lambda c: float("nan") if poisoned["on"] else float(c[:1].isdigit()))
    grpo = _grpo(engine, engine.model, task, learning_rate=1e-3)
    assert grpo.state_is_intact()
    grpo.step(task.problems("train", 4, seed=1), step=0)
    assert not grpo.state_is_intact()
    poisoned["on"] = True
    before = {n: p.detach().clone() for n, p in engine.model.named_parameters()}
    with pytest.raises(NonFiniteError, match=r"^step 7: reward is not finite"):
        grpo.step(task.problems("train", 4, seed=2), step=7)
    assert grpo.state_is_intact()
    assert all(torch.equal(p.detach(), before[n]) for n, p in engine.model.named_parameters())


def test_a_non_finite_gradient_stops_the_step_before_the_update_naming_the_step(tiny_model_dir):
    """A gradient that overflows while the loss is finite (here a hook that scales one weight's gradient to
    infinity) stops the step before AdamW moves anything, naming the step and the quantity."""
    engine = HFEngine(tiny_model_dir)
    task = starts_with_digit()
    grpo = _grpo(engine, engine.model, task, learning_rate=1e-3)
    weight = next(engine.model.parameters())
    weight.register_hook(lambda g: g * float("inf"))
    before = {n: p.detach().clone() for n, p in engine.model.named_parameters()}
    with pytest.raises(NonFiniteError, match=r"^step 3: GRPO gradient norm is not finite \((inf|nan)\)$"):
        grpo.step(task.problems("train", 6, seed=1), step=3)
    assert grpo.state_is_intact()
    assert all(torch.equal(p.detach(), before[n]) for n, p in engine.model.named_parameters())


def test_later_inner_iterations_are_off_policy_and_clipped(tiny_model_dir):
    """With mu = num_iterations = 2 the second AdamW step's ratios are pi_theta / pi_old against the samples'
    policy, which the first step moved: with a large step and a narrow clip some tokens are clipped. With
    mu = 1 every ratio is exactly 1 and none is (the sampling policy is the policy)."""
    clipped = {}
    for mu, micro in ((1, 64), (2, 64), (2, 5)):
        engine = HFEngine(tiny_model_dir)
        task = starts_with_digit()
        grpo = _grpo(
            engine, engine.model, task, learning_rate=3e-2, num_iterations=mu, epsilon=0.01, micro_batch_size=micro
        )
        clipped[mu, micro] = grpo.step(task.problems("train", 6, seed=1), step=0).clip_fraction
        assert not engine.model.training  # the training forward is the sampling policy: no dropout
    assert clipped[1, 64] == 0.0 and 0.0 < clipped[2, 64] <= 1.0, clipped  # a share of the batch's completion tokens
    assert clipped[2, 5] == pytest.approx(clipped[2, 64], abs=1e-9)  # counted over every micro-batch, not the last


def test_the_frozen_sampling_policy_is_read_at_the_sampling_temperature(tiny_model_dir):
    """mu = 2 at T = 0.7 with a step too small to move a float32 weight: pi_old (frozen before the first step)
    and pi_theta are the same policy at the same temperature, so every ratio is 1 and no token is clipped even
    at a clip range of 0.01 (pi_old read at another temperature than pi_theta would clip most of them)."""
    engine = HFEngine(tiny_model_dir)
    task = starts_with_digit()
    grpo = _grpo(engine, engine.model, task, temperature=0.7, learning_rate=1e-30, num_iterations=2, epsilon=0.01)
    before = {n: p.detach().clone() for n, p in engine.model.named_parameters()}
    out = grpo.step(task.problems("train", 6, seed=1), step=0)
    assert out.grad_norm > 0 and all(torch.equal(p, before[n]) for n, p in engine.model.named_parameters())
    assert out.clip_fraction == 0.0


def test_a_non_finite_loss_or_weight_stops_the_step_naming_it(tiny_model_dir):
    """A reference whose log-probabilities are NaN makes the KL term, so the loss, NaN: the step stops before
    its update. A step so large that the updated weights overflow float32 stops after it, naming a weight."""
    engine = HFEngine(tiny_model_dir)
    task = starts_with_digit()
    grpo = _grpo(engine, engine.model, task, beta=0.04, learning_rate=1e-3)
    with torch.no_grad():
        for p in grpo.reference.parameters():
            p.fill_(float("nan"))
    with pytest.raises(NonFiniteError, match=r"^step 5: GRPO loss is not finite \(nan\)$"):
        grpo.step(task.problems("train", 6, seed=1), step=5)
    assert grpo.state_is_intact()
    engine = HFEngine(tiny_model_dir)
    # AdamW's first step: theta (1 - lr wd) - lr g / (|g| + 1e-8); at lr 3e37 and wd 10 (1 - lr wd = -3e38, still a
    # float32, as lr / (1 - beta1) is) every weight of size 1.2 or more overflows
    grpo = _grpo(engine, engine.model, task, learning_rate=3e37, weight_decay=10.0)
    with pytest.raises(NonFiniteError, match=r"^step 2: weight \S+ is not finite after the GRPO update$"):
        grpo.step(task.problems("train", 6, seed=1), step=2)
