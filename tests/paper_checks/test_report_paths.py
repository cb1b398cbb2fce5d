"""A report names no machine's folders: run configs hold absolute paths (llm train makes its inputs absolute), and
report.json writes those inside the working folder relative to it (report.shown_path)."""

import json

import numpy as np

from escov.paper_checks.report import build_report, shown_path
from tests.paper_checks.test_paper_checks_verdicts import make_run


def test_absolute_paths_inside_the_working_folder_are_written_relative_to_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "out" / "base"
    p = np.random.default_rng(0).uniform(0.1, 0.5, 64)
    dirs = [
        make_run(tmp_path / "out" / "runs", f"{algo}-s{seed}", algo, seed, p, np.clip(p + 0.1, 0, 1), model=str(base))
        for algo in ("es", "grpo")
        for seed in (0, 1)
    ]
    build_report([d.resolve() for d in dirs], "report")  # the report folder as given, relative
    text = (tmp_path / "report" / "report.json").read_text()
    assert str(tmp_path) not in text
    report = json.loads(text)
    assert {r["model"] for r in report["runs"]} == {"out/base"} == {b["model"] for b in report["bases"]}
    assert sorted(r["path"] for r in report["runs"]) == sorted(f"out/runs/{d.name}" for d in dirs)
    # a path outside the working folder, or relative, is written as given
    assert shown_path(tmp_path.parent / "elsewhere") == str(tmp_path.parent / "elsewhere")
    assert shown_path("runs/x") == "runs/x" and shown_path(None) is None
    assert shown_path("runs/../x") == "runs/../x"  # as given, not resolved
