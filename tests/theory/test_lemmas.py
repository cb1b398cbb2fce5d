"""Lemmas 2 and 3, Proposition 1 and the cross-prompt statement, for arbitrary p and w (hypothesis)."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from escov.theory.lemmas import (
    distinct_members_pass,
    elementary_symmetric,
    es_update_prediction,
    lemma2_gap_expansion,
    lemma2_gap_local,
    lemma3_covariance,
    mean_pass_at_k,
    mixture_gain,
    mixture_pass,
    pass_k_difference,
    pinsker_bound,
    population_pass,
    prop1_assumption,
    prop1_conclusion,
    same_policy_pass,
    transfer_bounds,
)
from escov.theory.metrics import bernoulli_kl, jssucc

SETTINGS = settings(deadline=None, max_examples=80)
probs_1d = arrays(float, st.integers(2, 9), elements=st.floats(0.0, 1.0))


@given(probs_1d)
@SETTINGS
def test_lemma2_population_beats_same_policy(p):
    assert population_pass(p) >= same_policy_pass(p) - 1e-15


@given(probs_1d)
@SETTINGS
def test_lemma2_equality_iff_all_equal(p):
    # AM-GM on the failure probabilities: prod(1 - p_i) = (1 - p_bar)^N iff all p_i are equal
    with np.errstate(divide="ignore", invalid="ignore"):  # -inf - (-inf) when every p_i = 1
        log_ratio = np.log1p(-p).sum() - p.size * np.log1p(-p.mean())
    if np.ptp(p) > 1e-4:  # not all equal, so not all 1: log_ratio is < 0 or -inf
        assert log_ratio < 0
    equal = np.full(p.size, p[0])
    assert population_pass(equal) == pytest.approx(same_policy_pass(equal), abs=1e-15)


@given(probs_1d)
@SETTINGS
def test_lemma2_exact_gap_expansion(p):
    assert lemma2_gap_expansion(p) == pytest.approx(population_pass(p) - same_policy_pass(p), abs=1e-13)


@given(arrays(float, st.integers(1, 7), elements=st.floats(-1.0, 1.0)))
@SETTINGS
def test_elementary_symmetric_against_subsets(x):
    brute = [sum(np.prod(x[list(s)]) for s in itertools.combinations(range(x.size), k)) for k in range(x.size + 1)]
    assert np.allclose(elementary_symmetric(x), brute, atol=1e-12)


@given(st.floats(0.05, 0.95), arrays(float, st.integers(2, 8), elements=st.floats(-1.0, 1.0)))
@SETTINGS
def test_lemma2_local_form_relative_error_is_linear_in_spread(p_bar, u):
    # gap - local = O(|xi|^3), so (local / gap - 1) = O(|xi|): a 4x smaller spread at least halves it
    # (once it is above 1e-4; below that, cubic and quartic terms may still trade places).
    # The gap is taken from the e_k expansion (equal to P_pop - P_same, tested above) because
    # 1 - prod(1 - p_i) loses the tiny gap to cancellation against 1.
    u = u - u.mean()
    assume(np.abs(u).max() > 1e-2)
    u /= np.abs(u).max()
    r = 0.01 * min(p_bar, 1 - p_bar)
    rel = []
    for scale in (r, r / 4):
        p = p_bar + scale * u
        rel.append(abs(lemma2_gap_local(p) / lemma2_gap_expansion(p) - 1))
    assert rel[0] < 0.5
    assert rel[1] <= max(rel[0] / 2, 1e-4)


@given(probs_1d, st.data())
@SETTINGS
def test_k_distinct_members_formula_against_subsets(p, data):
    k = data.draw(st.integers(1, p.size))
    subsets = list(itertools.combinations(range(p.size), k))
    brute = np.mean([1 - np.prod(1 - p[list(s)]) for s in subsets])
    assert distinct_members_pass(p, k) == pytest.approx(brute, abs=1e-12)
    assert distinct_members_pass(p, k) >= mixture_pass(p, k) - 1e-12  # Maclaurin: distinct members gain


@given(probs_1d, st.integers(1, 6))
@SETTINGS
def test_k_draws_with_replacement_is_the_mixture(p, k):
    # enumerate every sequence of k member choices (uniform with replacement)
    n = p.size
    if n**k > 5000:
        k = 1
    brute = np.mean([1 - np.prod(1 - p[list(c)]) for c in itertools.product(range(n), repeat=k)])
    # each draw independently succeeds with p_bar, so no gain over one policy of success p_bar
    assert mixture_pass(p, k) == pytest.approx(1 - (1 - p.mean()) ** k, abs=1e-14)
    assert distinct_members_pass(p, 1) == pytest.approx(mixture_pass(p, 1), abs=1e-14)
    if k == 1:
        assert brute == pytest.approx(p.mean(), abs=1e-14)


def test_lemma2_local_form_is_jssucc_based():
    p = np.array([0.3, 0.32, 0.28, 0.31])
    n, p_bar = p.size, p.mean()
    assert lemma2_gap_local(p) == pytest.approx(n * p_bar * (1 - p_bar) ** (n - 1) * jssucc(p))


@given(st.integers(2, 10), st.data())
@SETTINGS
def test_lemma3_covariance_identity(n, data):
    w = np.array(data.draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))
    assume(w.sum() > 1e-3)
    w /= w.sum()
    p = np.array(data.draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))
    assert mixture_gain(w, p) == pytest.approx(lemma3_covariance(w, p), abs=1e-12)
    assert mixture_gain(w, p) == pytest.approx(float(w @ p - p.mean()), abs=1e-12)


def test_es_update_prediction_formula():
    z = np.array([1.0, -1.0, 0.0])
    p = np.array([0.6, 0.2, 0.4])
    assert es_update_prediction(z, p, 0.01, 0.1) == pytest.approx(0.1 * np.mean(z * (p - p.mean())))


@given(st.floats(0, 1), st.floats(0, 1), st.integers(1, 40))
@SETTINGS
def test_transfer_bounds(p, q, k):
    diff = float((1 - Fraction(q)) ** k - (1 - Fraction(p)) ** k)  # f_K(p) - f_K(q) in exact arithmetic
    assert pass_k_difference(p, q, k) == pytest.approx(diff, abs=1e-13)
    lower, upper, lipschitz = transfer_bounds(p, q, k)
    assert lower <= abs(diff) * (1 + 1e-9) + 1e-300
    assert abs(diff) <= upper * (1 + 1e-9) + 1e-300
    assert upper <= lipschitz * (1 + 1e-12)


@given(st.floats(1e-6, 1 - 1e-6), st.floats(1e-6, 1 - 1e-6))
@SETTINGS
def test_pinsker_for_bernoullis(p, q):
    assert abs(p - q) <= pinsker_bound(p, q) * (1 + 1e-9) + 1e-12


@given(arrays(float, st.integers(2, 12), elements=st.floats(0, 1)), st.integers(1, 64))
@SETTINGS
def test_cross_prompt_jensen(p, k):
    even = np.full(p.size, p.mean())
    assert mean_pass_at_k(p, k) <= mean_pass_at_k(even, k) + 1e-12


def test_zero_prompts_cap_pass_at_k():
    p = np.array([0.0, 0.0, 0.8, 0.8])  # mean Pass@1 = 0.4
    for k in (1, 8, 64, 1024):
        assert mean_pass_at_k(p, k) <= 0.5
    assert mean_pass_at_k(np.full(4, 0.4), 64) > 0.999


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(1e-8, 1e-2), st.integers(1, 16))
@SETTINGS
def test_proposition1_conclusion_follows_from_assumption_and_transfer(j_mix, j_center, j_upd, eps_succ, k):
    # if J_K(+) is within K sqrt(eps/2) of J_K(w) (what Pinsker + Lipschitz give), the assumption implies the conclusion
    margin = k * math.sqrt(eps_succ / 2)
    assume(abs(j_upd - j_mix) <= margin)
    if prop1_assumption(j_mix, j_center, eps_succ, k):
        assert prop1_conclusion(j_upd, j_mix, j_center, eps_succ, k)


def test_proposition1_transfer_chain_on_random_prompts():
    rng = np.random.default_rng(0)
    for k in (1, 4, 16):
        p_w, p_plus = rng.random((2, 1000, 5))
        eps = bernoulli_kl(p_w, p_plus).mean(axis=1)
        gap = np.abs(mean_pass_at_k(p_plus, k) - mean_pass_at_k(p_w, k))
        assert np.all(gap <= k * np.sqrt(eps / 2) + 1e-12)


@pytest.mark.parametrize(
    "func, args, match",
    [
        (population_pass, ([0.5],), "N >= 2"),
        (same_policy_pass, ([0.5, 1.2],), "p must lie in"),
        (distinct_members_pass, ([0.5, 0.2], 3), "k must be <= N"),
        (mixture_pass, ([0.5, 0.2], 0), "k must be an integer >= 1"),
        (mixture_gain, ([0.7, 0.7], [0.5, 0.2]), "w must sum to 1"),
        (lemma3_covariance, ([0.5], [0.5, 0.2]), "w must have the shape"),
        (es_update_prediction, ([1.0, -1.0], [0.5, 0.2], 0.1, 0.0), "sigma must be"),
        (pass_k_difference, (0.5, 0.2, 0), "k must be"),
        (mean_pass_at_k, ([np.nan], 2), "p must be finite"),
    ],
)
def test_lemmas_reject_bad_input(func, args, match):
    with pytest.raises(ValueError, match=match):
        func(*args)
