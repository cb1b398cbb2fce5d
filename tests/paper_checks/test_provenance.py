"""The code each run trained with (paper_checks/provenance.py): report.json's `provenance` names every run's commit
from its inputs.json, and flags the runs trained at another commit, with uncommitted changes, or with none
recorded; REPORT.md lists them."""

import json

import numpy as np

from escov.llm.fingerprints import code_version, settings_sha256
from escov.paper_checks.report import build_report
from tests.paper_checks.test_paper_checks_verdicts import make_run

OTHER = "0123456789abcdef0123456789abcdef01234567"


def _record_code(run, code: dict) -> None:
    """inputs.json as llm/fingerprints.py manifest writes it, with this code record."""
    config = json.loads((run / "config.json").read_text())
    (run / "inputs.json").write_text(
        json.dumps({"code": code, "settings_sha256": settings_sha256(config), "inputs": {}})
    )


def test_the_report_names_each_runs_commit_and_flags_other_code(tmp_path):
    here = code_version()  # the code running this test: a real commit in a checkout, else none recorded
    p = np.random.default_rng(3).uniform(0.05, 0.5, 40)
    dirs = [
        make_run(tmp_path / "runs", f"{a}{s}", a, s, p, np.clip(p + 0.1, 0, 1)) for a in ("es", "grpo") for s in (0, 1)
    ]
    main = here | {"commit": here["commit"] or "f" * 40, "modified": False, "diff_sha256": None}
    for run in dirs[:2]:
        _record_code(run, main)
    _record_code(dirs[2], main | {"commit": OTHER})  # grpo0: trained at another commit
    _record_code(dirs[3], main | {"modified": True, "diff_sha256": "9" * 64})  # grpo1: uncommitted changes
    report = build_report(dirs, tmp_path / "report")
    record = report["provenance"]
    assert record["run_commits"] == {
        "es0": main["commit"],
        "es1": main["commit"],
        "grpo0": OTHER,
        "grpo1": main["commit"],
    }
    assert record["code"] == main["commit"] and record["modified"] == ["grpo1"]
    assert record["flagged"] == {"grpo0": OTHER, "grpo1": f"{main['commit']} (modified, diff 99999999)"}
    md = (tmp_path / "report" / "REPORT.md").read_text()
    assert f"**Code.** 2 of 4 runs trained with `{main['commit']}`" in md
    assert f"- `grpo0`: `{OTHER}`" in md and "- `grpo1`: " in md

    (dirs[0] / "inputs.json").unlink()  # a run from before inputs.json: no commit recorded, flagged
    record = build_report(dirs, tmp_path / "again")["provenance"]
    assert record["run_commits"]["es0"] is None and record["flagged"]["es0"] is None


def test_runs_at_one_commit_flag_nothing(tmp_path):
    p = np.random.default_rng(4).uniform(0.05, 0.5, 40)
    dirs = [make_run(tmp_path / "runs", f"{a}0", a, 0, p, np.clip(p + 0.1, 0, 1)) for a in ("es", "grpo")]
    for run in dirs:
        _record_code(run, {"commit": OTHER, "modified": False, "diff_sha256": None, "version": "0.1.0"})
    report = build_report(dirs, tmp_path / "report")
    assert report["provenance"]["flagged"] == {} and set(report["provenance"]["run_commits"].values()) == {OTHER}
    assert (
        f"**Code.** 2 of 2 runs trained with `{OTHER}` (inputs.json)."
        in (tmp_path / "report" / "REPORT.md").read_text()
    )


def _runs_with_codes(tmp_path, codes: dict):
    """Run folders holding only inputs.json with each code record (None: no inputs.json), as provenance reads them."""
    from types import SimpleNamespace

    runs = []
    for name, code in codes.items():
        path = tmp_path / name
        path.mkdir()
        if code is not None:
            (path / "inputs.json").write_text(json.dumps({"code": code, "settings_sha256": "0" * 64, "inputs": {}}))
        runs.append(SimpleNamespace(name=name, path=path))
    return runs


def test_the_runs_code_is_the_one_most_of_them_trained_with_whatever_their_order(tmp_path):
    from escov.paper_checks.provenance import provenance

    main = {"commit": "a" * 40, "modified": False, "diff_sha256": None}
    codes = {"first": main | {"commit": OTHER}, "second": main, "third": main, "fourth": None}
    record = provenance(_runs_with_codes(tmp_path, codes))
    assert record["code"] == "a" * 40
    assert record["flagged"] == {"first": OTHER, "fourth": None}
    assert record["run_commits"] == {"first": OTHER, "second": "a" * 40, "third": "a" * 40, "fourth": None}


def test_a_diff_marks_a_run_modified_only_when_it_trained_with_uncommitted_changes(tmp_path):
    from escov.paper_checks.provenance import code_of, provenance

    clean = {"commit": OTHER, "modified": False, "diff_sha256": "7" * 64}  # a stale diff hash of a clean tree
    dirty = {"commit": OTHER, "modified": True, "diff_sha256": "8" * 64}
    runs = _runs_with_codes(tmp_path, {"clean": clean, "dirty": dirty, "clean2": clean})
    assert [code_of(r) for r in runs] == [OTHER, f"{OTHER} (modified, diff 88888888)", OTHER]
    record = provenance(runs)
    assert record["modified"] == ["dirty"] and record["code"] == OTHER
    assert record["flagged"] == {"dirty": f"{OTHER} (modified, diff 88888888)"}


def test_a_damaged_inputs_json_records_no_commit(tmp_path):
    """inputs.json that is not JSON: the run's code is not recorded (flagged as such), not a made-up value."""
    from escov.paper_checks.provenance import code_of, provenance
    from escov.paper_checks.rundir import load_run

    p = np.random.default_rng(5).uniform(0.05, 0.5, 40)
    dirs = [make_run(tmp_path / "runs", f"es{s}", "es", s, p, np.clip(p + 0.1, 0, 1)) for s in (0, 1)]
    for run in dirs:
        _record_code(run, {"commit": OTHER, "modified": False, "diff_sha256": None})
    (dirs[1] / "inputs.json").write_text('{"code": {"commit": ')
    runs = [load_run(d) for d in dirs]
    assert code_of(runs[1]) is None
    assert provenance(runs)["flagged"] == {"es1": None}


def test_the_reports_lines_on_the_code_written_out():
    """REPORT.md's lines for no runs, runs recording no commit, one code, and other code flagged, word for word."""
    from escov.paper_checks.provenance import render

    assert render(None) == [] and render({"run_commits": {}, "code": None, "flagged": {}}) == []
    none = {"run_commits": {"a": None, "b": None}, "code": None, "flagged": {"a": None, "b": None}}
    assert render(none) == ["**Code.** None of the 2 runs records the commit it trained with (inputs.json).", ""]
    one = {"run_commits": {"a": "c1", "b": "c1"}, "code": "c1", "flagged": {}}
    assert render(one) == ["**Code.** 2 of 2 runs trained with `c1` (inputs.json).", ""]
    flagged = {"run_commits": {"a": "c1", "b": "c2", "c": None}, "code": "c1", "flagged": {"b": "c2", "c": None}}
    assert render(flagged) == [
        "**Code.** 1 of 3 runs trained with `c1` (inputs.json). Trained with other code (do not pool them without "
        "knowing why):",
        "",
        "- `b`: `c2`",
        "- `c`: `not recorded`",
        "",
    ]
