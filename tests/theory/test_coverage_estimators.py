"""theory/coverage.py against enumeration over subsets, exact rationals and hand-worked curves."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import entropy as scipy_entropy

from escov.theory.coverage import (
    answer_entropy,
    cover_at_tau,
    crossing_k,
    distinct_correct,
    k_grid,
    pass_at_k_table,
    percentile_interval,
    problem_bootstrap_indices,
    solvability,
)


def brute_pass_at_k(flags: list[int], k: int) -> float:
    """The share of the k-subsets of the samples that hold a correct one."""
    subsets = list(itertools.combinations(flags, k))
    return sum(any(s) for s in subsets) / len(subsets)


def test_k_grid_is_the_powers_of_two_then_n():
    assert k_grid(1) == [1]
    assert k_grid(64) == [1, 2, 4, 8, 16, 32, 64]
    assert k_grid(100) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert k_grid(1024)[-2:] == [512, 1024]
    for bad in (0, -3, 2.0, True):
        with pytest.raises(ValueError, match=rf"^n must be a positive integer, got {bad!r}$"):
            k_grid(bad)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_equals_enumeration_over_subsets(n):
    rng = np.random.default_rng(n)
    for c in range(n + 1):
        flags = [1] * c + [0] * (n - c)
        rng.shuffle(flags)
        table = pass_at_k_table(np.array([c]), n, range(1, n + 1))[0]
        for k in range(1, n + 1):
            assert table[k - 1] == pytest.approx(brute_pass_at_k(flags, k), abs=1e-9)


def test_pass_at_k_at_thousands_of_samples_equals_the_exact_rational():
    n = 2048
    counts = np.array([0, 1, 2, 7, 100, 1024, 2000, 2047, 2048])
    ks = [1, 2, 16, 256, 1024, 2047, 2048]
    table = pass_at_k_table(counts, n, ks)
    for i, c in enumerate(counts):
        for j, k in enumerate(ks):
            exact = 1 - Fraction(math.comb(n - int(c), k), math.comb(n, k))
            assert table[i, j] == pytest.approx(float(exact), abs=1e-9)


def test_verl_one_correct_of_four_reads_pass_at_4_one():
    """The case of verl's open unbiased Pass@k pull request: best@4 and Pass@4 of 1 correct in 4 are 1."""
    row = pass_at_k_table(np.array([1]), 4, [1, 2, 4])[0]
    assert row[2] == 1.0
    assert row[0] == pytest.approx(0.25) and row[1] == pytest.approx(0.5)


def test_pass_at_k_table_keeps_leading_axes():
    counts = np.array([[0, 3], [4, 1]])
    out = pass_at_k_table(counts, 4, [1, 4])
    assert out.shape == (2, 2, 2)
    assert out[1, 0, 0] == 1.0 and out[0, 1, 0] == pytest.approx(0.75)


def test_cover_at_tau_counts_prompts_at_or_above_the_fraction():
    n = 10
    for tau in (0.1, 0.3, 0.5, 0.7, 1.0):
        got = cover_at_tau(np.arange(n + 1), n, tau)
        want = [float(Fraction(c, n) >= Fraction(str(tau))) for c in range(n + 1)]
        assert got.tolist() == want
    for bad in (0.0, 1.5, -0.2):
        with pytest.raises(ValueError, match=rf"^tau must lie in \(0, 1\], got {bad}$"):
            cover_at_tau([1], 4, bad)
    assert cover_at_tau([4, 3], 4, 1.0).tolist() == [1.0, 0.0]


def test_crossing_interpolates_on_log2_k():
    ks = [1, 2, 4, 8, 16]
    model = np.array([0.5, 0.6, 0.7, 0.75, 0.8])
    reference = np.array([0.2, 0.4, 0.6, 0.9, 0.95])  # d = -0.3, -0.2, -0.1, +0.15, +0.15
    # the line through (2, -0.1) and (3, 0.15) is 0 at log2 k = 2 + 0.1 / 0.25 = 2.4
    assert crossing_k(ks, model, reference, interpolate=True) == pytest.approx(2**2.4)
    assert crossing_k(ks, model, reference) == 8.0  # the first evaluated budget where the reference leads


def test_crossing_edge_cases():
    ks = [1, 2, 4]
    assert np.isnan(crossing_k(ks, [0.5, 0.7, 1.0], [0.2, 0.4, 1.0]))  # both reach 1: a tie, no crossing
    assert np.isnan(crossing_k(ks, [0.5, 0.7, 1.0], [0.2, 0.4, 1.0], interpolate=True))
    for interpolate in (False, True):  # the reference leads from k = 1
        assert crossing_k(ks, [0.1, 0.2, 0.3], [0.2, 0.3, 0.4], interpolate=interpolate) == 1.0
    assert crossing_k(ks, [0.5, 0.6, 0.7], [0.4, 0.6, 0.8], interpolate=True) == 2.0  # d = 0 at k = 2, > 0 at 4
    assert crossing_k(ks, [0.5, 0.6, 0.7], [0.4, 0.6, 0.8]) == 4.0  # ... first leads at 4
    assert crossing_k(ks, [0.5, 0.6, 0.5], [0.4, 0.5, 0.6], interpolate=True) == pytest.approx(2**1.5)
    assert crossing_k(ks, [0.5, 0.6, 0.5], [0.4, 0.5, 0.6]) == 4.0  # d: -0.1, -0.1, +0.1
    # the reference leads from the first budget: k* = 1 whatever that budget is
    assert crossing_k([2, 4], [0.1, 0.2], [0.2, 0.3], interpolate=True) == 1.0
    # the reference first leads at the second budget: the line through (0, -0.1) and (1, +0.1) is 0 at log2 k = 0.5
    assert crossing_k(ks, [0.5, 0.5, 0.5], [0.4, 0.6, 0.7], interpolate=True) == pytest.approx(2**0.5)
    assert crossing_k(ks, [0.5, 0.5, 0.5], [0.45, 0.8, 0.9], interpolate=True) == pytest.approx(2 ** (0.05 / 0.35))


def test_crossing_is_vectorized_over_replicates():
    ks = [1, 2, 4, 8]
    model = np.array([[0.5, 0.6, 0.7, 0.8], [0.5, 0.6, 0.7, 0.8]])
    reference = np.array([[0.2, 0.4, 0.6, 0.9], [0.1, 0.2, 0.3, 0.4]])
    got = crossing_k(ks, model, reference, interpolate=True)
    assert got[0] == pytest.approx(2 ** (2 + 0.1 / 0.2)) and np.isnan(got[1])
    got = crossing_k(ks, model, reference)
    assert got[0] == 8.0 and np.isnan(got[1])


def test_solvability_equals_set_algebra():
    rng = np.random.default_rng(3)
    m, r = rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    got = solvability(m, r)
    solved_m, solved_r = {i for i in range(200) if m[i]}, {i for i in range(200) if r[i]}
    p, e, s = len(solved_m & solved_r), len(solved_m - solved_r), len(solved_r - solved_m)
    assert (got["preserved"], got["gained"], got["lost"]) == (p, e, s)
    assert got["neither"] == 200 - len(solved_m | solved_r)
    assert got["srr"] == pytest.approx(p / (p + s)) and got["ndr"] == pytest.approx(e / (p + e))
    assert got["nscr"] == pytest.approx((e - s) / (p + e + s))
    empty = solvability([0, 0], [0, 0])
    assert empty["srr"] is None and empty["ndr"] is None and empty["nscr"] is None


def test_answer_entropy_and_distinct_correct():
    answers = ["a", "a", "b", None, "c", "a"]
    assert answer_entropy(answers) == pytest.approx(scipy_entropy([3, 1, 1]))
    assert answer_entropy([None, None]) == 0.0
    assert distinct_correct(answers, [1, 1, 0, 1, 1, 0]) == 2  # "a" and "c"; None is not a solution
    with pytest.raises(ValueError):
        distinct_correct(["a"], [1, 0])


def test_bootstrap_indices_and_percentiles():
    idx = problem_bootstrap_indices(7, 5000, seed=0)
    assert idx.shape == (5000, 7) and idx.min() == 0 and idx.max() == 6
    assert np.array_equal(idx, problem_bootstrap_indices(7, 5000, seed=0))
    lo, hi = percentile_interval(np.arange(1001), 0.95)
    assert (lo, hi) == pytest.approx((25.0, 975.0))


def test_maj_at_ks_is_maj_at_k_draw_for_draw_and_the_full_vote_at_n():
    from escov.theory.metrics import maj_at_k, maj_at_ks

    rng = np.random.default_rng(5)
    answers = [None if a == 4 else int(a) for a in rng.integers(0, 5, 24)]
    correct = [a == 1 for a in answers]
    ks = [1, 2, 4, 8, 16, 24]
    got = maj_at_ks(answers, correct, ks, n_subsets=32, seed=3)
    assert got.tolist() == [maj_at_k(answers, correct, k, n_subsets=32, seed=3) for k in ks]
    votes = [answers.count(a) for a in range(4)]  # k = n: the plain majority over all 24 samples
    winners = [a for a in range(4) if votes[a] == max(votes)]
    assert got[-1] == sum(a == 1 for a in winners) / len(winners)


def test_the_percentile_interval_is_95_percent_unless_asked():
    assert percentile_interval(np.arange(101.0)) == pytest.approx((2.5, 97.5))
    assert percentile_interval(np.arange(101.0), 0.5) == pytest.approx((25.0, 75.0))
