"""A report that refuses what it cannot trust (paper_checks/trust.py), on run directories written as files:
a directory given twice and a copy of a run counted once, runs with the same moved final weights counted
once, an eval.json from another seed and one whose Pass@k its counts do not give left out, each named at
the top of REPORT.md and in report.json, and a claim on runs whose inputs changed mid-run saying so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from escov.llm.rollout import derive_seed
from escov.paper_checks.real_checks import REAL_CHECKS
from escov.paper_checks.report import build_report, collect, real_verdict
from escov.theory.claims import BY_ID
from tests.paper_checks.test_paper_checks_verdicts import make_run

SETTINGS = {"eval_samples": 32, "eval_temperature": 1.0, "eval_ks": [1, 16, 32], "max_completion_length": 24}


def _run(root: Path, name: str, algo: str, seed: int, drift: float) -> Path:
    """make_run's synthetic run, with the evaluation settings in config.json and the seed and sampling
    settings in eval.json that llm/train.py writes (derive_seed(seed, "eval") mod 2^31)."""
    p = np.linspace(0.05, 0.6, 40)
    run = make_run(root, name, algo, seed, p, p, drift=drift)
    config = json.loads((run / "config.json").read_text()) | SETTINGS
    (run / "config.json").write_text(json.dumps(config))
    ev = json.loads((run / "eval.json").read_text())
    for part in ("base", "final"):
        ev[part] |= {"seed": derive_seed(seed, "eval") % 2**31, "temperature": 1.0, "max_new_tokens": 24}
        ev["heldout"][part] |= {"seed": derive_seed(seed, "heldout") % 2**31, "temperature": 1.0}
    (run / "eval.json").write_text(json.dumps(ev))
    return run


@pytest.fixture
def runs(tmp_path):
    """ES and GRPO, seeds 0-2, ES drifting about 10x GRPO."""
    return [
        _run(tmp_path, f"{algo}{seed}", algo, seed, (1e-2 if algo == "es" else 1e-3) * (1 + 0.1 * seed))
        for algo in ("es", "grpo")
        for seed in (0, 1, 2)
    ]


def test_a_directory_given_twice_or_copied_is_named_and_counted_once(runs, tmp_path):
    alone = REAL_CHECKS["drift_ratio"](collect(runs))
    copy = tmp_path / "es0-copy"
    shutil.copytree(runs[0], copy)
    ev = collect(runs + [runs[0], copy])
    assert [r.path for r in ev.runs] == runs
    assert [(e["what"], e["reason"]) for e in ev.excluded] == [
        (str(runs[0]), f"given twice (the same directory as {runs[0]}); counted once"),
        (str(copy), f"the same settings, seed (0) and inputs as {runs[0]} (a copy or a rerun of it); counted once"),
    ]
    again = REAL_CHECKS["drift_ratio"](ev)
    assert (again.status, again.ours) == (alone.status, alone.ours)
    assert again.evidence["es"] == alone.evidence["es"] and len(again.evidence["es"]) == 3


def test_runs_with_the_same_moved_final_weights_are_counted_once(runs):
    for run in runs[:2]:  # es0 and es1: other seeds, the same final weights
        ev = json.loads((run / "eval.json").read_text())
        (run / "eval.json").write_text(json.dumps(ev | {"fingerprint": {"final_weights_sha256": "ab" * 32}}))
    ev = collect(runs)
    assert runs[1] not in [r.path for r in ev.runs]
    reason = f"the same final weights (sha256 {'ab' * 6}) as {runs[0]}; counted once"
    assert ev.excluded == [{"what": str(runs[1]), "reason": reason}]


def test_runs_whose_weights_never_moved_share_the_base_weights_and_all_count(runs):
    """Seeds whose updates were all zero end at the base weights: the same hash, yet different runs."""
    for run in runs[:3]:
        ev = json.loads((run / "eval.json").read_text())
        (run / "eval.json").write_text(json.dumps(ev | {"fingerprint": {"final_weights_sha256": "ab" * 32}}))
        rows = [json.loads(line) | {"drift_rel": 0.0} for line in (run / "metrics.jsonl").read_text().splitlines()]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev = collect(runs)
    assert ev.excluded == [] and [r.path for r in ev.runs] == runs


def test_an_eval_json_from_another_seed_is_named_and_left_out(runs):
    shutil.copy(runs[1] / "eval.json", runs[0] / "eval.json")  # es1's evaluation in es0
    ev = collect(runs)
    es0 = next(r for r in ev.runs if r.path == runs[0])
    assert es0.eval is None and es0.metrics  # the run's metrics still count
    [excluded] = ev.excluded
    assert excluded["what"] == str(runs[0] / "eval.json")
    assert excluded["reason"].startswith(
        f"base: seed is {derive_seed(1, 'eval') % 2**31} but the run's settings give {derive_seed(0, 'eval') % 2**31}"
    )


def test_counts_that_do_not_give_their_pass_at_k_are_named(runs):
    ev = json.loads((runs[3] / "eval.json").read_text())
    written = ev["final"]["pass_at_k"]["16"]
    ev["final"]["pass_at_k"]["16"] = written + 0.01  # a hand-edited value
    (runs[3] / "eval.json").write_text(json.dumps(ev))
    [excluded] = collect(runs).excluded
    assert excluded["what"] == str(runs[3] / "eval.json")
    named = f"final: Pass@16 written {written + 0.01:.6g}, its per-problem counts give {written:.6g}"
    assert named in excluded["reason"]


def test_every_exclusion_is_listed_at_the_top_of_the_report(runs, tmp_path):
    shutil.copy(runs[1] / "eval.json", runs[0] / "eval.json")
    report = build_report(runs + [runs[2]], tmp_path / "report")
    assert [e["what"] for e in report["excluded"]] == [str(runs[0] / "eval.json"), str(runs[2])]
    assert [e["what"] for e in json.loads((tmp_path / "report" / "report.json").read_text())["excluded"]] == [
        str(runs[0] / "eval.json"),
        str(runs[2]),
    ]
    markdown = (tmp_path / "report" / "REPORT.md").read_text()
    top = markdown.index("**Left out of this report** (2")
    assert top < markdown.index("## All claims")
    assert f"- `{runs[2]}`: given twice" in markdown and f"- `{runs[0] / 'eval.json'}`: base: seed is" in markdown


def test_a_claim_on_runs_whose_inputs_changed_mid_run_says_so(runs):
    config = json.loads((runs[0] / "config.json").read_text())
    history = [
        {"config": config, "changed": [], "from_step": 0},
        {
            "config": config,
            "from_step": 4,
            "changed": [{"setting": "code", "was": "commit aaaa", "now": "commit bbbb"}],
        },
    ]
    (runs[0] / "config_history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in history))
    verdict = real_verdict(BY_ID["drift_ratio"], collect(runs))
    assert "inputs changed mid-run: es0 (after step 4: code commit aaaa -> commit bbbb)" in verdict.note


def test_a_curve_point_read_from_the_runs_own_evaluation_must_be_that_evaluation(runs):
    """llm/curve.py takes the base and final points from eval.json when measured alike (source "eval.json base"
    / "eval.json final"): such a point is accepted when it is that evaluation (its eval seed, not the curve's) and
    named when its counts or seed are another's."""
    from escov.paper_checks.trust import curve_contradiction

    [run] = [r for r in collect(runs).runs if r.path == runs[0]]
    for label in ("base", "final"):
        run.eval[f"{label}_greedy"] = run.eval[label] | {"n": 1, "temperature": 0.0}
    point = {"step": 0, "sampled": run.eval["base"], "greedy": run.eval["base_greedy"], "source": "eval.json base"}
    run.curve = [point]
    assert curve_contradiction(run) is None
    other = [dict(row) for row in run.eval["base"]["per_problem"]]
    other[0]["correct"] = other[0]["correct"] + 1
    run.curve = [point | {"sampled": run.eval["base"] | {"per_problem": other}}]
    assert curve_contradiction(run) == "step 0 sampled: its source is eval.json base, which it is not"
    run.curve = [point | {"source": "eval.json final"}]
    assert curve_contradiction(run) == "step 0 sampled: its source is eval.json final, which it is not"
    run.curve = [point | {"source": "a notebook"}]
    assert curve_contradiction(run) == "step 0: unknown source 'a notebook'"
