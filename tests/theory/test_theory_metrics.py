"""Shared metrics (theory.metrics): properties as the math states them, brute force, bad input."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from escov.theory.metrics import (binary_entropy, entropy, generalized_js, generalized_js_batch, jssucc, jssucc_batch,
                            maj_at_k, pass_at_k, pass_at_k_counts, pass_at_k_from_p)

SETTINGS = settings(deadline=None, max_examples=60)


@st.composite
def populations(draw, min_n=2, max_n=6, max_v=6):
    """N rows that are distributions over V outcomes (some entries exactly 0)."""
    n = draw(st.integers(min_n, max_n))
    v = draw(st.integers(2, max_v))
    raw = draw(arrays(float, (n, v), elements=st.floats(0.0, 10.0)))
    raw[raw < 0.5] = 0.0
    raw[:, 0] += 1e-3  # every row has mass somewhere
    return raw / raw.sum(axis=1, keepdims=True)


@given(populations())
@SETTINGS
def test_js_between_zero_and_log_n(probs):
    js = generalized_js(probs)
    assert 0.0 <= js <= math.log(len(probs)) + 1e-12


@given(populations(), st.randoms())
@SETTINGS
def test_js_invariant_under_permuting_members(probs, random):
    order = list(range(len(probs)))
    random.shuffle(order)
    assert generalized_js(probs[order]) == pytest.approx(generalized_js(probs), abs=1e-13)


@given(populations(min_n=1, max_n=1), st.integers(2, 6))
@SETTINGS
def test_js_zero_when_all_members_equal(row, n):
    assert generalized_js(np.repeat(row, n, axis=0)) == pytest.approx(0.0, abs=1e-15)


@given(populations())
@SETTINGS
def test_js_positive_when_members_differ(probs):
    assume(np.max(np.abs(probs - probs[0])) > 1e-3)
    assert generalized_js(probs) > 0.0


@given(populations(), st.data())
@SETTINGS
def test_js_equals_entropy_form_with_weights(probs, data):
    w = np.array(data.draw(st.lists(st.floats(0.01, 1.0), min_size=len(probs), max_size=len(probs))))
    w /= w.sum()
    mix = w @ probs
    assert generalized_js(probs, w) == pytest.approx(float(entropy(mix) - w @ entropy(probs)), abs=1e-12)


def test_js_of_disjoint_members_is_log_n():
    assert generalized_js(np.eye(4)) == pytest.approx(math.log(4), abs=1e-15)


@given(populations(), st.data())
@SETTINGS
def test_jssucc_le_jspol_for_any_verifier(probs, data):
    v = probs.shape[1]
    correct = np.array(data.draw(st.lists(st.booleans(), min_size=v, max_size=v)))
    p = np.clip(probs[:, correct].sum(axis=1), 0.0, 1.0)
    assert jssucc(p) <= generalized_js(probs) + 1e-12


@given(arrays(float, st.integers(1, 8), elements=st.floats(0.0, 1.0)))
@SETTINGS
def test_jssucc_is_js_of_bernoulli_rows(p):
    rows = np.stack([p, 1 - p], axis=1)
    assert jssucc(p) == pytest.approx(generalized_js(rows), abs=1e-12)
    assert jssucc(p) <= math.log(2) + 1e-12


def test_batched_versions_match_single_ones():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(5), size=(3, 4))
    assert np.allclose(generalized_js_batch(probs), [generalized_js(x) for x in probs], atol=1e-15)
    p = rng.random((3, 4))
    assert np.allclose(jssucc_batch(p), [jssucc(x) for x in p], atol=1e-15)


def _pass_at_k_brute(n, c, k):
    correct = np.arange(n) < c
    subsets = list(itertools.combinations(range(n), k))
    return sum(correct[list(s)].any() for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_equals_enumeration_of_all_subsets(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(_pass_at_k_brute(n, c, k), abs=1e-13)


@given(st.integers(1, 40), st.data())
@SETTINGS
def test_pass_at_k_edge_cases(n, data):
    k = data.draw(st.integers(1, n))
    assert pass_at_k(n, 0, k) == 0.0
    assert pass_at_k(n, n, k) == 1.0
    c = data.draw(st.integers(0, n))
    assert pass_at_k(n, c, n) == (1.0 if c > 0 else 0.0)
    assert pass_at_k(n, c, 1) == pytest.approx(c / n, abs=1e-14)


def test_pass_at_k_is_unbiased_for_the_exact_pass_at_k():
    n = 12
    for p in (0.0, 0.05, 0.3, 0.9, 1.0):
        for k in (1, 3, 12):
            expected = sum(math.comb(n, c) * p**c * (1 - p) ** (n - c) * pass_at_k(n, c, k) for c in range(n + 1))
            assert expected == pytest.approx(1 - (1 - p) ** k, abs=1e-12)


def test_pass_at_k_stable_for_large_n():
    # 1 - C(n - c, k) / C(n, k) with exact integers
    n, c, k = 1000, 3, 500
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)
    assert np.allclose(pass_at_k_counts(n, np.array([0, 3, 1000]), k), [0.0, exact, 1.0])


def test_pass_at_k_from_p_edges():
    assert np.array_equal(pass_at_k_from_p(np.array([0.0, 1.0]), 5), [0.0, 1.0])


def test_maj_at_k_vote_and_ties():
    answers = ["a", "a", "b", None]
    assert maj_at_k(answers, [True, True, False, False], 4) == 1.0
    assert maj_at_k(["a", "b"], [True, False], 2) == 0.5
    assert maj_at_k([None, None], [False, False], 2) == 0.0


def test_entropy_and_binary_entropy():
    assert float(entropy(np.full(4, 0.25))) == pytest.approx(math.log(4))
    assert float(binary_entropy(0.5)) == pytest.approx(math.log(2))
    assert float(binary_entropy(0.0)) == 0.0


@pytest.mark.parametrize("probs, match", [
    ([[0.5, 0.6], [0.5, 0.5]], "sum to 1"),
    ([[1.2, -0.2], [0.5, 0.5]], "non-negative"),
    ([[np.nan, 1.0], [0.5, 0.5]], "finite"),
    ([0.5, 0.5], r"\[N, V\]"),
])
def test_js_rejects_rows_that_are_not_distributions(probs, match):
    with pytest.raises(ValueError, match=match):
        generalized_js(np.array(probs))


@pytest.mark.parametrize("args, match", [((5, 2, 6), "k must be <= n"), ((5, 6, 2), "c must lie"),
                                         ((5, -1, 2), "c must be >= 0"), ((0, 0, 1), "n must be >= 1"),
                                         ((5, 2, 0), "k must be >= 1"), ((5, 2.5, 1), "c must be an integer")])
def test_pass_at_k_rejects_bad_counts(args, match):
    with pytest.raises(ValueError, match=match):
        pass_at_k(*args)


def test_jssucc_rejects_probabilities_outside_unit_interval():
    with pytest.raises(ValueError, match="p must lie in"):
        jssucc([0.2, 1.5])
    with pytest.raises(ValueError, match="p must be finite"):
        jssucc([0.2, np.nan])


def test_js_finite_when_the_mixture_underflows():
    # 0.5 * 5e-324 rounds to 0: the mixture underflows although every member puts mass there
    tiny = np.array([[5e-324, 1 - 5e-324], [5e-324, 1 - 5e-324]])
    assert generalized_js(tiny) == 0.0
    assert generalized_js(np.array([[5e-324, 1.0], [0.0, 1.0]])) == pytest.approx(0.0, abs=1e-300)
