"""The summary's "seeds to detect it here" (paper_checks/summary.py undecided_rows) for a seeds x prompts estimate,
worked by hand: this run's variance split into its seed part v_s (falls as 1/n with n seeds) and its prompt part v_p
(kept: the same prompts), the half-width at n seeds hypot(t_{n-1} sqrt(v_s S / n), t_{P-1} sqrt(v_p)), the df whose
t quantile turns se_n into that half-width, and the detectable difference of a two-sided 95% t test at 80% power
(noncentral t). Every step is solved here from scipy's distributions by its own root search."""

import math

import pytest
from scipy import stats
from scipy.optimize import brentq

from escov.paper_checks import summary
from escov.paper_checks.verdict import INCONCLUSIVE
from tests.paper_checks.test_summary_design_numbers import _detectable, _est, _report

SEEDS, PROMPTS = 4, 20


def _df_for(se: float, half: float) -> float:
    """The df whose 97.5% t quantile is half / se (infinite at or below the normal's)."""
    if half / se <= stats.norm.ppf(0.975) * (1 + 1e-9):
        return math.inf
    return brentq(lambda df: stats.t.ppf(0.975, df) - half / se, 1e-3, 1e7)


def _detectable_any(se: float, df: float) -> float:
    if math.isinf(df):
        return se * brentq(lambda d: stats.norm.sf(1.959964 - d) + stats.norm.cdf(-1.959964 - d) - 0.8, 0, 40)
    return _detectable(se, df)


def _grid_est(mean: float, v_s: float, v_p: float, with_split: bool = True) -> dict:
    """An estimate as seeds_by_prompts writes it (SEEDS x PROMPTS), from its two variance parts."""
    half = math.hypot(stats.t.ppf(0.975, SEEDS - 1) * math.sqrt(v_s), stats.t.ppf(0.975, PROMPTS - 1) * math.sqrt(v_p))
    se = math.sqrt(v_s + v_p)
    df = _df_for(se, half)
    return {
        "mean": mean,
        "lo": mean - half,
        "hi": mean + half,
        "se": se,
        "df": df,
        "seeds": SEEDS,
        "prompts": PROMPTS,
        "samples": 32,
        "detectable": _detectable_any(se, df),
        "design": f"{SEEDS} seeds x {PROMPTS} prompts",
    } | ({"v_seeds": v_s} if with_split else {})


def _seeds_needed(v_s: float, v_p: float, effect: float, most: int = 64) -> int | None:
    for n in range(2, most + 1):
        v_n = v_s * SEEDS / n
        se = math.sqrt(v_n + v_p)
        half = math.hypot(stats.t.ppf(0.975, n - 1) * math.sqrt(v_n), stats.t.ppf(0.975, PROMPTS - 1) * math.sqrt(v_p))
        if _detectable_any(se, _df_for(se, half)) <= effect:
            return n
    return None


KEY = "matched_passk_above_grpo"


@pytest.mark.parametrize("with_split", [True, False], ids=["v_seeds recorded", "split from the half-width"])
def test_the_seeds_needed_at_these_prompts_shrink_only_the_seed_part(with_split):
    """v_s = 1e-4 (sd 1 point over 4 seeds' means), v_p = 1e-5; the published effect 3.01 points above 0."""
    v_s, v_p = 1e-4, 1e-5
    here = _report({KEY: {summary.KEY_PART: _grid_est(0.004, v_s, v_p, with_split)}})
    there = _report({KEY: {summary.KEY_PART: _est(0.0301, 0.004, 8)}})
    want = _seeds_needed(v_s, v_p, 0.0301)
    # by hand: at 6 seeds se_n = sqrt(1e-4 x 4/6 + 1e-5) = 0.876 points, half-width on t_5 and t_19 gives df 5.4,
    # detectable 3.017 points > 3.01; at 7 seeds 2.71 points: 7. Were the prompt part to fall with seeds too,
    # 6 seeds would do (3.009 points)
    assert want == 7 and _seeds_needed(v_s + v_p, 0.0, 0.0301) == 6
    row = summary.undecided_rows(here, there)[0]
    assert row["seeds_needed"] == want
    assert row["design"] == "4 seeds x 20 prompts"
    # at 2.5 points: 8 seeds; a split that put more of the variance on the prompts would find none within 64
    there = _report({KEY: {summary.KEY_PART: _est(0.025, 0.004, 8)}})
    assert summary.undecided_rows(here, there)[0]["seeds_needed"] == _seeds_needed(v_s, v_p, 0.025) == 8
    assert _seeds_needed(0.4 * v_s, v_p + 0.6 * v_s, 0.025) is None


def test_a_prompt_part_larger_than_the_effect_allows_is_out_of_reach_at_any_seed_count():
    """v_p alone gives se 1.2 points: no number of seeds brings the detectable difference (about 2.8 se) to 3
    points, though 64 seeds would if the whole variance fell with seeds."""
    v_s, v_p = 4e-5, 1.44e-4
    assert _detectable_any(math.sqrt(v_p), math.inf) > 0.03
    assert _seeds_needed(v_s + v_p, 0.0, 0.03) is not None  # all of it between seeds: reachable
    here = _report({KEY: {summary.KEY_PART: _grid_est(0.004, v_s, v_p)}})
    there = _report({KEY: {summary.KEY_PART: _est(0.03, 0.004, 8)}})
    row = summary.undecided_rows(here, there)[0]
    assert _seeds_needed(v_s, v_p, 0.03) is None and row["seeds_needed"] is None


def test_only_the_undecided_parts_of_an_inconclusive_claim_get_a_row():
    """A part whose own interval decides (here wholly above 0: holds) is no row; an undecided one is."""
    decided = _grid_est(0.05, 1e-5, 1e-6)
    assert decided["lo"] > 0
    parts = {summary.KEY_PART: _grid_est(0.004, 1e-4, 1e-5), "ES - GRPO @8 at matched Pass@1": decided}
    rows = summary.undecided_rows(_report({KEY: parts}), None)
    assert [r["part"] for r in rows] == [summary.KEY_PART]
    assert rows[0]["answer"] == "" and rows[0]["seeds_needed"] == ""
    # a decided claim has no rows at all
    report = _report({KEY: parts})
    report["claims"][0]["levels"]["real"]["status"] = "holds"
    assert summary.undecided_rows(report, None) == []


def test_the_rows_figures_are_this_runs_estimate_and_detectable_difference_in_points():
    est = _grid_est(0.004, 1e-4, 1e-5)
    row = summary.undecided_rows(_report({KEY: {summary.KEY_PART: est}}), _report({KEY: {summary.KEY_PART: est}}))[0]
    lo, hi = 100 * est["lo"], 100 * est["hi"]
    assert (
        row["here"].startswith(f"{100 * est['mean']:+.2f}")
        and f"{lo:+.2f}" in row["here"]
        and f"{hi:+.2f}" in row["here"]
    )
    assert row["detectable"].startswith(f"{100 * est['detectable']:.3g}")
    assert row["answer"].endswith(f", {INCONCLUSIVE}")


def test_a_part_with_its_own_test_needs_the_distance_to_that_tests_boundary():
    """entropy_collapse's "ES entropy change" part is an equivalence within its own margin (the claim's test is
    GRPO's entropy fall, directional): the effect is the margin minus |mean|, not the distance to the fall's
    threshold."""
    from escov.theory.claims import BY_ID, ENTROPY_KEEP_MARGIN

    fall = BY_ID["entropy_collapse"].test
    assert fall.kind != "equivalence"
    mean = ENTROPY_KEEP_MARGIN / 4
    assert summary.effect_needed("entropy_collapse", "ES entropy change", mean) == pytest.approx(
        0.75 * ENTROPY_KEEP_MARGIN
    )
    assert summary.effect_needed("entropy_collapse", "ES entropy change", -mean) == pytest.approx(
        0.75 * ENTROPY_KEEP_MARGIN
    )
    assert summary.effect_needed("entropy_collapse", "GRPO entropy fall (-change)", mean) == pytest.approx(
        abs(mean - fall.threshold)
    )


def test_an_undecided_claim_without_an_estimate_gets_a_row_with_its_reason_after_a_decided_claim():
    """Claims in report order: a decided claim first (no row, and the claims after it are still read), then an
    inconclusive one with no interval to size a design on (its note, else its text, as the reason), then one with."""
    report = _report(
        {"no_forgetting": {}, "thresholded_pass1": {}, KEY: {summary.KEY_PART: _grid_est(0.004, 1e-4, 1e-5)}}
    )
    report["claims"][0]["levels"]["real"]["status"] = "holds"
    report["claims"][1]["levels"]["real"] |= {"note": "no common Pass@1 range", "ours": "not compared"}
    rows = summary.undecided_rows(report, None)
    assert rows[0] == {
        "claim": "thresholded_pass1",
        "part": "no estimate",
        "here": "no common Pass@1 range",
        "design": "",
        "detectable": "",
        "answer": "",
        "answer_detectable": "",
        "seeds_needed": "",
    }
    assert [(r["claim"], r["part"]) for r in rows[1:]] == [(KEY, summary.KEY_PART)]
    report["claims"][1]["levels"]["real"]["note"] = ""
    assert summary.undecided_rows(report, None)[0]["here"] == "not compared"


def test_each_part_is_decided_by_its_own_test_and_a_decided_part_first_does_not_end_the_claim():
    """entropy_collapse: "ES entropy change" is an equivalence within +-10%, so [-5%, +5%] holds there (the claim's
    own test, the directional fall, would call it undecided) and gets no row; the fall part after it does."""
    inside = _grid_est(0.0, 1e-4, 1e-5) | {"lo": -0.05, "hi": 0.05}
    fall = _grid_est(0.004, 1e-4, 1e-5)
    parts = {"ES entropy change": inside, "GRPO entropy fall (-change)": fall}
    rows = summary.undecided_rows(_report({"entropy_collapse": parts}), None)
    assert [r["part"] for r in rows] == ["GRPO entropy fall (-change)"]


def test_the_effect_a_part_needs_is_measured_from_its_own_tests_boundary():
    """The published "ES entropy change" at +2%: 8 points inside its +-10% margin (the claim's directional test would
    say 2 from 0); this run's seed-level estimate (se 4%, 4 seeds) needs the seeds that detect 8%."""
    from tests.paper_checks.test_summary_design_numbers import _seeds

    here = _report({"entropy_collapse": {"ES entropy change": _est(0.0, 0.04, 4)}})
    there = _report({"entropy_collapse": {"ES entropy change": _est(0.02, 0.01, 8)}})
    row = summary.undecided_rows(here, there)[0]
    assert row["part"] == "ES entropy change"
    assert row["seeds_needed"] == _seeds(0.04, 4, 0.08) != _seeds(0.04, 4, 0.02)
