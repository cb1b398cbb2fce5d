"""The shared decision rules and intervals over seeds (theory/decisions.py), against scipy and a
Monte Carlo of the power line."""

import itertools

import numpy as np
import pytest
from scipy import stats as st

from escov.theory.decisions import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    combine,
    detectable,
    directional,
    equivalence,
    over_seeds,
    ratio,
    t_p_value,
    t_quantile,
    welch,
)


def test_directional_on_both_sides_touching_and_straddling():
    assert directional(0.01, 0.2) == HOLDS
    assert directional(-0.2, -0.01) == FAILS
    assert directional(-0.01, 0.2) == INCONCLUSIVE
    assert directional(0.0, 0.2) == INCONCLUSIVE  # touching 0 is not "above"
    assert directional(-0.2, 0.0) == INCONCLUSIVE  # nor "below"
    assert directional(-0.2, -0.01, sign=-1) == HOLDS and directional(0.01, 0.2, sign=-1) == FAILS
    with pytest.raises(ValueError, match="sign"):
        directional(0, 1, sign=2)


def test_equivalence_inside_outside_and_across_the_margin():
    m = 0.02
    assert equivalence(-0.01, 0.015, m) == HOLDS
    assert equivalence(-0.03, 0.01, m) == INCONCLUSIVE  # crosses -margin
    assert equivalence(-0.05, 0.05, m) == INCONCLUSIVE  # wider than the margin: never passes
    assert equivalence(0.02, 0.05, m) == FAILS  # at or beyond the end
    assert equivalence(-0.09, -0.03, m) == FAILS
    assert equivalence(-0.02, 0.01, m) == INCONCLUSIVE  # touching the margin is not inside


def test_ratio_against_the_paper_range_within_a_factor():
    assert ratio(35, 50, 40.7, 44.1, 2) == HOLDS
    assert ratio(5, 9, 40.7, 44.1, 2) == FAILS and ratio(90, 120, 40.7, 44.1, 2) == FAILS
    assert ratio(10, 30, 40.7, 44.1, 2) == INCONCLUSIVE
    with pytest.raises(ValueError):
        ratio(0, 10, 40.7, 44.1, 2)


def test_over_seeds_and_welch_equal_scipy():
    x, y = np.array([0.3, 0.5, 0.1, 0.4]), np.array([0.0, 0.2, -0.1])
    iv = over_seeds(x)
    lo, hi = st.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=st.sem(x))
    assert iv["lo"] == pytest.approx(lo) and iv["hi"] == pytest.approx(hi) and iv["df"] == 3
    w = welch(x, y)
    ci = st.ttest_ind(x, y, equal_var=False).confidence_interval(0.95)
    assert w["lo"] == pytest.approx(ci.low) and w["hi"] == pytest.approx(ci.high)
    one = over_seeds([0.4])
    assert one["lo"] == -np.inf and one["hi"] == np.inf and one["seeds"] == 1


@pytest.mark.parametrize("n", [2, 4, 8])
def test_detectable_difference_has_80_percent_power(n):
    """Seeds whose true mean equals the power line of their se: the t test rejects 80% of the time
    (Monte Carlo, and the noncentral t computed here independently)."""
    rng = np.random.default_rng(n)
    sd, df = 1.0, n - 1
    d = detectable(sd / np.sqrt(n), df)
    x = rng.normal(d, sd, (20000, n))
    t = x.mean(1) / (x.std(1, ddof=1) / np.sqrt(n))
    power = np.mean(np.abs(t) > st.t.ppf(0.975, df))
    exact = 1 - st.nct.cdf(st.t.ppf(0.975, df), df, d / (sd / np.sqrt(n)))
    assert abs(power - exact) < 0.02  # the Monte Carlo agrees with the noncentral t
    assert abs(exact - 0.80) < 1e-6 and abs(power - 0.80) < 0.02


# ------------------------------------------------------------------------ the records at every size, each rule's domain


def test_welch_with_fewer_than_two_seeds_on_a_side_is_undecidable_and_with_two_is_an_interval():
    inf = float("inf")
    assert welch([1.0], [0.5, 0.7]) == pytest.approx(
        {"mean": 0.4, "lo": -inf, "hi": inf, "se": inf, "df": 0.0, "seeds": 1, "detectable": inf}
    )
    assert welch([0.5, 0.7], [1.0])["seeds"] == 1 and welch([0.5, 0.7], [1.0])["mean"] == pytest.approx(-0.4)
    empty = welch([], [1.0, 2.0])
    assert np.isnan(empty["mean"]) and empty["seeds"] == 0 and empty["lo"] == -inf
    two = welch([1.0, 2.0], [0.0, 0.5])  # two seeds each: Welch's interval, every field by hand
    va, vb = 0.5 / 2, 0.125 / 2  # sample variances over n
    se, df = np.sqrt(va + vb), (va + vb) ** 2 / (va**2 + vb**2)
    half = st.t.ppf(0.975, df) * se
    assert set(two) == {"mean", "lo", "hi", "se", "df", "seeds", "detectable"}
    assert two == pytest.approx(
        {
            "mean": 1.25,
            "lo": 1.25 - half,
            "hi": 1.25 + half,
            "se": se,
            "df": df,
            "seeds": 2,
            "detectable": detectable(se, df),
        }
    )
    assert 0 < two["detectable"] < inf
    flat = welch([1.0, 1.0], [2.0, 2.0])  # no spread: a point, infinite df
    assert flat["se"] == 0.0 and flat["df"] == inf and flat["lo"] == flat["hi"] == -1.0


def test_each_rule_refuses_what_it_cannot_read_and_accepts_its_edges():
    with pytest.raises(ValueError) as err:
        equivalence(-0.1, 0.1, 0.0)
    assert str(err.value) == "margin must be > 0, got 0.0"
    assert equivalence(-0.1, 0.1, 0.2) == HOLDS
    with pytest.raises(ValueError) as err:
        ratio(1.0, 2.0, 0.0, 1.0, 2.0)
    assert (
        str(err.value)
        == "ratio needs 0 < lo <= hi, 0 < paper_lo <= paper_hi, factor >= 1; got [1.0, 2.0], [0.0, 1.0], 2.0"
    )
    assert (
        ratio(1.0, 1.0, 1.0, 1.0, 1.0) == FAILS
    )  # every edge allowed (lo = hi, paper_lo = paper_hi, factor 1); on the band edge
    assert ratio(1.5, 1.5, 1.0, 1.0, 2.0) == HOLDS
    with pytest.raises(ValueError):
        ratio(1.0, 2.0, 1.0, 1.0, 0.99)


def test_effective_df_is_infinite_at_the_normal_quantile_and_recovers_a_t_quantiles_df():
    from escov.theory.decisions import effective_df

    z = st.norm.ppf(0.975)
    assert effective_df(1.0, z) == float("inf") and effective_df(2.0, 2 * z * (1 + 1e-9)) == float("inf")
    assert effective_df(1.0, z * (1 + 1e-6)) < float("inf")
    assert effective_df(1.0, st.t.ppf(0.975, 5)) == pytest.approx(5.0, rel=1e-6)
    assert effective_df(0.5, 0.5 * st.t.ppf(0.975, 12.5)) == pytest.approx(12.5, rel=1e-6)


def test_over_seeds_refuses_no_finite_value_in_one_line():
    with pytest.raises(ValueError) as err:
        over_seeds([float("nan")])
    assert str(err.value) == "over_seeds needs at least one finite value"


def test_the_detectable_difference_at_its_edges_and_in_the_normal_limit():
    """No spread: 0; no degrees of freedom or an infinite se: infinite; infinite df: the normal power line
    z_{0.975} + z_{0.80} (the lower tail adds about 1e-6 of power there)."""
    from escov.theory.decisions import t_quantile

    inf = float("inf")
    assert detectable(0.0, 5.0) == 0.0 and detectable(1.0, 0.0) == inf and detectable(inf, 5.0) == inf
    assert detectable(0.0, 0.0) == inf and detectable(0.0, 0.5) == 0.0  # no spread: 0 at any df > 0
    assert detectable(1.0, inf) == pytest.approx(st.norm.ppf(0.975) + st.norm.ppf(0.80), rel=1e-5)
    assert detectable(2.0, inf) == pytest.approx(2 * detectable(1.0, inf))
    assert t_quantile(inf, 0.975) == pytest.approx(st.norm.ppf(0.975), rel=1e-15)
    assert t_quantile(4.0, 0.975) == pytest.approx(st.t.ppf(0.975, 4.0), rel=1e-15)


EPS = 1e-9


# ----------------------------------------------------------------------------- combine: all parts hold, any fails


@pytest.mark.parametrize(
    "parts", [p for n in range(1, 4) for p in itertools.product((HOLDS, FAILS, INCONCLUSIVE), repeat=n)]
)
def test_combine_holds_only_when_every_part_holds_and_fails_when_any_part_fails(parts):
    expected = HOLDS if set(parts) == {HOLDS} else FAILS if FAILS in parts else INCONCLUSIVE
    assert combine(list(parts)) == expected
    assert combine(list(reversed(parts))) == expected  # the order of the parts does not matter


def test_combine_of_no_parts_is_inconclusive():
    assert combine([]) == INCONCLUSIVE


# ----------------------------------------------------------------------- each rule at, inside and outside each boundary

M = 0.1


@pytest.mark.parametrize(
    "lo, hi, expected",
    [
        (-M + EPS, M - EPS, HOLDS),  # just inside both margins
        (-M, M - EPS, INCONCLUSIVE),  # at the lower margin
        (-M + EPS, M, INCONCLUSIVE),  # at the upper margin
        (-M - EPS, M - EPS, INCONCLUSIVE),  # just outside below
        (-M + EPS, M + EPS, INCONCLUSIVE),  # just outside above
        (M, M + 1, FAILS),
        (M - EPS, M + 1, INCONCLUSIVE),  # wholly above the margin, at and just inside it
        (-M - 1, -M, FAILS),
        (-M - 1, -M + EPS, INCONCLUSIVE),  # wholly below, at and just inside
        (-M - 1, M + 1, INCONCLUSIVE),  # wider than the band
    ],
)
def test_equivalence_at_each_margin_and_its_mirror(lo, hi, expected):
    assert equivalence(lo, hi, M) == expected
    assert equivalence(-hi, -lo, M) == expected  # the rule is symmetric about 0


@pytest.mark.parametrize(
    "lo, hi, expected",
    [
        (EPS, 1, HOLDS),
        (0, 1, INCONCLUSIVE),
        (-EPS, 1, INCONCLUSIVE),
        (-1, -EPS, FAILS),
        (-1, 0, INCONCLUSIVE),
        (-1, EPS, INCONCLUSIVE),
    ],
)
def test_directional_at_zero_on_both_sides_and_its_mirror(lo, hi, expected):
    assert directional(lo, hi, 1) == expected
    assert directional(-hi, -lo, -1) == expected  # a decrease claimed of -x is an increase claimed of x


@pytest.mark.parametrize(
    "lo, hi, expected",
    [  # paper range [2, 3] within a factor 2: band (1, 6)
        (1 + EPS, 6 - EPS, HOLDS),
        (1, 5, INCONCLUSIVE),
        (2, 6, INCONCLUSIVE),
        (1 - EPS, 5, INCONCLUSIVE),
        (6, 7, FAILS),
        (6 - EPS, 7, INCONCLUSIVE),
        (0.5, 1, FAILS),
        (0.5, 1 + EPS, INCONCLUSIVE),
    ],
)
def test_ratio_at_each_end_of_the_band_and_its_reciprocal(lo, hi, expected):
    assert ratio(lo, hi, 2, 3, 2) == expected
    assert ratio(1 / hi, 1 / lo, 1 / 3, 1 / 2, 2) == expected  # the ratio read the other way round


# ----------------------------------------------------------------------------- over_seeds: its record at every size


def test_over_seeds_records_one_seed_none_and_two_seeds_by_hand():
    inf = float("inf")
    one = over_seeds([0.4, float("nan")])  # a non-finite value is left out
    assert one == {"mean": 0.4, "lo": -inf, "hi": inf, "se": inf, "df": 0.0, "seeds": 1, "detectable": inf}
    with pytest.raises(ValueError, match="at least one finite value"):
        over_seeds([float("nan")])
    two = over_seeds([1, 3])  # mean 2, sample sd sqrt(2), se 1, df 1: t(0.975, 1) = 12.7062047
    assert set(two) == set(one) and two["seeds"] == 2 and two["df"] == 1.0
    assert two["mean"] == 2.0 and two["se"] == pytest.approx(1.0)
    assert (two["lo"], two["hi"]) == pytest.approx((2 - 12.7062047, 2 + 12.7062047))


# ----------------------------------------------------------------------------- the t statistic's p-value


def test_the_t_p_value_of_a_seed_level_interval_is_scipys_one_sample_t_test():
    v = np.array([0.03, -0.01, 0.05, 0.02, 0.04])
    est = over_seeds(v)
    for side, alternative in ((0, "two-sided"), (1, "greater"), (-1, "less")):
        want = st.ttest_1samp(v, 0.0, alternative=alternative).pvalue
        assert t_p_value(est["mean"], est["se"], est["df"], side) == pytest.approx(want, rel=1e-10)


def test_the_p_value_at_an_intervals_end_is_exactly_the_level():
    for df in (3.0, 11.5, float("inf")):
        half = t_quantile(df, 0.975)
        assert t_p_value(half, 1.0, df) == pytest.approx(0.05, abs=1e-12)
        assert t_p_value(half, 1.0, df, 1) == pytest.approx(0.025, abs=1e-12)
        assert t_p_value(half, 1.0, df, -1) == pytest.approx(0.975, abs=1e-12)
    assert t_p_value(0.3, 0.0, 5.0) == 0.0 and t_p_value(0.3, 0.0, 5.0, -1) == 1.0 and t_p_value(0.0, 0.0, 5.0) == 1.0
    assert t_p_value(0.3, float("inf"), 0.0) == 1.0
    with pytest.raises(ValueError, match="side"):
        t_p_value(0.1, 1.0, 3.0, 2)
