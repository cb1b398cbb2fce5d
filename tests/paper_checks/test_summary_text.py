"""The summary's text (paper_checks/summary.py) on small reports written here, line by line: which claims and parts it
lists and with which status, the count of decided claims, the cut to one screen, the story's cells beside the
published answer's, the premise line, the key figure, and REPORT.md's table of what would decide the rest. Every
expected line is spelled out from the rule (an interval in points with two decimals when its width is at least 0.1
point; a part's status from its own test), not read from the code; no report is assembled, so each test takes
milliseconds (test_summary.py checks the same text inside whole reports)."""

import json

from escov.paper_checks import summary
from escov.paper_checks.summary import FULL_ANSWER, KEY_CLAIM, KEY_PART, PUBLISHED, SUMMARY_LINES
from tests.paper_checks.test_summary_design_numbers import _est

STATUS_WIDTH = 14  # a listed claim: two spaces, its status in 14 columns, a space, its text


def est(mean, lo, hi, detectable=0.02, design="3 seeds x 4 prompts", **extra) -> dict:
    return {"mean": mean, "lo": lo, "hi": hi, "detectable": detectable, "design": design} | extra


def claim(cid, status, evidence=None, ours="", note="") -> dict:
    return {"id": cid, "levels": {"real": {"status": status, "ours": ours, "note": note, "evidence": evidence or {}}}}


def report() -> dict:
    """GRPO's Pass@1 holds; ES over the base holds at @1 only; GRPO's Pass@32 fall holds by its part's own interval
    though the claim is listed inconclusive; the key figure undecided; two claims not run or not measured."""
    return {
        "claims": [
            claim(
                "grpo_raises_pass1",
                "holds",
                {"@1": est(0.30, 0.20, 0.40, 0.05)},
                ours="@1 +30.00 pts [+20.00, +40.00] (bias control: 0.1 pts)",
            ),
            claim(
                "es_improves_over_base",
                "inconclusive",
                # a count and an entry without an interval are no estimates
                {"@1": est(0.10, 0.05, 0.15), "@32": est(0.01, -0.02, 0.04), "runs": 3, "partial": {"mean": 0.1}},
                ours="@1 +10.00 pts [+5.00, +15.00]; @32 +1.00 pts [-2.00, +4.00]",
            ),
            claim("grpo_passk_below_base", "inconclusive", {"@32": est(-0.06, -0.09, -0.03)}, ours="not pooled"),
            claim(KEY_CLAIM, "inconclusive", {KEY_PART: est(0.005, -0.01, 0.02, 0.03)}, ours="undecided"),
            claim("no_forgetting", "not run in this budget"),
            claim("lemma1", "missing data", note="no probe measurements"),
            claim("dpi", "not testable here"),  # theory's: no real-run check, so not listed as untested
        ]
    }


def test_a_decided_claim_is_listed_whole_and_an_undecided_one_by_its_decided_parts():
    claims = report()["claims"]
    assert summary.decided_parts(claims[0]) == [
        ("holds", "grpo_raises_pass1: @1 +30.00 pts [+20.00, +40.00] (bias control: 0.1 pts)")
    ]
    # @1's interval [+5, +15] holds, @32's [-2, +4] does not decide: the @1 segment of the verdict's text
    assert summary.decided_parts(claims[1]) == [
        ("inconclusive", "es_improves_over_base: holds in part (@32 inconclusive): @1 +10.00 pts [+5.00, +15.00]")
    ]
    # GRPO's Pass@32 fall [-9, -3] holds (the claim is a fall: sign -1); no segment of its text names @32: the label
    assert summary.decided_parts(claims[2]) == [("inconclusive", "grpo_passk_below_base: holds in part: @32")]
    assert summary.decided_parts(claims[3]) == [] and summary.decided_parts(claims[4]) == []
    fails = claim("grpo_raises_pass1", "does not hold", {"@1": est(-0.2, -0.3, -0.1)}, ours="@1 -20 pts")
    assert summary.decided_parts(fails) == [("does not hold", "grpo_raises_pass1: @1 -20 pts")]


def test_parts_decided_both_ways_name_both_verdicts_once_each_in_the_order_of_the_parts():
    ours = "@1 one; @16 two; @32 three; @64 four"
    parts = {
        "@1": est(0.1, 0.05, 0.15),
        "@16": est(-0.1, -0.15, -0.05),
        "@32": est(0.0, -0.1, 0.1),
        "@64": est(0.1, 0.02, 0.2),
    }
    got = summary.decided_parts(claim("es_improves_over_base", "inconclusive", parts, ours=ours))
    assert got == [
        (
            "inconclusive",
            "es_improves_over_base: holds and does not hold in part (@32 inconclusive): @1 one; @16 two; @64 four",
        )
    ]
    both = {"@1": est(0.1, 0.05, 0.15), "@32": est(0.1, 0.02, 0.2)}  # every part decided, the claim left inconclusive
    got = summary.decided_parts(claim("es_improves_over_base", "inconclusive", both, ours=ours))
    assert got == [("inconclusive", "es_improves_over_base: holds in part: @1 one; @32 three")]
    # an interval with an open end decides nothing, whatever its other end
    open_end = {"@1": est(0.1, None, 0.15), "@32": est(0.1, 0.05, None)}
    assert summary.decided_parts(claim("es_improves_over_base", "inconclusive", open_end, ours=ours)) == []


def _story(here_cells: list[str], there_cells: list[str], design: tuple[str, str], width: int, folder="results/"):
    names = [name for name, _, _ in summary.STORY]
    return [
        f"The answer's story at the last checkpoints, here | published ({folder}, {folder}REPORT.md):",
        "  design".ljust(22) + " " + design[0].ljust(width) + " | " + design[1],
        *(
            "  " + name.ljust(20) + " " + here.ljust(width) + " | " + there
            for name, here, there in zip(names, here_cells, there_cells)
        ),
    ]


HERE_CELLS = [
    "+30.00 pts [+20.00, +40.00]",
    "-6.00 pts [-9.00, -3.00], narrowed",  # the widest cell: 34 characters
    "+10.00 pts [+5.00, +15.00]",
    "+1.00 pts [-2.00, +4.00]",
    "not measured",  # no es_passk_above_grpo in this report
]


def test_the_summary_lists_the_decided_claims_the_story_and_the_key_figure_line_by_line():
    lines = summary.summary_lines(report(), "out/REPORT.md", None)
    assert lines == [
        "== Summary ==",
        "Decided here by the real runs (95% intervals): 1 (and 2 in part, listed as inconclusive)",
        "  holds          grpo_raises_pass1: @1 +30.00 pts [+20.00, +40.00]",  # the bias control's aside dropped
        "  inconclusive   es_improves_over_base: holds in part (@32 inconclusive): @1 +10.00 pts [+5.00, +15.00]",
        "  inconclusive   grpo_passk_below_base: holds in part: @32",
        "Not decided here: 3 real-run claims (inconclusive); what would decide each: REPORT.md, "
        "'What would decide the rest'",
        *_story(HERE_CELLS, ["not found"] * 5, ("3 seeds x 4 prompts", "not found"), 34),
        "The answer's key figure, ES - GRPO Pass@32 at matched Pass@1:",
        "  here       +0.50 pts [-1.00, +2.00], inconclusive; 3 seeds x 4 prompts, detectable 3 pts",
        "  published  not found (results/report.json)",
        "Report: out/REPORT.md",
        f"The full answer (about 3.2 hours on 2 cores): {FULL_ANSWER}",
    ]


def test_beside_a_published_report_each_cell_is_its_estimate_and_its_premise_reading_follows():
    published = {
        "claims": [
            claim("grpo_raises_pass1", "holds", {"@1": est(0.25, 0.2, 0.3, design="8 seeds x 128 prompts")}),
            # no interval: printed without one and not read as narrowed or widened
            claim("grpo_passk_below_base", "inconclusive", {"@32": est(-0.05, None, None)}),
            claim(KEY_CLAIM, "inconclusive", {}, note="inconclusive: no common Pass@1 range"),
        ],
        "premise": {
            "grpo_plateau_minus_base": {
                "plateau": {"grpo-s0": {"step": 150}, "grpo-s1": {"step": 150}},
                "pass@32": est(-0.06, -0.09, -0.03, samples=64),
                "verdict": "narrowed",
            }
        },
    }
    regime = PUBLISHED.parent / "paper-regime" / "report.json"
    lines = summary.summary_lines(report(), "REPORT.md", published, regime)
    there = ["+25.00 pts [+20.00, +30.00]", "-5.00 pts (no interval)"] + ["not measured"] * 3
    story = _story(HERE_CELLS, there, ("3 seeds x 4 prompts", "8 seeds x 128 prompts"), 34, "results/paper-regime/")
    premise = (
        "  premise (published): GRPO at step 150 - base, Pass@32 -6.00 pts [-9.00, -3.00], narrowed "
        "(64 samples a prompt)"
    )
    start = lines.index(story[0])
    assert lines[start : start + len(story) + 1] == story + [premise]
    assert lines[start + len(story) + 2 : start + len(story) + 4] == [
        "  here       +0.50 pts [-1.00, +2.00], inconclusive; 3 seeds x 4 prompts, detectable 3 pts",
        "  published  inconclusive: no common Pass@1 range",  # the note without its repeated status
    ]


def test_the_premise_line_says_its_plateau_when_the_seeds_stopped_at_different_steps_and_is_cut_to_width():
    reading = {
        "plateau": {"grpo-s0": {"step": 150}, "grpo-s1": {"step": 200}},
        "pass@32": est(-0.06, -0.09, -0.03, samples=64),
        "verdict": "no_change_detected",
    }
    full = (
        "  premise (published): GRPO at its plateau - base, Pass@32 -6.00 pts [-9.00, -3.00], no change detected "
        "(64 samples a prompt)"
    )
    assert len(full) == 125  # more than 118: cut
    assert summary._premise_line({"premise": {"grpo_plateau_minus_base": reading}}) == [full[:115] + "..."]
    assert summary._premise_line({"premise": {"grpo_plateau_minus_base": None}}) == []
    assert summary._premise_line({"claims": []}) == [] and summary._premise_line(None) == []


def test_a_line_of_118_characters_is_kept_and_a_longer_one_cut_to_118_ending_in_dots():
    def listed(text_length: int) -> str:
        one = {"claims": [claim("grpo_raises_pass1", "holds", ours="x" * (text_length - len("grpo_raises_pass1: ")))]}
        return summary.summary_lines(one, "R.md", None)[2]

    assert listed(101) == "  holds          grpo_raises_pass1: " + "x" * 82 and len(listed(101)) == 118
    assert listed(102) == "  holds          grpo_raises_pass1: " + "x" * 79 + "..." and len(listed(102)) == 118
    note = "inconclusive: " + "y" * 120
    key = {"claims": [claim(KEY_CLAIM, "inconclusive", note=note)]}
    assert summary._key_line("here", key) == "  here       inconclusive: " + "y" * 88 + "..."


def test_more_decided_claims_than_the_screen_holds_end_in_a_count_of_the_rest():
    """The tail (story 7 lines, key figure 3, report and command 2) and the head (2) and the closing line leave 25 -
    2 - 12 - 1 = 10 lines: 9 claims and '... and 3 more' for 12 decided claims."""
    many = {"claims": [claim(f"c{i}", "holds", ours=f"claim {i}") for i in range(12)]}
    lines = summary.summary_lines(many, "R.md", None)
    assert len(lines) == SUMMARY_LINES
    assert lines[1] == "Decided here by the real runs (95% intervals): 12"
    assert lines[2:12] == [f"  holds          c{i}: claim {i}" for i in range(9)] + ["  ... and 3 more (REPORT.md)"]
    assert lines[12].startswith("Not decided here: 0 real-run claims")
    ten = {"claims": many["claims"][:10]}  # exactly the room: all shown
    assert summary.summary_lines(ten, "R.md", None)[2:12] == [f"  holds          c{i}: claim {i}" for i in range(10)]
    none = summary.summary_lines({"claims": [claim(KEY_CLAIM, "inconclusive")]}, "R.md", None)
    assert none[1:4] == [
        "Decided here by the real runs (95% intervals): 0",
        "  none",
        "Not decided here: 1 real-run claims (inconclusive); what would decide each: REPORT.md, "
        "'What would decide the rest'",
    ]
    assert summary._key_line("published", {"claims": []}) == "  published  not in this report"


def test_the_published_folder_is_named_from_the_repository_or_in_full(tmp_path):
    assert summary.published_folder() == "results/"
    assert summary.published_folder(PUBLISHED.parent / "paper-regime" / "report.json") == "results/paper-regime/"
    assert summary.published_folder(tmp_path / "report.json") == f"{tmp_path.resolve()}/"


def test_a_published_report_that_is_absent_or_not_json_reads_as_none(tmp_path):
    (tmp_path / "good.json").write_text(json.dumps({"claims": [], "note": "été"}), encoding="utf-8")
    assert summary.load_published(tmp_path / "good.json") == {"claims": [], "note": "été"}
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    assert summary.load_published(tmp_path / "bad.json") is None
    assert summary.load_published(tmp_path / "absent.json") is None
    assert summary.load_published()["claims"]  # the repository's published answer


HEADER = [
    "## What would decide the rest",
    "",
    "Each undecided part of a real-run claim: its estimate and the smallest difference this design detects at 80% "
    "power, beside the effect it needs (the published answer's estimate of the same part: its distance from the "
    "test's boundary is what a design has to detect) and the seeds that would detect that at this run's prompts, "
    "from this run's own variance ('out of reach': more than 64 seeds).",
    "",
    "| claim | part | here | design | detectable here | the answer (the effect it needs) | detectable there | "
    "seeds to detect it here |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
]
UNTESTED = [
    "",
    "Not tested by these runs (a budget whose runs they need: `--budget answer` for the schedules, sampled members "
    "and 64-sample curves; `--budget full` for the ablations, nulls and the population sweep):",
    "",
]


def test_report_md_tables_each_undecided_part_and_lists_the_real_run_claims_not_tested():
    assert summary.undecided_markdown(report(), None) == HEADER + [
        "| es_improves_over_base | @32 | +1.00 pts [-2.00, +4.00] | 3 seeds x 4 prompts | 2 pts |  |  |  |",
        f"| {KEY_CLAIM} | {KEY_PART} | +0.50 pts [-1.00, +2.00] | 3 seeds x 4 prompts | 3 pts |  |  |  |",
        *UNTESTED,
        "- no_forgetting: not run in this budget",
        "- lemma1: missing data (no probe measurements)",
        "",
    ]


def test_the_seeds_column_reads_a_count_or_out_of_reach_and_an_empty_table_is_no_section():
    """The seeds 3 points need from a seed-level estimate of se 1 point on 4 seeds: 6 (worked in
    test_summary_design_numbers.py); 0.01 points: none within 64."""
    here = {"claims": [claim(KEY_CLAIM, "inconclusive", {KEY_PART: _est(0.005, 0.01, 4)})]}
    there = {"claims": [claim(KEY_CLAIM, "inconclusive", {KEY_PART: _est(0.03, 0.004, 8)})]}
    lines = summary.undecided_markdown(here, there)
    assert lines[:-2] == HEADER and lines[-1] == "" and lines[-2].endswith(" (8 seeds) | 6 |")
    far = {"claims": [claim(KEY_CLAIM, "inconclusive", {KEY_PART: _est(0.0001, 0.004, 8)})]}
    assert summary.undecided_markdown(here, far)[-2].endswith(" | out of reach |")
    assert summary.undecided_markdown({"claims": [claim("grpo_raises_pass1", "holds")]}, None) == []
    only_untested = {"claims": [claim("no_forgetting", "not run in this budget", note="needs a held-out task")]}
    assert summary.undecided_markdown(only_untested, None) == [
        "## What would decide the rest",
        "",
        *UNTESTED,
        "- no_forgetting: not run in this budget (needs a held-out task)",
        "",
    ]


def test_a_part_with_its_own_test_is_decided_and_printed_by_it_and_the_published_status_is_the_parts():
    """entropy_collapse: "ES entropy change" is an equivalence within +-10% (the claim's own test is the directional
    fall), so [-5%, +5%] holds there; the fall part [-1%, +3%] is undecided; both print in %."""
    parts = {"ES entropy change": est(0.0, -0.05, 0.05), "GRPO entropy fall (-change)": est(0.01, -0.01, 0.03)}
    ours = "ES entropy change +0.00% [-5.00, +5.00]; GRPO entropy fall (-change) +1.00% [-1.00, +3.00]"
    collapse = claim("entropy_collapse", "inconclusive", parts, ours=ours)
    assert summary.decided_parts(collapse) == [
        (
            "inconclusive",
            "entropy_collapse: holds in part (GRPO entropy fall (-change) inconclusive): "
            "ES entropy change +0.00% [-5.00, +5.00]",
        )
    ]
    # the published answer lists the claim inconclusive, but its "ES entropy change" part holds by its own test
    published = {"claims": [claim("entropy_collapse", "inconclusive", {"ES entropy change": est(0.02, -0.01, 0.05)})]}
    # one seed here (no detectable difference, so no seed count: the row's text alone)
    here = {"claims": [claim("entropy_collapse", "inconclusive", {"ES entropy change": est(0.004, -0.2, 0.2, None)})]}
    row = summary.undecided_rows(here, published)[0]
    assert row["here"] == "+0.40% [-20.00, +20.00]" and row["detectable"] == "none (one seed)"
    assert row["answer"] == "+2.00% [-1.00, +5.00], holds" and row["answer_detectable"] == "2% (3 seeds x 4 prompts)"
    # a published report holding the claim without this part: nothing to compare, no status read
    other = {"claims": [claim("entropy_collapse", "holds", {"GRPO entropy fall (-change)": est(0.1, 0.05, 0.15)})]}
    assert summary.undecided_rows(here, other)[0]["answer"] == ""


def test_a_detectable_difference_that_is_none_or_infinite_reads_one_seed():
    for detectable in (None, float("inf")):
        here = {"claims": [claim(KEY_CLAIM, "inconclusive", {KEY_PART: est(0.005, -0.01, 0.02, detectable)})]}
        assert summary.undecided_rows(here, None)[0]["detectable"] == "none (one seed)"
        assert summary._key_line("here", here).endswith(", detectable none (one seed)")


def test_two_undecided_parts_are_named_together_and_a_cell_with_one_open_end_has_no_interval():
    parts = {"@1": est(0.1, 0.05, 0.15), "@16": est(0.0, -0.1, 0.1), "@32": est(0.0, -0.1, 0.1)}
    got = summary.decided_parts(claim("es_improves_over_base", "inconclusive", parts, ours="@1 a; @16 b; @32 c"))
    assert got == [("inconclusive", "es_improves_over_base: holds in part (@16, @32 inconclusive): @1 a")]
    cell = {"claims": [claim("grpo_passk_below_base", "inconclusive", {"@32": est(-0.05, None, 0.01)})]}
    assert summary._story_cell(cell, "grpo_passk_below_base", "@32") == "-5.00 pts (no interval)"
    straddles = {"claims": [claim("grpo_passk_below_base", "inconclusive", {"@32": est(0.01, -0.02, 0.04)})]}
    assert (
        summary._story_cell(straddles, "grpo_passk_below_base", "@32") == "+1.00 pts [-2.00, +4.00], no change detected"
    )
    assert summary._key_line("here", {}) == "  here       not in this report"


def test_the_story_column_is_as_wide_as_its_widest_cell_or_design_and_a_design_not_measured_says_so():
    """Here no GRPO Pass@1 estimate (design 'not measured'); the published design, longer than every cell here, does
    not widen the column here."""
    long_design = "8 seeds x 128 prompts x 64 samples at T = 0.6, matched"
    here = {"claims": [claim("es_improves_over_base", "inconclusive", {"@1": est(0.1, 0.05, 0.15)})]}
    there = {"claims": [claim("grpo_raises_pass1", "holds", {"@1": est(0.25, 0.2, 0.3, design=long_design)})]}
    lines = summary.story_lines(here, there)
    cells = ["not measured", "not measured", "+10.00 pts [+5.00, +15.00]", "not measured", "not measured"]
    published = ["+25.00 pts [+20.00, +30.00]"] + ["not measured"] * 4
    assert lines == _story(cells, published, ("not measured", long_design), 26)
