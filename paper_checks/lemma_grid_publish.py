"""Put a newly measured Lemma 1 grid into a published report without touching anything else.

A published report (results/report.json and REPORT.md) comes from a reproduction that takes far longer than
the grid. When only the grid is measured again (scripts/republish_lemma_grid.py), these functions replace:

- report.json: `lemma_grid`, and the lemma1 claim's real-run verdict (decided again from the new rows by
  real_checks.lemma1_verdict, the training runs' summary kept from the old verdict's evidence); `non_finite`
  lists the nulled values of the new parts beside the old entries of every other part;
- REPORT.md: the lemma1 row of the claims table, the grid's section, and the lemma1 claim's real-run bullet,
  each rendered by the functions that render a whole report (paper_checks.report).

Every other key of report.json and every other line of REPORT.md stays as it was.
"""

from __future__ import annotations

import copy

from escov.paper_checks.finite import without_non_finite
from escov.paper_checks.real_checks import lemma1_verdict, training_summary
from escov.paper_checks.report import claim_row, lemma1_training, lemma_grid_lines, level_lines

CLAIM = "lemma1"
# the grid section's heading, and the one written before the grid was labelled an implementation check
GRID_HEADINGS = ("## The Lemma 1 grid on the real model", "## Lemma 1 on the real model")
NEXT_SECTION = "## Claims one by one"


def _claim_index(report: dict) -> int:
    for i, c in enumerate(report.get("claims", [])):
        if c["id"] == CLAIM:
            return i
    raise ValueError(f"report.json has no {CLAIM!r} claim")


def splice_report(
    report: dict, grid: list[dict], training_sigma: float | None = None, training_temperature: float | None = None
) -> dict:
    """A copy of report (report.json's data) with `lemma_grid` = grid and the lemma1 claim's real-run level
    decided again from it. The training runs' summary comes from the old level's evidence ("training", or its
    per-run "ratios" and "s" with the given sigma and temperature)."""
    new = copy.deepcopy(report)
    i = _claim_index(new)
    old = new["claims"][i]["levels"]["real"]
    evidence = old.get("evidence") or {}
    training = evidence.get("training")
    if training is None and evidence.get("ratios"):
        training = training_summary(evidence["ratios"], evidence.get("s", []), training_sigma, training_temperature)
    verdict = lemma1_verdict(grid, training).to_json()
    verdict["plots"] = old.get("plots", [])
    real_path = f"claims[{i}].levels.real"
    verdict, found_real = without_non_finite(verdict, real_path)
    rows, found_grid = without_non_finite(grid, "lemma_grid")
    new["claims"][i]["levels"]["real"] = verdict
    new["lemma_grid"] = rows
    kept = [p for p in report.get("non_finite", []) if not (p.startswith("lemma_grid") or p.startswith(real_path))]
    new["non_finite"] = kept + found_real + found_grid
    return new


def splice_markdown(text: str, report: dict) -> str:
    """REPORT.md's text with the lemma1 claims-table row, the grid section and the lemma1 real-run bullet
    rendered again from report (the spliced report.json)."""
    claim = report["claims"][_claim_index(report)]
    lines = text.split("\n")
    marker = f"](#{CLAIM}) |"
    rows = [k for k, line in enumerate(lines) if line.startswith("| [") and marker in line]
    if len(rows) != 1:
        raise ValueError(f"REPORT.md: expected one claims-table row of {CLAIM}, found {len(rows)}")
    lines[rows[0]] = claim_row(claim)

    anchor = [k for k, line in enumerate(lines) if line == f'<a id="{CLAIM}"></a>']
    if len(anchor) != 1:
        raise ValueError(f"REPORT.md: expected one section of the claim {CLAIM}, found {len(anchor)}")
    start = next((k for k in range(anchor[0], len(lines)) if lines[k].startswith("- real: ")), None)
    if start is None:
        raise ValueError(f"REPORT.md: the {CLAIM} section has no '- real:' line")
    end = start + 1
    while end < len(lines) and lines[end].startswith("  - "):
        end += 1
    lines[start:end] = level_lines("real", claim["levels"]["real"])

    section = lemma_grid_lines(report["lemma_grid"], lemma1_training(report)) + [""] if report["lemma_grid"] else []
    heads = [k for k, line in enumerate(lines) if line.startswith(GRID_HEADINGS)]
    nxt = lines.index(NEXT_SECTION) if NEXT_SECTION in lines else None
    if nxt is None:
        raise ValueError(f"REPORT.md: no {NEXT_SECTION!r} heading")
    if heads:  # the grid's section ends at the next heading (Lemma 1 as stated's, or the claims')
        end = next(k for k in range(heads[0] + 1, len(lines)) if lines[k].startswith("## "))
        lines[heads[0] : end] = section
    else:
        lines[nxt:nxt] = section
    return "\n".join(lines)
