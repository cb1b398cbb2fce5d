"""thresholded_pass1 is reported at the sparsity its statement names (the paper's, THRESHOLDED_PERCENT) and read from
the checkpoints thresholded there; runs thresholded at other sparsities only give no verdict and are named."""

from __future__ import annotations

import json

import numpy as np
import pytest

from escov.paper_checks.real_checks import REAL_CHECKS
from escov.paper_checks.report import build_report, collect
from escov.paper_checks.reproduce.budgets import BUDGETS
from escov.paper_checks.reproduce.plan import planned_needs
from escov.paper_checks.verdict import HOLDS, MISSING, NOT_RUN
from escov.theory import paper
from escov.theory.claims import BY_ID, THRESHOLDED_PERCENT
from escov.theory.decisions import over_seeds
from tests.paper_checks.test_paper_checks_verdicts import make_run


@pytest.fixture
def p_base():
    return np.random.default_rng(0).uniform(0.02, 0.5, 40)


def _es_runs(root, p_base, rows_of_seed):
    """ES runs whose eval.json holds the thresholded rows rows_of_seed(final Pass@1) gives."""
    dirs = []
    for seed in range(3):
        run = make_run(root, f"es{seed}", "es", seed, p_base, p_base)
        ev = json.loads((run / "eval.json").read_text())
        ev["thresholded"] = rows_of_seed(seed, ev["final"]["pass_at_k"]["1"])
        (run / "eval.json").write_text(json.dumps(ev))
        dirs.append(run)
    return dirs


def test_the_statement_names_the_papers_sparsity():
    assert THRESHOLDED_PERCENT == pytest.approx(100 * paper.THRESHOLDED_SPARSITY)
    assert f"({THRESHOLDED_PERCENT:g}% sparsity)" in BY_ID["thresholded_pass1"].statement
    assert "about" not in BY_ID["thresholded_pass1"].statement


def test_decided_at_the_named_sparsity_from_its_own_checkpoints(tmp_path, p_base):
    """Rows at 50% and at the named sparsity: the verdict reads only the latter, and says at which sparsity."""
    change = {0: 0.004, 1: -0.002, 2: 0.001}

    def rows(seed, final):
        return [
            {"keep_percent": 50.0, "sparsity_percent": 50.0, "pass_at_1": final - 0.3},
            {
                "keep_percent": 100 - THRESHOLDED_PERCENT,
                "sparsity_percent": THRESHOLDED_PERCENT,
                "pass_at_1": final + change[seed],
            },
        ]

    v = REAL_CHECKS["thresholded_pass1"](collect(_es_runs(tmp_path, p_base, rows)))
    est = over_seeds(list(change.values()))
    assert v.status == HOLDS and v.evidence["diffs"] == pytest.approx(list(change.values()), abs=1e-12)
    label = f"Pass@1 change at {THRESHOLDED_PERCENT:g}% sparsity"
    assert v.ours.startswith(label) and v.evidence[label]["mean"] == pytest.approx(est["mean"], abs=1e-12)


def test_runs_thresholded_elsewhere_only_give_no_verdict_and_are_named(tmp_path, p_base):
    def rows(seed, final):
        return [{"keep_percent": 50.0, "sparsity_percent": 50.0, "pass_at_1": final}]

    dirs = _es_runs(tmp_path, p_base, rows)
    v = REAL_CHECKS["thresholded_pass1"](collect(dirs))
    assert v.status == MISSING and "thresholded ES at 50% sparsity only" in v.note
    assert f"{THRESHOLDED_PERCENT:g}%-sparsity" in v.note
    # in the answer's report (its budget thresholds at 50% only): not run in this budget, not a result
    dirs += [make_run(tmp_path, f"grpo{s}", "grpo", s, p_base, p_base) for s in range(3)]
    report = build_report(dirs, tmp_path / "report", planned=planned_needs(BUDGETS["answer"]))
    real = next(c for c in report["claims"] if c["id"] == "thresholded_pass1")["levels"]["real"]
    assert real["status"] == NOT_RUN and "50% sparsity only" in real["note"] and real["ours"] == "n/a"
