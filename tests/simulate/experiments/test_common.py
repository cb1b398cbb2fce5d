"""The simulate experiments' shared readings (simulate/experiments/common.py): statistics over seeds by hand, the
t interval's verdict text, and the reduced step counts of quick looks."""

from __future__ import annotations

import math

import pytest

from escov.simulate.experiments.common import interval, scaled, stats


def test_the_statistics_over_seeds_are_the_sample_mean_sd_and_standard_error_with_nans_dropped():
    got = stats([1.0, 2.0, 3.0, float("nan"), 4.0])
    sd = math.sqrt(((1.5**2) * 2 + (0.5**2) * 2) / 3)  # ddof 1 over the 4 finite values
    assert got == pytest.approx({"mean": 2.5, "std": sd, "se": sd / 2, "n": 4})
    assert stats([7.0]) == {"mean": 7.0, "std": 0.0, "se": 0.0, "n": 1}
    assert stats([float("nan")]) == {"mean": None, "std": None, "se": None, "n": 0}


def test_the_interval_is_students_t_over_the_finite_seeds():
    from scipy.stats import t

    got = interval([1.0, 2.0, 3.0, 4.0, float("inf")])
    half = t.ppf(0.975, 3) * math.sqrt(5 / 3) / 2
    assert (got["mean"], got["seeds"]) == (2.5, 4)
    assert (got["lo"], got["hi"]) == pytest.approx((2.5 - half, 2.5 + half))
    nothing = interval([float("nan"), float("inf")])
    assert math.isnan(nothing.pop("mean")) and nothing == {"lo": -math.inf, "hi": math.inf, "seeds": 0}


def test_two_seeds_have_a_standard_deviation_and_integers_are_read_as_numbers():
    assert stats([1, 3]) == pytest.approx({"mean": 2.0, "std": math.sqrt(2), "se": 1.0, "n": 2})
    assert interval([True, False, True])["mean"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    "steps, scale, expected", [(100, 1.0, 100), (100, 0.25, 25), (10, 0.01, 2), (3, 0.5, 2), (7, 2, 14), (7, 10, 70)]
)
def test_a_reduced_run_keeps_at_least_two_steps(steps, scale, expected):
    assert scaled(steps, scale) == expected


@pytest.mark.parametrize("scale", [0, -1, 10.5, "1"])
def test_a_scale_outside_0_to_10_is_refused(scale):
    with pytest.raises(ValueError, match=r"^scale must be a number in \(0, 10\], got "):
        scaled(10, scale)
