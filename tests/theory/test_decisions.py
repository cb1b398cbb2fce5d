"""The shared decision rules and intervals over seeds (theory/decisions.py), against scipy and a
Monte Carlo of the power line."""
import numpy as np
import pytest
from scipy import stats as st

from escov.theory.decisions import (FAILS, HOLDS, INCONCLUSIVE, detectable, directional, equivalence, over_seeds, ratio,
                              welch)


def test_directional_on_both_sides_touching_and_straddling():
    assert directional(0.01, 0.2) == HOLDS
    assert directional(-0.2, -0.01) == FAILS
    assert directional(-0.01, 0.2) == INCONCLUSIVE
    assert directional(0.0, 0.2) == INCONCLUSIVE   # touching 0 is not "above"
    assert directional(-0.2, 0.0) == INCONCLUSIVE  # nor "below"
    assert directional(-0.2, -0.01, sign=-1) == HOLDS and directional(0.01, 0.2, sign=-1) == FAILS
    with pytest.raises(ValueError, match="sign"):
        directional(0, 1, sign=2)


def test_equivalence_inside_outside_and_across_the_margin():
    m = 0.02
    assert equivalence(-0.01, 0.015, m) == HOLDS
    assert equivalence(-0.03, 0.01, m) == INCONCLUSIVE   # crosses -margin
    assert equivalence(-0.05, 0.05, m) == INCONCLUSIVE   # wider than the margin: never passes
    assert equivalence(0.02, 0.05, m) == FAILS            # at or beyond the end
    assert equivalence(-0.09, -0.03, m) == FAILS
    assert equivalence(-0.02, 0.01, m) == INCONCLUSIVE   # touching the margin is not inside


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
    assert abs(power - exact) < 0.02      # the Monte Carlo agrees with the noncentral t
    assert abs(exact - 0.80) < 1e-6 and abs(power - 0.80) < 0.02


# ----------------------------------------------------------------------------- the records at every size, each rule's domain

def test_welch_with_fewer_than_two_seeds_on_a_side_is_undecidable_and_with_two_is_an_interval():
    inf = float("inf")
    assert welch([1.0], [0.5, 0.7]) == pytest.approx({"mean": 0.4, "lo": -inf, "hi": inf, "se": inf, "df": 0.0, "seeds": 1,
                                                      "detectable": inf})
    assert welch([0.5, 0.7], [1.0])["seeds"] == 1 and welch([0.5, 0.7], [1.0])["mean"] == pytest.approx(-0.4)
    empty = welch([], [1.0, 2.0])
    assert np.isnan(empty["mean"]) and empty["seeds"] == 0 and empty["lo"] == -inf
    two = welch([1.0, 2.0], [0.0, 0.5])  # two seeds each: Welch's interval, every field by hand
    va, vb = 0.5 / 2, 0.125 / 2          # sample variances over n
    se, df = np.sqrt(va + vb), (va + vb) ** 2 / (va ** 2 + vb ** 2)
    half = st.t.ppf(0.975, df) * se
    assert set(two) == {"mean", "lo", "hi", "se", "df", "seeds", "detectable"}
    assert two == pytest.approx({"mean": 1.25, "lo": 1.25 - half, "hi": 1.25 + half, "se": se, "df": df, "seeds": 2,
                                 "detectable": detectable(se, df)})
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
    assert str(err.value) == "ratio needs 0 < lo <= hi, 0 < paper_lo <= paper_hi, factor >= 1; got [1.0, 2.0], [0.0, 1.0], 2.0"
    assert ratio(1.0, 1.0, 1.0, 1.0, 1.0) == FAILS  # every edge allowed (lo = hi, paper_lo = paper_hi, factor 1); on the band edge
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
