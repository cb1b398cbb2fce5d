"""The lemma1 claim decided from the as-stated record when a report has it (paper_checks/real_checks/lemmas.py), the
grid's reading kept in the note; without the record the grid decides, labelled an implementation check."""

import numpy as np
import pytest

from escov.paper_checks.evidence import Evidence
from escov.paper_checks.lemma_as_stated import lemma_as_stated_record, report_lines
from escov.paper_checks.real_checks import REAL_CHECKS
from escov.paper_checks.verdict import MISSING
from escov.theory.decisions import HOLDS, INCONCLUSIVE


def _measurement(ratio: float, spread: float) -> dict:
    """Two rows inside the regime whose populations' mean JSpol_N is `ratio` x the prediction from the trace 1000,
    with populations at mean +- spread (4 each, 2 prompts), and one row outside it."""
    trace = [[900.0, 1100.0] * 200, [800.0, 1200.0] * 200]
    rows = []
    for sigma, n, s in ((1e-3, 4, 0.002), (2e-3, 16, 0.01), (2e-2, 16, 3.0)):
        mean = ratio * 0.5 * sigma**2 * (1 - 1 / n) * 1000
        js = [[mean * (1 + spread * k)] * 2 for k in (-1.5, -0.5, 0.5, 1.5)]
        rows.append({"sigma": sigma, "members": n, "jspol": js, "s": [s] * 4})
    return {"trace_per_completion": trace, "rows": rows, "settings": {"task": "countdown3"}}


def test_the_claim_is_decided_as_stated_and_the_grid_is_its_note():
    record = lemma_as_stated_record(_measurement(1.0, 0.01))
    v = REAL_CHECKS["lemma1"](Evidence(lemma_as_stated=record))
    assert v.status == HOLDS and record["pooled"]["rows"] == 2
    lo, hi = record["pooled"]["ci"]
    assert v.interval == (lo - 1, hi - 1) and lo < 1 < hi
    assert v.ours.startswith("as stated, 2 rows with s <= 0.05: pooled E[JSpol_N] / ((sigma^2/2)(1 - 1/N) tr I) 1.000 ")
    assert "the per-population grid (implementation check and regime boundary)" in v.note
    assert v.design == "independent populations: N=4 sigma=0.001: 4 populations, N=16 sigma=0.002: 4 populations"
    # wide populations: inconclusive, still as stated
    wide = lemma_as_stated_record(_measurement(1.0, 0.4))
    assert REAL_CHECKS["lemma1"](Evidence(lemma_as_stated=wide)).status == INCONCLUSIVE
    # no record: the grid (none here) and the runs (none) decide nothing
    assert REAL_CHECKS["lemma1"](Evidence()).status == MISSING


def test_report_lines_state_the_pooled_reading_and_every_row():
    record = lemma_as_stated_record(_measurement(1.0, 0.01))
    lines = report_lines(record)
    assert lines[0] == "## Lemma 1 as stated (independent populations, tr I from separate completions)"
    assert lines[2] == "tr I_x = 1000 (se 6) from 800 separate center completions (per-completion relative sd 0.15)."
    assert lines[3].startswith("Pooled E[JSpol_N] / prediction over the 2 rows with s <= 0.05: 1.000 [")
    assert lines[3].endswith("**holds** (equivalence within 1 +- 0.1).")
    table = [x for x in lines if x.startswith("| 0.")]
    assert len(table) == 3 and table[-1].startswith("| 0.02 | 16 | 4 | 3 | ")
    # per-completion relative sd by hand: prompt 1 values 900/1100, prompt 2 800/1200
    sd = np.mean([np.std([900.0, 1100.0] * 200, ddof=1) / 1000, np.std([800.0, 1200.0] * 200, ddof=1) / 1000])
    assert f"{sd:.2f}" == "0.15"
    se = np.sqrt((np.var([900.0, 1100.0] * 200, ddof=1) + np.var([800.0, 1200.0] * 200, ddof=1)) / 400 / 4)
    assert f"{se:.0f}" == "6" and record["trace"]["se"] == pytest.approx(se)
