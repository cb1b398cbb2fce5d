"""theory.standardize, the one z-scoring of every level: its properties as the math states them."""

import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from escov.theory.standardize import standardize

rewards = st.lists(st.integers(-1000, 1000).map(lambda k: k / 100), min_size=2, max_size=40)  # reward-like values


@settings(max_examples=200, deadline=None)
@given(rewards, st.sampled_from([0.0, 1e-8, 1e-4]))
def test_z_is_centred_and_divided_by_population_std_plus_eps(r, eps):
    z = standardize(r, eps)
    if max(r) == min(r):
        assert np.all(z == 0.0)  # an all-equal group: exactly no signal
        return
    mean, std = statistics.fmean(r), statistics.pstdev(r)  # independent of numpy: ddof 0
    np.testing.assert_allclose(z, [(x - mean) / (std + eps) for x in r], rtol=1e-9, atol=1e-9)
    assert abs(float(np.mean(z))) < 1e-9
    assert float(np.std(z)) == pytest.approx(std / (std + eps), rel=1e-9)
    np.testing.assert_allclose(standardize(r, eps, scale=False), [x - mean for x in r], atol=1e-9)


def test_only_exactly_equal_rewards_give_no_signal():
    """A spread of 1e-12 is a spread: z = -1, +1 (eps 0); the zero rule is for rewards exactly equal."""
    np.testing.assert_allclose(standardize([0.0, 1e-12]), [-1.0, 1.0], rtol=1e-6)
    np.testing.assert_array_equal(standardize([0.1 + 0.2, 0.1 + 0.2, 0.1 + 0.2]), [0.0, 0.0, 0.0])


def test_rows_are_groups_and_bad_input_is_an_error():
    z = standardize(np.array([[0.0, 1.0], [0.5, 0.5], [1.0, 3.0]]))
    np.testing.assert_array_equal(z, [[-1.0, 1.0], [0.0, 0.0], [-1.0, 1.0]])
    with pytest.raises(ValueError, match="finite"):
        standardize([1.0, float("nan")])
    with pytest.raises(ValueError, match="eps"):
        standardize([1.0, 2.0], eps=-1.0)
