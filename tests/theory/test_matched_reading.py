"""theory.matched, the one matched-Pass@1 reading of simulate and paper_checks: the first crossing in
training order (rising, falling, non-monotone curves), the common range, and the support rule, on
hand-computed cases."""

import numpy as np
import pytest

from escov.theory.matched import (
    common_range,
    compared_levels,
    crossing,
    differences_at,
    interior_levels,
    points_in_range,
    read_at,
    supported,
)


def test_rising_curve_interpolates_between_the_neighbouring_points():
    pass1 = np.array([0.1, 0.2, 0.4])
    values = np.array([[0.0, 1.0], [1.0, 3.0], [3.0, 7.0]])
    np.testing.assert_allclose(read_at(pass1, values, 0.3), [2.0, 5.0])  # halfway between points 1 and 2
    np.testing.assert_allclose(read_at(pass1, values, 0.1), [0.0, 1.0])
    assert read_at(pass1, values, 0.5) is None


def test_falling_curve_reads_where_it_comes_down_to_the_level():
    pass1 = np.array([0.5, 0.4, 0.2])
    values = np.array([10.0, 20.0, 40.0])
    assert read_at(pass1, values, 0.3) == pytest.approx(30.0)  # between 0.4 (20) and 0.2 (40), halfway
    assert crossing(pass1, 0.45) == (0, pytest.approx(0.5))


def test_non_monotone_curve_reads_its_first_crossing():
    pass1 = np.array([0.1, 0.3, 0.2, 0.4])
    values = np.array([0.0, 2.0, 100.0, 200.0])
    assert read_at(pass1, values, 0.25) == pytest.approx(1.5)  # first segment 0.1 -> 0.3, not 0.2 -> 0.4
    assert read_at(pass1, values, 0.35) == pytest.approx(175.0)  # only the last segment reaches 0.35


def test_common_range_is_what_every_curve_passes_through():
    # a curve that dips below its start counts its lowest point, not its start
    assert common_range([[0.2, 0.1, 0.5], [0.15, 0.3, 0.4]]) == (0.15, 0.4)
    np.testing.assert_allclose(interior_levels(0.2, 0.4, 3), [0.25, 0.3, 0.35])


def test_support_is_the_width_of_the_segment_read():
    pass1 = np.array([0.10, 0.12, 0.30, 0.33])
    assert supported(pass1, 0.11, resolution=0.05)
    assert not supported(pass1, 0.20, resolution=0.05)  # read across the 18-point gap
    assert supported(pass1, 0.20, resolution=0.20)
    assert supported(pass1, 0.12, resolution=0.01)  # a measured point exactly at the level
    assert not supported(pass1, 0.50)  # never reached
    assert points_in_range(pass1, 0.11, 0.31) == 2


def test_compared_levels_keep_only_levels_every_curve_supports():
    dense = np.linspace(0.1, 0.4, 31)
    sparse = np.array([0.1, 0.13, 0.16, 0.34, 0.36, 0.4])  # an 18-point gap from 0.16 to 0.34
    lo, hi, levels, kept = compared_levels([dense, sparse], resolution=0.05)
    assert (lo, hi) == (0.1, 0.4)
    np.testing.assert_allclose(levels, [0.15, 0.2, 0.25, 0.3, 0.35])
    assert kept.tolist() == [True, False, False, False, True]
    _, _, none, _ = compared_levels([[0.1, 0.2], [0.3, 0.4]])  # no common range
    assert none.size == 0


def test_differences_at_reads_each_curve_at_its_own_crossing():
    a = (np.array([0.1, 0.3]), np.array([1.0, 3.0]))
    b = (np.array([0.3, 0.1]), np.array([5.0, 1.0]))  # falling: at 0.2 it reads 3.0, a reads 2.0
    np.testing.assert_allclose(differences_at([0.2], *a, *b), [-1.0])
    np.testing.assert_allclose(differences_at([0.15, 0.25], *a, *a), [0.0, 0.0])


def test_a_crossing_at_the_ends_of_segments_and_at_single_points():
    from escov.theory.matched import crossing, read_at, supported

    assert crossing([0.3], 0.3) == (0, 0.0) and crossing([0.3], 0.31) is None and crossing([], 0.3) is None
    assert crossing([0.1, 0.3], 0.3) == (0, 1.0)  # the upper end of a rising segment
    assert crossing([0.3, 0.3, 0.5], 0.3) == (0, 0.0)  # a flat segment at the level: its first point
    assert crossing([0.5, 0.25], 0.375) == (0, 0.5) and crossing([0.25, 0.5], 0.4375) == (0, 0.75)  # falling, rising
    assert read_at([0.3], [5.0], 0.3) == 5.0
    assert read_at([0.3, 0.5], [5.0, np.inf], 0.3) == 5.0  # weight 0: the point alone, nothing of the next
    assert supported([0.3, 0.9], 0.3, 0.05)  # a measured point at the level, however wide the segment
    edge = 0.25 + 1e-12  # a segment exactly as wide as the resolution allows
    assert supported([0.0, edge], 0.1, 0.25) and not supported([0.0, 0.2501], 0.1, 0.25)


def test_curves_meeting_at_one_point_compare_no_level_and_the_level_count_is_kept():
    lo, hi, levels, kept = compared_levels([[0.1, 0.3], [0.3, 0.5]])  # a common range of one point
    assert (lo, hi, levels.size, kept.size) == (0.3, 0.3, 0, 0)
    lo, hi, levels, kept = compared_levels([[0.1, 0.2, 0.3], [0.1, 0.2, 0.3]], resolution=0.5, count=3)
    assert levels.size == kept.size == 3 and kept.all() and kept.dtype == bool
