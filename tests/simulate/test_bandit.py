"""The bandit task: the base policy is the design, features give exact gradients and Fisher traces."""

from dataclasses import replace

import numpy as np
import pytest

from escov.simulate.bandit import BanditTask, TaskShape, make_task, sample, softmax

SMALL = TaskShape(n_prompts=6, n_paths=5, n_correct=2, n_tempting=1, feature_dim=4)


def test_base_policy_is_the_design_whatever_the_features():
    # The design is drawn before the features, so all three parametrizations must give one policy.
    shapes = [replace(SMALL, feature_dim=None), SMALL, replace(SMALL, feature_dim=3, theta0_offset=5.0)]
    policies = [make_task(s, [3, 4]).policy(make_task(s, [3, 4]).theta0) for s in shapes]
    for p in policies[1:]:
        np.testing.assert_allclose(p, policies[0], atol=1e-12)


def test_design_masses_follow_the_shape():
    shape = TaskShape(
        n_prompts=4000,
        n_paths=8,
        n_correct=3,
        rare_share=0.2,
        n_tempting=2,
        tempting_share=0.7,
        base_pass1=0.3,
        floor=1e-6,
        feature_dim=None,
    )
    task = make_task(shape, 1)
    probs = task.policy(task.theta0)[0]
    correct = task.correct[0]
    p = (probs * correct).sum(-1)
    assert abs(p.mean() - 0.3) < 0.02  # Beta mean, 4000 prompts
    common = np.where(correct, probs, -1.0).max(-1)
    # The common correct path holds (1 - rare_share) of the correct mass (up to the 1e-6 floor).
    np.testing.assert_allclose(common, 0.8 * p, atol=1e-5)
    assert correct.sum(-1).tolist() == [3] * 4000
    # The two tempting wrong paths hold 0.7 of the failure mass, so the two largest wrong paths hold at least that.
    wrong = np.sort(np.where(correct, 0, probs), axis=-1)[:, ::-1]
    assert np.all(wrong[:, :2].sum(-1) >= 0.7 * (1 - p) - 1e-5)
    assert np.mean(wrong[:, :2].sum(-1) < 0.7 * (1 - p) + 1e-5) > 0.3  # and often exactly that


def test_fisher_trace_is_the_trace_of_the_log_partition_hessian():
    task = make_task(replace(SMALL, feature_dim=3), 2)
    rng = np.random.default_rng(0)
    theta = task.theta0 + rng.normal(size=task.theta0.shape)
    tr = task.fisher_trace(task.policy(theta))  # (S, P)
    h = 1e-4
    d = task.dim

    def log_partition(th):
        z = task.logits(th)
        m = z.max(-1, keepdims=True)
        return (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[..., 0]

    hess_trace = sum(
        (log_partition(theta + h * e) - 2 * log_partition(theta) + log_partition(theta - h * e)) / h**2
        for e in np.eye(d)[:, None, :] * np.ones((1, task.n_seeds, 1))
    )
    np.testing.assert_allclose(tr, hess_trace, rtol=1e-4, atol=1e-7)


def test_fisher_trace_equals_expected_squared_score():
    task = make_task(SMALL, 1)
    probs = task.policy(task.theta0)
    phi = task.features.reshape(1, task.n_prompts, task.n_paths, task.dim)[0]
    for x in range(task.n_prompts):
        pi = probs[0, x]
        score = phi[x] - pi @ phi[x]  # s_y = Phi_y - E_pi Phi
        expected = sum(pi[y] * score[y] @ score[y] for y in range(task.n_paths))
        assert task.fisher_trace(probs)[0, x] == pytest.approx(expected, rel=1e-10)


def test_pullback_gives_the_gradient_of_log_probabilities():
    task = make_task(SMALL, 2)
    theta = task.theta0 + 0.3
    y = 2
    probs = task.policy(theta)
    g_logits = -probs.copy()
    g_logits[..., y] += 1.0  # d log pi(y|x) / d logits
    # gradient of sum_x log pi(y|x) with respect to theta, against central differences
    analytic = task.pullback(g_logits)
    h = 1e-6

    def f(th):
        return np.log(task.policy(th)[..., y]).sum(-1)

    for j in range(task.dim):
        e = np.zeros(task.dim)
        e[j] = h
        numeric = (f(theta + e) - f(theta - e)) / (2 * h)
        np.testing.assert_allclose(analytic[:, j], numeric, rtol=1e-5, atol=1e-7)


def test_independent_logits_pullback_is_the_identity():
    task = make_task(replace(SMALL, feature_dim=None), 1)
    g = np.random.default_rng(1).normal(size=(1, SMALL.n_prompts, SMALL.n_paths))
    np.testing.assert_array_equal(task.pullback(g), g.reshape(1, -1))


def test_sample_frequencies_match_probabilities():
    rng = np.random.default_rng(0)
    probs = softmax(rng.normal(size=(2, 3, 4)))
    n = 40000
    draws = sample(rng, probs, n)
    freq = (draws[..., None] == np.arange(4)).mean(-2)
    se = np.sqrt(probs * (1 - probs) / n)
    assert np.all(np.abs(freq - probs) < 5 * se + 1e-12)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_prompts": 0}, "n_prompts"),
        ({"n_paths": 1}, "n_paths"),
        ({"n_correct": 16}, "n_correct"),
        ({"base_pass1": 1.0}, "base_pass1"),
        ({"base_pass1": 0.0}, "base_pass1"),
        ({"rare_share": 1.5}, "rare_share"),
        ({"feature_dim": 0}, "feature_dim"),
        ({"n_tempting": 20}, "n_tempting"),
        ({"floor": 0.0}, "floor"),
        ({"difficulty_concentration": -1.0}, "difficulty_concentration"),
        ({"theta0_offset": -1.0}, "theta0_offset"),
        ({"n_correct": 1, "rare_share": 0.1}, "rare_share"),
        ({"n_prompts": 2.5}, "n_prompts"),
    ],
)
def test_bad_shapes_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TaskShape(**kwargs)


def test_bad_parameter_arrays_raise():
    task = make_task(SMALL, 2)
    with pytest.raises(ValueError, match="parameter dimension"):
        task.logits(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="seed axis"):
        task.logits(np.zeros((3, task.dim)))
    with pytest.raises(ValueError, match="seeds"):
        make_task(SMALL, [])
    assert isinstance(task, BanditTask)


@pytest.mark.parametrize("feature_dim", [None, 5])
def test_the_fisher_trace_is_the_trace_of_the_score_covariance_by_enumeration(feature_dim):
    """tr I_x = sum_y pi_y ||Phi_y - sum_y' pi_y' Phi_y'||^2, the score's covariance summed over paths: with independent
    logits (Phi the identity) it is 1 - sum_y pi_y^2; with features, the weighted spread of the feature rows."""
    task = make_task(TaskShape(n_prompts=3, n_paths=8, feature_dim=feature_dim), 2)
    theta = task.theta0 + np.random.default_rng(1).normal(0.0, 0.3, task.theta0.shape)
    probs = task.policy(theta)
    got = task.fisher_trace(probs)
    S, P, V = probs.shape
    phi = np.eye(P * V).reshape(P * V, P, V).transpose(1, 2, 0) if feature_dim is None else None
    for s in range(S):
        for p in range(P):
            rows = phi[p] if feature_dim is None else task.features[s].reshape(P, V, task.dim)[p]
            mean = probs[s, p] @ rows
            expected = sum(probs[s, p, y] * np.sum((rows[y] - mean) ** 2) for y in range(V))
            assert got[s, p] == pytest.approx(expected, rel=1e-9)
            if feature_dim is None:
                assert got[s, p] == pytest.approx(1.0 - np.sum(probs[s, p] ** 2), rel=1e-9)
