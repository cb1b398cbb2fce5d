"""Per-step metrics against brute force and hand computation."""

import itertools

import numpy as np
import pytest

from escov.simulate.bandit import BanditTask, TaskShape, make_task
from escov.simulate.measure import MeasureConfig, fitness_weights, policy_metrics, population_metrics


def hand_task(probs: np.ndarray, correct: np.ndarray) -> BanditTask:
    """A task with independent logits whose base policy is exactly `probs` (S, P, V)."""
    S, P, V = probs.shape
    theta0 = np.ones((S, P * V))
    shape = TaskShape(n_prompts=P, n_paths=V, n_correct=1, rare_share=0.0, n_tempting=0, feature_dim=None)
    return BanditTask(
        shape=shape,
        seeds=tuple(range(S)),
        features=None,
        bias=np.log(probs) - 1.0,
        theta0=theta0,
        correct=correct,
        reward=correct.astype(float),
    )


def test_exact_pass_at_k_equals_brute_force_enumeration():
    task = make_task(TaskShape(n_prompts=3, n_paths=4, n_correct=2, n_tempting=1, feature_dim=2), 2)
    cfg = MeasureConfig(ks=(1, 2, 3, 4), sampled_ks=(1,), eval_samples=4)
    metrics, _ = policy_metrics(task, task.theta0, task.theta0, cfg, np.random.default_rng(0))
    probs = task.policy(task.theta0)
    for k in cfg.ks:
        brute = np.zeros(task.n_seeds)
        for s in range(task.n_seeds):
            for x in range(task.n_prompts):
                for seq in itertools.product(range(task.n_paths), repeat=k):
                    if any(task.correct[s, x, y] for y in seq):
                        brute[s] += np.prod([probs[s, x, y] for y in seq]) / task.n_prompts
        np.testing.assert_allclose(metrics[f"pass@{k}"], brute, rtol=1e-10)


def test_sampled_pass_at_k_is_unbiased():
    task = make_task(TaskShape(n_prompts=8, feature_dim=4), 1)
    cfg = MeasureConfig(ks=(1, 8), sampled_ks=(1, 8), eval_samples=16)
    rng = np.random.default_rng(0)
    draws = np.array(
        [
            [policy_metrics(task, task.theta0, task.theta0, cfg, rng)[0][f"pass@{k}_sampled"][0] for k in (1, 8)]
            for _ in range(400)
        ]
    )
    exact, _ = policy_metrics(task, task.theta0, task.theta0, cfg, rng)
    for j, k in enumerate((1, 8)):
        se = draws[:, j].std() / np.sqrt(len(draws))
        assert abs(draws[:, j].mean() - exact[f"pass@{k}"][0]) < 4 * se + 1e-9


def test_entropy_coverage_zero_success_and_drift_by_hand():
    probs = np.array([[[0.5, 0.3, 0.2, 0.0 + 1e-12], [0.0005, 0.0004, 0.5, 0.4991]]])
    probs = probs / probs.sum(-1, keepdims=True)
    correct = np.array([[[True, True, False, False], [True, True, False, False]]])
    task = hand_task(probs, correct)
    cfg = MeasureConfig(ks=(1,), sampled_ks=(1,), zero_tol=1e-3, cover_tol=0.25)
    theta = task.theta0 + np.array([[3.0, 0, 0, 0, 0, 0, 0, 4.0]])  # moves prompt 0 and 1 logits
    m, _ = policy_metrics(task, task.theta0, task.theta0, cfg, np.random.default_rng(0))
    h = -(probs * np.log(probs)).sum(-1).mean()
    assert m["entropy"][0] == pytest.approx(h, rel=1e-9)
    assert m["zero_success"][0] == 0.5  # prompt 1 has p = 0.0009 < 1e-3
    assert m["coverage"][0] == 1.0  # prompt 0: 0.5 and 0.3 >= 0.25; prompt 1: none
    assert m["greedy_accuracy"][0] == 0.5
    assert m["drift"][0] == 0.0
    m2, _ = policy_metrics(task, theta, task.theta0, cfg, np.random.default_rng(0))
    assert m2["drift"][0] == pytest.approx(5.0 / np.sqrt(8.0))


def test_lemma1_prediction_matches_a_large_population_at_small_sigma():
    task = make_task(TaskShape(n_prompts=4, n_paths=6, n_correct=2, n_tempting=1, feature_dim=5), 1)
    sigma, N = 0.05, 4000
    eps = np.random.default_rng(0).standard_normal((1, N, task.dim))
    members = task.logits(task.theta0[:, None] + sigma * eps)
    out, _, _ = population_metrics(task, task.theta0, members, np.zeros((1, N)), sigma)
    assert out["js_pol"][0] == pytest.approx(out["lemma1"][0], rel=0.05)
    assert 0 <= out["js_succ"][0] <= out["js_pol"][0]
    assert out["p_pop"][0] >= out["p_same"][0]


def test_population_metrics_against_direct_formulas():
    task = make_task(TaskShape(n_prompts=3, n_paths=5, n_correct=2, n_tempting=1, feature_dim=3), 2)
    rng = np.random.default_rng(1)
    N, sigma = 6, 0.7
    members = task.logits(task.theta0[:, None] + sigma * rng.standard_normal((2, N, task.dim)))
    z = rng.normal(size=(2, N))
    out, p_i, p_w = population_metrics(task, task.theta0, members, z, sigma)
    pi = np.exp(members) / np.exp(members).sum(-1, keepdims=True)  # (S, N, P, V)
    p = (pi * task.correct[:, None]).sum(-1)  # (S, N, P)
    np.testing.assert_allclose(p_i, p.transpose(0, 2, 1), atol=1e-12)
    mix = pi.mean(1)
    kl = (pi * (np.log(pi) - np.log(mix[:, None]))).sum(-1).mean(1)  # (S, P)
    np.testing.assert_allclose(out["js_pol"], kl.mean(-1), rtol=1e-9)
    np.testing.assert_allclose(out["p_pop"], (1 - np.prod(1 - p, axis=1)).mean(-1), rtol=1e-12)
    np.testing.assert_allclose(out["p_same"], (1 - (1 - p.mean(1)) ** N).mean(-1), rtol=1e-12)
    w = np.maximum(z, 0) / np.maximum(z, 0).sum(-1, keepdims=True)
    np.testing.assert_allclose(p_w, np.einsum("sn,snp->sp", w, p), atol=1e-12)
    np.testing.assert_allclose(out["lemma3_gain"], out["lemma3_cov"], atol=1e-12)
    centre = np.exp(task.logits(task.theta0)) / np.exp(task.logits(task.theta0)).sum(-1, keepdims=True)
    p_centre = (centre * task.correct).sum(-1)  # (S, P)
    np.testing.assert_allclose(out["centre_pass@N"], (1 - (1 - p_centre) ** N).mean(-1), rtol=1e-12)


def test_fitness_weights_are_monotone_and_uniform_when_no_member_is_above_average():
    w = fitness_weights(np.array([[-1.0, 0.5, 2.0], [0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(w, [[0, 0.2, 0.8], [1 / 3, 1 / 3, 1 / 3]])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"sampled_ks": (64,)}, "sampled_ks"),
        ({"eval_samples": 0}, "eval_samples"),
        ({"ks": (0,)}, "ks"),
        ({"temperature": 0.0}, "temperature"),
        ({"cover_tol": 0.0}, "cover_tol"),
        ({"zero_tol": 2.0}, "zero_tol"),
    ],
)
def test_bad_measure_settings_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MeasureConfig(**kwargs)


def test_policy_metrics_per_seed_at_the_evaluation_temperature_by_hand():
    """Two seeds whose policies differ (so a mean over the wrong axis shows), evaluated at T = 0.7 with a format
    bonus (so the reward is not the success): every metric from the logits by hand; the tolerances at their
    boundary (a prompt whose p equals zero_tol is not counted as zero-success; a correct path whose probability
    equals cover_tol is covered)."""
    task = make_task(TaskShape(n_prompts=3, n_paths=5, n_correct=2, n_tempting=1, format_bonus=0.1, feature_dim=3), 2)
    theta = task.theta0 + np.random.default_rng(2).normal(size=task.theta0.shape) * np.array([[0.5], [2.0]])
    logits = task.logits(theta) / 0.7
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)  # (S, P, V)
    p = (probs * task.correct).sum(-1)
    # the tolerances at values the code computes (equal to the hand values to rounding, checked below)
    at_t = task.policy(theta, 0.7)
    np.testing.assert_allclose(at_t, probs, rtol=1e-10)
    zero_tol, cover_tol = float(task.success(at_t)[0, 0]), float(at_t[1][task.correct[1]].min())
    cfg = MeasureConfig(ks=(1, 3), sampled_ks=(1,), temperature=0.7, zero_tol=zero_tol, cover_tol=cover_tol)
    m, got_p = policy_metrics(task, theta, task.theta0, cfg, np.random.default_rng(0))
    np.testing.assert_allclose(got_p, p, rtol=1e-10)
    probs, p = at_t, got_p  # the boundary comparisons below read the code's own rounding
    for k in (1, 3):
        np.testing.assert_allclose(m[f"pass@{k}"], (1 - (1 - p) ** k).mean(1), rtol=1e-10)
    np.testing.assert_allclose(m["entropy"], -(probs * np.log(probs)).sum(-1).mean(1), rtol=1e-10)
    np.testing.assert_allclose(m["zero_success"], (p < zero_tol).mean(1))
    assert (p[0] <= zero_tol).sum() > (p[0] < zero_tol).sum()  # p[0, 0] itself is not below zero_tol
    np.testing.assert_allclose(m["coverage"], ((probs >= cover_tol) & task.correct).sum(-1).mean(1))
    assert ((probs[1] >= cover_tol) & task.correct[1]).sum() > ((probs[1] > cover_tol) & task.correct[1]).sum()
    np.testing.assert_allclose(m["reward"], (probs * task.reward).sum(-1).mean(1), rtol=1e-10)
    assert not np.allclose(m["reward"], m["pass@1"])  # the format bonus counts in the reward only
    greedy = np.take_along_axis(task.correct, probs.argmax(-1)[..., None], -1)[..., 0]
    np.testing.assert_allclose(m["greedy_accuracy"], greedy.mean(1))
    drift = [np.linalg.norm(theta[s] - task.theta0[s]) / np.linalg.norm(task.theta0[s]) for s in range(2)]
    np.testing.assert_allclose(m["drift"], drift, rtol=1e-12)
    assert abs(drift[0] - drift[1]) > 0.1 and len({round(v, 6) for v in m["reward"]}) == 2


def test_population_validity_and_lemma2_local_form_per_seed_by_hand():
    """s = (sigma^2 / 2) tr I, Lemma 1's prediction over (1 - 1/N); the local form N p_bar (1 - p_bar)^(N-1) JSsucc
    from the members' success by hand, per seed."""
    task = make_task(TaskShape(n_prompts=3, n_paths=5, n_correct=2, n_tempting=1, feature_dim=3), 2)
    rng = np.random.default_rng(3)
    N, sigma = 5, 0.9
    members = task.logits(task.theta0[:, None] + sigma * rng.standard_normal((2, N, task.dim)))
    out, p_i, _ = population_metrics(task, task.theta0, members, rng.normal(size=(2, N)), sigma)
    pi = np.exp(members) / np.exp(members).sum(-1, keepdims=True)  # (S, N, P, V)
    p = (pi * task.correct[:, None]).sum(-1).transpose(0, 2, 1)  # (S, P, N)
    h = lambda q: -q * np.log(q) - (1 - q) * np.log(1 - q)  # noqa: E731
    p_bar = p.mean(-1)
    local = N * p_bar * (1 - p_bar) ** (N - 1) * (h(p_bar) - h(p).mean(-1))
    np.testing.assert_allclose(out["lemma2_local"], local.mean(-1), rtol=1e-9)
    np.testing.assert_allclose(out["js_succ"], (h(p_bar) - h(p).mean(-1)).mean(-1), rtol=1e-9)
    centre = np.exp(task.logits(task.theta0)) / np.exp(task.logits(task.theta0)).sum(-1, keepdims=True)
    np.testing.assert_allclose(out["validity_s"], out["lemma1"] * N / (N - 1), rtol=1e-12)
    np.testing.assert_allclose(out["validity_s"], 0.5 * sigma**2 * task.fisher_trace(centre).mean(-1), rtol=1e-12)
    assert out["validity_s"][0] != pytest.approx(out["validity_s"][1])
