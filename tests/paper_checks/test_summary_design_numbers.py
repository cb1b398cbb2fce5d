"""The summary's design numbers (paper_checks/summary.py: "the effect it needs" and "seeds to detect it here") on a
hand-worked case: the effect is the published estimate's distance from its test's boundary (threshold or margin),
and the seeds are the fewest n whose detectable difference, from THIS run's variance rescaled to n seeds, reaches
it. The detectable difference is solved here from its definition (two-sided 95% t test, 80% power, noncentral t),
by a fresh root search, not by theory.decisions."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq

from escov.paper_checks import summary
from escov.paper_checks.verdict import INCONCLUSIVE


def _detectable(se: float, df: float) -> float:
    crit = stats.t.ppf(0.975, df)
    power = lambda d: stats.nct.sf(crit, df, d) + np.nan_to_num(stats.nct.cdf(-crit, df, d)) - 0.8  # noqa: E731
    return se * brentq(power, 0.0, crit + 30.0)


def _est(mean: float, se: float, seeds: int) -> dict:
    half = stats.t.ppf(0.975, seeds - 1) * se
    return {
        "mean": mean,
        "lo": mean - half,
        "hi": mean + half,
        "se": se,
        "df": float(seeds - 1),
        "seeds": seeds,
        "prompts": 0,
        "samples": 0,
        "detectable": _detectable(se, seeds - 1),
        "design": f"{seeds} seeds",
    }


def _report(parts: dict[str, dict[str, dict]]) -> dict:
    return {
        "claims": [
            {"id": cid, "levels": {"real": {"status": INCONCLUSIVE, "ours": "x", "note": "", "evidence": evidence}}}
            for cid, evidence in parts.items()
        ]
    }


def _seeds(se: float, seeds: int, effect: float, most: int = 64) -> int | None:
    """The fewest n in 2..most with detectable(se sqrt(S / n), n - 1) <= effect: a seed-level estimate's variance
    is all between seeds, so it falls as 1/n."""
    return next((n for n in range(2, most + 1) if _detectable(se * math.sqrt(seeds / n), n - 1) <= effect), None)


@pytest.mark.parametrize(
    "claim, mean, effect",
    [
        ("matched_passk_above_grpo", -0.015, 0.015),  # directional at 0
        ("no_forgetting", 0.01, 0.03),  # directional at -2 points: 1 - (-2)
        ("no_forgetting", -0.05, 0.03),
        ("thresholded_pass1", 0.005, 0.015),  # equivalence within 2 points: inside the margin by 1.5
        ("thresholded_pass1", -0.005, 0.015),
        ("thresholded_pass1", 0.03, 0.0),  # outside the margin: nothing to detect
    ],
)
def test_the_effect_needed_is_the_distance_to_the_tests_boundary(claim, mean, effect):
    assert summary.effect_needed(claim, "any part", mean) == pytest.approx(effect, abs=1e-15)


def test_the_seeds_needed_come_from_this_runs_variance_and_the_published_effect():
    here = {
        "matched_passk_above_grpo": {summary.KEY_PART: _est(0.005, 0.01, 4)},
        "no_forgetting": {"held-out Pass@1 change": _est(-0.01, 0.008, 3)},
    }
    there = {
        "matched_passk_above_grpo": {summary.KEY_PART: _est(0.03, 0.004, 8)},
        "no_forgetting": {"held-out Pass@1 change": _est(0.012, 0.002, 8)},
    }
    rows = summary.undecided_rows(_report(here), _report(there))
    assert [(r["claim"], r["part"]) for r in rows] == [
        ("matched_passk_above_grpo", summary.KEY_PART),
        ("no_forgetting", "held-out Pass@1 change"),
    ]
    # effects: 3 points above 0; 1.2 - (-2) = 3.2 points above the no-loss threshold
    want = [_seeds(0.01, 4, 0.03), _seeds(0.008, 3, 0.032)]
    assert want == [6, 4]  # e.g. 6 seeds: se 0.01 sqrt(4/6) = 0.0082, times 3.0 (df 5) = 0.0245 <= 0.03; 5: 0.0305
    assert [r["seeds_needed"] for r in rows] == want
    assert _seeds(0.004, 8, 0.03) != want[0]
    assert rows[0]["design"] == "4 seeds" and rows[0]["answer_detectable"].endswith("(8 seeds)")
    # an effect no design reaches within MOST_SEEDS: None, printed "out of reach"
    tiny = _report({"matched_passk_above_grpo": {summary.KEY_PART: _est(0.0001, 0.004, 8)}})
    far = summary.undecided_rows(_report(here), tiny)[0]
    assert _seeds(0.01, 4, 0.0001) is None and far["seeds_needed"] is None
    assert "out of reach" in "\n".join(summary.undecided_markdown(_report(here), tiny))
    # without a published value there is nothing to size a design on
    assert summary.undecided_rows(_report(here), None)[0]["seeds_needed"] == ""


def test_only_the_undecided_parts_are_sized_and_up_to_64_seeds_are_within_reach():
    """A part decided either way (above or below its boundary) is not a row; a design of between 33 and 64 seeds is
    a number, not "out of reach"."""
    from escov.paper_checks.verdict import FAILS, HOLDS

    decided = {"holds": _est(0.05, 0.005, 8), "fails": _est(-0.05, 0.005, 8)}
    claim = "matched_passk_above_grpo"
    assert [summary.part_status(claim, k, e) for k, e in decided.items()] == [HOLDS, FAILS]
    here = _report({claim: {summary.KEY_PART: _est(0.005, 0.01, 4)} | decided})
    published = _report({claim: {summary.KEY_PART: _est(0.008, 0.002, 8)}})
    (row,) = summary.undecided_rows(here, published)
    want = _seeds(0.01, 4, 0.008)
    assert 32 < want <= summary.MOST_SEEDS == 64 and row["seeds_needed"] == want
