"""How paper_checks/report.py assembles a report's verdicts and answers, on inputs written by hand: the Pass@k a
claim reads that the runs' evaluations lack, a verdict turned "not run in this budget" only for needs the budget
does not plan, an open question's answer when its runs are unplanned or its data incomplete, a real-run check that
fails on a partial run, runs whose inputs changed mid-run, the lemma1 record's training summary; and a whole report
written as the record it returns."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from escov.paper_checks.evidence import Evidence
from escov.paper_checks.open_questions import ANSWERS, OPEN_QUESTIONS
from escov.paper_checks.real_checks import REAL_CHECKS
from escov.paper_checks.report import (
    answer,
    build_report,
    collect,
    ks_missing,
    lemma1_training,
    needs_ks_note,
    not_run,
    real_verdict,
    render_markdown,
)
from escov.paper_checks.rundir import Run, RunDirError
from escov.paper_checks.verdict import HOLDS, MISSING, NOT_RUN, NOT_TESTABLE, Verdict
from escov.theory.claims import BY_ID, CLAIMS
from tests.paper_checks.test_paper_checks_verdicts import make_run
from tests.paper_checks.test_premise_record import runs  # noqa: F401  (the fixture: runs with curves)

# the premise's positive control (premise.py's control.json) as the report reads it
CONTROL = {
    "split": "validation",
    "verdict": "narrowed",
    "base": {"name": "b"},
    "seeds": [300, 301],
    "prompts": 128,
    "samples": 128,
    "steps": 300,
    "plateau": {"a": {"reached": True}},
    "endpoints": {
        "pass@32": {"mean": -0.07, "lo": -0.12, "hi": -0.02},
        "no_correct": {"mean": 0.06},
        "distinct": {"mean": -0.9},
        "families": {"other": {"lost": 29}},
    },
}


def _run(name: str, ks_base=(1, 16), ks_final=(1, 16), changed=()) -> Run:
    ev = {
        "base": {"pass_at_k": {str(k): 0.5 for k in ks_base}},
        "final": {"pass_at_k": {str(k): 0.5 for k in ks_final}},
    }
    return Run(Path("runs") / name, {"algo": "grpo", "seed": 0}, metrics=[{"step": 1}], eval=ev, changed=list(changed))


def test_the_pass_at_k_missing_is_each_k_some_runs_base_or_final_evaluation_lacks():
    ev = Evidence(
        runs=[
            _run("a", ks_final=(1, 16, 32)),
            _run("b", ks_base=(1, 16, 32)),
            Run(Path("runs/c"), {"algo": "es"}, eval=None),
            Run(Path("runs/d"), {"algo": "es"}, eval={"heldout": {}}),
        ]
    )
    assert ks_missing(ev, [1, 16]) == []
    assert ks_missing(ev, [1, 16, 32, 64]) == [32, 64]  # a's base and b's final lack 32; every run lacks 64
    assert ks_missing(Evidence(runs=[_run("a", ks_base=(1, 32), ks_final=(1, 16, 32))]), [16, 32]) == [16]
    assert ks_missing(Evidence(runs=[_run("a", ks_base=(1, 16, 32), ks_final=(1, 16))]), [16, 32]) == [
        32
    ]  # final alone
    no_ks = Run(Path("runs/e"), {"algo": "es"}, eval={"base": {"n": 4}, "final": {"pass_at_k": {"1": 0.5}}})
    assert ks_missing(Evidence(runs=[no_ks]), [1, 16]) == [1, 16]  # an evaluation without Pass@k lacks every k
    assert needs_ks_note([16, 32]) == (
        "needs Pass@16, Pass@32, which these runs' evaluations do not hold "
        "(train with eval_ks including 16, 32 and eval_samples >= 32)"
    )
    assert needs_ks_note([64]) == (
        "needs Pass@64, which these runs' evaluations do not hold (train with eval_ks "
        "including 64 and eval_samples >= 64)"
    )


def test_missing_data_reads_not_run_only_for_needs_the_budget_does_not_plan():
    def missing():
        return Verdict(
            "drift_ratio", MISSING, "n/a", note="needs a probe", evidence={"needs": [["es", "a probe"], ["grpo", ""]]}
        )

    assert not_run(missing(), None).status == MISSING  # no budget: nothing is "not run"
    assert not_run(missing(), {("es", "a probe"), ("grpo", "")}).status == MISSING  # planned, yet missing
    v = not_run(missing(), {("es", "a probe")})
    assert (v.status, v.note) == (NOT_RUN, "this budget plans no grpo runs (needs a probe)")
    v = not_run(missing(), set())
    assert v.note == "this budget plans no es runs with a probe; no grpo runs (needs a probe)"
    held = Verdict("drift_ratio", HOLDS, "19x", evidence={"needs": [["es", ""]]})
    assert not_run(held, set()).status == HOLDS  # a verdict with data stays as it is
    assert not_run(Verdict("drift_ratio", MISSING, "n/a", note="x"), set()).status == MISSING  # no needs named


def test_a_real_verdict_without_data_says_why(monkeypatch):
    ev = Evidence(runs=[_run("a"), _run("b", changed=["lr at step 3"])])
    v = real_verdict(BY_ID["dpi"], ev)  # no real-run check: theory and simulate check it
    assert (v.claim_id, v.status, v.ours, v.note) == (
        "dpi",
        NOT_TESTABLE,
        "n/a",
        "checked exactly by theory and along training by simulate",
    )
    v = real_verdict(BY_ID["drift_ratio"], Evidence())
    assert (v.claim_id, v.status, v.ours, v.note) == ("drift_ratio", MISSING, "n/a", "no run directories given")
    v = real_verdict(BY_ID["es_passk_above_grpo"], ev)  # reads Pass@16 and Pass@32; the runs hold 1 and 16
    assert (v.claim_id, v.status, v.ours) == ("es_passk_above_grpo", MISSING, "n/a")
    assert v.note == needs_ks_note([32]) + "; inputs changed mid-run: b (lr at step 3)"

    def partial(_ev):
        raise KeyError("per_problem")

    monkeypatch.setitem(REAL_CHECKS, "drift_ratio", partial)
    v = real_verdict(BY_ID["drift_ratio"], Evidence(runs=[_run("a")]))
    assert (v.claim_id, v.status, v.ours) == ("drift_ratio", MISSING, "n/a")
    assert v.note == "run data incomplete for this check: KeyError: 'per_problem'"
    monkeypatch.setitem(REAL_CHECKS, "drift_ratio", lambda _ev: Verdict("drift_ratio", HOLDS, "19x", note=""))
    assert real_verdict(BY_ID["drift_ratio"], ev).note == "inputs changed mid-run: b (lr at step 3)"
    two = Evidence(runs=[_run("b", changed=["lr at step 3"]), _run("c", changed=["seed at step 5"])])
    assert (
        real_verdict(BY_ID["drift_ratio"], two).note == "inputs changed mid-run: b (lr at step 3); c (seed at step 5)"
    )
    monkeypatch.setitem(
        REAL_CHECKS,
        "drift_ratio",
        lambda _ev: Verdict("drift_ratio", MISSING, "n/a", note="needs x", evidence={"needs": [["es", ""]]}),
    )
    v = real_verdict(BY_ID["drift_ratio"], Evidence(runs=[_run("a")]), planned=set())
    assert (v.status, v.note) == (NOT_RUN, "this budget plans no es runs (needs x)")


def test_an_open_questions_answer_names_what_is_missing(monkeypatch):
    ev = Evidence(runs=[_run("a")])

    def raises(err):
        def fn(_ev):
            raise err

        return fn

    for err, says in [
        (KeyError("32"), needs_ks_note([32])),
        (KeyError("per_problem"), "run data incomplete for this question (KeyError: 'per_problem')"),
        (KeyError(), "run data incomplete for this question (KeyError: )"),
        (TypeError("t"), "run data incomplete for this question (TypeError: t)"),
        (ValueError("v"), "run data incomplete for this question (ValueError: v)"),
        (ZeroDivisionError("z"), "run data incomplete for this question (ZeroDivisionError: z)"),
        (IndexError("i"), "run data incomplete for this question (IndexError: i)"),
    ]:
        monkeypatch.setitem(ANSWERS, "zero_success", raises(err))
        assert answer("zero_success", ev) == {"answer": f"{MISSING}: {says}", "table": []}
    monkeypatch.setitem(ANSWERS, "mechanism", lambda _ev: {"answer": "greedy wins", "table": [{"a": 1}]})
    assert (
        answer("mechanism", ev)
        == answer("mechanism", ev, {("es[sampled]", "")})
        == {"answer": "greedy wins", "table": [{"a": 1}]}
    )
    assert answer("mechanism", ev, set()) == {
        "answer": f"{NOT_RUN} (this budget plans no es[sampled] runs): greedy wins",
        "table": [{"a": 1}],
    }
    monkeypatch.setitem(ANSWERS, "lemma1_validity", lambda _ev: {"answer": "ok", "table": []})
    assert (
        answer("lemma1_validity", ev, set())["answer"]
        == f"{NOT_RUN} (this budget plans no es runs with the Lemma 1 probe): ok"
    )


def test_the_lemma1_records_training_summary_is_its_real_evidences():
    def claim(cid, real):
        return {"id": cid, "levels": {"real": real}}

    training = {"s_median": 1.7, "s": [1.5, 1.7, 2.0]}
    other = claim("drift_ratio", {"evidence": {"training": {"s_median": 9.0}}})
    assert lemma1_training({"claims": [other, claim("lemma1", {"evidence": {"training": training}})]}) == training
    assert lemma1_training({"claims": [claim("lemma1", {"evidence": {}})]}) is None
    assert lemma1_training({"claims": [claim("lemma1", {})]}) is None
    assert lemma1_training({"claims": [other]}) is None and lemma1_training({}) is None


def test_a_report_writes_the_record_it_returns_and_its_markdown(tmp_path, monkeypatch):
    """build_report over one ES and one GRPO run: report.json holds the returned record, REPORT.md its rendering,
    nothing else is left beside the report, whose missing parents are made, and nothing is built in the system's
    temporary folder (the report is built beside its folder, so that moving it in is a rename); the record lists
    the runs, every claim in the registry's order with its statement, paper figure and test, every open question,
    each drawn plot as a file, a claim's real-run plots as the registry names them, and (one seed a side)
    intervals over seeds that are not finite as null, listed."""
    p = np.random.default_rng(0).uniform(0.02, 0.5, 40)
    dirs = [make_run(tmp_path / "runs", f"{a}0", a, 0, p, np.clip(p + 0.1, 0, 1)) for a in ("es", "grpo")]
    out = tmp_path / "new" / "deeper" / "rep"  # two missing parents made too
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-system-temporary-folder"))  # absent: using it fails
    report = build_report(dirs, out, purpose="what it decides")
    text = (out / "report.json").read_text(encoding="utf-8")
    assert json.loads(text) == report and "NaN" not in text
    assert (out / "REPORT.md").read_text(encoding="utf-8") == render_markdown(report)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["new", "runs"] and list(out.parent.iterdir()) == [
        out
    ]  # nothing else
    assert (report["purpose"], report["excluded"], report["input_problems"], report["lemma_grid"]) == (
        "what it decides",
        [],
        [],
        [],
    )
    assert report["runs"] == [
        {"path": str(dirs[0]), "variant": "es", "seed": 0, "model": "base"},
        {"path": str(dirs[1]), "variant": "grpo", "seed": 0, "model": "base"},
    ]
    assert [(b["model"], b["seeds"]) for b in report["bases"]] == [("base", 1)] and "premise" not in report
    assert report["es_regime"] == {"measured": False, "s_limit": 0.05}
    assert "drift_per_layer" in report["plots"] and "js" not in report["plots"]  # no grid: no Lemma 1 plot
    assert all((out / name).is_file() for name in report["plots"].values())
    assert [c["id"] for c in report["claims"]] == [c.id for c in CLAIMS]
    for c in report["claims"]:
        claim = BY_ID[c["id"]]
        assert (c["statement"], c["paper"], c["test"], c["untestable"]) == (
            claim.statement,
            claim.paper,
            claim.describe_test(),
            claim.untestable,
        )
        assert set(c["levels"]) == {"theory", "simulate", "real"}
        assert c["levels"]["real"]["plots"] == [report["plots"][k] for k in claim.plots if k in report["plots"]]
    real = {c["id"]: c["levels"]["real"] for c in report["claims"]}
    assert real["drift_ratio"]["plots"] == ["drift_per_layer.png"] and real["lemma1"]["plots"] == []
    at = [c.id for c in CLAIMS].index("drift_ratio")  # one seed: its interval's upper end is infinite
    assert (
        real["drift_ratio"]["interval"][1] is None and f"claims[{at}].levels.real.interval[1]" in report["non_finite"]
    )
    assert [(q["id"], q["question"]) for q in report["open_questions"]] == list(OPEN_QUESTIONS)
    assert all({"answer", "table"} <= set(q) for q in report["open_questions"])
    assert isinstance(report["summary"], list) and report["summary"]
    again = build_report(dirs[:1], out)  # rebuilt into its folder, without a purpose: replaced
    assert again["purpose"] == "" and json.loads((out / "report.json").read_text(encoding="utf-8")) == again
    assert [r["variant"] for r in again["runs"]] == ["es"] and "**What this reproduction can decide.**" not in (
        out / "REPORT.md"
    ).read_text(encoding="utf-8")


def test_the_evidence_is_the_usable_runs_and_the_side_files_given(tmp_path):
    """collect: a run with metrics and no evaluation is usable; a theory and a simulate file given are read into
    the evidence; with no usable run the error names how many were given and each one's problem, separated by
    "; ", cut at 1500 characters."""
    run = tmp_path / "es0"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"algo": "es", "task": "countdown", "seed": 0}))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "reward_mean": 0.5}) + "\n")
    theory = [{"name": "lemma1/exact", "holds": True}]
    (tmp_path / "theory.json").write_text(json.dumps(theory))
    (tmp_path / "summary.json").write_text(json.dumps({"experiments": {"x": {"name": "x", "claims": []}}}))
    ev = collect([run], tmp_path / "theory.json", tmp_path / "summary.json")
    assert [(r.name, r.eval) for r in ev.runs] == [("es0", None)] and ev.excluded == []
    assert ev.problems == [f"{run / 'eval.json'}: missing"]  # said, not fatal
    assert ev.theory == theory and ev.simulate == {"x": {"name": "x", "claims": []}}
    without = collect([run])
    assert (without.theory, without.simulate) == (None, None)

    absent = [tmp_path / "a", tmp_path / "b"]
    with pytest.raises(RunDirError) as err:
        collect(absent)
    head = "no usable run directory among the 2 given (none has a readable config.json with metrics or evaluations): "
    assert str(err.value).startswith(head) and str(err.value).count("; ") == 1
    assert str(err.value)[len(head) :].split("; ") == [
        f"run directory {a} does not exist or is not a directory" for a in absent
    ]
    many = [tmp_path / f"missing-run-directory-{i:03d}" for i in range(60)]
    with pytest.raises(RunDirError) as err:
        collect(many)
    assert str(err.value).startswith(head.replace(" 2 ", " 60 ")) and len(str(err.value)) == len(head) + 1 + 1500


def test_with_a_lemma_grid_the_reports_lemma1_figure_is_the_grids_and_without_one_the_runs_probes(tmp_path, figures):
    """build_report hands its grid to the Lemma 1 figure: with one, the two panels of paper_checks/plots.py's
    lemma1_grid_plot (JSpol against sigma, the ratio against s); without one, the runs' probe prompts, which these
    runs lack (no figure)."""
    from tests.paper_checks.test_report_rendering import _grid_row

    def titles(figure) -> set[str]:
        return {ax.get_title() for ax in figure.axes}

    run_dirs = [make_run(tmp_path / "runs", f"{algo}0", algo, 0, [0.2] * 8, [0.3] * 8) for algo in ("es", "grpo")]
    grid = [
        _grid_row(1e-3, 4, 1.0, [0.95, 1.05], 0.01, 20000.0, 0.75),
        _grid_row(4e-3, 4, 1.5, [1.3, 1.7], 0.2, 20000.0, 0.5),
    ]
    with_grid = build_report(run_dirs, tmp_path / "with-grid", lemma_grid=grid)
    assert with_grid["plots"]["js"] == "js_measured_vs_predicted.png"
    assert "where the O(sigma^4) term takes over" in set().union(*map(titles, figures))
    figures.clear()
    without = build_report(run_dirs, tmp_path / "without", lemma_grid=None)
    assert "js" not in without["plots"]
    assert "where the O(sigma^4) term takes over" not in set().union(*map(titles, figures))


def test_a_report_with_every_input_hands_each_to_its_part(tmp_path):
    """build_report given a lemma grid, a published answer, the premise's control, a simulate summary and a budget:
    each part of the record is what its own function makes of that input (computed here from the same evidence),
    report.json is the record (indented) and REPORT.md its rendering beside the published answer."""
    from escov.paper_checks.finite import without_non_finite
    from escov.paper_checks.premise_record import premise_record
    from escov.paper_checks.summary import summary_lines
    from tests.paper_checks.test_report_rendering import _grid_row, _simulate_summary

    p = np.random.default_rng(1).uniform(0.02, 0.5, 40)
    dirs = [
        make_run(tmp_path / "runs", f"{a}{s}", a, s, p, np.clip(p + 0.1, 0, 1)) for a in ("es", "grpo") for s in (0, 1)
    ]
    published = build_report(dirs[:2], tmp_path / "published")
    paired = {
        "center_samples": 8,
        "task": "countdown",
        "temperature": 0.6,
        "max_new_tokens": 32,
        "prompts": 4,
        "samples": 2,
    }  # rows that the verdict and the grid section read
    grid = [
        _grid_row(1e-3, 4, 1.0, [0.95, 1.05], 0.01, 20000.0, 0.75) | paired,
        _grid_row(4e-3, 4, 1.5, [1.3, 1.7], 0.2, 20000.0, 0.5) | paired,
    ]
    _simulate_summary(tmp_path / "summary.json", lambda c: "holds")
    out = tmp_path / "report"
    report = build_report(
        dirs,
        out,
        simulate_summary=tmp_path / "summary.json",
        lemma_grid=grid,
        purpose="all of it",
        published=published,
        planned=set(),
        premise_control=CONTROL,
    )
    text = (out / "report.json").read_text(encoding="utf-8")
    assert json.loads(text) == report and text.startswith('{\n "purpose": "all of it",')  # indented by one space
    assert (out / "REPORT.md").read_text(encoding="utf-8") == render_markdown(report, published)
    ev = collect(dirs, None, tmp_path / "summary.json")
    ev.lemma_grid = grid
    finite = lambda part: without_non_finite({"part": part})[0]["part"]
    assert report["premise"] == finite(premise_record(ev, CONTROL, grid)) and report["lemma_grid"] == finite(grid)
    assert report["open_questions"] == finite(
        [{"id": qid, "question": q, **answer(qid, ev, set())} for qid, q in OPEN_QUESTIONS]
    )
    for c in report["claims"]:  # each real level is its verdict under the budget given (planned nothing: "not run")
        real_plots = [report["plots"][k] for k in BY_ID[c["id"]].plots if k in report["plots"]]
        assert c["levels"]["real"] == finite(real_verdict(BY_ID[c["id"]], ev, set()).to_json()) | {
            "plots": real_plots
        }, c["id"]
        if BY_ID[c["id"]].simulate:  # its experiment's plot, from report/ to the summary's folder
            assert c["levels"]["simulate"]["plots"] == [f"../{BY_ID[c['id']].simulate}.png"], c["id"]
    assert any(c["levels"]["real"]["status"] == NOT_RUN for c in report["claims"])
    assert any(c["levels"]["real"]["status"] not in (NOT_RUN, MISSING, NOT_TESTABLE) for c in report["claims"])
    lemma1 = next(c for c in report["claims"] if c["id"] == "lemma1")["levels"]["real"]
    assert lemma1["plots"] == ["js_measured_vs_predicted.png"]
    assert lemma1["design"].startswith("grid: 1 of 2 rows inside")  # decided on the grid, not the runs' probes
    unsummarized = {k: v for k, v in report.items() if k != "summary"}
    assert report["summary"] == summary_lines(unsummarized, out / "REPORT.md", published)
    assert report["summary"] != summary_lines(unsummarized, out / "REPORT.md", None)  # the published answer is read
    assert sorted(f.name for f in tmp_path.iterdir()) == ["published", "report", "runs", "summary.json"]


def test_a_reports_premise_record_reads_the_lemma_grid_beside_runs_with_curves(
    tmp_path,
    monkeypatch,
    runs,  # noqa: F811  (the fixture imported from test_premise_record)
):
    """Given the premise's control, runs with curves (ES at a small sigma among them) and a Lemma 1 grid, the
    report's premise record is premise_record's of the same evidence and grid: ES at the small sigma carries the
    grid's median s at its sigma (the plots are left out: they read nothing of the premise)."""
    from escov.paper_checks import report as report_module
    from escov.paper_checks.finite import without_non_finite
    from escov.paper_checks.premise_record import premise_record
    from tests.paper_checks.test_report_rendering import _grid_row

    run_list, _ = runs
    grid = [_grid_row(0.002, 4, 1.0, [0.95, 1.05], s, 20000.0, 0.75) for s in (0.01, 0.06, 0.02)]  # mean 0.03
    grid.append(_grid_row(0.02, 4, 1.5, [1.3, 1.7], 3.0, 20000.0, 0.5))
    monkeypatch.setattr(report_module, "PLOTS", {})
    ev = Evidence(runs=run_list)
    (tmp_path / "tmp").mkdir()
    report = report_module._build(ev, tmp_path / "tmp", tmp_path / "report", None, grid, "", None, None, CONTROL)
    assert report["premise"] == without_non_finite({"p": premise_record(ev, CONTROL, grid)})[0]["p"]
    assert report["premise"]["es_small_sigma"]["s_measured_median"] == 0.02  # the grid's median at sigma 0.002


_NO_TORCH = """import sys
from pathlib import Path
from escov.paper_checks import report
loaded = ["torch" in sys.modules]
if len(sys.argv) > 1:
    ev = report.collect([Path(p) for p in sys.argv[1:]])
    verdicts = [report.real_verdict(c, ev) for c in report.CLAIMS if c.real]
    loaded.append("torch" in sys.modules)
print(loaded)
"""


def _torch_loaded(*run_dirs: Path) -> list[bool]:
    """In a fresh process: whether torch is loaded after importing paper_checks/report.py, and (with run directories)
    after building every real claim's verdict from them."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _NO_TORCH, *map(str, run_dirs)], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout.strip().lower())


def test_importing_the_report_loads_no_torch():
    """Reading a report (seconds) never pays for the experiments' libraries (paper_checks/reproduce/ and llm's
    training: torch, several seconds to import)."""
    assert _torch_loaded() == [False]


def test_building_a_reports_verdicts_loads_no_torch(tmp_path):
    run_dirs = [
        make_run(tmp_path, f"{algo}-s{seed}", algo, seed, np.full(40, 0.3), np.full(40, 0.4))
        for algo in ("es", "grpo")
        for seed in (0, 1)
    ]
    assert _torch_loaded(*run_dirs) == [False, False]
