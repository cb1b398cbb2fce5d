"""What the report says: every table row shown (rows with other fields in their own table), Lemma 1
at a measured s above its regime labelled so (not "inconclusive"), and the claim registry's
references checked (a reference to a check that does not exist is an error, not missing data)."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from escov.paper_checks.evidence import Evidence
from escov.paper_checks.level_checks import simulate_verdict, theory_verdict
from escov.paper_checks.real_checks import REAL_CHECKS
from escov.paper_checks.report import collect, real_verdict, render_tables
from escov.paper_checks.verdict import NOT_RUN, OUTSIDE_REGIME
from escov.theory.claims import BY_ID, CLAIMS, Claim, RegistryError
from escov.theory.claims import Test as ClaimTest
from tests.paper_checks.test_paper_checks_verdicts import make_run


def test_rows_with_other_fields_get_their_own_table_and_none_is_cut():
    rows = (
        [{"method": m, "pass_at_1": 0.5} for m in ("grpo", "es")]
        + [{"method": "es", "seed": s, "jspol": 0.1} for s in range(30)]
        + [{"method": "es[sampled]", "seed": s, "jspol": 0.2} for s in range(30)]
    )
    lines = render_tables(rows)
    headers = [line for line in lines if line.startswith("| method")]
    assert headers == ["| method | pass_at_1 |", "| method | seed | jspol |"]
    body = [line for line in lines if line.startswith("| ") and not line.startswith("| method") and "---" not in line]
    assert len(body) == len(rows) and sum("es[sampled]" in line for line in body) == 30
    assert not any("|  |" in line for line in body), "no blank cells from another table's fields"


def test_lemma1_above_its_regime_says_so_with_s(tmp_path):
    p = np.full(16, 0.3)
    dirs = [make_run(tmp_path, f"es{s}", "es", s, p, p, lemma1_ratio=1.2, s_measured=0.19) for s in range(3)]
    v = REAL_CHECKS["lemma1"](collect(dirs))
    assert v.status == OUTSIDE_REGIME and "s = 0.19" in v.ours and "0.05" in v.note
    inside = [make_run(tmp_path / "in", f"es{s}", "es", s, p, p, lemma1_ratio=1.0 + 0.01 * s) for s in range(3)]
    assert REAL_CHECKS["lemma1"](collect(inside)).status != OUTSIDE_REGIME


def test_registry_references_exist():
    from escov.paper_checks.plots import PLOTS

    assert all(set(c.plots) <= set(PLOTS) for c in CLAIMS)
    assert len({c.id for c in CLAIMS}) == len(CLAIMS)


def test_a_reference_to_a_missing_check_is_an_error_not_missing_data():
    ghost = Claim(
        "no_such_claim", "a claim with no check", "none", ClaimTest("directional"), simulate="entropy_collapse"
    )
    ev = Evidence(runs=[], problems=[], simulate={"entropy_collapse": {"claims": [{"id": "entropy_collapse"}]}})
    with pytest.raises(RegistryError, match="no_such_claim"):
        simulate_verdict(ghost, ev)
    with pytest.raises(RegistryError, match="no_such_claim"):
        real_verdict(ghost, ev)
    with pytest.raises(RegistryError, match="lemma9"):
        theory_verdict(Claim("ghost", "s", "p", ClaimTest("identity"), theory="lemma9/"), ev)


def test_matched_verdict_keeps_every_k_and_prints_support_and_bias(tmp_path):
    p = np.random.default_rng(0).uniform(0.02, 0.5, 16)
    curve = [np.clip(p + 0.02 * t, 0, 1) for t in range(11)]
    dirs = [make_run(tmp_path, f"{name}{s}", name, s, p, p, curve_p=curve) for name in ("es", "grpo") for s in range(3)]
    v = REAL_CHECKS["matched_passk_above_grpo"](collect(dirs))
    per_k = v.evidence["matched"]
    assert set(per_k) == {"pass@16", "pass@32"}
    assert all(len(info["per_level_mean"]) == len(info["compared_levels"]) > 0 for info in per_k.values())
    assert v.ours.count("bias control, ") == 2 and "measured points in the range per run: ES [" in v.note
    planned = per_k["pass@32"]["plan"]  # the design's plan for a 2-point effect, said beside the verdict
    assert (planned["components"]["seeds"], planned["components"]["prompts"]) == (3, 16)
    assert set(planned["seeds_needed"]) == {"16", "64"} and "Pass@32: variance of the mean: seeds " in v.note
    sparse = [
        make_run(tmp_path / "sparse", f"{name}{s}", name, s, p, p, curve_p=curve if name == "es" else curve[::10])
        for name in ("es", "grpo")
        for s in range(3)
    ]  # GRPO measured at the range's ends only
    v = REAL_CHECKS["matched_passk_above_grpo"](collect(sparse))
    assert v.status == "not testable here" and "GRPO [" in v.note


def test_report_json_records_each_base_model_over_its_seeds(tmp_path):
    """ "bases": one entry per (model, task, sampling), Pass@k the mean over seeds (a seed's runs share
    one base evaluation, counted once), the no-correct share from the per-problem counts."""
    from escov.paper_checks.report import bases_of

    def base(counts):  # Pass@1 = mean c / n, Pass@32 (n = 32) = share of prompts with a correct sample
        return {
            "n": 32,
            "num_problems": len(counts),
            "temperature": 0.6,
            "pass_at_k": {"1": sum(counts) / (32 * len(counts)), "32": float(np.mean([c > 0 for c in counts]))},
            "per_problem": [{"id": f"p{i}", "correct": c} for i, c in enumerate(counts)],
        }

    shared = {0: base([0, 3, 5, 0]), 1: base([0, 1, 2, 9])}
    dirs = []
    for model, seeds in (("paper-like", (0, 1)), ("diffuse", (0,))):
        for algo in ("es", "grpo"):
            for seed in seeds:
                run = make_run(
                    tmp_path, f"{model}-{algo}-{seed}", algo, seed, np.full(4, 0.3), np.full(4, 0.3), model=model
                )
                ev = json.loads((run / "eval.json").read_text())
                ev["base"] = shared[seed] if model == "paper-like" else base([0, 0, 0, 4])
                (run / "eval.json").write_text(json.dumps(ev))
                dirs.append(run)
    bases = {b["model"]: b for b in bases_of(collect(dirs))}
    assert set(bases) == {"paper-like", "diffuse"}
    paper = bases["paper-like"]
    assert paper["seeds"] == 2 and paper["temperature"] == 0.6 and paper["samples"] == 32 and paper["problems"] == 4
    assert paper["pass_at_k"] == {
        "1": pytest.approx((8 / 128 + 12 / 128) / 2),
        "32": pytest.approx((2 / 4 + 3 / 4) / 2),
    }
    assert paper["no_correct_share"] == pytest.approx((2 / 4 + 1 / 4) / 2)
    assert bases["diffuse"]["seeds"] == 1 and bases["diffuse"]["no_correct_share"] == pytest.approx(0.75)


def test_a_small_detectable_difference_keeps_two_significant_digits():
    """A power line in nats (scale 1) printed to two decimals read 0.00 for 0.00081."""
    from escov.paper_checks.design import Estimate
    from escov.paper_checks.real_checks.decide import power_line

    assert "detectable at 80% power: 0.00081;" in power_line(
        Estimate(0, 0, 0, 3e-4, 10, 8, detectable=0.00081), BY_ID["matched_entropy"], 1.0, ""
    )
    assert "detectable at 80% power: 6.29 pts;" in power_line(
        Estimate(0, 0, 0, 0.02, 10, 8, detectable=0.0629), BY_ID["matched_passk_above_grpo"]
    )


def _curve_run(root, name, algo, seed, never_solved, entropy):
    """A run whose curve (64 samples a prompt, 40 prompts) rises in Pass@1 step by step while `never_solved`
    prompts stay at 0 correct and the token entropy stays at `entropy`: its no-correct share is never_solved / 40
    and its entropy `entropy` at every Pass@1 it reaches."""
    from escov.theory.metrics import pass_at_k_counts

    run = make_run(root, name, algo, seed, np.full(40, 0.2), np.full(40, 0.3))
    points = []
    for t in range(11):
        counts = np.array([0] * never_solved + [4 + 2 * t] * (40 - never_solved))
        sampled = {
            "n": 64,
            "ks": [1, 16, 32],
            "temperature": 0.6,
            "mean_token_entropy": entropy,
            "pass_at_k": {str(k): float(pass_at_k_counts(64, counts, k).mean()) for k in (1, 16, 32)},
            "per_problem": [{"id": f"p{i}", "correct": int(c)} for i, c in enumerate(counts)],
        }
        greedy = {"n": 1, "ks": [1], "pass_at_k": {"1": float((counts > 32).mean())}, "per_problem": []}
        points.append({"step": 5 * t, "sampled": sampled, "greedy": greedy})
    (run / "curve.json").write_text(json.dumps({"points": points}))
    return run


def test_matched_no_correct_and_entropy_verdicts_carry_the_values_built_in(tmp_path):
    """ES keeps every prompt solvable (no-correct share 0) at entropy 1.05; GRPO leaves 8 of 40 prompts never
    solved (0.2) at entropy 1.00; both rise in Pass@1 through a common range. At every matched level, then,
    ES - GRPO is -20 points of no-correct share and +0.05 nats of entropy, exactly: both hold, and the reports
    carry those numbers, the range and the bias controls."""
    from escov.paper_checks.verdict import HOLDS

    dirs = [_curve_run(tmp_path, f"es{s}", "es", s, 0, 1.05) for s in range(3)]
    dirs += [_curve_run(tmp_path, f"grpo{s}", "grpo", s, 8, 1.00) for s in range(3)]
    ev = collect(dirs)
    none_correct = REAL_CHECKS["matched_no_correct"](ev)
    assert (none_correct.claim_id, none_correct.status) == ("matched_no_correct", HOLDS)
    assert none_correct.ours.startswith("ES - GRPO no-correct share at matched Pass@1 -20.0")
    # every seed sees the same per-prompt differences (-1 on 8 of 40 prompts, else 0): the interval is the
    # prompts' t interval, -0.2 +- t_39 sd / sqrt(40), to within the design's own rounding
    from scipy.stats import t as student_t

    half = student_t.ppf(0.975, 39) * np.std([-1.0] * 8 + [0.0] * 32, ddof=1) / np.sqrt(40)
    lo, hi = (float(x) for x in re.search(r"\[([-+.\d]+), ([-+.\d]+)\]", none_correct.ours).groups())
    assert lo == pytest.approx(100 * (-0.2 - half), abs=0.1) and hi == pytest.approx(100 * (-0.2 + half), abs=0.1)
    # GRPO's curve has the more points in the range (its Pass@1 climbs in smaller steps): it is the one thinned
    control = "(bias control, GRPO thinned to ES's layout against itself: "
    assert none_correct.ours.count(control) == 1 and none_correct.ours.endswith(")")
    info = none_correct.evidence["matched"]
    assert none_correct.note.startswith(f"mean over {len(info['compared_levels'])} Pass@1 levels in the common range")
    assert none_correct.test and "seeds x 40 prompts x 64 samples" in none_correct.design
    entropy = REAL_CHECKS["matched_entropy"](ev)
    assert (entropy.claim_id, entropy.status) == ("matched_entropy", HOLDS)
    assert entropy.ours.startswith("ES - GRPO token entropy at matched Pass@1 (nats) +0.05")
    assert entropy.ours.count(control) == 1
    assert np.allclose(entropy.evidence["per_seed"], 0.05)
    assert "an interval over seeds only (these curves carry no per-prompt entropy" in entropy.note
    passk = REAL_CHECKS["matched_passk_above_grpo"](ev)
    assert (passk.claim_id, passk.status) == ("matched_passk_above_grpo", HOLDS)
    assert (
        passk.ours.startswith("ES - GRPO @16 at matched Pass@1 +")
        and "; ES - GRPO @32 at matched Pass@1 +" in passk.ours
    )
    # the same runs on both sides: nothing to report but no difference, and no verdict either way
    same = collect([_curve_run(tmp_path / "same", f"{a}{s}", a, s, 8, 1.0) for a in ("es", "grpo") for s in range(3)])
    for cid in ("matched_no_correct", "matched_entropy", "matched_passk_above_grpo"):
        v = REAL_CHECKS[cid](same)
        assert v.status == "inconclusive", (cid, v.status, v.ours)


def test_a_verdict_from_labelled_estimates_says_each_and_holds_only_when_all_do():
    """_verdict, the one place real checks turn estimates into a verdict, on estimates written by hand (a
    directional claim, difference > 0): each part's text is label + mean [lo, hi] in the given scale and unit;
    the interval is kept only for a single part; parts combine to 'holds' only when every part holds; one-seed
    estimates are said to be so after the caller's note; design and power list every part."""
    from escov.paper_checks.design import Estimate
    from escov.paper_checks.real_checks.decide import decided
    from escov.paper_checks.verdict import HOLDS, INCONCLUSIVE

    up = Estimate(0.05, 0.02, 0.08, 0.015, 10.0, seeds=4, prompts=64, samples=32, detectable=0.0412)
    unsure = Estimate(0.01, -0.02, 0.04, 0.015, 10.0, seeds=2, prompts=64, samples=32, detectable=0.0412)
    one = decided(BY_ID["es_improves_over_base"], [("@1", up)], note="a note")
    assert (one.claim_id, one.status, one.interval) == ("es_improves_over_base", HOLDS, (0.02, 0.08))
    assert one.ours == "@1 +5.00 pts [+2.00, +8.00]" and one.note == "a note"  # two decimals at least
    assert one.design == "4 seeds x 64 prompts x 32 samples"
    assert one.power.startswith("@1: detectable at 80% power: 4.12 pts; paper: ")
    assert one.evidence["@1"]["mean"] == 0.05 and one.test
    both = decided(BY_ID["es_improves_over_base"], [("@1", up), ("@32", unsure)], scale=1.0, unit=" nats")
    assert (both.status, both.interval) == (INCONCLUSIVE, None)  # all must hold
    assert both.ours == "@1 +0.050 nats [+0.020, +0.080]; @32 +0.010 nats [-0.020, +0.040]"
    assert both.design == "2 seeds x 64 prompts x 32 samples | 4 seeds x 64 prompts x 32 samples"
    assert both.power.count(" | @32: detectable at 80% power: 0.041 nats; paper: ") == 1 and both.note == ""
    alone = Estimate(0.05, float("-inf"), float("inf"), float("inf"), 0.0, seeds=1)
    single = decided(BY_ID["es_improves_over_base"], [("@1", alone)], note="before")
    assert single.note == "before; one seed: no run-to-run variance, so no decision"
    assert (
        decided(BY_ID["es_improves_over_base"], [("@1", alone)]).note
        == "one seed: no run-to-run variance, so no decision"
    )
    assert "detectable at 80% power: no run-to-run variance (one seed)" in single.power


@pytest.mark.parametrize(
    "entropies, change",
    [
        ([2.0, 4.0, 1.0, 1.0, 1.0, 3.0, 0.5], 0.5 / 2.0 - 1.0),  # 7 steps: the last fifth is 1 step
        ([2.0, 4.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 1.5], (0.5 + 1.5) / 2 / 2.0 - 1.0),  # 10 steps: the last 2
        ([2.0, 1.0], 1.0 / 2.0 - 1.0),  # the fewest steps that change
        ([2.0], None),
        ([], None),
        ([0.0, 1.0, 2.0], None),  # no change to read
    ],
)
def test_entropy_change_is_the_last_fifths_mean_over_the_first_step(tmp_path, entropies, change):
    """entropy_change = mean(last max(1, n // 5) steps) / first step - 1, by hand; None with under 2 steps or a
    first entropy of 0; rows without an entropy are skipped."""
    from escov.paper_checks.real_checks import entropy_change
    from escov.paper_checks.rundir import Run

    rows = [{"step": i + 1, "entropy": h} for i, h in enumerate(entropies)] + [{"step": len(entropies) + 1}]
    got = entropy_change(Run(tmp_path, {"algo": "grpo"}, metrics=rows))
    assert got == (None if change is None else pytest.approx(change, rel=1e-12))


def _simulate_summary(path, verdict_of) -> None:
    """A summary.json with one entry per claim that names a simulate experiment, in simulate's format."""
    experiments: dict[str, dict] = {}
    for c in CLAIMS:
        if c.simulate:
            entry = {
                "id": c.id,
                "claim": c.statement,
                "paper": c.paper,
                "analogue": {},
                "verdict": verdict_of(c),
                "why": f"the analogue's numbers for {c.id}",
                "test": c.simulate_test.describe(),
            }
            experiments.setdefault(
                c.simulate, {"name": c.simulate, "claims": [], "plot": f"{c.simulate}.png", "settings": {"seeds": 3}}
            )["claims"].append(entry)
    path.write_text(json.dumps({"experiments": experiments}))


def test_the_report_takes_simulates_verdict_words_as_they_are(tmp_path):
    """One vocabulary: each claim's simulate level is the verdict its entry carries, word for word, with the
    record's statement and test beside it, and its experiment's plot as a path from the report's folder to the
    summary's; a summary in other words (an older simulate's "reproduced") is a one-line error naming the file,
    and a claim's entry that decides nothing is a registry bug. Given a budget that plans nothing, a real level whose
    runs lack what it needs reads "not run in this budget"."""
    from escov.paper_checks.report import build_report
    from escov.theory.decisions import DECISIONS, FINDING

    p = np.full(16, 0.3)
    runs = [make_run(tmp_path / "runs", f"{a}{s}", a, s, p, p) for a in ("es", "grpo") for s in (0, 1)]
    cycle = {c.id: DECISIONS[i % len(DECISIONS)] for i, c in enumerate(c for c in CLAIMS if c.simulate)}
    _simulate_summary(tmp_path / "summary.json", lambda c: cycle[c.id])
    report = build_report(runs, tmp_path / "report", simulate_summary=tmp_path / "summary.json", planned=set())
    for c in report["claims"]:
        level = c["levels"]["simulate"]
        if c["id"] in cycle:
            assert level["status"] == cycle[c["id"]], c["id"]
            assert level["ours"] == f"{c['statement']}: the analogue's numbers for {c['id']}"
            assert level["test"] == BY_ID[c["id"]].simulate_test.describe()
            assert level["plots"] == [f"../{BY_ID[c['id']].simulate}.png"]  # report/ and summary.json's folder
        else:
            assert level["status"] == "not testable here"
    assert {cycle[c] for c in cycle} == set(DECISIONS)  # every word passed through
    assert any(c["levels"]["real"]["status"] == NOT_RUN for c in report["claims"])  # a need no run of the budget has

    _simulate_summary(tmp_path / "old.json", lambda c: "reproduced")
    with pytest.raises(ValueError, match=r"old\.json: experiment '\w+' has verdicts \['reproduced'\]"):
        build_report(runs, tmp_path / "report-old", simulate_summary=tmp_path / "old.json")
    _simulate_summary(tmp_path / "finding.json", lambda c: FINDING if c.id == "lemma1" else DECISIONS[0])
    with pytest.raises(RegistryError, match="lemma1"):
        build_report(runs, tmp_path / "report-finding", simulate_summary=tmp_path / "finding.json")


def _level(status, ours="n/a", **extra):
    return {"status": status, "ours": ours, "note": "", "plots": [], "evidence": {}} | extra


def test_report_md_says_each_part_of_a_report_written_by_hand():
    """render_markdown over a report.json written by hand: the summary in a code block, the purpose, the
    exclusions, the runs per variant, the base models' table (Pass@k in points, a k a base lacks as nan, the
    no-correct share as a percentage or n/a), the input problems, the claims' rows (a real-run figure after its
    status, none when it is n/a) and a claim's section (an untestable
    limit, each level's bullet with note, test, design and power, the real plots then the simulate plots) and an
    open question's table."""
    from escov.paper_checks.report import render_markdown

    real = _level(
        "holds",
        "19x [18, 20]",
        note="a note",
        test="ratio test",
        design="3 seeds x 64 prompts",
        power="detects 2 points at 80%",
        plots=["drift.png"],
    )
    report = {
        "summary": ["first line", "second line"],
        "purpose": "what it decides.",
        "excluded": [{"what": "runs/es9", "reason": "a copy of runs/es0"}],
        "runs": [{"variant": "grpo", "seed": 0}, {"variant": "es", "seed": 0}, {"variant": "es", "seed": 1}],
        "bases": [
            {
                "model": "/models/paper-base",
                "task": "countdown",
                "temperature": 0.6,
                "samples": 32,
                "problems": 4,
                "seeds": 2,
                "pass_at_k": {"1": 0.0625, "32": 0.5},
                "no_correct_share": 0.7,
            },
            {
                "model": "diffuse",
                "task": "math",
                "temperature": 1.0,
                "samples": 8,
                "problems": 10,
                "seeds": 1,
                "pass_at_k": {"1": 0.25},
                "no_correct_share": None,
            },
        ],
        "input_problems": ["runs/x/eval.json: expected a JSON object"],
        "claims": [
            {
                "id": "lemma1",
                "statement": "JSpol as predicted",
                "paper": "Lemma 1",
                "test": "ratio within 10%",
                "untestable": "",
                "levels": {"theory": _level("holds"), "simulate": _level("holds"), "real": _level("inconclusive")},
            },
            {
                "id": "drift_ratio",
                "statement": "ES moves further",
                "paper": "Fig. 3",
                "test": "ratio > 1",
                "untestable": "one model only",
                "levels": {
                    "theory": _level("holds"),
                    "simulate": _level("inconclusive", plots=["../sim/drift.png"]),
                    "real": real,
                },
            },
        ],
        "open_questions": [
            {
                "id": "q",
                "question": "Which is wider?",
                "answer": "ES, by 2 points.",
                "table": [{"method": "es", "pass_at_1": 0.123456, "seed": None}],
            }
        ],
        "lemma_grid": [],
    }
    lines = render_markdown(report).split("\n")
    assert lines[:5] == ["# ES vs GRPO: the paper's claims, checked", "", "```", "first line", "second line"]
    assert lines[5:7] == ["```", ""] and lines[8] == ""
    assert lines[7] == (  # what every reader of REPORT.md is told about the tests and intervals, word for word
        "Verdicts come from the data of this report's inputs: `theory` (exact checks on toy policies), `simulate` "
        "(bandit analogues, over seeds) and `real` (training runs of causal LMs). Each claim states its test: "
        "directional (the 95% interval of a difference lies on the claimed side), equivalence (the whole interval "
        "inside a stated margin), ratio (against the paper's figure), or identity (true for every input: shown, never "
        "counted as evidence). Real-run intervals come from one design, seeds x test prompts shared by every run "
        "(resampled jointly, so differences are paired by prompt) x samples, with Student t over seeds; per-run "
        "numbers use t over seeds. Beside each interval: its design and the smallest difference it detects at 80% "
        "power, next to the paper's effect. Pass@k in points (x100)."
    )

    def block(*expected):  # expected lines, one after the other, somewhere in the text
        at = lines.index(expected[0])
        assert lines[at : at + len(expected)] == list(expected), lines[at : at + len(expected)]

    block(
        "**What this reproduction can decide.** what it decides.",
        "",
        "**Left out of this report** (1, each with the reason):",
        "",
        "- `runs/es9`: a copy of runs/es0",
        "",
        "Runs: `es` x2, `grpo` x1",
        "",
        "Base models, as their runs measured them (mean over seeds):",
        "",
        "| model | task | T | samples x prompts | seeds | Pass@1 | Pass@32 | no correct sample |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        "| `paper-base` | countdown | 0.6 | 32 x 4 | 2 | 6.2 | 50.0 | 70% |",
        "| `diffuse` | math | 1.0 | 8 x 10 | 1 | 25.0 | nan | n/a |",
        "",
        "**Input problems** (claims that needed these are marked 'missing data'):",
        "",
        "- runs/x/eval.json: expected a JSON object",
        "",
        "## All claims",
        "",
        "| claim | paper | test | theory | simulate | real runs | real design |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        "| [JSpol as predicted](#lemma1) | Lemma 1 | ratio within 10% | holds | holds | inconclusive |  |",  # no figure
        "| [ES moves further](#drift_ratio) | Fig. 3 | ratio > 1 | holds | inconclusive | **holds**: 19x [18, 20] | "
        "3 seeds x 64 prompts |",
        "",
    )
    block(
        "## Open questions",
        "",
        "### Which is wider?",
        "",
        "ES, by 2 points.",
        "",
        "| method | pass_at_1 | seed |",
        "| --- | --- | --- |",
        "| es | 0.1235 |  |",
        "",
    )
    block(
        "## Claims one by one",
        "",
        "### JSpol as predicted",
        '<a id="lemma1"></a>',
        "",
        "Paper: Lemma 1.",
        "",
        "- theory: **holds**: n/a",
        "- simulate: **holds**: n/a",
        "- real: **inconclusive**: n/a",
        "",
        "### ES moves further",
        '<a id="drift_ratio"></a>',
        "",
        "Paper: Fig. 3.",
        "",
        "Limit of our miniature: one model only.",
        "",
        "- theory: **holds**: n/a",
        "- simulate: **inconclusive**: n/a",
        "- real: **holds**: 19x [18, 20] (a note)",
        "  - test: ratio test",
        "  - design: 3 seeds x 64 prompts",
        "  - power: detects 2 points at 80%",
        "",
        "![drift.png](drift.png)",
        "",
        "![../sim/drift.png](../sim/drift.png)",
        "",
        "",
    )
    assert render_markdown(report).endswith("![../sim/drift.png](../sim/drift.png)\n\n")
    assert "Lemma 1 on the real model" not in render_markdown(report)


def _grid_row(sigma, members, ratio, ci, s, fisher, share, draws=3, ratio_df=2, se_log=0.02, far=False, gap_lo=-1e-4):
    """A Lemma 1 grid row written by hand; `far`: its JSsucc interval below 0, its JSpol - JSsucc interval below 0
    and its Lemma 2 difference's interval above 0."""
    ci3 = lambda mean, lo, hi: {"mean": mean, "ci": [lo, hi]}
    side = ci3(2e-5, 1e-5, 3e-5)
    return {
        "sigma": sigma,
        "members": members,
        "draws": draws,
        "measured": 0.004,
        "predicted": 0.005,
        "ratio": ratio,
        "ratio_ci": ci,
        "ratio_se_log": se_log,
        "ratio_df": ratio_df,
        "s_measured": s,
        "fisher_trace": fisher,
        "dpi_share": share,
        "jssucc": ci3(-0.002, -0.003, -0.001) if far else ci3(0.001, -0.001, 0.003),
        "jspol_minus_jssucc": ci3(-0.0015, -0.002, -0.001) if far else ci3(0.003, 0.001, 0.005),
        "lemma2": {
            "gap": side,
            "local": side,
            "gap_minus_local": ci3(1.5e-4, 1e-4, 2e-4) if far else ci3(0.0, gap_lo, 1e-4),
        },
    }


def test_the_lemma_grid_section_says_each_row_and_the_summary_computed_by_hand():
    """lemma_grid_lines over rows written by hand. N = 4 at sigma 1, 2, 4 (x 1e-3): ratios 1.02, 1.02 inside the
    regime (s 0.01 and 0.05, the regime's edge; intervals within 1 +- 0.1) and 1.5 outside it (s 0.2, its interval
    wholly outside); N = 8 at
    sigma 1e-3 (ratio 1.0, an interval reaching past 1 +- 0.1; its Lemma 2 interval starts at 0, so holds 0) and a row
    of nulls. By hand: the exponent inside the
    regime is 2 (equal ratios at N = 4), with half-width t_2 / sqrt(sum w x^2), w = 1 / 0.02^2, x = +-log(2)/2;
    over all of N = 4's sigmas 2 + log(1.5 / 1.02) / (2 log 2); the (1 - 1/N) factor at sigma 1e-3 is 1.02 / 1.0 with
    half-width t_2 sqrt(0.02^2 + 0.05^2) on the log scale; tr I the probes' weighted mean (draws x (N - 1))."""
    from scipy.stats import t as student_t

    from escov.paper_checks.report import lemma_grid_lines

    a = _grid_row(1e-3, 4, 1.02, [0.95, 1.05], 0.01, 20000.0, 0.75) | {
        "task": "countdown",
        "temperature": 0.6,
        "max_new_tokens": 32,
        "prompts": 4,
        "samples": 2,
        "center_samples": 8,
    }
    e = _grid_row(2e-3, 4, 1.02, [0.95, 1.05], 0.05, 20000.0, 0.75)  # at the regime's edge: inside
    b = _grid_row(4e-3, 4, 1.5, [1.3, 1.7], 0.2, 40000.0, 0.25, far=True)
    c = _grid_row(
        1e-3, 8, 1.0, [0.85, 1.2], 0.02, 20000.0, 1.0, draws=2, ratio_df=4, se_log=0.05, gap_lo=0.0
    )  # 0 in it
    nulls = {
        "sigma": 2e-3,
        "members": 8,
        "measured": None,
        "predicted": None,
        "ratio": None,
        "ratio_ci": [None, None],
        "s_measured": None,
    }
    training = {"sigma": 0.02, "temperature": 1.0, "s_median": 1.7, "s": [1.5, 1.7, 2.0]}
    lines = lemma_grid_lines([a, e, b, c, nulls], training)
    fisher = (9 * 20000 + 9 * 20000 + 9 * 40000 + 14 * 20000) / 41  # 2.439e+04
    assert lines[:4] == [
        "## The Lemma 1 grid on the real model: implementation check and regime boundary",
        "",
        "Each population's JSpol_N against its own second-order value along the same directions: by Taylor's theorem "
        "that ratio tends to 1 for any smooth model, so the grid is an implementation check and regime boundary (the "
        "measurement and the expansion agree; where the ratio leaves 1, the second-order regime ends), not evidence "
        "for the lemma's expectation.",
        "",
    ]
    intro = lines[4]
    assert intro.startswith(
        "On the runs' own task `countdown` at T = 0.6, 32 new tokens, 4 probe prompts, 2 samples "
        "per member and prompt. Each draw of a row is an antithetic pair of populations "
    )
    assert (
        "from 8 center completions per prompt (whose mean" in intro and f"is {fisher:.4g} over the whole grid." in intro
    )
    assert intro.endswith("Rows with s <= 0.05 (in the regime) decide the verdict.") and lines[5] == ""
    side = "2e-05 [1e-05, 3e-05]"  # in exponent form below 1e-4
    assert lines[6:14] == [
        "| sigma | N | pairs | measured JSpol | predicted | ratio [95%] | width | s measured | in regime | "
        "JSsucc (corrected) | JSpol - JSsucc [95%] | P_pop - P_same [95%] | N p(1-p)^(N-1) JSsucc [95%] |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| 0.001 | 4 | 3 | 0.004 | 0.005 | 1.020 [0.950, 1.050] | 0.100 | 0.01 | yes | 0.001 [-0.001, 0.003] | "
        f"0.003 [0.001, 0.005] | {side} | {side} |",
        f"| 0.002 | 4 | 3 | 0.004 | 0.005 | 1.020 [0.950, 1.050] | 0.100 | 0.05 | yes | 0.001 [-0.001, 0.003] | "
        f"0.003 [0.001, 0.005] | {side} | {side} |",
        f"| 0.004 | 4 | 3 | 0.004 | 0.005 | 1.500 [1.300, 1.700] | 0.400 | 0.2 | no | -0.002 [-0.003, -0.001] | "
        f"-0.0015 [-0.002, -0.001] | {side} | {side} |",
        f"| 0.001 | 8 | 2 | 0.004 | 0.005 | 1.000 [0.850, 1.200] | 0.350 | 0.02 | yes | 0.001 [-0.001, 0.003] | "
        f"0.003 [0.001, 0.005] | {side} | {side} |",
        "| 0.002 | 8 | 1 | n/a | n/a | n/a [n/a, n/a] | n/a | n/a | no | n/a | n/a | n/a | n/a |",
        "",
    ]
    half = student_t.ppf(0.975, 2) / math.sqrt(2 * (math.log(2) / 2) ** 2 / 0.02**2)
    factor_half = student_t.ppf(0.975, 2) * math.hypot(0.02, 0.05)
    assert lines[14:] == [
        "- Exponent of JSpol in sigma inside the regime (intercept per N, 2 rows): "
        f"2.000 [{2 - half:.3f}, {2 + half:.3f}] "
        "(Lemma 1: 2)",
        f"- N = 4: ratio within 1 +- 0.1 at sigma = [0.001, 0.002]; exponent over all its sigmas "
        f"{2 + math.log(1.5 / 1.02) / (2 * math.log(2)):.2f}; the ratio leaves 1 +- 0.1 between s = 0.05 (last inside) "
        "and s = 0.2 (first wholly outside)",
        "- N = 8: ratio within 1 +- 0.1 at sigma = none",
        f"- The (1 - 1/N) factor alone, N = 4 against N = 8 at sigma = [0.001] (tr I cancels): (JSpol_N / (1 - 1/N)) / "
        f"(JSpol_8 / (1 - 1/8)) = 1.020 [{1.02 * math.exp(-factor_half):.3f}, {1.02 * math.exp(factor_half):.3f}]: "
        "**inconclusive** (1 within +-0.1)",
        "- The training runs (sigma = 0.02, sampled at T = 1) measured s = 1.7 (median of 3; range 1.5-2): "
        "outside the regime",
        "- Data processing 0 <= JSsucc_N <= JSpol_N on the same populations: "
        "rows whose JSsucc interval lies below 0: 1 of 4; "
        "rows whose JSpol - JSsucc interval lies below 0: 1 of 4; populations x prompts whose corrected point values "
        "satisfy it: 69% (single populations are noisy: a point value below 0 is sampling error unless its row's "
        "interval says so)",
        "- Lemma 2 on the real population: P_pop - P_same against its local form N p_bar (1 - p_bar)^(N-1) JSsucc_N: "
        "the difference's interval contains 0 in 3 of 4 rows",
    ]
    header = lines[6:8]
    # no task, no JSsucc, no training s; values below 1e-4 in exponent form, one end of the interval unknown
    tiny = nulls | {"sigma": 5e-5, "measured": 4e-5, "predicted": 5e-5, "ratio_ci": [0.9, None], "s_measured": 2e-5}
    bare = lemma_grid_lines([tiny], {"s_median": None})
    assert bare == [
        "## The Lemma 1 grid on the real model: implementation check and regime boundary",
        "",
        "Each population's JSpol_N against its own second-order value along the same directions: by Taylor's theorem "
        "that ratio tends to 1 for any smooth model, so the grid is an implementation check and regime boundary (the "
        "measurement and the expansion agree; where the ratio leaves 1, the second-order regime ends), not evidence "
        "for the lemma's expectation.",
        "",
        *header,
        "| 5e-05 | 8 | 1 | 4e-05 | 5e-05 | n/a [0.900, n/a] | n/a | 2e-05 | yes | n/a | n/a | n/a | n/a |",
        "",
        "- N = 8: ratio within 1 +- 0.1 at sigma = none",
    ]


def test_the_lemma_grid_summary_at_its_edges():
    """lemma_grid_lines where the summary's readings are at their edges: the last s inside 1 +- 0.1 below 1e-4
    (exponent form, as the table writes it), a data-processing share whose percentage rounds at its unit (70%),
    and Lemma 2 intervals ending exactly at 0 (holds it) or with an end unknown (holds nothing, read without error)."""
    from escov.paper_checks.report import lemma_grid_lines

    def lemma2(lo, hi):
        return {
            "gap": {"mean": 0.0, "ci": [0.0, 0.0]},
            "local": {"mean": 0.0, "ci": [0.0, 0.0]},
            "gap_minus_local": {"mean": 0.0, "ci": [lo, hi]},
        }

    inside = _grid_row(1e-3, 4, 1.0, [0.95, 1.05], 2e-5, 20000.0, 0.7) | {"lemma2": lemma2(-1e-4, 0.0)}
    outside = _grid_row(4e-3, 4, 1.5, [1.3, 1.7], 0.2, 20000.0, 0.7) | {"lemma2": lemma2(None, 1e-4)}
    open_end = _grid_row(1e-3, 8, 1.0, [0.95, 1.05], 2e-5, 20000.0, 0.7) | {"lemma2": lemma2(-1e-4, None)}
    lines = lemma_grid_lines([inside, outside, open_end], {"s_median": None})
    assert any(
        "the ratio leaves 1 +- 0.1 between s = 2e-05 (last inside) and s = 0.2 (first wholly outside)" in line
        for line in lines
    ), lines
    assert any("populations x prompts whose corrected point values satisfy it: 70% (" in line for line in lines), lines
    assert lines[-1].endswith("the difference's interval contains 0 in 1 of 3 rows")


def test_base_models_are_one_entry_per_model_task_and_sampling_in_order():
    """bases_of on runs written by hand: runs without a base evaluation (or one without Pass@k) are passed over; a
    seed's first run gives its base (another run of the seed is not counted again); a seed of None is a seed; another
    temperature, sample count or prompt count is another entry; entries sorted by their key as text; Pass@k over
    the seeds that hold each k, in order of k; each seed's values kept beside the mean."""
    from escov.paper_checks.report import bases_of
    from escov.paper_checks.rundir import Run

    def base(ks, correct, temperature=0.6, n=32, problems=4):
        return {
            "base": {
                "temperature": temperature,
                "n": n,
                "num_problems": problems,
                "pass_at_k": ks,
                "per_problem": [{"id": f"p{i}", "correct": c} for i, c in enumerate(correct)],
            }
        }

    def run(seed, evaluation):
        return Run(Path(f"runs/{seed}"), {"model": "m", "task": "countdown", "seed": seed}, eval=evaluation)

    first = base({"1": 0.1, "4": 0.3, "32": 0.5}, [0, 1, 2, 3])
    unseeded = base({"1": 0.3, "32": 0.7}, [0, 0, 1, 1])
    runs = [
        run(0, None),
        run(0, {"final": first["base"]}),
        run(0, {"base": {"n": 32}}),
        run(1, first),
        run(None, unseeded),
        run(1, base({"1": 0.9, "32": 0.9}, [5, 5, 5, 5])),
        run(1, base({"1": 0.2}, [], temperature=1.0)),
        run(1, base({"1": 0.2}, [0, 1], n=64)),
        run(1, base({"1": 0.2}, [0, 1], problems=8)),
        run(2, base({"1": 0.2}, [0, 1], problems=16)),
    ]
    bases = bases_of(Evidence(runs=runs))
    # as text, "16" before "4" before "8" (numbers would put 4, 8, 16)
    assert [(b["temperature"], b["samples"], b["problems"]) for b in bases] == [
        (0.6, 32, 16),
        (0.6, 32, 4),
        (0.6, 32, 8),
        (0.6, 64, 4),
        (1.0, 32, 4),
    ]
    bases = bases[1:]
    both = bases[0]
    assert (both["model"], both["task"], both["seeds"]) == ("m", "countdown", 2)
    assert list(both["pass_at_k"]) == ["1", "4", "32"]
    assert both["pass_at_k"] == {"1": pytest.approx(0.2), "4": pytest.approx(0.3), "32": pytest.approx(0.6)}
    assert both["no_correct_share"] == pytest.approx((1 / 4 + 2 / 4) / 2)
    assert both["per_seed"] == [
        {"seed": 1, "pass_at_k": first["base"]["pass_at_k"], "no_correct_share": 0.25},
        {"seed": None, "pass_at_k": unseeded["base"]["pass_at_k"], "no_correct_share": 0.5},
    ]
    assert np.isnan(bases[3]["no_correct_share"])  # no per-problem counts


def test_report_md_places_each_sections_own_text_in_order():
    """render_markdown over the published report.json: ES's regime line, the premise record's section, the table of
    what would decide the rest (against the published answer given), the Lemma 1 grid's section with the training
    runs' s, each as its own renderer writes it, one after the other."""
    from escov.paper_checks.premise_record import render as render_premise
    from escov.paper_checks.real_checks import es_regime_line
    from escov.paper_checks.report import lemma1_training, lemma_grid_lines, render_markdown
    from escov.paper_checks.summary import undecided_markdown

    path = Path(__file__).resolve().parents[2] / "results" / "report.json"  # the published report
    report = json.loads(path.read_text(encoding="utf-8"))
    published = json.loads(path.read_text(encoding="utf-8"))  # set beside itself: each part's answer filled in
    assert undecided_markdown(report, published) != undecided_markdown(report, None)
    training = lemma1_training(report)
    assert (
        report["es_regime"] and report["premise"] and report["lemma_grid"]
    )  # training: None when lemma1 is decided as stated
    text = render_markdown(report, published)
    sections = [
        [es_regime_line(report["es_regime"]), ""],
        render_premise(report["premise"]),
        ["## All claims"],
        undecided_markdown(report, published),
        lemma_grid_lines(report["lemma_grid"], training) + [""],
        ["## Claims one by one"],
    ]
    assert f"\n{es_regime_line(report['es_regime'])}\n\n" in text  # its own paragraph
    at = 0
    for lines in sections:
        block = "\n".join(lines)
        assert text.find(block, at) > at, lines[:2]
        at = text.find(block, at) + len(block)
