"""Each claim test applied to intervals on both sides of its boundary, and `combine` on agreeing and
mixed parts (the matched claims are decided by these two)."""

import math

import pytest

from escov.paper_checks.verdict import (
    FAILS,
    HOLDS,
    IDENTITY,
    INCONCLUSIVE,
    MISSING,
    NOT_TESTABLE,
    OUTSIDE_REGIME,
    Verdict,
    decimals,
    fmt_interval,
)
from escov.theory.claims import Test as ClaimTest
from escov.theory.decisions import combine

UP, DOWN = ClaimTest("directional"), ClaimTest("directional", sign=-1)
NO_LOSS = ClaimTest("directional", threshold=-0.02)
KEEP = ClaimTest("equivalence", margin=0.02)
RATIO = ClaimTest("ratio", paper_range=(40.0, 44.0))


@pytest.mark.parametrize(
    "test, lo, hi, status",
    [
        (UP, 0.01, 0.05, HOLDS),
        (UP, -0.05, -0.01, FAILS),
        (UP, -0.01, 0.05, INCONCLUSIVE),
        (UP, 0.0, 0.05, INCONCLUSIVE),
        (DOWN, -0.05, -0.01, HOLDS),
        (DOWN, 0.01, 0.05, FAILS),
        (DOWN, -0.05, 0.01, INCONCLUSIVE),
        (NO_LOSS, -0.015, 0.03, HOLDS),
        (NO_LOSS, -0.06, -0.03, FAILS),
        (NO_LOSS, -0.03, 0.01, INCONCLUSIVE),
        (KEEP, -0.01, 0.015, HOLDS),
        (KEEP, 0.02, 0.05, FAILS),
        (KEEP, -0.05, -0.02, FAILS),
        (KEEP, -0.03, 0.01, INCONCLUSIVE),
        (RATIO, 30.0, 50.0, HOLDS),
        (RATIO, 100.0, 120.0, FAILS),
        (RATIO, 2.0, 19.0, FAILS),
        (RATIO, 10.0, 50.0, INCONCLUSIVE),
        (UP, -math.inf, math.inf, INCONCLUSIVE),
        (ClaimTest("identity"), 0.1, 0.2, IDENTITY),
        (UP, 0.01, math.inf, INCONCLUSIVE),
        (DOWN, -math.inf, -0.01, INCONCLUSIVE),  # one infinite end: no decision either
        (KEEP, -0.01, math.inf, INCONCLUSIVE),
        (RATIO, 30.0, math.inf, INCONCLUSIVE),
    ],
)
def test_decide_on_both_sides_of_each_rule(test, lo, hi, status):
    assert test.decide(lo, hi) == status


@pytest.mark.parametrize(
    "parts, status",
    [
        ([HOLDS, HOLDS], HOLDS),
        ([FAILS, FAILS], FAILS),
        ([INCONCLUSIVE, INCONCLUSIVE], INCONCLUSIVE),
        ([HOLDS, INCONCLUSIVE], INCONCLUSIVE),  # a part that holds beside an undecided one is not a finding
        ([HOLDS, FAILS], FAILS),
        ([INCONCLUSIVE, FAILS], FAILS),
        ([HOLDS, NOT_TESTABLE], INCONCLUSIVE),
        ([HOLDS, MISSING], INCONCLUSIVE),
        ([HOLDS, OUTSIDE_REGIME], INCONCLUSIVE),
        ([HOLDS], HOLDS),
        ([], INCONCLUSIVE),
    ],
)
def test_combine_all_must_hold_any_failure_fails(parts, status):
    assert combine(parts) == status


def test_intervals_print_with_the_digits_that_tell_their_ends_apart():
    assert fmt_interval(0.0100, 0.0072, 0.0127, 1.0, "") == "+0.0100 [+0.0072, +0.0127]"
    assert fmt_interval(0.0354, 0.0103, 0.0605) == "+3.54 pts [+1.03, +6.05]"
    assert decimals(-math.inf, math.inf) == 2 and decimals(0.0, 1e-12) == 6


def test_the_middle_decimal_that_tells_two_close_ends_apart_is_printed():
    # 50.000 and 50.015 points: a width of 0.015 needs three decimals (two would print both ends alike)
    assert fmt_interval(0.5, 0.5, 0.50015) == "+50.000 pts [+50.000, +50.015]"


@pytest.mark.parametrize(
    "lo, hi, digits",
    [
        (0.0, 1.0, 2),
        (0.0, 50.0, 2),  # 1.0 and 50 show two digits anyway: never fewer than 2 decimals
        (0.0, 0.05, 3),
        (0.0, 0.099, 3),  # 0.050, 0.099: the 2nd and 3rd decimals are the width's digits
        (1.0, 1.05, 3),
        (-7.0, -6.95, 3),  # only the width counts, not where the interval lies
        (0.0, 0.00012, 5),  # 0.00012
        (0.0, 1e-9, 6),  # at most 6
        (0.3, 0.3, 2),
        (0.3, 0.2, 2),  # no width: the floor
    ],
)
def test_decimals_show_the_width_with_two_significant_digits(lo, hi, digits):
    assert decimals(lo, hi) == digits


def test_a_verdict_refuses_an_unknown_status_naming_the_allowed_ones():
    with pytest.raises(ValueError, match="status must be one of .*holds.*, got 'maybe'"):
        Verdict("c", "maybe", "")
    assert Verdict("c", HOLDS, "").to_json()["status"] == HOLDS
