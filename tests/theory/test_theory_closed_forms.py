"""Closed forms of the toy policies against finite differences, enumeration and sympy."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from escov.theory.autoregressive import SequencePolicy
from escov.theory.categorical import CategoricalPolicy

SETTINGS = settings(deadline=None, max_examples=40)
H = 1e-6


def _policy(seed, m=7, d=3, n_correct=2):
    rng = np.random.default_rng(seed)
    return CategoricalPolicy.random(m, d, rng, n_correct=n_correct), rng.standard_normal(d)


def _central_difference(f, theta):
    steps = H * np.eye(theta.size)
    return np.stack([(f(theta + s) - f(theta - s)) / (2 * H) for s in steps], axis=-1)


@pytest.mark.parametrize("seed", range(3))
def test_score_is_gradient_of_log_prob(seed):
    policy, theta = _policy(seed)
    fd = _central_difference(policy.log_probs, theta)  # [M, d]
    assert np.allclose(policy.score(theta, np.arange(policy.n_outcomes)), fd, atol=1e-7)


@pytest.mark.parametrize("seed", range(3))
def test_fisher_is_expected_outer_score_and_minus_expected_hessian(seed):
    policy, theta = _policy(seed)
    pi = policy.probs(theta)
    scores = _central_difference(policy.log_probs, theta)
    assert np.allclose(policy.fisher(theta), np.einsum("y,yd,ye->de", pi, scores, scores), atol=1e-7)
    # -E[Hessian of log pi] by differencing the (closed-form) score
    hess = _central_difference(lambda t: policy.score(t, np.arange(policy.n_outcomes)), theta)  # [M, d, d]
    assert np.allclose(policy.fisher(theta), -np.einsum("y,yde->de", pi, hess), atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_success_gradient_matches_finite_differences(seed):
    policy, theta = _policy(seed)
    assert np.allclose(policy.success_grad(theta), _central_difference(policy.success, theta), atol=1e-8)


def test_tabular_fisher_trace_against_sympy():
    z = sp.symbols("z0:4")
    expz = [sp.exp(v) for v in z]
    pi = [e / sum(expz) for e in expz]
    # tr I = sum_y pi_y |e_y - pi|^2 for tabular logits, from its definition E[|grad log pi|^2]
    trace = sum(pi[y] * sum(sp.diff(sp.log(pi[y]), v) ** 2 for v in z) for y in range(4))
    f = sp.lambdify(z, trace)
    theta = np.array([0.3, -1.2, 2.0, 0.1])
    assert CategoricalPolicy.tabular(4, 1).fisher_trace(theta) == pytest.approx(f(*theta), rel=1e-12)


@given(st.integers(0, 10_000), st.integers(2, 8), st.integers(1, 6), st.floats(0.1, 4.0))
@SETTINGS
def test_success_fisher_below_fisher_in_loewner_order(seed, m, d, scale):
    rng = np.random.default_rng(seed)
    correct = rng.permutation(np.arange(m) < rng.integers(1, m))
    policy = CategoricalPolicy(scale * rng.standard_normal((m, d)), rng.standard_normal(m), correct)
    theta = rng.standard_normal(d)
    fisher = policy.fisher(theta)
    gap = np.linalg.eigvalsh(fisher - policy.success_fisher(theta))
    assert gap[0] >= -1e-9 * max(1.0, np.linalg.eigvalsh(fisher)[-1])


def test_success_fisher_equals_fisher_along_success_direction_for_tabular():
    # tabular logits can move p in any direction: F_succ is I's restriction to grad p, so g^T I^+ g = p(1-p)
    policy = CategoricalPolicy.tabular(5, 2)
    theta = np.array([0.2, -0.4, 1.0, 0.0, 0.5])
    g, p = policy.success_grad(theta), float(policy.success(theta))
    assert g @ np.linalg.pinv(policy.fisher(theta)) @ g == pytest.approx(p * (1 - p), rel=1e-9)


@pytest.mark.parametrize("vocab, length", [(2, 2), (3, 2), (3, 3), (2, 4)])
def test_sequence_chain_rule_fisher_equals_enumeration(vocab, length):
    policy = SequencePolicy.random(vocab, length, 3, np.random.default_rng(vocab * 10 + length))
    theta = np.random.default_rng(1).standard_normal(3)
    assert policy.probs(theta).sum() == pytest.approx(1.0, abs=1e-14)
    assert np.allclose(policy.fisher(theta), policy.fisher_enumerated(theta), atol=1e-12)
    # sequence scores against finite differences of log P(y)
    assert np.allclose(policy.sequence_scores(theta), _central_difference(policy.log_probs, theta), atol=1e-7)
    assert np.allclose(policy.success_grad(theta), _central_difference(policy.success, theta), atol=1e-8)


def test_sequence_prefix_probabilities_marginalize_sequences():
    policy = SequencePolicy.random(3, 3, 2, np.random.default_rng(5))
    theta = np.array([0.4, -0.7])
    probs, seqs = policy.probs(theta), policy.sequences
    prefix = policy.prefix_probs(theta)
    assert prefix[0] == 1.0
    assert prefix[1:4] == pytest.approx([probs[seqs[:, 0] == v].sum() for v in range(3)], abs=1e-14)
    # prefix (y1, y2) = (2, 1) has index 1 + 3 + 2 * 3 + 1
    assert prefix[1 + 3 + 7] == pytest.approx(probs[(seqs[:, 0] == 2) & (seqs[:, 1] == 1)].sum(), abs=1e-14)


def test_batched_theta_gives_batched_probs():
    policy, theta = _policy(0)
    thetas = np.stack([theta, 2 * theta])
    assert np.allclose(policy.probs(thetas)[1], policy.probs(2 * theta))
    assert policy.success(thetas[None]).shape == (1, 2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(A=np.ones((3, 2)), b=np.zeros(4), correct=np.array([True, False, False])), "b must have shape"),
        (dict(A=np.ones(3), b=np.zeros(3), correct=np.array([True, False, False])), "A must have 2 axes"),
        (
            dict(A=np.ones((3, 2)), b=np.zeros(3), correct=np.array([True, True, True])),
            "at least one correct and one wrong",
        ),
        (dict(A=np.ones((3, 2)), b=np.zeros(3), correct=np.array([1, 0, 0])), "boolean mask"),
        (dict(A=np.full((3, 2), np.nan), b=np.zeros(3), correct=np.array([True, False, False])), "A must be finite"),
    ],
)
def test_policy_rejects_bad_construction(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CategoricalPolicy(**kwargs)


def test_policy_rejects_bad_theta_and_outcomes():
    policy, theta = _policy(0)
    with pytest.raises(ValueError, match="theta must have shape"):
        policy.probs(np.zeros(5))
    with pytest.raises(ValueError, match="theta must be one parameter vector"):
        policy.fisher(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="theta must be finite"):
        policy.probs(np.array([0.0, np.inf, 0.0]))
    with pytest.raises(ValueError, match="y must hold outcome indices"):
        policy.score(theta, 7)
    with pytest.raises(ValueError, match="length must be"):
        SequencePolicy(np.zeros((1, 2, 1)), np.zeros((1, 2)), 0, np.array([True, False]))
