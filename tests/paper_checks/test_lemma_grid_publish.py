"""Splicing a new Lemma 1 grid into a published report: only the grid, the lemma1 real-run verdict and their
lines change."""

import copy
import json

import numpy as np
import pytest

from escov.paper_checks.lemma_grid_publish import splice_markdown, splice_report
from escov.paper_checks.report import render_markdown
from escov.paper_checks.reproduce.lemma_grid_measurement import grid_row
from escov.theory.decisions import HOLDS


def _level(status, ours, **extra):
    return {
        "claim_id": "x",
        "status": status,
        "ours": ours,
        "interval": None,
        "evidence": {},
        "plots": [],
        "note": "",
        "test": "t",
        "design": "",
        "power": "",
    } | extra


def _claim(cid, statement, real):
    return {
        "id": cid,
        "statement": statement,
        "paper": "p",
        "test": "t",
        "untestable": "",
        "levels": {"theory": _level("holds", "n/a"), "simulate": _level("holds", "n/a"), "real": real},
    }


def _old_report():
    old_real = _level(
        "outside the lemma's regime",
        "s = 1.7 > 0.05; JSpol / prediction - 1 +1.34 [+0.53, +2.15]",
        evidence={"ratios": [2.0, 2.5, 2.1], "s": [1.5, 1.7, 2.0]},
        plots=["js_measured_vs_predicted.png"],
        note="old note",
        design="3 seeds",
    )
    return {
        "purpose": "",
        "runs": [{"path": "r", "variant": "es", "seed": 0, "model": "m"}],
        "bases": [],
        "input_problems": [],
        "plots": {"js": "js_measured_vs_predicted.png"},
        "open_questions": [],
        "claims": [
            _claim("drift_ratio", "ES moves further", _level("does not hold", "19x [18, 20]")),
            _claim("lemma1", "E[JSpol_N] = ...", old_real),
        ],
        "lemma_grid": [
            {
                "sigma": 1e-3,
                "members": 4,
                "draws": 3,
                "measured": 0.004,
                "predicted": 0.005,
                "ratio": 0.75,
                "ratio_ci": [0.17, 1.34],
                "ratio_sd": 0.24,
                "ratios": [0.9, 0.7, 0.6],
                "s_measured": 0.011,
            }
        ],
        "non_finite": ["claims[0].levels.real.evidence.x", "claims[1].levels.real.evidence.y", "lemma_grid[0].z"],
    }


def _new_grid():
    """Rows measured to 1% at ratio 1 inside the regime and 0.5 outside it, through grid_row (draws of antithetic
    pairs: arrays [sign, prompt])."""
    rng = np.random.default_rng(0)
    rows = []
    for sigma, truth, s in ((1e-3, 1.0, 0.0025), (2e-3, 1.0, 0.01), (2e-2, 0.5, 1.0)):
        per_draw = []
        for _ in range(10):
            q = 0.5 * sigma**2 * 0.75 * 5000 * rng.gamma(4, 0.25, size=4)
            per_draw.append(
                {
                    "predicted": q,
                    "fisher_trace": q * 8 / (3 * sigma**2),
                    "jspol": truth * q * (1 + 0.01 * rng.normal(size=(2, 4))),
                    "s": s * (1 + 0.01 * rng.normal(size=2)),
                    **{k: rng.uniform(0, 1e-3, size=(2, 4)) for k in ("jssucc", "gap", "local")},
                    **{k: np.zeros((2, 4)) for k in ("jssucc_null", "gap_null", "local_null")},
                }
            )
        rows.append(
            grid_row(per_draw, sigma, 4)
            | {
                "task": "countdown3",
                "temperature": 0.6,
                "max_new_tokens": 32,
                "prompts": 4,
                "samples": 2,
                "center_samples": 8,
            }
        )
    return rows


def test_splice_changes_only_the_grid_and_the_lemma1_real_verdict():
    old = _old_report()
    frozen = copy.deepcopy(old)
    grid = _new_grid()
    new = splice_report(old, grid, training_sigma=0.02, training_temperature=1.0)
    assert old == frozen  # the input is not modified
    assert new["lemma_grid"] == grid
    real = new["claims"][1]["levels"]["real"]
    assert real["status"] == HOLDS and "countdown3" in real["ours"]
    assert real["plots"] == ["js_measured_vs_predicted.png"]
    assert real["evidence"]["training"]["ratios"] == [2.0, 2.5, 2.1] and real["evidence"]["training"]["sigma"] == 0.02
    # everything else exactly as it was
    rest = lambda r: (
        {k: v for k, v in r.items() if k not in ("lemma_grid", "non_finite")}
        | {
            "claims": [
                c if c["id"] != "lemma1" else {**c, "levels": {**c["levels"], "real": None}} for c in r["claims"]
            ]
        }
    )
    assert rest(new) == rest(old)
    assert new["non_finite"] == ["claims[0].levels.real.evidence.x"]  # the old entries of the replaced parts are gone


def test_spliced_markdown_is_the_markdown_of_the_spliced_report():
    old = _old_report()
    header = "<!-- published -->\n> **Command:** `x`\n\n"
    text = header + render_markdown(old)
    new = splice_report(old, _new_grid(), 0.02, 1.0)
    spliced = splice_markdown(text, new)
    assert spliced == header + render_markdown(new)
    assert "| 0.001 | 4 | 10 | " in spliced and "countdown3" in spliced and "19x [18, 20]" in spliced
    assert "old note" not in spliced and "0.752" not in spliced
    # a report without a grid section gets one before the claims one by one
    grid = text[text.index("## The Lemma 1 grid on the real model") : text.index("## Claims one by one")]
    no_grid = text.replace(grid, "")
    assert splice_markdown(no_grid, new) == spliced
    # a report written before the grid was labelled an implementation check: its section is replaced all the same
    legacy = text.replace(grid, "## Lemma 1 on the real model over a grid of sigma and N\n\nold rows\n\n")
    assert splice_markdown(legacy, new) == spliced
    # a section after the grid's (Lemma 1 as stated) is kept
    stated = "## Lemma 1 as stated (independent populations, tr I from separate completions)\n\nkept\n\n"
    after = text.replace("## Claims one by one", stated + "## Claims one by one")
    assert splice_markdown(after, new) == spliced.replace("## Claims one by one", stated + "## Claims one by one")


def test_a_report_whose_evidence_holds_the_training_summary_keeps_it():
    """A report written after the summary was kept whole (evidence "training"): it is carried over as it is."""
    old = _old_report()
    training = {"sigma": 0.05, "temperature": 0.7, "ratios": [3.0, 3.5], "s": [2.0, 2.2], "s_median": 2.1}
    old["claims"][1]["levels"]["real"]["evidence"] = {"training": training}
    real = splice_report(old, _new_grid())["claims"][1]["levels"]["real"]
    assert real["evidence"]["training"] == training


def test_a_grid_value_that_is_not_finite_is_written_null_and_listed():
    grid = _new_grid()
    grid[1]["measured"] = float("nan")
    grid[2]["ratio_ci"] = [float("-inf"), 1.0]
    new = splice_report(_old_report(), grid, 0.02, 1.0)
    assert new["lemma_grid"][1]["measured"] is None and new["lemma_grid"][2]["ratio_ci"] == [None, 1.0]
    assert {"lemma_grid[1].measured", "lemma_grid[2].ratio_ci[0]"} <= set(new["non_finite"])
    assert "claims[0].levels.real.evidence.x" in new["non_finite"]
    json.dumps(new, allow_nan=False)  # report.json stays strict JSON


def test_an_empty_grid_removes_the_grid_section():
    old = _old_report()
    text = render_markdown(old)
    new = splice_report(old, [], 0.02, 1.0)
    spliced = splice_markdown(text, new)
    assert "## The Lemma 1 grid on the real model" not in spliced and spliced == render_markdown(new)


def test_a_report_it_cannot_place_the_splice_in_is_refused_naming_what_is_missing():
    old = _old_report()
    new = splice_report(old, _new_grid(), 0.02, 1.0)
    text = render_markdown(old)
    row = next(line for line in text.split("\n") if line.startswith("| [") and "](#lemma1) |" in line)
    without_lemma1 = {**old, "claims": old["claims"][:1]}
    with pytest.raises(ValueError, match="report.json has no 'lemma1' claim"):
        splice_report(without_lemma1, _new_grid())
    for damaged, message in (
        (text.replace(row + "\n", ""), "expected one claims-table row of lemma1, found 0"),
        (text.replace(row, row + "\n" + row), "expected one claims-table row of lemma1, found 2"),
        (text.replace('<a id="lemma1"></a>', ""), "expected one section of the claim lemma1, found 0"),
        (text.replace('<a id="lemma1"></a>', '<a id="lemma1"></a>\n<a id="lemma1"></a>'), "found 2"),
        (text.replace("\n- real: ", "\n- measured: "), "the lemma1 section has no '- real:' line"),
        (text.replace("## Claims one by one", "## Claims"), "no '## Claims one by one' heading"),
    ):
        with pytest.raises(ValueError, match=message):
            splice_markdown(damaged, new)
