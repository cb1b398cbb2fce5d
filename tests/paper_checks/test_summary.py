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
    STORY,
    SUMMARY_LINES,
    load_published,
    story_lines,
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
    published_line = next(line for line in summary if line.strip().startswith("published"))
    est = published["levels"]["real"]["evidence"].get(KEY_PART)
    if est is None:  # a published answer with nothing to compare at matched Pass@1: its reason, not a number
        reason = published["levels"]["real"]["evidence"]["matched"]["reason"]
        assert published_line.split()[1] == "inconclusive:" and reason[:40] in published_line
    else:
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


def _interval_text(est: dict) -> str:
    """An interval in points as the summary prints it, formatted here from the JSON."""
    return f"{100 * est['mean']:+.2f} pts [{100 * est['lo']:+.2f}, {100 * est['hi']:+.2f}]"


def test_the_story_sets_grpos_narrowing_and_where_es_stands_beside_the_published_answer(tmp_path):
    """GRPO raises the common prompts and drops the rare ones to zero (its Pass@32 falls); ES raises every prompt. The
    story reads GRPO's Pass@32 fall as narrowed, with each published cell the interval results/report.json holds for
    the same claim part, the published premise reading (a), and the folder results/ with its REPORT.md."""
    from escov.paper_checks.report import build_report

    p_base = np.random.default_rng(1).uniform(0.02, 0.5, 64)
    dirs = []
    for seed in range(3):
        dirs.append(make_run(tmp_path / "runs", f"es-s{seed}", "es", seed, p_base, np.minimum(p_base + 0.25, 1)))
        grpo_final = np.where(p_base > 0.2, np.minimum(p_base + 0.45, 1), 0.0)
        dirs.append(make_run(tmp_path / "runs", f"grpo-s{seed}", "grpo", seed, p_base, grpo_final))
    published = load_published()
    report = build_report(dirs, tmp_path / "report", published=published)
    lines = story_lines(report, published)
    assert lines[0].startswith("The answer's story") and "(results/, results/REPORT.md)" in lines[0]
    rows = {line[2:22].strip(): line[22:] for line in lines[1:] if line.startswith("  ") and "|" in line}
    assert list(rows) == ["design", *(name for name, _, _ in STORY)]
    claims = {c["id"]: c["levels"]["real"]["evidence"] for c in published["claims"]}
    for name, claim, part in STORY:
        here, there = (cell.strip() for cell in rows[name].split("|"))
        assert there.startswith(_interval_text(claims[claim][part])), name
        assert here.startswith(_interval_text(report_estimate(report, claim, part))), name
    narrowing = report_estimate(report, "grpo_passk_below_base", "@32")
    assert narrowing["hi"] < 0 and rows["GRPO Pass@32 - base"].split("|")[0].strip().endswith(", narrowed")
    assert rows["GRPO Pass@32 - base"].split("|")[1].strip().endswith(", narrowed")  # published: -5.96 [-9.54, -2.37]
    assert rows["design"].split("|")[1].strip() == claims["grpo_raises_pass1"]["@1"]["design"]
    a = published["premise"]["grpo_plateau_minus_base"]
    assert (
        lines[-1].startswith("  premise (published): GRPO at step 150 - base")
        and _interval_text(a["pass@32"]) in (lines[-1])
    )
    assert report["summary"][-len(lines) - 5 : -5] == lines  # the console's summary holds it above the key figure


def test_the_story_says_no_change_where_grpos_pass32_holds_and_names_the_published_folder(tiny_report_dirs, tmp_path):
    """GRPO raising every prompt loses no coverage: its Pass@32 reading is not 'narrowed'. A report set beside the
    paper-regime answer names that folder; a missing published report is 'not found'."""
    from escov.paper_checks.report import build_report

    regime = PUBLISHED.parent / "paper-regime" / "report.json"
    report = build_report(tiny_report_dirs, tmp_path / "report", published=load_published(regime), published_at=regime)
    line = next(line for line in report["summary"] if line.startswith("  GRPO Pass@32 - base"))
    assert "narrowed" not in line.split("|")[0]
    header = next(line for line in report["summary"] if line.startswith("The answer's story"))
    assert header.endswith("(results/paper-regime/, results/paper-regime/REPORT.md):")
    assert not any(line.startswith("  premise (published)") for line in report["summary"])  # it has no premise record
    alone = story_lines(report, None)
    assert all(line.rstrip().endswith("not found") for line in alone[1:])


def report_estimate(report: dict, claim_id: str, part: str) -> dict:
    return next(c for c in report["claims"] if c["id"] == claim_id)["levels"]["real"]["evidence"][part]


def _table_status(report_md: str) -> dict[str, str]:
    """Each claim's real-run status as REPORT.md's "All claims" table prints it (its sixth column)."""
    out = {}
    for row in report_md.splitlines():
        if row.startswith("| [") and "](#" in row:
            claim = row.split("](#", 1)[1].split(")", 1)[0]
            cell = row.split(" | ")[5]
            out[claim] = cell.split("**")[1] if cell.startswith("**") else cell
    return out


def _summary_status(summary: list[str]) -> dict[str, str]:
    """Each claim the summary lists, with its status column (two spaces, 14 characters, then `id:`); the key
    figure's lines ("  here       inconclusive: ...") have no status column."""
    rows = [
        line
        for line in summary
        if line.startswith("  ") and line[17:].split(":")[0].isidentifier() and line.split()[0] not in KEY_ROWS
    ]
    return {line[17:].split(":", 1)[0]: line[2:16].strip() for line in rows}


KEY_ROWS = ("here", "published")


@pytest.mark.parametrize("source", ["published", "tiny runs"])
def test_the_summary_gives_every_claim_the_status_of_the_table(source, tiny_report_dirs, tmp_path):
    """Every claim the summary lists has the status REPORT.md's table gives it; a claim decided only in part (the
    published answer's entropy_collapse, es_improves_over_base, es_passk_above_grpo: one part holds, one not
    decided) is listed as inconclusive with its decided part labelled as a part."""
    from escov.paper_checks.report import build_report, render_markdown

    if source == "published":
        report = load_published()
        summary = summary_lines(report, "REPORT.md", report)
        table = _table_status(render_markdown(report | {"summary": summary}, report))
    else:
        report = build_report(tiny_report_dirs, tmp_path / "report", published=load_published())
        summary = report["summary"]
        table = _table_status((tmp_path / "report" / "REPORT.md").read_text())
    listed = _summary_status(summary)
    assert listed and set(listed) <= set(table)
    assert {claim: table[claim] for claim in listed} == listed
    decided = sum(status in ("holds", "does not hold") for status in listed.values())
    assert f"(95% intervals): {decided}" in summary[1]
    if source == "published":  # a claim decided in part is listed as inconclusive, its decided part labelled
        partial = [line for line in summary if "holds in part (" in line]
        assert all(line.split()[0] == "inconclusive" for line in partial)
        assert (f"(and {len(partial)} in part, listed as inconclusive)" in summary[1]) == bool(partial)
