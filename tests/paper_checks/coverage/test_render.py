"""paper_checks/coverage/render.py: the coverage analyzer's text table, line by line, from a report written by hand
(every number in percent where the analyzer prints percent, each interval's own ends, k* and the solvability sets)."""

from escov.paper_checks.coverage.render import text_table


def _entry(mean, lo, hi):
    return {"mean": mean, "lo": lo, "hi": hi}


REPORT = {
    "n": 16,
    "ks": [1, 2, 4, 8, 16],
    "prompts": 30,
    "reference": "base",
    "confidence": 0.95,
    "replicates": 2000,
    "models": {
        "base": {"pass_at_k": {"1": _entry(0.1, 0.05, 0.15), "8": _entry(0.4, 0.3, 0.5), "16": _entry(0.5, 0.4, 0.6)}},
        "grpo": {
            "pass_at_k": {"1": _entry(0.2, 0.1, 0.3), "8": _entry(0.35, 0.25, 0.45), "16": _entry(None, None, None)},
            "crossing": {"k_star": 4.0, "lo": 2.0, "hi": None, "no_crossing_share": 0.125},
            "solvability": {
                "preserved": 10,
                "gained": 2,
                "lost": 5,
                "srr": 10 / 15,
                "ndr": 2 / 12,
                "nscr": 0.25,
            },
        },
    },
}


def test_the_table_reads_the_report_at_the_first_the_usual_and_the_last_budgets():
    lines = text_table(REPORT)
    assert lines[0] == (
        "30 prompts x 16 samples; reference 'base'; Pass@k in % with 95% problem-bootstrap intervals (2000 replicates)"
    )
    assert lines[1].split() == ["model", "Pass@1", "Pass@8", "Pass@16"]
    assert lines[2].split("  ")[0] == "base" and " 10.0 [  5.0,  15.0]" in lines[2]
    assert lines[2].rstrip().endswith(" 50.0 [ 40.0,  60.0]") and " 40.0 [ 30.0,  50.0]" in lines[2]
    assert " 20.0 [ 10.0,  30.0]" in lines[3] and " 35.0 [ 25.0,  45.0]" in lines[3]
    assert lines[3].rstrip().endswith("- [-, -]")
    assert lines[4] == (
        "grpo vs base: k* = 4 [2, beyond n] (no crossing in 12% of replicates); at k = 16: "
        "preserved 10, gained 2, lost 5, SRR 66.7%, NDR 16.7%, NSCR 25.0%"
    )
    assert len(lines) == 5  # the reference has no crossing line of its own
