"""Lemma 1: the prediction, its Monte Carlo check, its sigma^2 relative error, and sympy's coefficient."""

import math

import numpy as np
import pytest
import sympy as sp

from escov.theory.autoregressive import SequencePolicy
from escov.theory.categorical import CategoricalPolicy
from escov.theory.lemmas import lemma1_prediction, validity_parameter
from escov.theory.population import lemma1_monte_carlo, population_jspol, quadratic_form
from escov.theory.symbolic import jspol_coefficient, jssucc_coefficient


def test_prediction_formula():
    assert lemma1_prediction(2.0, 0.1, 4) == pytest.approx(0.5 * 0.01 * 0.75 * 2.0)
    assert validity_parameter(2.0, 0.1) == pytest.approx(0.01)


@pytest.mark.parametrize(
    "args, match",
    [
        ((1.0, 0.0, 4), "sigma must be"),
        ((1.0, -0.1, 4), "sigma must be"),
        ((1.0, 0.1, 1), "n must be"),
        ((-1.0, 0.1, 4), "fisher_trace must be"),
        ((np.nan, 0.1, 4), "fisher_trace must be"),
        ((1.0, 0.1, 2.0), "n must be"),
    ],
)
def test_prediction_rejects_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        lemma1_prediction(*args)


def test_quadratic_form_has_the_predicted_mean_exactly():
    # E[(1/2N) sum_i (eps_i - eps_bar)^T M (eps_i - eps_bar)] = (1/2)(1 - 1/N) tr M for any M: check by
    # averaging over an exact design, the 2^(N d) sign vectors (E eps eps^T = I, odd moments 0).
    n, d = 3, 2
    signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * (n * d))).reshape(n * d, -1).T.reshape(-1, n, d)
    m = np.array([[2.0, 0.3], [0.3, 0.5]])
    assert quadratic_form(m, 1.0, signs).mean() == pytest.approx(0.5 * (1 - 1 / n) * np.trace(m), rel=1e-12)


@pytest.mark.parametrize("n", [2, 8])
def test_monte_carlo_matches_prediction_at_small_sigma(n):
    rng = np.random.default_rng(n)
    policy = CategoricalPolicy.random(8, 3, rng, n_correct=2)
    theta = rng.standard_normal(3)
    est = lemma1_monte_carlo(policy, theta, 0.02, n, 4000, rng)
    assert est.s < 1e-3
    assert abs(est.ratio - 1) < 5 * est.stderr / est.predicted + 2 * est.s
    # the (1 - 1/N) factor matters: without it the N = 2 prediction would be off by a factor 2
    assert abs(est.measured / (0.5 * 0.02**2 * est.fisher_trace) - (1 - 1 / n)) < 0.06


def test_jssucc_monte_carlo_matches_success_fisher():
    rng = np.random.default_rng(3)
    policy = SequencePolicy.random(3, 2, 3, rng)
    theta = rng.standard_normal(3)
    est = lemma1_monte_carlo(policy, theta, 0.02, 6, 4000, rng, success=True)
    assert est.fisher_trace == pytest.approx(np.trace(policy.success_fisher(theta)))
    assert abs(est.ratio - 1) < 5 * est.stderr / est.predicted + 0.01


def test_relative_error_shrinks_like_sigma_squared():
    policy = CategoricalPolicy.tabular(3, 1)
    theta = np.zeros(3)  # uniform policy: E[JSpol] / prediction - 1 = c sigma^2 with c clearly nonzero
    fisher = policy.fisher(theta)
    eps = np.random.default_rng(0).standard_normal((4000, 4, 3))
    rel = []
    for sigma in (0.02, 0.04, 0.08):
        pair = 0.5 * (population_jspol(policy, theta, sigma, eps) + population_jspol(policy, theta, sigma, -eps))
        rel.append(np.mean(pair - quadratic_form(fisher, sigma, eps)) / lemma1_prediction(np.trace(fisher), sigma, 4))
    ratios = np.array(rel[1:]) / np.array(rel[:-1])
    assert np.allclose(ratios, 4.0, rtol=0.1)


def test_lemma1_monte_carlo_rejects_bad_input():
    policy = CategoricalPolicy.tabular(3, 1)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="sigma must be"):
        lemma1_monte_carlo(policy, np.zeros(3), 0.0, 4, 10, rng)
    with pytest.raises(ValueError, match="n must be"):
        lemma1_monte_carlo(policy, np.zeros(3), 0.1, 1, 10, rng)
    with pytest.raises(ValueError, match="draws must be"):
        lemma1_monte_carlo(policy, np.zeros(3), 0.1, 4, 1, rng)


def test_sympy_coefficient_tabular_equals_closed_form():
    coef = jspol_coefficient(3, 2)
    assert coef.equal
    assert coef.constant == sp.Rational(1, 4)  # (1/2)(1 - 1/2)
    # and it is not the constant without the (1 - 1/N) factor
    assert coef.constant != sp.Rational(1, 2)


def test_sympy_coefficient_general_a_equals_closed_form():
    A = sp.Matrix([[2, -1], [0, 1], [1, 3]])
    coef = jspol_coefficient(3, 2, A)
    assert coef.equal
    # evaluate at a point and compare with the numeric Fisher trace of the same policy
    q = np.array([0.2, 0.5, 0.3])
    value = float(coef.derived.subs(dict(zip(coef.probabilities, q[:2]))))
    policy = CategoricalPolicy(np.array(A, dtype=float), np.log(q), np.array([True, False, False]))
    assert value == pytest.approx(0.5 * 0.5 * policy.fisher_trace(np.zeros(2)), rel=1e-12)


def test_sympy_jssucc_coefficient_equals_closed_form():
    coef = jssucc_coefficient(3, 2, 1)
    assert coef.equal
    assert coef.constant == sp.Rational(1, 4)


@pytest.mark.parametrize("n_members", [3, 4])
def test_sympy_coefficients_carry_one_minus_one_over_n_for_every_population_size(n_members):
    """(1/2)(1 - 1/N): 1/3 at N = 3, 3/8 at N = 4 (two outcomes keep sympy quick)."""
    expected = sp.Rational(1, 2) * (1 - sp.Rational(1, n_members))
    for coef in (jspol_coefficient(2, n_members), jssucc_coefficient(2, n_members, 1)):
        assert coef.equal and coef.constant == expected


def test_sympy_jssucc_with_two_correct_outcomes_is_the_numeric_success_fisher():
    """Outcomes 0 and 1 correct of 4: p = q_0 + q_1; the derived coefficient at a point against the numeric
    F_succ = grad p grad p^T / (p (1 - p)) of the same tabular policy."""
    coef = jssucc_coefficient(4, 2, 2)
    assert coef.equal and coef.constant == sp.Rational(1, 4)
    q = np.array([0.1, 0.2, 0.3, 0.4])
    value = float(coef.derived.subs(dict(zip(coef.probabilities, q[:3]))))
    policy = CategoricalPolicy(np.eye(4), np.log(q), np.array([True, True, False, False]))
    assert value == pytest.approx(0.25 * np.trace(policy.success_fisher(np.zeros(4))), rel=1e-12)


def test_sympy_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n_members"):
        jspol_coefficient(3, 1)
    with pytest.raises(ValueError, match="n_outcomes"):
        jspol_coefficient(1, 2)
    with pytest.raises(ValueError, match="n_correct"):
        jssucc_coefficient(3, 2, 3)
    with pytest.raises(ValueError, match="A must have 3 rows, got 4"):
        jspol_coefficient(3, 2, sp.Matrix([[1, 0], [0, 1], [1, 1], [2, 0]]))
    with pytest.raises(ValueError, match="A must have 3 rows, got 2"):
        jspol_coefficient(3, 2, sp.Matrix([[1, 0], [0, 1]]))


def test_log_n_is_the_ceiling_at_huge_sigma():
    policy = CategoricalPolicy.tabular(6, 1)
    eps = np.random.default_rng(0).standard_normal((200, 4, 6))
    js = population_jspol(policy, np.zeros(6), 100.0, eps)
    assert np.all(js <= math.log(4) + 1e-12)
    assert js.mean() > 0.5 * math.log(4)


def test_population_diversity_rejects_bad_input():
    policy = CategoricalPolicy.tabular(3, 1)
    with pytest.raises(ValueError, match="N >= 2"):
        population_jspol(policy, np.zeros(3), 0.1, np.zeros((5, 1, 3)))
    with pytest.raises(ValueError, match="sigma must be"):
        population_jspol(policy, np.zeros(3), -0.1, np.zeros((5, 2, 3)))
    with pytest.raises(ValueError, match="eps must have shape"):
        population_jspol(policy, np.zeros(3), 0.1, np.zeros((5, 2, 4)))
