"""GRPO: the sampled surrogate gradient against exact expectations and finite differences."""

import itertools
from dataclasses import replace

import numpy as np
import pytest

from escov.simulate.bandit import TaskShape, make_task, sample, softmax
from escov.simulate.grpo import GRPOConfig, compute_advantages, grpo_step, surrogate_logit_gradient
from escov.theory.grpo import grpo_prompt_weight
from tests.simulate.test_es import ALL_REWARDED

SHAPE = TaskShape(n_prompts=2, n_paths=3, n_correct=1, rare_share=0.0, n_tempting=1, feature_dim=None)


def exact_expected_gradient(pi: np.ndarray, reward: np.ndarray, G: int) -> np.ndarray:
    """E over all V^G groups of (1/G) sum_g A_g (e_{y_g} - pi), by enumeration (one prompt)."""
    V = len(pi)
    total = np.zeros(V)
    for group in itertools.product(range(V), repeat=G):
        r = reward[list(group)]
        std = r.std()
        adv = (r - r.mean()) / std if std > 0 else np.zeros(G)
        g = sum(a * (np.eye(V)[y] - pi) for a, y in zip(adv, group)) / G
        total += np.prod(pi[list(group)]) * g
    return total


def test_monte_carlo_gradient_matches_enumeration_and_the_binary_reward_weight():
    task = make_task(SHAPE, [1])
    pi = task.policy(task.theta0)[0]  # (P, V)
    G, reps = 3, 200_000
    cfg = GRPOConfig(num_generations=G, beta=0.0)
    rng = np.random.default_rng(0)
    probs = np.broadcast_to(pi, (reps,) + pi.shape)
    paths = sample(rng, probs, G)  # (reps, P, G)
    rewards = np.take_along_axis(np.broadcast_to(task.reward[0], probs.shape), paths, -1)
    adv = compute_advantages(rewards)
    old = np.take_along_axis(probs, paths, -1)
    grad, clipped = surrogate_logit_gradient(probs, probs, paths, adv, old, cfg)
    mc = grad.mean(0) * pi.shape[0]  # undo the 1/B prompt average
    se = grad.std(0) * pi.shape[0] / np.sqrt(reps)
    for x in range(pi.shape[0]):
        exact = exact_expected_gradient(pi[x], task.reward[0, x], G)
        assert np.all(np.abs(mc[x] - exact) < 5 * se[x] + 1e-12)
        # binary rewards: E = w_G(p) grad p, with grad_logits p = pi (c - p)
        c = task.correct[0, x]
        p = pi[x][c].sum()
        np.testing.assert_allclose(exact, grpo_prompt_weight(p, G) * pi[x] * (c - p), atol=1e-12)
    assert np.all(clipped == 0)  # on-policy: every ratio is 1


def surrogate(task, theta, batch_paths, adv, old_prob, ref_probs, cfg):
    """L(theta) computed directly from its definition (min / clip, exact KL), per seed."""
    probs = task.policy(theta, cfg.temperature)
    ratio = np.take_along_axis(probs, batch_paths, -1) / old_prob
    clipped = np.clip(ratio, 1 - cfg.epsilon, 1 + cfg.epsilon)
    term = np.minimum(ratio * adv, clipped * adv).mean(axis=(1, 2))
    kl = (probs * (np.log(probs) - np.log(ref_probs))).sum(-1).mean(-1)
    return term - cfg.beta * kl


def test_surrogate_gradient_matches_finite_differences_off_policy():
    task = make_task(TaskShape(n_prompts=4, n_paths=5, n_correct=2, n_tempting=1, feature_dim=3), [2, 3])
    cfg = GRPOConfig(num_generations=6, epsilon=0.2, beta=0.3, temperature=0.7)
    rng = np.random.default_rng(5)
    theta_old = task.theta0 + 0.2 * rng.normal(size=task.theta0.shape)
    old = task.policy(theta_old, cfg.temperature)
    paths = sample(rng, old, cfg.num_generations)
    adv = compute_advantages(np.take_along_axis(task.reward, paths, -1) + 0.1 * rng.normal(size=paths.shape))
    old_prob = np.take_along_axis(old, paths, -1)
    ref = task.policy(task.theta0, cfg.temperature)
    theta = theta_old + 1.0 * rng.normal(size=theta_old.shape)
    probs = task.policy(theta, cfg.temperature)
    ratio = np.take_along_axis(probs, paths, -1) / old_prob
    assert np.min(np.abs(np.abs(ratio - 1) - cfg.epsilon)) > 1e-3  # no ratio on a clip kink
    g_logits, clipped = surrogate_logit_gradient(probs, ref, paths, adv, old_prob, cfg)
    assert np.all((clipped > 0) & (clipped < 0.8))  # both clipped and active terms are covered
    analytic = task.pullback(g_logits)
    h = 1e-6
    for j in range(task.dim):
        e = np.zeros(task.dim)
        e[j] = h
        numeric = (
            surrogate(task, theta + e, paths, adv, old_prob, ref, cfg)
            - surrogate(task, theta - e, paths, adv, old_prob, ref, cfg)
        ) / (2 * h)
        np.testing.assert_allclose(analytic[:, j], numeric, rtol=1e-5, atol=1e-8)


def test_clipped_terms_have_no_gradient():
    cfg = GRPOConfig(num_generations=2, beta=0.0)
    probs = np.array([[[0.6, 0.4]]])
    paths = np.array([[[0, 0]]])
    old_prob = np.array([[[0.4, 0.4]]])  # ratio 1.5 > 1 + eps
    g_pos, _ = surrogate_logit_gradient(probs, probs, paths, np.array([[[1.0, 1.0]]]), old_prob, cfg)
    g_neg, _ = surrogate_logit_gradient(probs, probs, paths, np.array([[[-1.0, -1.0]]]), old_prob, cfg)
    assert np.all(g_pos == 0)  # A > 0 and ratio above 1 + eps: clipped
    assert np.all(g_neg != 0)  # A < 0 and ratio above 1 - eps: active


def test_equal_rewards_leave_theta_unchanged():
    task = make_task(ALL_REWARDED, 2)  # every path earns reward 1
    for scale in (True, False):
        cfg = GRPOConfig(beta=0.0, optimizer="sgd", scale_rewards=scale, num_iterations=2)
        theta, info = grpo_step(task, task.theta0, cfg, np.random.default_rng(0), task.theta0, {})
        np.testing.assert_array_equal(theta, task.theta0)
        assert np.all(info["zero_std_share"] == 1.0)


def test_first_adam_step_moves_each_coordinate_by_the_learning_rate():
    task = make_task(TaskShape(n_prompts=16, feature_dim=8), 2)
    cfg = GRPOConfig(learning_rate=0.01)
    theta, _ = grpo_step(task, task.theta0, cfg, np.random.default_rng(0), task.theta0, {})
    step = np.abs(theta - task.theta0)
    moved = step > 1e-6
    assert moved.mean() > 0.9
    np.testing.assert_allclose(step[moved], 0.01, rtol=1e-3)


def test_sgd_step_is_the_learning_rate_times_the_gradient():
    task = make_task(TaskShape(n_prompts=6, feature_dim=4), 1)
    cfg_a, cfg_b = GRPOConfig(optimizer="sgd", learning_rate=0.1), GRPOConfig(optimizer="sgd", learning_rate=0.2)
    a, _ = grpo_step(task, task.theta0, cfg_a, np.random.default_rng(3), task.theta0, {})
    b, _ = grpo_step(task, task.theta0, cfg_b, np.random.default_rng(3), task.theta0, {})
    np.testing.assert_allclose(b - task.theta0, 2 * (a - task.theta0), rtol=1e-10)


def test_temperature_changes_the_sampling_distribution():
    logits = np.array([2.0, 0.0, -1.0])
    np.testing.assert_allclose(softmax(logits, 0.5), softmax(2 * logits))


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"num_generations": 1}, "num_generations"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"learning_rate": float("inf")}, "learning_rate"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"beta": -0.1}, "beta"),
        ({"num_iterations": 0}, "num_iterations"),
        ({"temperature": 0.0}, "temperature"),
        ({"optimizer": "rmsprop"}, "optimizer"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_grpo_hyperparameters_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        replace(GRPOConfig(), **kwargs)


def test_the_kl_penalty_pulls_the_policy_toward_the_reference_not_toward_itself():
    """Every path earns reward 1 (advantages 0): the only gradient is beta's KL term, which moves theta toward the
    reference's policy; KL(pi_theta || pi_ref), summed over prompts, falls after the step."""
    task = make_task(ALL_REWARDED, 2)
    theta = task.theta0 + np.random.default_rng(5).normal(0.0, 0.5, task.theta0.shape)
    cfg = GRPOConfig(beta=0.5, optimizer="sgd", learning_rate=0.5)

    def kl(t):
        p, r = task.policy(t, 1.0), task.policy(task.theta0, 1.0)
        return (p * (np.log(p) - np.log(r))).sum(axis=(1, 2))

    moved, _ = grpo_step(task, theta, cfg, np.random.default_rng(0), task.theta0, {})
    assert np.all(kl(moved) < kl(theta)) and np.all(kl(theta) > 0)


def test_each_surrogate_step_after_the_first_reads_the_updated_policy():
    """mu = 3 steps on one batch with a large SGD step and a narrow clip: from the second step the ratio
    pi_theta / pi_old moves off 1 and some terms are clipped (at the first step every ratio is 1, none is)."""
    task = make_task(TaskShape(n_prompts=8, feature_dim=6), 2)
    one = GRPOConfig(beta=0.0, optimizer="sgd", learning_rate=2.0, epsilon=0.02, num_iterations=1)
    _, first = grpo_step(task, task.theta0, one, np.random.default_rng(1), task.theta0, {})
    assert np.all(first["clipped_share"] == 0.0)
    _, three = grpo_step(task, task.theta0, replace(one, num_iterations=3), np.random.default_rng(1), task.theta0, {})
    assert np.all(three["clipped_share"] > 0.0)


def _reference_grpo_step(task, theta, cfg, rng, theta_ref):
    """One GRPO step written out with loops over seeds, prompts and samples, from the module docstring's formulas
    (SGD ascent), drawing from rng in the order the step does: the batch, then the groups."""
    S, P, V, G, T = task.n_seeds, task.n_prompts, task.n_paths, cfg.num_generations, cfg.temperature
    B = P if cfg.batch_size is None else min(cfg.batch_size, P)
    batch = np.sort(rng.choice(P, size=B, replace=False))

    def at_t(th):
        logits = task.logits(th) / T
        e = np.exp(logits - logits.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True))[:, batch]

    old, ref = at_t(theta), at_t(theta_ref)
    paths = sample(rng, old, G)  # (S, B, G)
    rewards = np.array([[[task.reward[s, batch[b], y] for y in paths[s, b]] for b in range(B)] for s in range(S)])
    adv = np.zeros_like(rewards)
    for s, b in itertools.product(range(S), range(B)):
        r = rewards[s, b]
        if r.max() > r.min():
            adv[s, b] = (r - r.mean()) / r.std() if cfg.scale_rewards else r - r.mean()
    clipped = np.zeros((cfg.num_iterations, S))
    for it in range(cfg.num_iterations):
        probs = at_t(theta)
        grad = np.zeros((S, P, V))
        for s, b in itertools.product(range(S), range(B)):
            pi, x = probs[s, b], batch[b]
            for g, y in enumerate(paths[s, b]):
                a, rho = adv[s, b, g], pi[y] / old[s, b, y]
                active = (a > 0 and rho < 1 + cfg.epsilon) or (a < 0 and rho > 1 - cfg.epsilon)
                if active:
                    grad[s, x] += a * rho * (np.eye(V)[y] - pi) / (B * G) / T
                clipped[it, s] += (not active and a != 0) / (B * G)
            kl = np.sum(pi * np.log(pi / ref[s, b]))
            grad[s, x] -= cfg.beta / B * pi * (np.log(pi / ref[s, b]) - kl) / T
        theta = theta + cfg.learning_rate * task.pullback(grad)
    info = {
        "reward": rewards.mean(axis=(1, 2)),
        "zero_std_share": np.array([np.mean([rewards[s, b].std() == 0 for b in range(B)]) for s in range(S)]),
        "clipped_share": clipped.mean(0),
        "responses": G * B,
        "flops": (2 + 6 * cfg.num_iterations) * G * B,
    }
    return theta, info


@pytest.mark.parametrize(
    "settings",
    [
        dict(batch_size=2, temperature=0.7, beta=0.2, num_iterations=2, epsilon=0.05),
        dict(batch_size=None, temperature=1.3, beta=0.0, num_iterations=3, epsilon=0.1, scale_rewards=False),
        dict(batch_size=9, temperature=1.0, beta=0.1, num_iterations=1),
    ],
)
def test_a_grpo_step_is_the_docstrings_update_written_out_by_seed_prompt_and_sample(settings):
    """Two seeds of a 5-prompt task with features and a format bonus (rewards 0, 0.1, 1): a batch of 2 prompts (or all
    when the batch is larger than the task), at a temperature, with the KL penalty and several surrogate steps; the
    new theta and every reported statistic against the reference, step after step."""
    shape = TaskShape(n_prompts=5, n_paths=4, n_correct=2, n_tempting=1, format_bonus=0.1, feature_dim=6)
    task = make_task(shape, 2)
    cfg = GRPOConfig(num_generations=4, optimizer="sgd", learning_rate=0.5, **settings)
    theta, expected_theta = task.theta0.copy(), task.theta0.copy()
    rng, rng_ref = np.random.default_rng(5), np.random.default_rng(5)
    seen_batches = set()
    for _ in range(4):
        theta, info = grpo_step(task, theta, cfg, rng, task.theta0, {})
        expected_theta, expected = _reference_grpo_step(task, expected_theta, cfg, rng_ref, task.theta0)
        np.testing.assert_allclose(theta, expected_theta, rtol=1e-9, atol=1e-12)
        assert info.keys() == expected.keys()
        for key, value in expected.items():
            np.testing.assert_allclose(info[key], value, rtol=1e-12, atol=1e-15, err_msg=key)
        seen_batches.add(info["responses"])
    assert seen_batches == {4 * min(settings["batch_size"] or 5, 5)}
    assert not np.allclose(theta, task.theta0)


def test_adam_ascends_as_torchs_adam_maximizing_over_several_steps():
    """simulate's Adam (TRL's AdamW without weight decay) against torch.optim.Adam(maximize=True) with the same
    betas and eps, over four steps of changing gradients: the moments, their bias corrections and the step."""
    torch = pytest.importorskip("torch")
    from escov.simulate.grpo import ADAM_BETAS, ADAM_EPS, _ascend

    rng = np.random.default_rng(0)
    grads = rng.normal(size=(4, 2, 3)) * np.array([1.0, 1e-3, 50.0])
    cfg = GRPOConfig(learning_rate=0.05)
    theta, state = np.zeros((2, 3)), {}
    weight = torch.zeros((2, 3), dtype=torch.float64, requires_grad=True)
    adam = torch.optim.Adam([weight], lr=0.05, betas=ADAM_BETAS, eps=ADAM_EPS, maximize=True)
    for g in grads:
        theta = _ascend(theta, g, state, cfg)
        weight.grad = torch.from_numpy(g.copy())
        adam.step()
        np.testing.assert_allclose(theta, weight.detach().numpy(), rtol=1e-12, atol=1e-15)
    assert state["t"] == 4
