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


def test_the_design_keeps_its_floor_and_the_rare_and_tempting_masses_for_every_group_size():
    """Each prompt's probabilities sum to 1 and keep floor / V on every path; with one correct path the common path
    holds all the correct mass (no rare paths), with two the rare path holds rare_share of it; with no tempting path
    or with every wrong path tempting, the failure mass goes to the group that exists."""
    floor = 0.01
    cases = [
        (dict(n_correct=1, rare_share=0.0, n_tempting=2), 1.0, 0.8),
        (dict(n_correct=2, rare_share=0.3, n_tempting=0), 0.7, 0.0),
        (dict(n_correct=2, rare_share=0.3, n_tempting=4), 0.7, 1.0),  # V - C = 4 wrong paths, all tempting
    ]
    for settings, common_share, tempting_share in cases:
        shape = TaskShape(n_prompts=50, n_paths=6, tempting_share=0.8, floor=floor, feature_dim=None, **settings)
        task = make_task(shape, 2)
        probs = task.policy(task.theta0)
        np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-12)
        assert probs.min() >= floor / 6 - 1e-12
        design = (probs - floor / 6) / (1 - floor)  # the masses before the floor
        p = (design * task.correct).sum(-1)
        common = np.where(task.correct, design, -1.0).max(-1)
        np.testing.assert_allclose(common, common_share * p, atol=1e-9)
        assert task.correct.sum(-1).min() == task.correct.sum(-1).max() == settings["n_correct"]
        # the wrong paths hold all the failure mass, whichever group takes it
        np.testing.assert_allclose(np.where(task.correct, 0.0, design).sum(-1), 1 - p, atol=1e-9)
        if tempting_share > 0.0:
            wrong = np.sort(np.where(task.correct, -1.0, design), axis=-1)[..., ::-1]
            top = wrong[..., : settings["n_tempting"]].sum(-1)
            assert np.all(top >= tempting_share * (1 - p) - 1e-9)
            if tempting_share == 1.0:
                np.testing.assert_allclose(top, 1 - p, atol=1e-9)


def test_the_base_logits_are_centred_per_prompt_and_the_offset_is_a_normal_of_its_size():
    """Independent logits: theta_0 holds each prompt's log-probabilities minus their mean over the paths (plus the
    offset, which b cancels); the offset's entries are N(0, offset^2). Features: entries N(0, 1/d), so each path's
    feature vector has squared norm 1 on average (one logit's perturbation Phi eps has unit variance)."""
    plain = TaskShape(n_prompts=64, n_paths=16, feature_dim=None)
    task = make_task(plain, [0, 1])
    logp = np.log(task.policy(task.theta0))
    np.testing.assert_allclose(task.theta0.reshape(2, 64, 16), logp - logp.mean(-1, keepdims=True), atol=1e-9)
    offset = make_task(replace(plain, theta0_offset=3.0), [0, 1])
    extra = offset.theta0 - task.theta0  # the same design (drawn first), plus the offset
    assert abs(extra.std() / 3.0 - 1) < 0.05 and abs(extra.mean()) < 0.2
    np.testing.assert_allclose(offset.policy(offset.theta0), task.policy(task.theta0), atol=1e-12)
    feats = make_task(TaskShape(n_prompts=64, n_paths=16, feature_dim=64, theta0_offset=2.0), [0, 1, 2, 3])
    assert abs((feats.features**2).sum(-1).mean() - 1) < 0.02
    plain_feats = make_task(TaskShape(n_prompts=64, n_paths=16, feature_dim=64), [0, 1, 2, 3])
    np.testing.assert_allclose(feats.features, plain_feats.features)
    offsets = feats.theta0 - plain_feats.theta0  # one N(0, 4) vector per seed, entry by entry
    assert abs(offsets.std() / 2.0 - 1) < 0.15 and offsets.std(axis=1).min() > 1.0


def test_a_task_keeps_its_shape_and_seeds_and_refuses_none():
    shape = TaskShape(n_prompts=3, n_paths=4, n_correct=2, n_tempting=1, feature_dim=2)
    task = make_task(shape, [5, 9])
    assert task.shape == shape and task.seeds == (5, 9) and task.n_seeds == 2
    assert make_task(shape, 3).seeds == (0, 1, 2)
    assert make_task(shape).seeds == (0,)  # one seed unless asked
    with pytest.raises(ValueError, match="^seeds must name at least one seed$"):
        make_task(shape, [])


def test_softmax_is_stable_per_row_and_sample_reads_unnormalised_weights():
    rows = np.array([[1000.0, 999.0], [0.0, -1.0]])  # very different scales: each row shifted by its own max
    e = 1 / (1 + np.exp(-1.0))
    np.testing.assert_allclose(softmax(rows), [[e, 1 - e], [e, 1 - e]], rtol=1e-12)
    np.testing.assert_allclose(softmax(rows, 2.0)[1], softmax(np.array([0.0, -0.5])), rtol=1e-12)
    draws = sample(np.random.default_rng(0), np.array([[0.2, 0.6]]), 40_000)  # weights summing to 0.8
    assert abs(np.mean(draws == 1) - 0.75) < 0.01


def test_parameter_arrays_without_their_axes_are_refused():
    task = make_task(TaskShape(n_prompts=3, n_paths=4, n_correct=2, n_tempting=1, feature_dim=2), 2)
    with pytest.raises(ValueError, match=r"^expected an array with leading seed axis 2, got shape \(2, 12\)$"):
        task.pullback(np.zeros((2, 12)))  # the logits' gradient flattened: (S, P, V) expected
    with pytest.raises(ValueError, match=r"^probs must have shape \(2, 3, 4\), got \(2, 3\)$"):
        task.fisher_trace(np.ones((2, 3)))
    # a members axis: each member's gradient pulled back alone
    grad = np.random.default_rng(0).normal(size=(2, 5, 3, 4))
    np.testing.assert_allclose(task.pullback(grad)[:, 2], task.pullback(grad[:, 2]), rtol=1e-12)
