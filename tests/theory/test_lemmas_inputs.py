"""theory/lemmas.py's formulas on batches and at their edges: every refusal word for word (the argument named), the
formulas over a leading batch axis equal to the same formula row by row (so a reduction over the wrong axis shows),
and the bounds and Proposition 1's two sides at their boundaries, each against a value written out here."""

import itertools
import math

import numpy as np
import pytest

from escov.theory import lemmas


def _refused(fn, *args) -> str:
    with pytest.raises(ValueError) as err:
        fn(*args)
    return str(err.value)


def test_every_refusal_names_its_argument_word_for_word():
    p = np.array([0.2, 0.5, 0.9])
    assert _refused(lemmas.lemma1_prediction, -1.0, 0.1, 4) == "fisher_trace must be a finite number >= 0, got -1.0"
    assert _refused(lemmas.lemma1_prediction, 1.0, 0.0, 4) == "sigma must be a finite number > 0, got 0.0"
    assert _refused(lemmas.lemma1_prediction, 1.0, 0.1, 1) == "n must be an integer >= 2, got 1"
    assert _refused(lemmas.lemma1_prediction, 1.0, 0.1, True) == "n must be an integer >= 2, got True"
    assert _refused(lemmas.validity_parameter, math.inf, 0.1) == "fisher_trace must be a finite number >= 0, got inf"
    assert _refused(lemmas.validity_parameter, 1.0, -0.5) == "sigma must be a finite number > 0, got -0.5"
    assert _refused(lemmas.population_pass, [0.5]) == (
        "p must hold N >= 2 member success probabilities on its last axis, got shape (1,)"
    )
    assert _refused(lemmas.population_pass, [0.5, 1.5]) == "p must lie in [0, 1], got values in [0.5, 1.5]"
    assert _refused(lemmas.distinct_members_pass, p, 4) == "k must be <= N (number of members), got k=4 > N=3"
    assert _refused(lemmas.distinct_members_pass, p, 0) == "k must be an integer >= 1, got 0"
    assert _refused(lemmas.mixture_pass, p, 0) == "k must be an integer >= 1, got 0"
    assert _refused(lemmas.elementary_symmetric, 2.0) == "x must have a last axis of values, got shape ()"
    assert _refused(lemmas.mixture_gain, [0.5, 0.5], p) == "w must have the shape of p (3,), got (2,)"
    assert _refused(lemmas.mixture_gain, [0.5, 0.5, math.nan], p) == "w must be finite, got NaN or inf"
    assert _refused(lemmas.mixture_gain, [0.5, 0.5, 0.5], p) == "w must sum to 1 over the members"
    assert _refused(lemmas.lemma3_covariance, [0.5, 0.5], p) == "w must have the shape of p (3,), got (2,)"
    assert _refused(lemmas.es_update_prediction, [1.0, 0.0], p, 0.1, 0.1) == "z must have the shape of p (3,), got (2,)"
    assert _refused(lemmas.es_update_prediction, [1.0, 0.0, -1.0], p, 0.0, 0.1) == (
        "alpha must be a finite number > 0, got 0.0"
    )
    assert _refused(lemmas.es_update_prediction, [1.0, 0.0, -1.0], p, 0.1, 0.0) == (
        "sigma must be a finite number > 0, got 0.0"
    )
    assert _refused(lemmas.pass_k_difference, 1.5, 0.5, 2) == "p must lie in [0, 1], got values in [1.5, 1.5]"
    assert _refused(lemmas.pass_k_difference, 0.5, -0.5, 2) == "q must lie in [0, 1], got values in [-0.5, -0.5]"
    assert _refused(lemmas.pass_k_difference, 0.5, 0.5, 0) == "k must be an integer >= 1, got 0"
    assert _refused(lemmas.transfer_bounds, 1.5, 0.5, 2) == "p must lie in [0, 1], got values in [1.5, 1.5]"
    assert _refused(lemmas.transfer_bounds, 0.5, 2.0, 2) == "q must lie in [0, 1], got values in [2.0, 2.0]"
    assert _refused(lemmas.transfer_bounds, 0.5, 0.5, 0) == "k must be an integer >= 1, got 0"
    assert _refused(lemmas.mean_pass_at_k, np.zeros((2, 0)), 2) == (
        "p must hold per-prompt success probabilities on its last axis, got shape (2, 0)"
    )
    # the weights of a mixture may differ from 1 by rounding only
    assert lemmas.mixture_gain([0.25, 0.25, 0.5 + 5e-10], p) == pytest.approx(0.25 * 0.7 + 0.45 - 1.6 / 3)


def test_the_formulas_over_a_batch_axis_are_the_formulas_row_by_row():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, size=(4, 5))
    w = rng.dirichlet(np.ones(5), size=4)
    z = rng.normal(size=(4, 5))
    batched = {
        "population_pass": lemmas.population_pass(p),
        "same_policy_pass": lemmas.same_policy_pass(p),
        "gap_expansion": lemmas.lemma2_gap_expansion(p),
        "gap_local": lemmas.lemma2_gap_local(p),
        "distinct": lemmas.distinct_members_pass(p, 3),
        "mixture": lemmas.mixture_pass(p, 3),
        "gain": lemmas.mixture_gain(w, p),
        "covariance": lemmas.lemma3_covariance(w, p),
        "es_update": lemmas.es_update_prediction(z, p, 0.2, 0.5),
        "population_cov": lemmas.population_cov(w, p),
        "mean_pass": lemmas.mean_pass_at_k(p, 4),
    }
    for i in range(4):
        pi, wi, zi = p[i], w[i], z[i]
        cov = np.mean((wi - wi.mean()) * (pi - pi.mean()))  # population covariance, by hand
        mixed = 1 - np.mean([np.prod(1 - pi[list(s)]) for s in itertools.combinations(range(5), 3)])
        expected = {
            "population_pass": 1 - np.prod(1 - pi),
            "same_policy_pass": 1 - (1 - pi.mean()) ** 5,
            "gap_expansion": (1 - np.prod(1 - pi)) - (1 - (1 - pi.mean()) ** 5),
            "gap_local": lemmas.lemma2_gap_local(pi),
            "distinct": mixed,
            "mixture": 1 - (1 - pi.mean()) ** 3,
            "gain": np.dot(wi, pi) - pi.mean(),
            "covariance": 5 * cov,
            "es_update": 0.2 / 0.5 * np.mean((zi - zi.mean()) * (pi - pi.mean())),
            "population_cov": cov,
            "mean_pass": np.mean(1 - (1 - pi) ** 4),
        }
        for name, value in expected.items():
            assert batched[name][i] == pytest.approx(value, rel=1e-10, abs=1e-13), (name, i)


def test_the_transfer_bounds_and_pinsker_by_hand():
    """p = 0.2, q = 0.6, K = 3: |f_3(p) - f_3(q)| = 0.936 - 0.488 = 0.448 between 3 (0.4)^2 0.4 = 0.192 and
    3 (0.8)^2 0.4 = 0.768, under the Lipschitz 3 * 0.4 = 1.2; the exact difference (p - q) sum_j (1-p)^j (1-q)^(2-j)."""
    lower, upper, lipschitz = lemmas.transfer_bounds(0.2, 0.6, 3)
    assert (float(lower), float(upper), float(lipschitz)) == pytest.approx((0.192, 0.768, 1.2))
    assert float(lemmas.pass_k_difference(0.2, 0.6, 3)) == pytest.approx(-0.448)
    assert float(lemmas.pass_k_difference(0.6, 0.2, 3)) == pytest.approx(0.448)
    assert float(lemmas.pass_k_difference(0.2, 0.6, 1)) == pytest.approx(-0.4)
    kl = 0.2 * math.log(0.2 / 0.6) + 0.8 * math.log(0.8 / 0.4)
    assert float(lemmas.pinsker_bound(0.2, 0.6)) == pytest.approx(math.sqrt(kl / 2))
    assert float(lemmas.validity_parameter(3.0, 0.2)) == pytest.approx(0.06)
    assert lemmas.lemma1_prediction(3.0, 0.2, 4) == pytest.approx(0.045)


def test_proposition_1s_assumption_and_conclusion_at_their_boundaries():
    """Assumption: J_w - J_0 > K sqrt(eps / 2), strictly; conclusion: J_+ >= J_w - K sqrt(eps / 2) (an equality
    counts) and that floor strictly above J_0. K = 2, eps = 0.02: the margin K sqrt(eps / 2) is 0.2."""
    assert bool(lemmas.prop1_assumption(0.71, 0.5, 0.02, 2))
    assert not bool(lemmas.prop1_assumption(0.69, 0.5, 0.02, 2))
    assert bool(lemmas.prop1_conclusion(0.55, 0.75, 0.5, 0.02, 2))  # floor 0.55: reached exactly, above 0.5
    assert not bool(lemmas.prop1_conclusion(0.54, 0.75, 0.5, 0.02, 2))
    assert not bool(lemmas.prop1_conclusion(0.9, 0.7, 0.5, 0.02, 2))  # floor 0.5 is not above J_0
    assert lemmas.prop1_assumption([0.71, 0.69], [0.5, 0.5], 0.02, 2).tolist() == [True, False]
