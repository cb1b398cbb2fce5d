"""simulate's comparison along the whole common Pass@1 range, on trajectories whose answer is known."""

from types import SimpleNamespace

import numpy as np

from escov.simulate.experiments.common import matched_along


def _run(pass1: np.ndarray, metric: np.ndarray):
    return SimpleNamespace(policy={"pass@1": pass1, "pass@32": metric})


def test_difference_is_the_known_offset_over_the_common_range():
    t = np.linspace(0, 1, 11)[:, None]
    a_p1 = 0.2 + 0.3 * t * np.ones((1, 2))  # reaches 0.5
    b_p1 = 0.2 + 0.2 * t * np.ones((1, 2))  # reaches 0.4: the common range is [0.2, 0.4]
    a = _run(a_p1, 1 - (1 - a_p1) ** 2 + 0.1)  # a's metric: a concave function of Pass@1, plus 0.1
    b = _run(b_p1, 1 - (1 - b_p1) ** 2)
    lo, hi, diff = matched_along(a, b, "pass@32")
    np.testing.assert_allclose(lo, 0.2)
    np.testing.assert_allclose(hi, 0.4)
    np.testing.assert_allclose(diff, 0.1, atol=2e-3)  # linear interpolation of a smooth curve: small error
    _, _, reverse = matched_along(b, a, "pass@32")
    np.testing.assert_allclose(reverse, -diff)


def test_a_seed_without_a_common_range_is_nan():
    t = np.linspace(0, 1, 5)[:, None]
    a = _run(np.hstack([0.2 + 0.2 * t, 0.5 + 0.1 * t]), np.zeros((5, 2)))
    b = _run(np.hstack([0.2 + 0.1 * t, 0.2 + 0.1 * t]), np.zeros((5, 2)))  # seed 1: b never reaches a's start
    _, _, diff = matched_along(a, b, "pass@32")
    assert diff[0] == 0.0 and np.isnan(diff[1])
