"""The shared decision rules and intervals over seeds (theory/decisions.py), against scipy and a
Monte Carlo of the power line."""
import numpy as np
import pytest
from scipy import stats as st

from theory.decisions import (FAILS, HOLDS, INCONCLUSIVE, detectable, directional, equivalence, over_seeds, ratio,
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
