"""The coverage measurement's readings (paper_checks/coverage/measure.py) on inputs designed so that each value is
known by hand: the crossing's percentile interval with replicates that never cross counted as infinity, solvability
averaged over seed pairs with an undefined rate left out, answer measures averaged over seeds, the budgets it takes."""

from __future__ import annotations

import numpy as np
import pytest

from escov.paper_checks.coverage.measure import MeasureOptions, _crossing, _solvability, check_ks, measure
from escov.paper_checks.coverage.table import Coverage, InputError, ModelCounts

KS = [1, 2, 4]
# two prompts: on A the reference overtakes the model at k = 2; on B it never does (the model is far ahead)
MODEL = np.array([[0.5, 0.5, 0.5], [0.9, 1.0, 1.0]])
REFERENCE = np.array([[0.4, 0.9, 1.0], [0.0, 0.0, 0.0]])


def _weights(rows: list[list[int]]) -> np.ndarray:
    return np.array(rows, dtype=float)


@pytest.mark.parametrize("never", [1, 2])
def test_replicates_that_never_cross_count_as_infinity_in_the_crossings_interval(never):
    """40 replicates: the rest draw prompt A twice (k* = 2), `never` draw B twice (no crossing). The 97.5% quantile
    (inverted CDF) of 40 values is the 39th smallest: 2 with one infinity, infinity (hi null) with two."""
    weights = _weights([[2, 0]] * (40 - never) + [[0, 2]] * never)
    out = _crossing(KS, MODEL, REFERENCE, weights, 0.95)
    assert out["no_crossing_share"] == never / 40 and out["lo"] == 2.0
    assert out["hi"] == (2.0 if never == 1 else None)
    # the point estimate on both prompts: reference mean (0.2, 0.45, 0.5) vs model (0.7, 0.75, 0.75): none
    assert out["k_star"] is None and out["k_star_interpolated"] is None


def test_solvability_averages_each_figure_over_seed_pairs_leaving_out_a_rate_a_pair_cannot_define():
    model = np.array([[1, 0, 2], [0, 0, 3]])  # seeds x prompts
    reference = np.array([[0, 0, 0], [4, 0, 1]])  # reference seed 0 solves nothing: SRR undefined against it
    out = _solvability(model, reference)
    # pairs (m0, r0): P 0 E 2 S 0; (m0, r1): P 2 E 0 S 0; (m1, r0): P 0 E 1 S 0; (m1, r1): P 1 E 0 S 1
    assert out["preserved"] == pytest.approx(3 / 4) and out["gained"] == pytest.approx(3 / 4)
    assert out["lost"] == pytest.approx(1 / 4) and out["neither"] == pytest.approx((1 + 1 + 2 + 1) / 4)
    assert out["srr"] == pytest.approx((1.0 + 0.5) / 2)  # P / (P + S) of the two pairs against r1
    assert out["ndr"] == pytest.approx((1.0 + 0.0 + 1.0 + 0.0) / 4)


def test_a_models_answer_measures_are_averaged_over_its_seeds():
    """distinct correct solutions per prompt: seed 0 finds 2 and 0, seed 1 finds 1 and 1: means 1.5 and 0.5."""
    answers = [
        [
            (["a", "b", "a", None], [True, True, True, False], ["a", "b", "a", None]),
            (["x"] * 4, [False] * 4, ["x"] * 4),
        ],
        [(["a", "c", "c", "c"], [True, False, False, False], ["a", "c", "c", "c"]), (["y"] * 4, [True] * 4, ["y"] * 4)],
    ]
    counts = np.array([[3, 0], [1, 4]])
    models = {
        "m": ModelCounts("m", 4, ["p0", "p1"], counts, seeds=[0, 1], answers=answers),
        "ref": ModelCounts("ref", 4, ["p0", "p1"], np.array([[1, 1]]), seeds=[0]),
    }
    report = measure(Coverage("designed", models).checked(), MeasureOptions(reference="ref", replicates=10))
    assert report["models"]["m"]["distinct_correct"]["mean"] == pytest.approx((1.5 + 0.5) / 2)
    # answer entropy (nats) per prompt, seeds averaged: p0 {a:2, b:1} then {a:1, c:3}; p1 one answer each seed
    h = lambda *c: float(-sum(x / sum(c) * np.log(x / sum(c)) for x in c))  # noqa: E731
    assert report["models"]["m"]["answer_entropy"]["mean"] == pytest.approx(((h(2, 1) + h(1, 3)) / 2 + 0.0) / 2)


def test_the_budgets_run_from_1_to_n_inclusive():
    assert check_ks([4, 1, 2, 4], 4, "src") == [1, 2, 4]
    with pytest.raises(InputError, match=r"^src: every prompt has 4 samples, fewer than k=5 \(--k\)"):
        check_ks([1, 5], 4, "src")
    with pytest.raises(InputError, match=r"^--k: expected budgets >= 1, got 0$"):
        check_ks([0, 2], 4, "src")
