"""A report's summary (paper_checks/summary.py): the console's last lines and the opening of REPORT.md, at most 25
lines, with the claims decided here, the key figure beside the published one, the report's path and the command
for the full answer; and the seeds that would detect an effect (design.seeds_to_detect)."""
import json

import numpy as np
import pytest

from escov.paper_checks.cli import main as cli_main
from escov.paper_checks.design import planned_detectable, seeds_by_prompts, variance_components
from escov.paper_checks.summary import (FULL_ANSWER, KEY_CLAIM, KEY_PART, PUBLISHED, SUMMARY_LINES, load_published,
                                        summary_lines)
from escov.theory.decisions import over_seeds
from test_paper_checks_verdicts import make_run


@pytest.fixture
def tiny_report_dirs(tmp_path):
    """Three seeds of ES and GRPO on 64 shared prompts: GRPO's Pass@1 rises by 30 points, ES's by 10, with curves."""
    p_base = np.random.default_rng(0).uniform(0.05, 0.5, 64)
    dirs = []
    for seed in range(3):
        for algo, gain in (("es", 0.10), ("grpo", 0.30)):
            curve = [np.clip(p_base + gain * t / 4, 0, 1) for t in range(5)]
            dirs.append(make_run(tmp_path / "runs", f"{algo}-s{seed}", algo, seed, p_base, np.clip(p_base + gain, 0, 1),
                                 curve_p=curve, drift=4e-2 if algo == "es" else 2e-3))
    return dirs


def test_the_console_ends_on_the_summary_and_report_md_opens_with_it(tiny_report_dirs, tmp_path, capsys):
    out = tmp_path / "report"
    assert cli_main(["report", *map(str, tiny_report_dirs), "--out", str(out)]) == 0
    console = capsys.readouterr().out.rstrip("\n").splitlines()
    summary = json.loads((out / "report.json").read_text())["summary"]
    assert 5 <= len(summary) <= SUMMARY_LINES and console[-len(summary):] == summary
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
    assert report_md[2] == "```" and report_md[3:3 + len(summary)] == summary and report_md[3 + len(summary)] == "```"


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


def test_an_estimate_is_its_own_design_at_its_seeds():
    """seeds_to_detect splits an estimate's variance back into its seed and prompt parts: at its own seeds it
    detects exactly its own detectable difference, one seed fewer does not."""
    from escov.paper_checks.design import seeds_to_detect
    rng = np.random.default_rng(3)
    y = rng.normal(0, 0.05, (5, 1)) + rng.normal(0, 0.2, (1, 40)) + rng.normal(0, 0.1, (5, 40))
    for est in (seeds_by_prompts(y, 32).to_json(), over_seeds(rng.normal(0.1, 0.05, 6)) | {"design": "6 seeds"}):
        d = est["detectable"]
        assert seeds_to_detect(est, d * (1 + 1e-9)) == est["seeds"]
        assert seeds_to_detect(est, d * (1 - 1e-3)) > est["seeds"]
        assert seeds_to_detect(est, d * 10) < est["seeds"] or est["seeds"] == 2


def test_seeds_to_detect_reads_the_design_a_known_truth_needs():
    """On designs drawn from known variance components, the seeds seeds_to_detect reads from a 4-seed estimate
    are close to those planned_detectable gives from the true components (median over draws)."""
    from escov.paper_checks.design import Components, seeds_to_detect
    truth = Components(seed=0.004, prompt=0.01, residual=0.02, seeds=4, prompts=64)
    target = planned_detectable(truth, 12, 64)   # the truth needs 12 seeds for this effect
    rng = np.random.default_rng(7)
    found = []
    for _ in range(40):
        y = (rng.normal(0, np.sqrt(truth.seed), (4, 1)) + rng.normal(0, np.sqrt(truth.prompt), (1, 64))
             + rng.normal(0, np.sqrt(truth.residual), (4, 64)))
        assert variance_components(y).seeds == 4
        found.append(seeds_to_detect(seeds_by_prompts(y, 32).to_json(), target, most=200) or 201)
    assert 8 <= np.median(found) <= 18, sorted(found)
