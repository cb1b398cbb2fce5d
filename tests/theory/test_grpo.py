"""The GRPO side: exact prompt weight w_G(p), its limit, and the entropy change under a logit step."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax
from scipy.stats import binom

from escov.theory.categorical import CategoricalPolicy
from escov.theory.grpo import (
    binomial_pmf,
    entropy_change_first_order,
    group_advantages,
    grpo_prompt_weight,
    grpo_weight_limit,
)
from escov.theory.metrics import entropy

SETTINGS = settings(deadline=None, max_examples=40)


def _exact_update(policy, theta, g):
    """E[(1/G) sum_i A_i s(y_i)] summed over every group of outcomes."""
    pi = policy.probs(theta)
    total = np.zeros(policy.dim)
    for group in itertools.product(range(policy.n_outcomes), repeat=g):
        group = np.array(group)
        r = policy.correct[group].astype(float)
        adv = (r - r.mean()) / r.std() if r.std() > 0 else np.zeros(g)
        total += np.prod(pi[group]) * (adv @ policy.score(theta, group)) / g
    return total


@pytest.mark.parametrize("g", [2, 3, 5, 8])
def test_weight_equals_exact_enumeration_two_outcomes(g):
    policy = CategoricalPolicy.tabular(2, 1)
    theta = np.array([0.4, -0.3])
    grad = policy.success_grad(theta)
    update = _exact_update(policy, theta, g)
    assert np.allclose(update, grpo_prompt_weight(float(policy.success(theta)), g) * grad, atol=1e-14)


def test_weight_equals_exact_enumeration_shared_parameters():
    policy = CategoricalPolicy.random(4, 2, np.random.default_rng(0), n_correct=2)
    theta = np.array([0.5, -1.0])
    update = _exact_update(policy, theta, 4)
    expected = grpo_prompt_weight(float(policy.success(theta)), 4) * policy.success_grad(theta)
    assert np.allclose(update, expected, atol=1e-14)


def test_weight_against_monte_carlo_groups():
    rng = np.random.default_rng(1)
    policy = CategoricalPolicy.random(6, 3, rng, n_correct=2)
    theta = rng.standard_normal(3)
    groups, g = 50_000, 8
    y = rng.choice(6, size=(groups, g), p=policy.probs(theta))
    adv = group_advantages(policy.correct[y].astype(float))
    per_group = np.einsum("rg,rgd->rd", adv, policy.score(theta, y)) / g
    grad = policy.success_grad(theta)
    along = per_group @ grad / (grad @ grad)
    se = along.std() / math.sqrt(groups)
    assert abs(along.mean() - grpo_prompt_weight(float(policy.success(theta)), g)) < 4 * se


@given(st.floats(0.01, 0.99))
@SETTINGS
def test_weight_tends_to_inverse_bernoulli_std(p):
    limit = grpo_weight_limit(p)
    errors = [abs(grpo_prompt_weight(p, g) / limit - 1) for g in (64, 1024, 16384)]
    assert errors[2] < errors[1] < errors[0]
    assert errors[2] < 2.0 / (16384 * p * (1 - p))


def test_weight_for_group_of_three_is_constant():
    # G = 3: whatever k, the correct and wrong advantages differ by sqrt(2)
    assert np.allclose(grpo_prompt_weight(np.linspace(0, 1, 11), 3), math.sqrt(2))


def test_binomial_pmf_matches_scipy():
    k = np.arange(21)
    for p in (0.0, 0.2, 1.0):
        assert np.allclose(binomial_pmf(k, 20, p), binom.pmf(k, 20, p), atol=1e-15)


def test_group_advantages():
    adv = group_advantages(np.array([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]]))
    assert np.allclose(adv[0], [1, -1, -1, 1])
    assert np.array_equal(adv[1], np.zeros(4))


@given(st.integers(0, 10_000), st.integers(2, 8))
@SETTINGS
def test_entropy_change_is_minus_covariance(seed, m):
    rng = np.random.default_rng(seed)
    z, dz = rng.standard_normal((2, m))
    t = 1e-5
    central = (entropy(softmax(z + t * dz)) - entropy(softmax(z - t * dz))) / (2 * t)
    assert entropy_change_first_order(softmax(z), dz) == pytest.approx(float(central), abs=1e-8)


def test_entropy_falls_when_likely_outcomes_are_reinforced():
    z = np.array([2.0, 0.0, -1.0])
    pi = softmax(z)
    dz = np.log(pi)  # push logits along log pi: Cov(log pi, dz) = Var(log pi) > 0
    assert entropy_change_first_order(pi, 0.01 * dz) < 0


@pytest.mark.parametrize(
    "func, args, match",
    [
        (grpo_prompt_weight, (0.5, 1), "group_size must be"),
        (grpo_prompt_weight, (1.5, 4), "p must lie in"),
        (grpo_weight_limit, (0.0,), "strictly inside"),
        (group_advantages, (np.array([1.0]),), "group axis"),
        (entropy_change_first_order, (np.array([0.5, 0.5]), np.array([1.0])), "dz must be"),
        (entropy_change_first_order, (np.array([1.0, 0.0]), np.array([1.0, 0.0])), "strictly positive"),
    ],
)
def test_grpo_rejects_bad_input(func, args, match):
    with pytest.raises(ValueError, match=match):
        func(*args)
