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


def test_the_pooled_constant_is_the_inverse_variance_mean_and_holds_within_z_se_plus_the_s_allowance():
    """constant_fit on hand-built items (only names lemma1/sigma|N|fisher with s <= s_constant are pooled):
    c_i = 0.5 measured / predicted, weights 1 / se_i^2; tolerance z c_se + 0.5 bias_per_s max s."""
    from escov.theory.checks.lemma1 import constant_fit

    def item(name, measured, stderr, s):
        return {"name": name, "predicted": 1.0, "measured": measured, "stderr": stderr, "s": s}

    items = [
        item("lemma1/sigma/a", 1.06, 0.001, 0.004),
        item("lemma1/N/b", 1.04, 0.002, 0.002),
        item("lemma1/fisher/c", 9.0, 0.001, CFG.s_constant * 2),  # beyond s_constant: not pooled
        item("lemma1/other/d", 9.0, 0.001, 0.001),  # another check's item: not pooled
    ]
    (fit,) = constant_fit(items)
    w = [1 / 0.0005**2, 1 / 0.001**2]
    c_hat = (w[0] * 0.53 + w[1] * 0.52) / sum(w)
    assert fit["measured"] == pytest.approx(c_hat) and fit["stderr"] == pytest.approx(sum(w) ** -0.5)
    # 0.028 off against 4 x 0.00045 + 0.5 x 2 x 0.004 = 0.0058: the paper's 1/2 does not hold
    assert fit["holds"] is False
    (close,) = constant_fit([item("lemma1/sigma/a", 1.008, 0.001, 0.004)])  # 0.004 off against 0.002 + 0.004
    assert close["holds"] is True
