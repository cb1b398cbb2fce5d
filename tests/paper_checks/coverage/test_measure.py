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


def _designed() -> Coverage:
    """Three models on 3 prompts of n = 4 samples: the reference (1 seed), "m" (2 seeds, with answers) and "n" (a name
    that is also a report field)."""
    votes = [
        [["a", "a", "b", "c"], ["x", "y", "y", "y"], ["p", "q", "r", "p"]],
        [["b", "b", "b", "a"], ["x", "x", "y", "z"], ["q", "q", "p", None]],
    ]
    right = {"a", "x", "p"}
    answers = [[(v, [a in right for a in v], v) for v in seed] for seed in votes]
    counts = np.array([[sum(a in right for a in v) for v in seed] for seed in votes])
    return Coverage(
        "designed",
        {
            "ref": ModelCounts("ref", 4, ["p0", "p1", "p2"], np.array([[1, 0, 2]])),
            "m": ModelCounts("m", 4, ["p0", "p1", "p2"], counts, seeds=[0, 1], answers=answers),
            "n": ModelCounts("n", 4, ["p0", "p1", "p2"], np.array([[4, 4, 0]])),
        },
    ).checked()


def test_the_report_holds_its_settings_every_model_and_each_compared_model_at_the_top_level():
    from escov.paper_checks.coverage.measure import bootstrap_weights
    from escov.theory.coverage import crossing_k, problem_bootstrap_indices
    from escov.theory.metrics import maj_at_ks

    cov = _designed()
    options = MeasureOptions(reference="ref", ks=(4, 1, 2), taus=(0.5,), replicates=40, confidence=0.9, seed=3)
    report = measure(cov, options)
    assert {k: report[k] for k in ("source", "reference", "n", "prompts", "ks", "taus", "confidence")} == {
        "source": "designed",
        "reference": "ref",
        "n": 4,
        "prompts": 3,
        "ks": [1, 2, 4],
        "taus": [0.5],
        "confidence": 0.9,
    }
    assert (report["replicates"], report["bootstrap_seed"]) == (40, 3)
    models = report["models"]
    assert set(models) == {"ref", "m", "n"} and report["m"] is models["m"] and "ref" not in report
    assert report["n"] == 4  # a model named like a report field stays under "models" only
    assert set(models["ref"]) == {"seeds", "pass_at_k", "cover_at_tau"}
    assert set(models["m"]) == {
        "seeds",
        "pass_at_k",
        "cover_at_tau",
        "maj_at_k",
        "distinct_correct",
        "answer_entropy",
        "crossing",
        "solvability",
    }
    assert models["m"]["seeds"] == [0, 1]
    # the percentile interval of each mean over the same 40 bootstrap draws of the prompts (seeded 3)
    draws = problem_bootstrap_indices(3, 40, 3)
    weights = bootstrap_weights(3, 40, 3)
    assert np.array_equal(weights, np.stack([np.bincount(row, minlength=3) for row in draws]).astype(float))
    cover = (cov.models["m"].counts >= 2).mean(0)  # "m": c / 4 >= 0.5 per seed, seeds averaged
    lo, hi = np.quantile(weights @ cover / 3, [0.05, 0.95])
    assert models["m"]["cover_at_tau"]["0.5"] == pytest.approx({"mean": cover.mean(), "lo": lo, "hi": hi})
    # Maj@k per prompt: each seed's vote over 64 seeded subsets (seed = the prompt's index), seeds averaged
    for k_index, k in enumerate([1, 2, 4]):
        per_prompt = [
            np.mean(
                [
                    maj_at_ks(v, [a in {"a", "x", "p"} for a in v], [1, 2, 4], n_subsets=64, seed=p)[k_index]
                    for v in (seed0, seed1)
                ]
            )
            for p, (seed0, seed1) in enumerate(zip(*[[v for v, _, _ in seed] for seed in cov.models["m"].answers]))
        ]
        assert models["m"]["maj_at_k"][str(k)]["mean"] == pytest.approx(np.mean(per_prompt))
    # the full vote by hand: p0 a (right) then b, p1 y then x (right), p2 p (right) then q: 0.5 on each prompt
    assert models["m"]["maj_at_k"]["4"]["mean"] == pytest.approx(0.5)
    # the crossing read between budgets, and the report drawn twice is the same (every draw seeded)
    m_curve = np.array([models["m"]["pass_at_k"][str(k)]["mean"] for k in (1, 2, 4)])
    ref_curve = np.array([models["ref"]["pass_at_k"][str(k)]["mean"] for k in (1, 2, 4)])
    between = crossing_k([1, 2, 4], m_curve, ref_curve, interpolate=True)
    expected = None if np.isnan(between) else float(between)
    assert models["m"]["crossing"]["k_star_interpolated"] == (expected if expected is None else pytest.approx(expected))
    assert measure(cov, options) == report
    assert measure(cov, MeasureOptions(reference="ref", replicates=10))["ks"] == [1, 2, 4]  # k_grid(4)


def test_an_unknown_reference_is_named_with_the_models_there_are():
    with pytest.raises(InputError) as err:
        measure(_designed(), MeasureOptions(reference="zz", replicates=10))
    assert str(err.value) == "--reference 'zz': no such model in designed (models: m, n, ref)"


def test_a_rate_no_seed_pair_defines_is_none():
    out = _solvability(np.array([[1, 0], [0, 0]]), np.array([[0, 0], [0, 0]]))  # the reference never solves
    # NSCR: 1 for the first model seed (E = 1), undefined for the second (nothing solved on either side)
    assert out["srr"] is None and out["nscr"] == pytest.approx(1.0) and out["preserved"] == 0.0


def test_a_crossing_between_budgets_its_interval_and_the_budgets_asked_for():
    """5 prompts, n = 4: the model solves two prompts, 4 and 3 times in 4 (Pass@1 0.35, Pass@2 and Pass@4 0.4), the
    reference four prompts once in four (Pass@1 0.2, Pass@2 0.4, Pass@4 0.8). The reference leads first at k = 4;
    read between budgets the crossing is k = 2, where the curves meet. Its interval: the 5% and 95% inverted-CDF
    quantiles of the bootstrap replicates' k*, a replicate with no crossing counted as infinity; each Pass@k interval
    at confidence 0.9."""
    from escov.paper_checks.coverage.measure import bootstrap_weights
    from escov.theory.coverage import crossing_k, pass_at_k_table

    ids = [f"p{i}" for i in range(5)]
    cov = Coverage(
        "crossing",
        {
            "ref": ModelCounts("ref", 4, ids, np.array([[1, 1, 1, 1, 0]])),
            "m": ModelCounts("m", 4, ids, np.array([[4, 3, 0, 0, 0]])),
        },
    ).checked()
    report = measure(cov, MeasureOptions(reference="ref", ks=(1, 2, 4), replicates=200, confidence=0.9, seed=1))
    crossing = report["m"]["crossing"]
    assert (crossing["k_star"], crossing["k_star_interpolated"]) == (4.0, 2.0)
    weights = bootstrap_weights(5, 200, 1)
    m_pp, ref_pp = (
        pass_at_k_table(np.array([4, 3, 0, 0, 0]), 4, [1, 2, 4]),
        pass_at_k_table(np.array([1, 1, 1, 1, 0]), 4, [1, 2, 4]),
    )
    reps = crossing_k([1, 2, 4], weights @ m_pp / 5, weights @ ref_pp / 5)
    lo, hi = np.quantile(np.where(np.isnan(reps), np.inf, reps), [0.05, 0.95], method="inverted_cdf")
    assert crossing["no_crossing_share"] == pytest.approx(float(np.isnan(reps).mean()))
    assert crossing["lo"] == (None if np.isinf(lo) else lo) and crossing["hi"] == (None if np.isinf(hi) else hi)
    p1 = weights @ ref_pp[:, 0] / 5
    assert report["models"]["ref"]["pass_at_k"]["1"] == pytest.approx(
        {"mean": 0.2, "lo": float(np.quantile(p1, 0.05)), "hi": float(np.quantile(p1, 0.95))}
    )
    assert measure(cov, MeasureOptions(reference="ref", ks=(3, 1), replicates=10))["ks"] == [1, 3]
    with pytest.raises(InputError, match=r"^crossing: every prompt has 4 samples, fewer than k=8 \(--k\)"):
        measure(cov, MeasureOptions(reference="ref", ks=(8,), replicates=10))


def test_each_mean_has_the_percentile_interval_of_its_confidence():
    """40 prompts of varied counts: Pass@1's interval at confidence 0.9 is the 5% and 95% quantiles of the bootstrap
    means (not the 2.5% and 97.5% of the default 0.95)."""
    from escov.paper_checks.coverage.measure import bootstrap_weights

    counts = np.random.default_rng(4).integers(0, 9, 40)
    ids = [f"p{i}" for i in range(40)]
    cov = Coverage("spread", {"ref": ModelCounts("ref", 8, ids, counts[None, :])}).checked()
    got = measure(cov, MeasureOptions(reference="ref", ks=(1,), replicates=400, confidence=0.9, seed=2))
    means = bootstrap_weights(40, 400, 2) @ (counts / 8) / 40
    lo, hi = np.quantile(means, [0.05, 0.95])
    assert got["models"]["ref"]["pass_at_k"]["1"] == pytest.approx({"mean": counts.mean() / 8, "lo": lo, "hi": hi})
    assert (lo, hi) != pytest.approx(tuple(np.quantile(means, [0.025, 0.975])))
