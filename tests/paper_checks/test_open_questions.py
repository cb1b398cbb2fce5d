"""The open questions' answers (paper_checks/open_questions.py) on runs built in memory, each number computed here
from the runs' records: the shares of prompts with no correct sample, the null's drift against real ES's, where the
largest updates sit, the analytic tiny-update share, the measured s against Lemma 1's limit, and Pass@k means only
where every run measured k."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from escov.paper_checks.evidence import Evidence
from escov.paper_checks.open_questions import lemma1_validity, mechanism, null_controls, zero_success
from escov.paper_checks.real_checks import LEMMA1_MAX_S
from escov.paper_checks.rundir import Run

ES = {"population_size": 8, "sigma": 0.001, "alpha": 0.0005}


def _run(name, algo, seed, es=None, **parts) -> Run:
    config = {"algo": algo, "model": "m", "seed": seed, "es": ES | (es or {}) if "es" in algo else {}}
    return Run(path=Path(name), config=config, **parts)


def _eval(counts_base, counts_final, n=32, ks=(1, 16, 32)) -> dict:
    def one(counts):
        return {
            "n": n,
            "per_problem": [{"id": f"p{i}", "correct": c} for i, c in enumerate(counts)],
            "pass_at_k": {str(k): 0.1 * k / max(ks) for k in ks},
        }

    return {"base": one(counts_base), "final": one(counts_final)}


def test_the_share_of_prompts_with_no_correct_sample_is_counted_per_run_and_averaged_over_seeds():
    runs = [
        _run("es0", "es", 0, eval=_eval([0, 0, 1, 5], [0, 2, 1, 5])),  # base 2/4, final 1/4
        _run("es1", "es", 1, eval=_eval([0, 0, 0, 5], [0, 0, 1, 1])),  # base 3/4, final 2/4
        _run("grpo0", "grpo", 0, eval=_eval([0, 1, 1, 1], [0, 0, 0, 32])),  # base 1/4, final 3/4
    ]
    out = zero_success(Evidence(runs=runs))
    assert out["table"] == [
        {"method": "grpo", "zero_share_base": 0.25, "zero_share_final": 0.75},
        {"method": "es", "zero_share_base": 0.625, "zero_share_final": 0.375},
    ]
    assert out["answer"].startswith("prompts with 0 of n correct: grpo 25% -> 75%, es 62% -> 38%")
    assert out["answer"].endswith(
        "(with 32 samples per prompt this share is 1 - Pass@32: the same measurement as Pass@32, not a second one)"
    )
    wider = [_run("es0", "es", 0, eval=_eval([0, 1], [1, 1], n=64))]
    assert zero_success(Evidence(runs=wider))["answer"] == "prompts with 0 of n correct: es 50% -> 0%"
    # GRPO's own sample count is read for the note too
    grpo_only = [_run("grpo0", "grpo", 0, eval=_eval([0, 1], [1, 1], n=32))]
    assert zero_success(Evidence(runs=grpo_only))["answer"].endswith(
        "the same measurement as Pass@32, not a second one)"
    )
    assert zero_success(Evidence(runs=[])) == {"answer": "no runs with per-problem evaluations", "table": []}
    # a run whose evaluation keeps no per-prompt rows (older code) adds nothing to the share of its part
    older = _eval([0, 0], [0, 0], n=64)
    del older["final"]["per_problem"]
    mixed = wider + [_run("es1", "es", 1, eval=older), _run("es2", "es", 2)]  # es2: no eval.json
    assert zero_success(Evidence(runs=mixed))["table"] == [
        {"method": "es", "zero_share_base": 0.75, "zero_share_final": 0.0}
    ]


def test_a_methods_mean_pass_at_k_is_given_only_when_every_run_measured_that_k():
    runs = [
        _run("es0", "es", 0, eval=_eval([1], [1], ks=(1, 16, 32))),
        _run("es1", "es", 1, eval=_eval([1], [1], ks=(1, 16))),
        _run("grpo0", "grpo", 0, eval=_eval([1], [1], ks=(1, 32))),
    ]
    out = mechanism(Evidence(runs=runs))
    assert out["answer"] == "no greedy-vs-sampled real runs"
    by = {r["method"]: r for r in out["table"]}
    assert by["es"]["pass_at_1"] == pytest.approx((0.1 / 32 + 0.1 / 16) / 2)  # each run's own Pass@1, averaged
    assert by["es"]["pass_at_32"] is None and by["es"]["runs"] == 2
    assert by["grpo"]["pass_at_32"] == pytest.approx(0.1) and by["grpo"]["pass_at_1"] == pytest.approx(0.1 / 32)


def test_without_greedy_and_sampled_real_runs_the_answer_points_to_the_simulate_ablation():
    """Sampled ES runs alone (no greedy ES run to compare with) keep their row; the answer names the simulate level's
    reading of the same question (its ablations' greedy_vs_sampled claim), and only that one."""
    sampled = [_run("s0", "es", 0, es={"member_temperature": 1.0}, eval=_eval([1], [2], ks=(1, 32)))]
    claims = [
        {"id": "other", "why": "not this one"},
        {"id": "greedy_vs_sampled", "why": "sampled members keep Pass@32"},
    ]
    ev = Evidence(runs=sampled, simulate={"ablations": {"claims": claims}, "other": {"claims": claims[:1]}})
    out = mechanism(ev)
    assert out["answer"] == "no greedy-vs-sampled real runs; simulate: sampled members keep Pass@32"
    assert [(r["method"], r["runs"]) for r in out["table"]] == [("es[sampled]", 1)]
    greedy_only = Evidence(runs=[_run("g0", "es", 0, eval=_eval([1], [2], ks=(1, 32)))], simulate={})
    assert mechanism(greedy_only)["answer"] == "no greedy-vs-sampled real runs"
    # both kinds of runs, but measured at Pass@1 alone: no Pass@32 to compare, so no comparison at all
    at_1 = [
        _run(f"{kind}{s}", "es", s, es=es, eval=_eval([1, 2], [2, 3], ks=(1,)))
        for kind, es in (("g", None), ("s", {"member_temperature": 1.0}))
        for s in (0, 1)
    ]
    assert mechanism(Evidence(runs=at_1))["answer"] == "no greedy-vs-sampled real runs"


def _analysis(share: float, top: str, max_abs: float) -> dict:
    kinds = {kind: {"max_abs": max_abs / 10} for kind in ("attention", "mlp", "embedding")}
    kinds[top] = {"max_abs": max_abs}
    return {"update_analysis": {"share_nonzero_le_tau": {"0.0015": share}, "max_abs": max_abs, "kinds": kinds}}


def test_the_null_controls_compare_the_nulls_drift_and_updates_with_real_es():
    steps = [{"drift_rel": 0.01 * (i + 1), "es_update_norm": 1.0 if i % 2 else 0.0} for i in range(8)]
    runs = [
        _run("es0", "es", 0, metrics=steps[:-1] + [steps[-1] | {"drift_rel": 0.2}], eval=_analysis(0.6, "mlp", 0.02)),
        _run(
            "null0",
            "es",
            0,
            es={"null_control": True},
            metrics=[{"drift_rel": 0.05}],
            eval=_analysis(0.3, "attention", 0.01),
        ),
        _run(
            "grpo0",
            "grpo",
            0,
            metrics=[{"drift_rel": 0.004, "es_update_norm": 1.0}],
            eval=_analysis(0.9, "embedding", 0.5),
        ),
    ]
    out = null_controls(Evidence(runs=runs))
    by = {r["method"]: r for r in out["table"]}
    analytic = 2 * norm.cdf(0.0015 / (0.0005 * math.sqrt(4 / 8))) - 1  # 4 steps with a non-zero update
    assert by["es"]["drift_rel"] == 0.2 and by["es[null]"]["drift_rel"] == 0.05
    assert by["es"]["analytic_share"] == pytest.approx(analytic) and by["grpo"]["analytic_share"] is None
    assert (by["es"]["largest_update_kind"], by["es[null]"]["largest_update_kind"]) == ("mlp", "attention")
    assert by["es"]["share_le_1.5e-3"] == 0.6 and by["grpo"]["share_le_1.5e-3"] == 0.9
    assert out["answer"] == (
        f"the random-z null reaches 25% of real ES's drift; tiny-update share 60.0% (ES) vs 30.0% (null), analytic "
        f"{analytic:.1%}; largest updates in mlp (ES) and attention (null)"
    )
    assert null_controls(Evidence(runs=runs[:1]))["answer"] == "needs an ES run and its random-z null"


def test_a_null_controls_row_reads_what_its_runs_hold():
    """A method whose runs hold only drift (no update analysis in eval.json), or only the analysis (no metrics), keeps
    its row with the other figures None; an analysis without a kind names none; a kind without its largest update
    counts as 0; the row counts the method's runs."""
    analysis = {"update_analysis": {"share_nonzero_le_tau": {"0.0015": 0.4}, "max_abs": 0.3}}
    partial = _analysis(0.5, "mlp", 0.02)
    partial["update_analysis"]["kinds"] = {"attention": {}, "mlp": {"max_abs": 0.5}}  # attention: no largest update
    runs = [
        _run("es0", "es", 0, metrics=[{"drift_rel": 0.1}]),
        _run("es1", "es", 1, metrics=[{"drift_rel": 0.3}]),
        _run("null0", "es", 0, es={"null_control": True}, eval=analysis),
        _run("bf16", "es", 0, es={"inplace_bf16": True}, metrics=[{"drift_rel": 0.2}], eval=partial),
    ]
    by = {r["method"]: r for r in null_controls(Evidence(runs=runs))["table"]}
    assert by["es"] == {
        "method": "es",
        "runs": 2,
        "drift_rel": 0.2,
        "share_le_1.5e-3": None,
        "analytic_share": None,
        "max_abs_update": None,
        "largest_update_kind": None,
    }
    assert by["es[null]"]["drift_rel"] is None and by["es[null]"]["largest_update_kind"] is None
    assert (by["es[null]"]["runs"], by["es[null]"]["share_le_1.5e-3"], by["es[null]"]["max_abs_update"]) == (
        1,
        0.4,
        0.3,
    )
    assert by["es[bf16]"]["largest_update_kind"] == "mlp"  # a kind without max_abs counts as 0
    # ES and its null alone are enough for an answer
    assert null_controls(Evidence(runs=runs[:3]))["answer"].startswith("the random-z null reaches n/a")
    # the answer names what the runs do not hold, rather than stopping the report
    assert null_controls(Evidence(runs=runs))["answer"] == (
        "the random-z null reaches n/a of real ES's drift; tiny-update share n/a (ES) vs 40.0% (null); largest updates "
        "in n/a (ES) and n/a (null)"
    )


def _measurement(step: int, s: float) -> dict:
    return {
        "step": step,
        "sigma": 0.001,
        "members": 8,
        "validity": {"measured": {"mean": s}, "predicted": s * 2},
        "jspol": {"mean": 1e-6},
        "lemma1_prediction": 2e-6,
    }


@pytest.mark.parametrize("largest, word", [(LEMMA1_MAX_S, "small"), (LEMMA1_MAX_S * 1.5, "not small")])
def test_lemma_1s_validity_reads_the_main_es_runs_measured_s_against_the_limit(largest, word):
    runs = [
        _run("es0", "es", 0, probe={"measurements": [_measurement(0, LEMMA1_MAX_S / 10), _measurement(5, largest)]}),
        _run("sampled0", "es", 0, es={"member_temperature": 1.0}, probe={"measurements": [_measurement(0, 9.0)]}),
    ]
    out = lemma1_validity(Evidence(runs=runs))
    row = {"run": "es0", "sigma": 0.001, "members": 8, "jspol": 1e-6, "lemma1_prediction": 2e-6}
    assert out["table"] == [
        row | {"step": 0, "s_measured": LEMMA1_MAX_S / 10, "s_predicted": LEMMA1_MAX_S / 5},
        row | {"step": 5, "s_measured": largest, "s_predicted": largest * 2},
    ]
    assert out["answer"] == (
        f"measured s from {LEMMA1_MAX_S / 10:.2g} to {largest:.2g} over 2 measurements ({word}: Lemma 1 is claimed "
        f"for s <= {LEMMA1_MAX_S})"
    )
    # an ES run without a probe, or with a probe of no measurements, adds no row
    quiet = [_run("es1", "es", 1), _run("es2", "es", 2, probe={"seeds": [0]})]
    assert lemma1_validity(Evidence(runs=quiet)) == {"answer": "no population measurements", "table": []}


def test_the_mechanism_reports_greedy_minus_sampled_at_pass_1_and_at_pass_32():
    """Pass@1 and Pass@32 differ here (a prompt solved once in 32 moves Pass@32 by 1, Pass@1 by 1/32), so each
    interval in the answer is the difference at its own k (diff_between, the real checks' paired reading)."""
    from escov.paper_checks.real_checks import diff_between
    from escov.paper_checks.verdict import fmt_interval

    counts = {
        ("es", 0): [1, 0, 9, 0],
        ("es", 1): [1, 1, 0, 0],
        ("sampled", 0): [0, 0, 12, 0],
        ("sampled", 1): [0, 0, 3, 2],
    }
    runs = [
        _run(
            f"{kind}{seed}",
            "es",
            seed,
            es={"member_temperature": 1.0} if kind == "sampled" else {},
            eval=_eval(c, c),
        )
        for (kind, seed), c in counts.items()
    ]
    ev = Evidence(runs=runs)
    answer = mechanism(ev)["answer"]
    greedy, sampled = ev.by_variant("es"), ev.by_variant("es[sampled]")
    d1, d32 = diff_between(greedy, sampled, 1), diff_between(greedy, sampled, 32)
    assert d1.mean != d32.mean
    assert f"Pass@1 {fmt_interval(d1.mean, d1.lo, d1.hi)}, Pass@32 {fmt_interval(d32.mean, d32.lo, d32.hi)}" in answer


def test_the_mechanism_reads_greedy_minus_sampled_at_matched_pass_1_in_that_order():
    """Greedy ES curves that spread success over prompts against sampled-member curves that sharpen it: at matched
    Pass@1 greedy keeps more Pass@32, so the answer's matched interval is greedy - sampled (positive), the one
    theory.matched gives in that order, not its mirror."""
    from escov.paper_checks.matched import curve_of, matched_difference
    from escov.paper_checks.verdict import fmt_interval
    from tests.paper_checks.test_matched import _sharpening, _spreading

    rng = np.random.default_rng(0)
    base_logit = np.random.default_rng(7).normal(-0.5, 1.5, 24)
    runs = []
    for seed in range(3):
        for kind, make in (("greedy", _spreading), ("sampled", _sharpening)):
            points = make(base_logit, rng.normal(0, 0.1), rng)
            es = {"member_temperature": 1.0} if kind == "sampled" else {}
            final = {
                "n": 32,
                "pass_at_k": {"1": points[-1]["sampled"]["pass_at_k"]["1"], "32": 0.5},
                "per_problem": points[-1]["sampled"]["per_problem"],
            }
            runs.append(_run(f"{kind}{seed}", "es", seed, es=es, curve=points, eval={"base": final, "final": final}))
    ev = Evidence(runs=runs)
    greedy = [curve_of(r.curve, r.seed) for r in ev.by_variant("es")]
    sampled = [curve_of(r.curve, r.seed) for r in ev.by_variant("es[sampled]")]
    d, info = matched_difference(greedy, sampled, "pass@32", names=("greedy", "sampled"))
    assert d.mean > 0
    answer = mechanism(ev)["answer"]
    assert answer.startswith("greedy minus sampled member rollouts at the end (")
    bias = info["bias"]["estimate"]
    assert answer.endswith(
        f"; at matched Pass@1 ({100 * info['range'][0]:.1f}-{100 * info['range'][1]:.1f} pts, measured points in the "
        f"range per run: greedy {info['points_in_range_a']}, sampled {info['points_in_range_b']}): Pass@32 "
        f"{fmt_interval(d.mean, d.lo, d.hi)} (bias control, {info['bias']['thinned']} thinned to "
        f"{info['bias']['to_layout_of']}'s layout: {fmt_interval(bias['mean'], bias['lo'], bias['hi'])})"
    )
    assert {info["bias"]["thinned"], info["bias"]["to_layout_of"]} == {"greedy", "sampled"}
    assert 0 < info["range"][0] < info["range"][1] < 1
    # sampled curves stopped after their second point: no common Pass@1 range, the reason is given instead
    short = [
        Run(path=r.path, config=r.config, eval=r.eval, curve=r.curve[:2] if "sampled" in r.name else r.curve)
        for r in runs
    ]
    assert mechanism(Evidence(runs=short))["answer"].endswith(
        "; at matched Pass@1: the Pass@1 range every run reaches is 0.0 pts wide (under 2): nothing to compare at "
        "matched Pass@1"
    )


def test_the_null_controls_give_bf16_its_row_and_no_analytic_share_to_grpo_whatever_its_config_holds():
    """A GRPO run's config.json holds ES's settings too (their defaults): the analytic tiny-update share, a property of
    ES's Gaussian steps, is still not given for it; the bf16 ES variant has its own row."""
    analysis = _analysis(0.5, "mlp", 0.02)
    steps = [{"drift_rel": 0.01, "es_update_norm": 1.0}] * 4
    runs = [
        _run("es0", "es", 0, metrics=steps, eval=analysis),
        _run("null0", "es", 0, es={"null_control": True}, metrics=steps, eval=analysis),
        _run("bf16", "es", 0, es={"inplace_bf16": True}, metrics=steps, eval=analysis),
        Run(
            path=Path("grpo0"), config={"algo": "grpo", "model": "m", "seed": 0, "es": ES}, metrics=steps, eval=analysis
        ),
    ]
    by = {r["method"]: r for r in null_controls(Evidence(runs=runs))["table"]}
    assert sorted(by) == ["es", "es[bf16]", "es[null]", "grpo"]
    assert by["grpo"]["analytic_share"] is None and by["es[bf16]"]["analytic_share"] is not None


def test_the_zero_share_is_the_mean_over_seeds_not_a_middle_value():
    runs = [_run(f"es{s}", "es", s, eval=_eval([1, 1], [0, 0] if s == 2 else [1, 1])) for s in range(3)]
    assert zero_success(Evidence(runs=runs))["table"] == [
        {"method": "es", "zero_share_base": 0.0, "zero_share_final": pytest.approx(1 / 3)}
    ]


def test_the_mechanism_table_lists_each_population_measurements_jspol_and_fisher_trace():
    def probe(step, jspol, trace):
        return {"step": step, "jspol": {"mean": jspol}, "fisher_trace": {"mean": trace}}

    runs = [
        _run(
            "es0",
            "es",
            0,
            eval=_eval([1, 0], [1, 0]),
            probe={"measurements": [probe(0, 1e-6, 3.0), probe(4, 2e-6, 5.0)]},
        ),
        _run(
            "sampled0",
            "es",
            0,
            es={"member_temperature": 1.0},
            eval=_eval([1, 0], [1, 0]),
            probe={"measurements": [probe(0, 7e-6, 11.0)]},
        ),
    ]
    rows = [r for r in mechanism(Evidence(runs=runs))["table"] if "jspol" in r]
    assert rows == [
        {"method": "es", "seed": 0, "step": 0, "jspol": 1e-6, "fisher_trace": 3.0},
        {"method": "es", "seed": 0, "step": 4, "jspol": 2e-6, "fisher_trace": 5.0},
        {"method": "es[sampled]", "seed": 0, "step": 0, "jspol": 7e-6, "fisher_trace": 11.0},
    ]
