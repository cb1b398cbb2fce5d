"""A report's summary (paper_checks/summary.py): the console's last lines and the opening of REPORT.md, at most 25
lines, with the claims decided here, the key figure beside the published one, the report's path and the command
for the full answer. (design.seeds_to_detect, which REPORT.md quotes, is tested in test_design_planning.py.)"""

import json

import numpy as np
import pytest

from escov.paper_checks.cli import main as cli_main
from escov.paper_checks.summary import (
    FULL_ANSWER,
    KEY_CLAIM,
    KEY_PART,
    PUBLISHED,
    SUMMARY_LINES,
    load_published,
    summary_lines,
)
from tests.paper_checks.test_paper_checks_verdicts import make_run


@pytest.fixture
def tiny_report_dirs(tmp_path):
    """Three seeds of ES and GRPO on 64 shared prompts: GRPO's Pass@1 rises by 30 points, ES's by 10, with curves."""
    p_base = np.random.default_rng(0).uniform(0.05, 0.5, 64)
    dirs = []
    for seed in range(3):
        for algo, gain in (("es", 0.10), ("grpo", 0.30)):
            curve = [np.clip(p_base + gain * t / 4, 0, 1) for t in range(5)]
            dirs.append(
                make_run(
                    tmp_path / "runs",
                    f"{algo}-s{seed}",
                    algo,
                    seed,
                    p_base,
                    np.clip(p_base + gain, 0, 1),
                    curve_p=curve,
                    drift=4e-2 if algo == "es" else 2e-3,
                )
            )
    return dirs


def test_the_console_ends_on_the_summary_and_report_md_opens_with_it(tiny_report_dirs, tmp_path, capsys):
    out = tmp_path / "report"
    assert cli_main(["report", *map(str, tiny_report_dirs), "--out", str(out)]) == 0
    console = capsys.readouterr().out.rstrip("\n").splitlines()
    summary = json.loads((out / "report.json").read_text())["summary"]
    assert 5 <= len(summary) <= SUMMARY_LINES and console[-len(summary) :] == summary
    text = "\n".join(summary)
    # a claim decided here, with its interval: GRPO's +30 points of Pass@1 over the base
    grpo = next(line for line in summary if "grpo_raises_pass1" in line)
    assert grpo.split()[0] == "holds" and "@1 +" in grpo
    # the key figure here and published, the published one as results/report.json holds it
    published = next(c for c in json.loads(PUBLISHED.read_text())["claims"] if c["id"] == KEY_CLAIM)
    est = published["levels"]["real"]["evidence"][KEY_PART]
    published_line = next(line for line in summary if line.strip().startswith("published"))
    assert f"{100 * est['mean']:+.2f} pts [{100 * est['lo']:+.2f}, {100 * est['hi']:+.2f}]" in published_line
    assert est["design"] in published_line and f"detectable {100 * est['detectable']:.3g} pts" in published_line
    assert any(line.strip().startswith("here") for line in summary)
    assert f"Report: {out / 'REPORT.md'}" in text and FULL_ANSWER in summary[-1]
    report_md = (out / "REPORT.md").read_text().splitlines()
    assert report_md[2] == "```" and report_md[3 : 3 + len(summary)] == summary and report_md[3 + len(summary)] == "```"


def test_the_summary_keeps_to_one_screen_when_every_claim_is_decided(tiny_report_dirs, tmp_path):
    from escov.paper_checks.report import build_report

    report = build_report(tiny_report_dirs, tmp_path / "report", published=load_published())
    for claim in report["claims"]:
        claim["levels"]["real"] |= {"status": "holds", "ours": "a decided verdict " + "x" * 200}
    lines = summary_lines(report, "REPORT.md", load_published())
    assert len(lines) == SUMMARY_LINES and lines[-1].endswith(FULL_ANSWER)
    assert any("more (REPORT.md)" in line for line in lines)
    assert max(map(len, lines)) <= 120 or lines.index(max(lines, key=len)) >= len(lines) - 5


def test_without_a_published_report_the_summary_says_so(tiny_report_dirs, tmp_path):
    from escov.paper_checks.report import build_report

    report = build_report(tiny_report_dirs, tmp_path / "report")
    assert "  published  not found (results/report.json)" in report["summary"]
