"""theory/checks/result.py: one check's item as `python -m escov.theory --json` prints it, from values given by hand."""

import json
import math

import numpy as np
import pytest

from escov.theory.checks.result import check_result, counts


def test_the_verdict_is_the_one_given_even_when_the_values_agree():
    """A strict comparison (distinct members beat the mixture) fails on equal values: holds stays False."""
    item = check_result("lemma2/k_of_n/distinct_beats_same/K=2", 0.5, 0.5, False)
    assert item["holds"] is False and item["ratio"] == 1.0 and counts(item)


def test_the_ratio_is_measured_over_predicted_for_any_nonzero_prediction():
    assert check_result("metrics/x", -2.0, 1.0, True)["ratio"] == -0.5
    assert check_result("metrics/x", 0.0, 1.0, True)["ratio"] is None
    assert check_result("metrics/x", 2.0, 1.0, True, ratio=0.25)["ratio"] == 0.25  # given: kept


def test_non_finite_values_are_null_and_numpy_values_plain():
    item = check_result("lemma1/x", np.float64(2.0), math.nan, np.bool_(True), stderr=math.inf, n=np.int64(3))
    assert item == {
        "name": "lemma1/x",
        "predicted": 2.0,
        "measured": None,
        "ratio": None,
        "holds": True,
        "stderr": None,
        "n": 3,
    }
    assert type(item["n"]) is int
    json.dumps(item, allow_nan=False)


def test_a_regime_item_never_counts_and_a_bad_name_is_refused():
    assert not counts(check_result("lemma1/x", 1.0, 2.0, False, regime="sigma large"))
    with pytest.raises(ValueError, match="name must start with one of"):
        check_result("lemma9/x", 1.0, 1.0, True)
    with pytest.raises(ValueError, match="and a slash"):
        check_result("lemma1", 1.0, 1.0, True)
