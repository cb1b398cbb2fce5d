"""theory/checks/lemma1.py: one Monte Carlo item's rule, |measured / predicted - 1| <= z x stderr / predicted +
bias_per_s x s, and its out-of-range note, on estimates written by hand (values chosen where the measured-over-
predicted ratio and its inverse decide differently)."""

import pytest

from escov.theory.checks.lemma1 import CFG, _mc_item
from escov.theory.population import Lemma1Estimate


def estimate(predicted, measured, stderr, sigma=0.1, fisher_trace=2.0):
    return Lemma1Estimate(sigma, 8, fisher_trace, predicted, measured, stderr, 0.0, 0.0, 100)


def test_the_rule_reads_measured_over_predicted():
    assert (CFG.z, CFG.bias_per_s) == (4.0, 2.0)
    # tolerance 4 x 0.15 / 1 + 2 x 0.1 = 0.8: measured / predicted = 0.5 is 0.5 off (holds); its inverse, 2, is 1 off
    assert _mc_item("lemma1/x", estimate(1.0, 0.5, 0.15), "toy", 0.1, "JSpol_N")["holds"] is True
    # measured / predicted = 1.9 is 0.9 off (fails); its inverse, 0.53, would be 0.47 off
    assert _mc_item("lemma1/x", estimate(1.0, 1.9, 0.15), "toy", 0.1, "JSpol_N")["holds"] is False
    # the standard error is relative to the prediction: 4 x 0.3 / 2 + 0 = 0.6 against 0.5 off (holds), 0.7 off fails
    assert _mc_item("lemma1/x", estimate(2.0, 1.0, 0.3), "toy", 0.0, "JSpol_N")["holds"] is True
    assert _mc_item("lemma1/x", estimate(2.0, 3.4, 0.3), "toy", 0.0, "JSpol_N")["holds"] is False


def test_an_item_beyond_the_claimed_range_names_s_and_its_relative_error():
    s = CFG.s_claimed * 2
    item = _mc_item("lemma1/x", estimate(1.0, 1.5, 0.01), "toy", s, "JSpol_N")
    assert item["regime"] == (
        f"s = {s:.3g} > {CFG.s_claimed}: outside the small-s range where Lemma 1 is claimed (relative error +50.0%)"
    )
    assert item["ratio"] == pytest.approx(1.5) and item["s"] == s
    assert "regime" not in _mc_item("lemma1/x", estimate(1.0, 1.5, 0.01), "toy", CFG.s_claimed, "JSpol_N")
