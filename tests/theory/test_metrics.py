"""Shared metrics (theory.metrics): properties as the math states them, brute force, bad input."""

import itertools
import math
import re
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from escov.theory.metrics import (
    bernoulli_kl,
    binary_entropy,
    check_distributions,
    check_probabilities,
    entropy,
    generalized_js,
    generalized_js_batch,
    jssucc,
    jssucc_batch,
    maj_at_k,
    pass_at_k,
    pass_at_k_counts,
    pass_at_k_from_p,
    success_probability,
)

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


def test_js_of_disjoint_members_is_the_entropy_of_the_weights_given_as_fractions():
    """Disjoint members: JS_w = H(w). Weights may be any numbers float() reads, here exact fractions."""
    expected = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert generalized_js(np.eye(2), [Fraction(1, 4), Fraction(3, 4)]) == pytest.approx(expected, rel=1e-14)


def test_js_member_of_weight_zero_adds_nothing():
    """A member of weight 0 does not count, even where it has mass the mixture lacks (its KL to the mixture is inf)."""
    probs = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    assert generalized_js(probs, [1.0, 0.0]) == 0.0
    # the other two members are disjoint: log 2 whatever the third, of weight 0, looks like
    three = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert generalized_js(three, [0.5, 0.5, 0.0]) == pytest.approx(math.log(2), abs=1e-15)
    batch = generalized_js_batch(np.stack([probs, probs[::-1]]), [1.0, 0.0])
    assert batch.dtype == np.float64 and batch.tolist() == [0.0, 0.0]


def test_js_of_members_with_zeros_raises_no_floating_point_error():
    """log(0) and log(0) - log(0) are taken and discarded inside: nothing raises under np.errstate(..., 'raise')."""
    probs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # the last outcome is 0 in every member and the mixture
    with np.errstate(divide="raise", invalid="raise"):
        assert generalized_js(probs) == pytest.approx(math.log(2), abs=1e-15)
        assert generalized_js(probs, [1.0, 0.0]) == 0.0


def test_js_refuses_complex_probabilities():
    """A population written as complex numbers is refused, not read as its real part."""
    with pytest.raises(TypeError, match="complex"):
        generalized_js([[1 + 0j, 0j], [0j, 1 + 0j]])


@pytest.mark.parametrize(
    "weights, match",
    [
        ([0.5, 0.25, 0.25], r"^weights must have shape \(2,\), got \(3,\)$"),
        ([0.5, 0.25], r"^weights rows must sum to 1 \(within 1e-06\), got a row summing to 0.75$"),
        ([1.5, -0.5], r"^weights must be non-negative, got min -0.5$"),
    ],
)
def test_js_rejects_weights_that_are_not_a_distribution_over_members(weights, match):
    with pytest.raises(ValueError, match=match):
        generalized_js(np.eye(2), weights)


def test_js_batch_needs_members_and_outcomes():
    with pytest.raises(ValueError, match=r"^probs must have shape \[\.\.\., N, V\], got \(2,\)$"):
        generalized_js_batch([0.5, 0.5])


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


def test_pass_at_k_counts_reads_integer_valued_float_counts():
    """Counts stored as floats (3.0) are read as the integers they hold; 2.5 is refused."""
    n, k = 5, 2
    expected = [1 - math.comb(n - c, k) / math.comb(n, k) for c in (3, 0, 5)]
    assert np.allclose(pass_at_k_counts(n, np.array([3.0, 0.0, 5.0]), k), expected, rtol=1e-14, atol=1e-15)
    with pytest.raises(ValueError, match=r"^c must hold integers \(correct-sample counts\)$"):
        pass_at_k_counts(n, np.array([3.0, 2.5]), k)


def test_pass_at_k_counts_of_no_counts_is_empty():
    """No problems, no values: an empty list (numpy reads it as floats) like an empty integer array."""
    for c in ([], np.array([], dtype=int)):
        assert pass_at_k_counts(5, c, 2).shape == (0,)


@pytest.mark.parametrize(
    "c, shown",
    [
        ([3, -1], "[-1, 3]"),
        ([6, 2], "[2, 6]"),
        # an unsigned count past int64's range is shown as given, not wrapped around
        (np.array([2**63], dtype=np.uint64), "[9223372036854775808, 9223372036854775808]"),
    ],
)
def test_pass_at_k_counts_refuses_counts_outside_zero_to_n(c, shown):
    with pytest.raises(ValueError, match=rf"^c must lie in \[0, n=5\], got values in {re.escape(shown)}$"):
        pass_at_k_counts(5, c, 2)


def test_pass_at_k_counts_raises_no_floating_point_error():
    """The product form takes no log(0) and no log of a negative number, for any k (k = 1 included)."""
    with np.errstate(divide="raise", invalid="raise"):
        for k in (1, 2, 4, 6):
            expected = [1 - math.comb(6 - c, k) / math.comb(6, k) for c in range(7)]
            assert np.allclose(pass_at_k_counts(6, np.arange(7), k), expected, rtol=1e-14, atol=1e-15)


def test_pass_at_k_from_p_edges():
    assert np.array_equal(pass_at_k_from_p(np.array([0.0, 1.0]), 5), [0.0, 1.0])


@pytest.mark.parametrize("k", [1, 2, 7])
def test_pass_at_k_from_p_is_one_minus_the_chance_of_k_failures(k):
    p = np.array([0.0, 0.1, 0.3, 0.5, 0.99, 1.0])
    assert np.allclose(pass_at_k_from_p(p, k), [1 - (1 - x) ** k for x in p], rtol=1e-14, atol=0)


def test_pass_at_k_from_p_of_a_sure_policy_raises_no_divide_by_zero():
    """p = 1 takes log(0) = -inf on the way to exactly 1; no floating-point error escapes."""
    with np.errstate(divide="raise", invalid="raise"):
        got = pass_at_k_from_p(np.array([1.0, 0.5]), 3)
    assert got[0] == 1.0 and got[1] == pytest.approx(0.875, rel=1e-15)


@pytest.mark.parametrize(
    "p, k, match",
    [
        (0.5, 0, r"^k must be >= 1, got 0$"),
        (0.5, 1.5, r"^k must be an integer, got 1\.5$"),
        (1.5, 2, r"^p must lie in \[0, 1\]"),
        ([0.5, np.inf], 2, r"^p must be finite"),
    ],
)
def test_pass_at_k_from_p_rejects_bad_input(p, k, match):
    with pytest.raises(ValueError, match=match):
        pass_at_k_from_p(p, k)


def test_maj_at_k_vote_and_ties():
    answers = ["a", "a", "b", None]
    assert maj_at_k(answers, [True, True, False, False], 4) == 1.0
    assert maj_at_k(["a", "b"], [True, False], 2) == 0.5
    assert maj_at_k([None, None], [False, False], 2) == 0.0


def _maj_at_k_by_hand(answers, correct, k):
    """Maj@k averaged over every size-k subset, each subset's vote counted by hand."""
    right = {a for a, ok in zip(answers, correct) if a is not None and ok}
    credits = []
    for subset in itertools.combinations(range(len(answers)), k):
        votes = Counter(answers[i] for i in subset if answers[i] is not None)
        top = max(votes.values(), default=0)
        tied = [a for a, v in votes.items() if v == top]
        credits.append(sum(a in right for a in tied) / len(tied) if tied else 0.0)
    return sum(credits) / len(credits)


T, F = True, False
VOTES = [  # (answers, correct flags)
    (["a", "a", "b", "b", "b"], [T, T, F, F, F]),
    (["a", None, None], [T, F, F]),  # a subset of no answers earns nothing, though a right answer exists
    ([None, None, "a"], [F, F, T]),  # two samples without an answer do not outvote one answer
    ([None, "x"], [T, F]),  # a correct flag on a sample without an answer earns nothing
    (["a", "b", "c", "a", None, "b"], [F, T, F, F, F, T]),  # ties between a right and a wrong answer
]


@pytest.mark.parametrize("answers, correct", VOTES)
def test_maj_at_k_over_all_samples_is_the_vote_by_hand(answers, correct):
    n = len(answers)
    assert maj_at_k(answers, correct, n) == pytest.approx(_maj_at_k_by_hand(answers, correct, n), abs=1e-15)


@pytest.mark.parametrize("answers, correct", VOTES)
def test_maj_at_k_of_fewer_samples_is_within_monte_carlo_error_of_the_mean_over_all_subsets(answers, correct):
    """4000 random subsets: a standard error of at most 0.5 / sqrt(4000) = 0.008; the bound is about 4 of them."""
    for k in range(1, len(answers)):
        exact = _maj_at_k_by_hand(answers, correct, k)
        assert maj_at_k(answers, correct, k, n_subsets=4000) == pytest.approx(exact, abs=0.03)


def test_maj_at_k_averages_256_subsets_by_default():
    """Two answers, an odd k: no ties, so each subset's credit is 0 or 1 and the default mean is a multiple of 1/256."""
    got = maj_at_k(["a", "a", "b", "b", "b"], [T, T, F, F, F], 3)
    assert 0.0 < got < 1.0 and got * 256 == round(got * 256)


def test_maj_at_k_is_seeded():
    """The default seed is 0, and a seed gives the same subsets, so the same value, each time."""
    answers, correct = VOTES[-1]
    assert maj_at_k(answers, correct, 3) == maj_at_k(answers, correct, 3, seed=0, n_subsets=256)
    values = {maj_at_k(answers, correct, 3, seed=7, n_subsets=3000) for _ in range(3)}
    assert len(values) == 1


@pytest.mark.parametrize(
    "answers, correct, k, match",
    [
        (["a", "b", "a"], [T, F], 2, r"^correct must have one flag per answer: 2 != 3$"),
        (["a"], [T], 0, r"^k must be >= 1, got 0$"),
        (["a"], [T], 1.0, r"^k must be an integer, got 1\.0$"),
        (["a"], [T], 2, r"^k must be <= n \(number of samples\), got k=2 > n=1$"),
    ],
)
def test_maj_at_k_rejects_bad_input(answers, correct, k, match):
    with pytest.raises(ValueError, match=match):
        maj_at_k(answers, correct, k)


def test_entropy_and_binary_entropy():
    assert float(entropy(np.full(4, 0.25))) == pytest.approx(math.log(4))
    assert float(binary_entropy(0.5)) == pytest.approx(math.log(2))
    assert float(binary_entropy(0.0)) == 0.0


def test_entropy_along_a_leading_axis_reads_the_columns():
    """axis=0 sums over each column; the rows need not be distributions then."""
    probs = np.array([[0.5, 0.25, 1.0], [0.5, 0.75, 0.0]])  # columns are distributions, rows are not
    expected = [math.log(2), -(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), 0.0]
    assert np.allclose(entropy(probs, axis=0), expected, rtol=1e-14, atol=0)


@pytest.mark.parametrize(
    "probs, axis",
    [([[0.5, 0.25], [0.5, 0.5]], -1), ([[0.5, 0.25], [0.5, 0.5]], 1), ([0.5, 0.25], -1), ([0.5, 0.25], 0)],
)
def test_entropy_along_the_last_axis_refuses_rows_that_are_not_distributions(probs, axis):
    with pytest.raises(ValueError, match=r"^probs rows must sum to 1"):
        entropy(probs, axis=axis)


def test_entropy_needs_an_axis_of_outcomes():
    with pytest.raises(ValueError, match=r"^probs must have at least one axis of outcomes$"):
        entropy(1.0)


def test_binary_entropy_names_p_in_its_errors():
    with pytest.raises(ValueError, match=r"^p must lie in \[0, 1\], got values in \[1.5, 1.5\]$"):
        binary_entropy(1.5)


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("q", [0.05, 0.3, 0.5, 0.95])
def test_bernoulli_kl_equals_scipys_relative_entropy(p, q):
    expected = scipy.stats.entropy([p, 1 - p], [q, 1 - q])
    assert float(bernoulli_kl(p, q)) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_bernoulli_kl_at_the_edges_of_q():
    """Infinite where q gives zero mass to an outcome p can take; 0 where p puts no mass there."""
    p = np.array([0.0, 0.5, 1.0])
    assert bernoulli_kl(p, 0.0).tolist() == [0.0, math.inf, math.inf]
    assert bernoulli_kl(p, 1.0).tolist() == [math.inf, math.inf, 0.0]
    assert np.allclose(
        bernoulli_kl(p, 0.25),
        [-math.log(0.75), 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75), -math.log(0.25)],
        rtol=1e-14,
        atol=0,
    )


@pytest.mark.parametrize(
    "p, q, match",
    [
        (1.5, 0.5, r"^p must lie in \[0, 1\]"),
        (0.5, -0.5, r"^q must lie in \[0, 1\]"),
        (0.5, np.nan, r"^q must be finite"),
    ],
)
def test_bernoulli_kl_rejects_probabilities_outside_the_unit_interval(p, q, match):
    with pytest.raises(ValueError, match=match):
        bernoulli_kl(p, q)


def test_success_probability_sums_the_correct_outcomes():
    probs = np.array([[0.5, 0.25, 0.25], [0.125, 0.375, 0.5]])
    assert success_probability(probs, [True, False, True]).tolist() == [0.75, 0.625]
    assert success_probability(probs, [1, 0, 1]).tolist() == [0.75, 0.625]  # 0/1 flags are a mask, not indices
    assert success_probability(probs[1], [False, True, True]) == 0.875  # one distribution
    assert success_probability(np.stack([probs, probs[::-1]]), [True, False, True]).tolist() == [
        [0.75, 0.625],
        [0.625, 0.75],
    ]
    assert success_probability(probs, [False, False, False]).tolist() == [0.0, 0.0]


def test_success_probability_is_at_most_one_for_a_row_just_over_one():
    """A row summing to 1 + 5e-7 passes the check (tolerance 1e-6); its success probability stays 1."""
    assert success_probability(np.array([0.5, 0.5 + 5e-7]), [True, True]) == 1.0


@pytest.mark.parametrize("probs", [np.full(3, 1 / 3), np.full((2, 3), 1 / 3)])
def test_success_probability_refuses_a_mask_of_another_length(probs):
    with pytest.raises(ValueError, match=r"^correct must be a mask of shape \(3,\), got \(2,\)$"):
        success_probability(probs, [True, False])


def test_success_probability_refuses_rows_that_are_not_distributions():
    with pytest.raises(ValueError, match=r"^probs rows must sum to 1"):
        success_probability([0.5, 0.25], [True, False])


def test_metrics_compute_in_double_precision_from_float32_input():
    """float32 values are widened to float64 first: the results match the float64 formulas to 1e-14."""
    p32 = np.float32(0.1)
    p = float(p32)
    assert float(binary_entropy(p32)) == pytest.approx(-p * math.log(p) - (1 - p) * math.log(1 - p), rel=1e-14)
    row32 = np.array([0.1, 0.2, 0.7], dtype=np.float32)
    h = -sum(x * math.log(x) for x in row32.astype(float))
    assert float(entropy(row32)) == pytest.approx(h, rel=1e-14)
    assert np.allclose(entropy(np.stack([row32, row32], axis=1), axis=0), [h, h], rtol=1e-14, atol=0)


def test_input_checks_return_float64_arrays():
    for arr in (check_probabilities("p", [0, 1]), check_distributions("probs", [[1, 0], [0, 1]])):
        assert arr.dtype == np.float64
    assert check_probabilities("p", [0, 1]).tolist() == [0.0, 1.0]


def test_check_distributions_accepts_a_row_exactly_atol_away_from_one():
    """A row is refused only when its sum is more than atol from 1 (0.25 and 0.125 are exact in binary)."""
    assert check_distributions("probs", [0.5, 0.75], atol=0.25).tolist() == [0.5, 0.75]
    with pytest.raises(ValueError, match=r"^probs rows must sum to 1 \(within 0.125\), got a row summing to 1.25$"):
        check_distributions("probs", [0.5, 0.75], atol=0.125)


@pytest.mark.parametrize(
    "rows, worst",
    [
        ([[0.5, 0.5], [0.25, 0.5], [0.75, 0.75]], "1.5"),  # the highest sum
        ([[0.125, 0.5], [0.75, 0.5], [0.5, 0.5]], "0.625"),
    ],
)  # the lowest sum
def test_check_distributions_names_the_row_sum_farthest_from_one(rows, worst):
    with pytest.raises(ValueError, match=rf"^probs rows must sum to 1 \(within 1e-06\), got a row summing to {worst}$"):
        check_distributions("probs", rows)


@pytest.mark.parametrize(
    "probs, match",
    [
        ([[0.5, 0.6], [0.5, 0.5]], r"^probs rows must sum to 1"),
        ([[1.2, -0.2], [0.5, 0.5]], r"^probs must be non-negative"),
        ([[np.nan, 1.0], [0.5, 0.5]], r"^probs must be finite"),
        ([0.5, 0.5], r"\[N, V\]"),
    ],
)
def test_js_rejects_rows_that_are_not_distributions(probs, match):
    with pytest.raises(ValueError, match=match):
        generalized_js(np.array(probs))


@pytest.mark.parametrize(
    "args, match",
    [
        ((5, 2, 6), "k must be <= n"),
        ((5, 6, 2), "c must lie"),
        ((5, -1, 2), "c must be >= 0"),
        ((0, 0, 1), "n must be >= 1"),
        ((5, 2, 0), "k must be >= 1"),
        ((5, 2.5, 1), "c must be an integer"),
    ],
)
def test_pass_at_k_rejects_bad_counts(args, match):
    with pytest.raises(ValueError, match=match):
        pass_at_k(*args)


def test_jssucc_rejects_probabilities_outside_unit_interval():
    with pytest.raises(ValueError, match="p must lie in"):
        jssucc([0.2, 1.5])
    with pytest.raises(ValueError, match="p must be finite"):
        jssucc([0.2, np.nan])


def test_probabilities_below_zero_are_refused_with_their_range():
    with pytest.raises(ValueError, match=r"^p must lie in \[0, 1\], got values in \[-0.25, 0.5\]$"):
        jssucc([-0.25, 0.5])


@pytest.mark.parametrize("p, shape", [([[0.2, 0.4]], "(1, 2)"), ([], "(0,)"), (0.5, "()")])
def test_jssucc_needs_a_1d_array_of_at_least_one_member(p, shape):
    message = f"p must be a 1-D array of member success probabilities, got shape {shape}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        jssucc(p)


@pytest.mark.parametrize("p, shape", [(0.5, "()"), (np.zeros((2, 0)), "(2, 0)")])
def test_jssucc_batch_needs_a_last_axis_of_at_least_one_member(p, shape):
    message = f"p must have shape [..., N] with N >= 1 members, got shape {shape}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        jssucc_batch(p)


def test_jssucc_batch_names_p_in_its_errors():
    with pytest.raises(ValueError, match=r"^p must lie in \[0, 1\]"):
        jssucc_batch([[0.2, 1.5]])


def test_js_finite_when_the_mixture_underflows():
    # 0.5 * 5e-324 rounds to 0: the mixture underflows although every member puts mass there
    tiny = np.array([[5e-324, 1 - 5e-324], [5e-324, 1 - 5e-324]])
    assert generalized_js(tiny) == 0.0
    assert generalized_js(np.array([[5e-324, 1.0], [0.0, 1.0]])) == pytest.approx(0.0, abs=1e-300)
