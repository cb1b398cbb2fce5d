"""A claim whose runs the reproduction's budget never plans reads "not run in this budget", not "missing data"; a
planned run whose data are absent or damaged stays "missing data". The budget's planned needs come from its plan."""

from __future__ import annotations

import json

import numpy as np
import pytest

from escov.paper_checks.real_checks import CURVE, HELDOUT, PROBE, thresholded
from escov.paper_checks.report import build_report
from escov.paper_checks.reproduce.budgets import BUDGETS
from escov.paper_checks.reproduce.plan import planned_needs
from escov.paper_checks.verdict import MISSING, NOT_RUN
from tests.paper_checks.test_paper_checks_verdicts import make_run


@pytest.fixture
def p_base():
    return np.random.default_rng(0).uniform(0.02, 0.5, 40)


def test_the_budgets_planned_needs_are_its_runs_and_their_measurements():
    small, answer = planned_needs(BUDGETS["small"]), planned_needs(BUDGETS["answer-paper-regime"])
    # the quick look: ES and GRPO with curves, no held-out task, no thresholded checkpoints, no probe
    assert small == {("es", ""), ("grpo", ""), ("es", CURVE), ("grpo", CURVE)}
    # the answer: its schedules and sampled members; ES and GRPO thresholded at the sparsity its threshold_keep names
    assert {name for name, _ in answer} == {"es", "grpo", "es-grpo", "grpo-es", "es[sampled]"}
    (keep,) = BUDGETS["answer-paper-regime"].common["threshold_keep"]
    assert {n for n in answer if "thresholded" in n[1]} == {
        ("es", thresholded(100 - keep)),
        ("grpo", thresholded(100 - keep)),
    }
    assert ("es", PROBE) in answer and ("grpo", PROBE) not in answer and ("es", HELDOUT) in answer
    # the full budget plans every ablation, null and the population sweep
    full = {name for name, _ in planned_needs(BUDGETS["full"])}
    assert {"es[null]", "es[two-point]", "es[no-zscore,rescaled]", "es[bf16]"} <= full
    # the answer on the premise's base: ES, GRPO, ES inside Lemma 1's regime and its random-z null arm, no schedules
    assert {name for name, _ in planned_needs(BUDGETS["answer"])} == {"es", "grpo", "es[small-sigma]", "es[null]"}


def quick_look_run(root, name, algo, seed, p_base):
    """A run as the quick look writes it: no held-out evaluation (its budget sets no held-out task)."""
    run = make_run(root, name, algo, seed, p_base, np.minimum(p_base + 0.1, 1))
    ev = json.loads((run / "eval.json").read_text())
    del ev["heldout"]
    (run / "eval.json").write_text(json.dumps(ev))
    return run


def test_claims_outside_the_budget_say_not_run(tmp_path, p_base):
    dirs = [quick_look_run(tmp_path, f"{a}{s}", a, s, p_base) for a in ("es", "grpo") for s in (0, 1)]
    out = tmp_path / "report"
    report = build_report(dirs, out, planned=planned_needs(BUDGETS["small"]))
    real = {c["id"]: c["levels"]["real"] for c in report["claims"]}
    for claim in (
        "update_sparsity",
        "zscore_essential",
        "one_point_vs_two_point",
        "schedules_pareto",
        "population_size",
        "thresholded_pass1",
        "no_forgetting",
        "lemma2",
    ):
        assert real[claim]["status"] == NOT_RUN, (claim, real[claim])
        assert "this budget plans no" in real[claim]["note"]
    assert "es[null] runs" in real["update_sparsity"]["note"]
    assert "es runs with held-out evaluations" in real["no_forgetting"]["note"]
    text = (out / "REPORT.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| [Most non-zero ES update entries"))
    assert row.split(" | ")[5] == NOT_RUN  # the real-run column; simulate's (no summary given) says missing data
    assert f"- update_sparsity: {NOT_RUN} (this budget plans no es[null] runs" in text  # what would decide the rest
    mechanism = next(q for q in report["open_questions"] if q["id"] == "mechanism")
    assert mechanism["answer"].startswith(f"{NOT_RUN} (this budget plans no es[sampled] runs)")


def test_a_planned_run_without_its_data_is_missing_data(tmp_path, p_base):
    dirs = [make_run(tmp_path, f"{a}0", a, 0, p_base, p_base) for a in ("es", "grpo")]
    (dirs[1] / "metrics.jsonl").write_text("")  # grpo's per-step metrics lost: no entropy, no drift
    report = build_report(dirs, tmp_path / "report", planned=planned_needs(BUDGETS["small"]))
    real = {c["id"]: c["levels"]["real"] for c in report["claims"]}
    assert real["entropy_collapse"]["status"] == MISSING and real["drift_ratio"]["status"] == MISSING


def test_without_a_budget_nothing_is_said_to_be_not_run(tmp_path, p_base):
    dirs = [make_run(tmp_path, f"{a}0", a, 0, p_base, p_base) for a in ("es", "grpo")]
    report = build_report(dirs, tmp_path / "report")
    statuses = {c["levels"]["real"]["status"] for c in report["claims"]}
    assert NOT_RUN not in statuses and MISSING in statuses


def test_each_budget_is_set_beside_the_report_published_from_its_base():
    from escov.paper_checks.reproduce.budgets import published_for
    from escov.paper_checks.summary import PUBLISHED

    assert published_for(BUDGETS["answer"]) == published_for(BUDGETS["small"]) == PUBLISHED  # the quick look's too
    assert published_for(BUDGETS["answer-paper-regime"]) == PUBLISHED.parent / "paper-regime" / "report.json"
    assert published_for(BUDGETS["answer-diffuse"]) == PUBLISHED.parent / "diffuse" / "report.json"
    for name in ("answer", "answer-paper-regime", "answer-diffuse"):  # each a report the repository holds
        assert published_for(BUDGETS[name]).is_file(), name
