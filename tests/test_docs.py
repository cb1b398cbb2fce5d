"""The documentation: the README reads in order and links only to what exists, the project's notes
on the paper (docs/paper.md) hold the numbers theory/paper.py holds, and nothing
refers to a paper summary outside the repository."""

import re
from pathlib import Path

from escov.theory import paper as pn

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAPER = ROOT / "docs" / "paper.md"
# what the README says, in the order a newcomer needs it
README_ORDER = (
    "## The answer so far",
    "## Install",
    "## A first run in two minutes",
    "## The main job",
    "## Training on your own data and reward",
    "## Where results land",
    "## Reference",
)
REPRODUCE = "bash scripts/setup.sh && .venv/bin/python -m escov.paper_checks reproduce --budget small --out runs/small"
TESTS = "bash scripts/setup.sh && .venv/bin/python -m pytest -q"


def _doc_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_reads_in_order_and_keeps_its_two_commands():
    text = README.read_text()
    first_section = text.index("\n## ")
    assert "A toolkit that checks the claims" in text[:first_section], "what the toolkit is comes first"
    positions = [text.index(header) for header in README_ORDER]
    assert positions == sorted(positions), f"README sections out of order: {README_ORDER}"
    assert REPRODUCE in text and TESTS in text
    answer = text[text.index("## The answer so far") : text.index("## Install")]
    assert answer.count("<!-- ANSWER") == 1 and answer.count("<!-- /ANSWER -->") == 1, "one section holds the answer"
    assert text[: text.index("## The answer so far")].count("\n") < 20, "the answer is on the first screen"
    assert len(text.splitlines()) < 200, "the long reference belongs in docs/"


def test_every_relative_link_of_the_docs_exists():
    for doc in _doc_files():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" in target:
                continue
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links to missing {target}"


def test_nothing_refers_to_a_paper_summary_outside_the_repository():
    # the upper-case name of a summary the repository does not have; docs/paper.md is the project's own
    outside_summary = "PAPER" + ".md"
    files = [
        p
        for p in ROOT.rglob("*")
        if p.suffix in (".py", ".md", ".toml", ".sh") and ".venv" not in p.parts and ".git" not in p.parts
    ]
    assert [str(p.relative_to(ROOT)) for p in files if outside_summary in p.read_text(errors="replace")] == []


def _rows(text: str) -> dict[str, list[str]]:
    """A Markdown table's rows: first cell -> the other cells."""
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines() if line.startswith("| ")]
    return {cells[0]: cells[1:] for cells in rows}


def _triple(values) -> str:
    return "/".join(f"{v:.1f}" for v in values)


def test_docs_paper_holds_the_numbers_the_checks_use():
    text = PAPER.read_text()
    table2 = _rows(text[text.index("**Table 2**") : text.index("**Table 3**")])
    table4 = _rows(text[text.index("**Table 4**") : text.index("**Table 6**")])
    taus = [f"{t:.1e}".replace("e-0", "e-") for t in pn.PAPER_TAUS]
    assert table4["model"][2:] == [f"tau = {taus[0]}", *taus[1:]]
    text = " ".join(text.split())  # lines wrap anywhere
    for model, methods in pn.TABLE2_EASY.items():
        cells = table2[model]
        assert cells[:5] == [_triple(methods[m]) for m in pn.METHODS], model
    for method, values in pn.TABLE3_HARD.items():
        assert f"{method} {_triple(values)}" in text, method
    for method, values in pn.GSM8K_QWEN15.items():
        assert f"{method} {_triple(values)}" in text, method
    for model, drift in pn.TABLE4_DRIFT.items():
        assert table4[model] == [
            f"{drift['grpo']}",
            f"{drift['es']} ({drift['ratio']}x)",
            *(f"{s:.2f}%" for s in drift["share"]),
        ], model
    for size, by_n in pn.TABLE6_POPULATION.items():
        assert f"{size} " + " / ".join(f"{by_n[n]:.4f}" for n in (8, 16, 32, 64)) in text, size
    for method, by_model in pn.HELD_OUT_CHANGE.items():
        for values in by_model.values():
            assert "/".join(f"{v:+.1f}" for v in values) in text, (method, values)
    assert ", ".join(f"{v:+.2f}" for v in pn.THRESHOLDED_PASS1_CHANGE[:3]) in text
    assert f"{pn.GRPO_BELOW_BASE[0]} of the {pn.GRPO_BELOW_BASE[1]}" in text
    assert f"N = {pn.PAPER_POPULATION_SIZE}, sigma = {pn.PAPER_SIGMA:.1e}, alpha = {pn.PAPER_ALPHA:.1e}" in text
    assert f"G = {pn.PAPER_NUM_GENERATIONS} samples per prompt" in text
    assert f"({pn.ANTITHETIC_REWARD_CORRELATION} at sigma = 1e-3" in text
    assert f"s = (sigma^2 / 2) tr I_x <= {pn.LEMMA1_S_LIMIT}" in text


def test_the_readmes_answer_is_the_published_reports():
    """The README's exploratory rows and figures are the published record's (results/report.json "premise"): ES - its
    null at the last checkpoints, and the share of prompts each endpoint solves within n samples at each temperature."""
    import json

    from escov.paper_checks.verdict import fmt_interval

    text = README.read_text()
    answer = text[text.index("<!-- ANSWER") : text.index("<!-- /ANSWER -->")]
    record = json.loads((ROOT / "results" / "report.json").read_text())["premise"]
    d = record["es_null"]["test"]["es_minus_null_end"]["pass1"]
    line = next(line for line in answer.splitlines() if line.startswith("| ES - its random-z null"))
    assert line.split("|")[3].strip() == fmt_interval(d["mean"], d["lo"], d["hi"])
    att = record["pass_at_k_endpoints"]
    n, flat = att["samples"], " ".join(answer.split())
    for t in att["temperatures"]:
        key = f"{t:g}"
        shares = [f"{100 * att[m][key][str(n)]['mean']:.1f}%" for m in ("base", "grpo_plateau", "es_end")]
        assert f"{shares[0]}, {shares[1]} and {shares[2]}" in flat or f"{shares[0]} of the prompts" in flat, key
        assert att["crossing"]["es_over_grpo"][key]["k_star"] is None  # "never overtakes GRPO's up to k = n"
    assert f"up to k = {n}" in flat


def test_docs_paper_names_the_version_transcribed():
    assert f"arXiv {pn.ARXIV}, {pn.VERSION} of {pn.DATE}" in " ".join(PAPER.read_text().split())


def test_the_papers_base_numbers_are_quoted_as_table_2s_six_task_average():
    """Pass@1 0.41 and Pass@32 0.80 of Qwen2.5-1.5B are Table 2's average over six tasks, not one task's: wherever
    the README or docs quote the paper's 0.41, the sentence says so."""
    pass1 = pn.TABLE2_EASY["Qwen2.5-1.5B"]["Base"][0] / 100
    for doc in _doc_files():
        text = " ".join(doc.read_text().split())
        for match in re.finditer(rf"(?<![\d.]){re.escape(f'{pass1:.2f}')}\b", text):
            sentence = text[text.rfind(". ", 0, match.start()) + 2 : text.find(". ", match.end())]
            assert "six-task average" in sentence, f"{doc.relative_to(ROOT)}: {sentence}"


def test_nothing_is_ruled_out_without_a_test_that_rules_it_out():
    """The registered tests are directional (> 0) and equivalences with margins stated in advance: none of the
    README's or docs' statements rests on a one-sided reading chosen after the fact ("ruled out")."""
    for doc in _doc_files():
        assert "ruled out" not in " ".join(doc.read_text().split()).lower(), doc.relative_to(ROOT)


def test_the_papers_end_of_training_differences_are_set_against_the_end_of_training_interval():
    """The paper's ES - GRPO at Pass@32 (Table 2, each model) beside the like-for-like interval of the published
    answer (the premise record's end of equal budgets, results/report.json), with those inside it named as inside
    and the others as below or above it."""
    import json

    from escov.paper_checks.verdict import fmt_interval

    text = README.read_text()
    answer = " ".join(text[text.index("<!-- ANSWER") : text.index("<!-- /ANSWER -->")].split())
    est = json.loads((ROOT / "results" / "report.json").read_text())["premise"]["es_minus_grpo_end"]
    interval = fmt_interval(est["mean"], est["lo"], est["hi"], unit="")
    assert f"{interval.split(' [')[0]} points [{interval.split(' [')[1]} at the end of equal budgets" in answer
    diffs = sorted(round(v["ES"][2] - v["GRPO"][2], 1) for v in pn.TABLE2_EASY.values())
    assert (
        "ES - GRPO at Pass@32 is " + ", ".join(f"{d:+.1f}" for d in diffs[:-1]) + f" and {diffs[-1]:+.1f} points"
        in answer
    )

    def listed(values: list[str]) -> str:
        return values[0] if len(values) == 1 else ", ".join(values[:-1]) + f" and {values[-1]}"

    inside = [f"{d:+.1f}" for d in diffs if 100 * est["lo"] <= d <= 100 * est["hi"]]
    parts = [f"contains {listed(inside)}"] if inside else []
    for side, outside in (
        ("below", [d for d in diffs if d < 100 * est["lo"]]),
        ("above", [d for d in diffs if d > 100 * est["hi"]]),
    ):
        if outside:
            parts.append(f"{listed([f'{d:+.1f}' for d in outside])} {'lies' if len(outside) == 1 else 'lie'} {side} it")
    assert "; ".join(parts) + ". " in answer or "; ".join(parts) + " " in answer


def test_the_readmes_premise_rows_are_the_published_record():
    """The README's rows for the registered endpoints (a), (b'), (e) and the outcome (f) are the published record's
    intervals and readings (results/report.json "premise"), and its table names the control's interval."""
    import json

    from escov.paper_checks.verdict import fmt_interval

    text = README.read_text()
    answer = text[text.index("<!-- ANSWER") : text.index("<!-- /ANSWER -->")]
    record = json.loads((ROOT / "results" / "report.json").read_text())["premise"]

    def row(prefix: str) -> tuple[str, str]:
        line = next(line for line in answer.splitlines() if line.startswith(prefix))
        verdict, interval = [c.strip().strip("*") for c in line.split("|")[2:4]]
        return verdict, interval

    for prefix, entry in (("| (a) ", record["grpo_plateau_minus_base"]), ("| (e) ", record["es_minus_base_end"])):
        est = entry["pass@32"]
        assert row(prefix) == (entry["verdict"].replace("_", " "), fmt_interval(est["mean"], est["lo"], est["hi"]))
    b = record["es_at_grpo_plateau"]
    assert (row("| (b') ")[0] == "not readable") == (b["reading"] == "not_readable")
    f = record["es_plateau_outcome"]
    verdict, interval = row("| (f) ")
    last = f["es_last_pass1"]
    assert verdict == ("never" if f["finding"] == "es_never_reaches_grpo_plateau_by_cap" else "reached")
    assert interval == f"last Pass@1 {last['mean']:.3f} [{last['lo']:.3f}, {last['hi']:.3f}]"
    assert f"({f['grpo_plateau_pass1']:.3f})" in row("| (f) ")[0] or f"({f['grpo_plateau_pass1']:.3f})" in answer
    c = record["positive_control"]["pass@32"]
    assert f"control on validation: {fmt_interval(c['mean'], c['lo'], c['hi'], unit='')}" in answer
    registered = record["registered"]
    assert registered["commit"] and ("es_at_grpo_plateau" in registered["not_readable"]) == (
        b["reading"] == "not_readable"
    )


def test_the_readmes_variant_row_is_the_published_record():
    """The README's (a') row is the published `grpo_variants` record's interval and verdict for the chosen variant,
    and it calls ES against that variant not readable exactly when the record does."""
    import json

    from escov.paper_checks.verdict import fmt_interval

    text = README.read_text()
    answer = text[text.index("<!-- ANSWER") : text.index("<!-- /ANSWER -->")]
    record = json.loads((ROOT / "results" / "report.json").read_text())["grpo_variants"]
    line = next(line for line in answer.splitlines() if line.startswith("| (a') "))
    verdict, interval = [c.strip().strip("*") for c in line.split("|")[2:4]]
    v = record["variant_plateau_minus_base"]
    est = v["pass@32"]
    assert (verdict, interval) == (v["verdict"].replace("_", " "), fmt_interval(est["mean"], est["lo"], est["hi"]))
    assert record["chosen"].replace("-", " ") in line
    flat = " ".join(answer.split())
    readable = record["es_at_variant_plateau"]["reading"] != "not_readable"
    assert ("ES against the variant is not readable" in flat) == (not readable)


def test_the_readmes_three_tasks_are_the_published_pool():
    """The README's answer names the tasks of results/report.json's `premise_by_task` (each with its base's Pass@1024
    on rare-only test prompts above 0), quotes each counted task's (a) and subset sum's (e) from its record, and its
    pooled row is the `pooled` record's (a) interval, reading and count of tasks agreeing."""
    import json

    from escov.paper_checks.verdict import fmt_interval

    text = README.read_text()
    answer = text[text.index("<!-- ANSWER") : text.index("<!-- /ANSWER -->")]
    flat = " ".join(answer.split())
    report = json.loads((ROOT / "results" / "report.json").read_text())
    by_task, pooled = report["premise_by_task"], report["pooled"]
    assert sorted(by_task) == ["countdown", "grid_paths", "subset_sum"]
    assert all(record["rare_only_base_pass_at_k"] > 0 for record in by_task.values())
    assert "Countdown, grid paths and subset sum" in flat and "On three tasks" in flat

    def plain(est: dict) -> str:  # "-12.20 [-18.46, -5.94]": the interval as the bullet writes it, in points
        return fmt_interval(est["mean"], est["lo"], est["hi"], unit="")

    a = [plain(by_task[t]["grpo_plateau_minus_base"]["pass@32"]) for t in ("grid_paths", "subset_sum")]
    assert f"(a) {a[0]} and {a[1]} points" in flat
    assert f"(e) {plain(by_task['subset_sum']['es_minus_base_end']['pass@32'])}" in flat
    end = by_task["grid_paths"]["es_minus_grpo_end"]  # ES - GRPO Pass@32 at the end of equal budgets, above 0
    assert end["lo"] > 0
    assert (
        f"ends {fmt_interval(end['mean'], end['lo'], end['hi'], unit=' points')} above GRPO's".replace("+", "") in flat
    )
    row = next(line for line in answer.splitlines() if line.startswith("| pooled (a) "))
    p = pooled["grpo_plateau_minus_base"]
    reading, interval = [c.strip() for c in row.split("|")[2:4]]
    assert interval == fmt_interval(p["mean"], p["lo"], p["hi"]) and reading == p["reading"]
    assert f"({len(p['tasks_agreeing'])} of {len(p['tasks'])} tasks narrowed alone)" in row
    assert pooled["es_minus_base_end"]["reading"] == "inconclusive" and "both (a) and (e) are inconclusive" in flat
