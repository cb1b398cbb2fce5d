"""llm/curve.py's rules without a model: which steps a curve measures (the spread, its refinement at a jump above the
resolution, the bounds of its settings, each at its boundary; jumps and resolutions are exact binary fractions, so a
jump equal to the resolution is equal in floating point too) and when a stored point counts as measured alike."""

import pytest

from escov.llm.curve import curve_steps, layout, refinement, same_settings


def test_the_spread_keeps_every_checkpoint_up_to_points_and_refuses_fewer_than_one():
    assert curve_steps([3, 1, 2], 3) == [0, 1, 2, 3]  # as many checkpoints as points: all of them
    assert curve_steps([3, 1, 2, 0], 2) == [0, 1, 3]  # step 0 is the base, never a checkpoint to spread
    assert curve_steps([1, 2, 3, 4, 5], 2) == [0, 1, 5]  # the first and the last
    assert curve_steps([1, 2, 3, 4, 5], 3) == [0, 1, 3, 5]
    assert curve_steps([7], 1) == [0, 7]
    assert curve_steps([], 1) == [0]
    with pytest.raises(ValueError) as err:
        curve_steps([1], 0)
    assert str(err.value) == "points must be >= 1, got 0"


def test_a_jump_equal_to_the_resolution_is_not_refined():
    assert refinement({0: 0.25, 4: 0.5}, [1, 2, 3, 4], 0.25) is None
    assert refinement({0: 0.25, 4: 0.5}, [1, 2, 3, 4], 0.125) == 2
    # the checkpoints strictly inside the segment: its ends are measured already
    assert refinement({0: 0.25, 2: 0.5, 4: 0.5}, [2, 4], 0.125) is None
    assert refinement({0: 0.25, 2: 0.5, 4: 0.5}, [1, 2, 4], 0.125) == 1
    # of two segments with jumps above the resolution, the wider; on equal jumps, the first
    assert refinement({0: 0.0, 2: 0.25, 6: 0.75}, [1, 2, 3, 4, 5, 6], 0.125) == 4
    assert refinement({0: 0.0, 2: 0.5, 6: 0.0}, [1, 2, 3, 4, 5, 6], 0.125) == 1
    assert refinement({0: 0.0, 4: 0.5, 8: 0.0}, [1, 2, 3, 5, 6, 7, 8], 0.125) == 2
    # nearest the middle, and of two equally near the earlier
    assert refinement({0: 0.0, 9: 0.5}, [1, 4, 6, 9], 0.125) == 4
    assert refinement({0: 0.0, 9: 0.5}, [1, 5, 9], 0.125) == 5
    assert refinement({0: 0.0, 10: 0.5}, [1, 4, 6, 10], 0.125) == 4
    assert refinement({0: 0.0, 10: 0.5}, [7, 10], 0.125) == 7


def test_the_layout_measures_the_spread_then_refines_until_max_points():
    pass1 = {0: 0.0, 1: 0.25, 2: 0.5, 3: 0.625, 4: 0.75}
    calls = []

    def at(step):
        calls.append(step)
        return pass1[step]

    assert layout([1, 2, 3, 4], at, points=1, resolution=0.125) == [0, 1, 2, 3, 4]
    assert calls == [0, 4, 2, 1, 3]  # the spread, then 0..4 (jump 0.75: 2), 0..2 (0.5: 1), 2..4 (0.25: 3)
    calls.clear()
    assert layout([1, 2, 3, 4], at, points=1, resolution=0.125, max_points=3) == [0, 2, 4]
    assert layout([1, 2, 3, 4], at, points=3, resolution=0.5, max_points=2) == [0, 1]  # the spread cut at two
    assert layout([1, 2, 3, 4], at, points=1, resolution=0.75) == [0, 4]  # 0.75 is not above 0.75
    assert layout([1, 2, 3, 4], at, points=1, resolution=0.5) == [0, 2, 4]


@pytest.mark.parametrize(
    "setting, message",
    [
        (dict(resolution=0.0), "resolution must be a Pass@1 gap in (0, 1), got 0.0"),
        (dict(resolution=1.0), "resolution must be a Pass@1 gap in (0, 1), got 1.0"),
        (dict(max_points=1), "max_points must be >= 2, got 1"),
    ],
)
def test_the_layouts_settings_are_refused_outside_their_range(setting, message):
    with pytest.raises(ValueError) as err:
        layout([1], lambda s: 0.0, **setting)
    assert str(err.value) == message
    assert layout([1], lambda s: 0.0, resolution=0.999, max_points=2) == [0, 1]
    assert layout([1], lambda s: 0.0, resolution=0.001) == [0, 1]


POINT = {"step": 2, "sampled": {"num_problems": 3, "n": 32, "temperature": 0.6}}


@pytest.mark.parametrize(
    "change, alike",
    [
        ({}, True),
        ({"num_problems": 4}, False),
        ({"n": 33}, False),
        ({"temperature": 0.7}, False),
        ({"split": "validation"}, False),
        ({"split": "test"}, True),
    ],
)
def test_a_stored_point_is_measured_alike_only_when_prompts_samples_temperature_and_split_agree(change, alike):
    point = {"step": 2, "sampled": POINT["sampled"] | {k: v for k, v in change.items() if k != "split"}}
    if "split" in change:
        point["split"] = change["split"]
    assert same_settings(point, 3, 32, 0.6, "test") is alike
    # a validation curve's own points: "split" recorded (a point without one is a test point)
    assert same_settings(point, 3, 32, 0.6, "validation") is (change == {"split": "validation"})
