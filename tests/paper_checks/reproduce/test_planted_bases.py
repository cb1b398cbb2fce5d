"""The counted tasks' base choice (paper_checks/reproduce/planted_bases.py): the rule's three conditions at their
boundaries, the candidates measured in order until one meets it, and its table."""

from __future__ import annotations

import pytest

from escov.paper_checks.reproduce import planted_bases
from escov.paper_checks.reproduce.planted_bases import MIN_RARE_ONLY, RARITY, meets


def _measure(overall=0.4, rare1=0.1, rare_n=0.5, rare_prompts=MIN_RARE_ONLY, n=32) -> dict:
    return {
        "n": n,
        "pass_at_k": {"1": overall, str(n): 0.9},
        "rare_only_prompts": rare_prompts,
        "rare_only_pass_at_k": {"1": rare1, str(n): rare_n},
    }


def test_each_condition_at_its_boundary():
    assert meets(_measure()) == {"enough": True, "reachable": True, "rare": True}
    assert meets(_measure(rare_prompts=MIN_RARE_ONLY - 1)) == {"enough": False, "reachable": False, "rare": False}
    assert meets(_measure(rare_n=0.0))["reachable"] is False
    assert meets(_measure(rare_n=1 / 32))["reachable"] is True
    assert meets(_measure(rare1=RARITY * 0.4))["rare"] is True  # at most half: the boundary meets it
    assert meets(_measure(rare1=RARITY * 0.4 + 1e-9))["rare"] is False
    assert meets(_measure(n=8) | {"rare_only_pass_at_k": {"1": 0.1, "8": 0.0, "32": 0.5}})["reachable"] is False


def test_candidates_are_measured_in_order_and_none_chosen_when_none_meets(tmp_path, monkeypatch):
    # a 3-step base solves nothing: every candidate fails, each measured on the validation prompts in order
    monkeypatch.setenv("ESCOV_CACHE", str(tmp_path / "cache"))
    tiny = (("steps", "3"), ("batch_size", "4"), ("warmup_steps", "1"))
    monkeypatch.setattr(planted_bases, "CANDIDATES", (tiny, tiny + (("rare_keep", "0.6"),)))
    monkeypatch.setattr(planted_bases, "VALIDATION_PROMPTS", 6)
    monkeypatch.setattr(planted_bases, "SAMPLES", 2)
    record = planted_bases.choose("subset_sum", tmp_path / "out", progress=False)
    assert record["chosen"] is None and [c["settings"] for c in record["candidates"]] == [
        dict(tiny),
        dict(tiny) | {"rare_keep": "0.6"},
    ]
    for c in record["candidates"]:
        assert c["measure"]["prompts"] == 6 and c["measure"]["n"] == 2 and c["measure"]["temperature"] == 1.0
        assert c["conditions"] == meets(c["measure"]) and not all(c["conditions"].values())
        assert c["command"].startswith("python -m escov.llm pretrain-planted --preset subset_sum --set steps=3")
    with pytest.raises(ValueError, match="--task must be one of grid_paths, subset_sum"):
        planted_bases.choose("countdown3", tmp_path / "out")


def test_the_table_marks_the_chosen_recipe():
    chosen = {"settings": {}, "measure": _measure() | {"n": 32}, "conditions": meets(_measure())}
    failed = {
        "settings": {"rare_keep": "0.6"},
        "measure": _measure(rare_n=0.0),
        "conditions": meets(_measure(rare_n=0.0)),
    }
    lines = planted_bases.render({"grid_paths": {"task": "grid_paths", "candidates": [failed, chosen], "chosen": {}}})
    rows = [line for line in lines if line.startswith("| grid_paths")]
    assert rows == [
        "| grid_paths | rare_keep=0.6 | 0.400 | 0.900 | 5 | 0.100 | 0.000 | yes | no | yes |  |",
        "| grid_paths | as shipped | 0.400 | 0.900 | 5 | 0.100 | 0.500 | yes | yes | yes | yes |",
    ]


def test_the_first_candidate_that_meets_the_rule_is_chosen_and_the_rest_are_not_built(tmp_path, monkeypatch):
    # the shipped grid base (the recipe as shipped) meets the rule on 16 validation prompts x 8 samples with the
    # rare-only count lowered to what 16 prompts hold; a tiny base before it fails, the candidate after it is not built
    from escov.paper_checks.reproduce.bases import base_cache_key

    monkeypatch.setenv("ESCOV_CACHE", str(tmp_path / "cache"))
    tiny = (("steps", "3"), ("batch_size", "4"), ("warmup_steps", "1"))
    monkeypatch.setattr(planted_bases, "CANDIDATES", (tiny, (), (("rare_keep", "0.9"),)))
    monkeypatch.setattr(planted_bases, "VALIDATION_PROMPTS", 16)
    monkeypatch.setattr(planted_bases, "SAMPLES", 8)
    monkeypatch.setattr(planted_bases, "MIN_RARE_ONLY", 1)
    record = planted_bases.choose("grid_paths", tmp_path / "out", progress=False)
    assert record["task"] == "grid_paths" and record["chosen"] == {}
    assert [c["settings"] for c in record["candidates"]] == [dict(tiny), {}]
    first, chosen = record["candidates"]
    assert not all(first["conditions"].values()) and all(chosen["conditions"].values())
    for c, settings in zip(record["candidates"], (tiny, ())):
        assert c["base"]["preset"] == "grid_paths" and c["base"]["overrides"] == dict(settings)
        assert c["base"]["seed"] == 0 and c["base"]["name"] == f"grid_paths-{base_cache_key('grid_paths', 0, settings)}"
        assert (tmp_path / "out" / c["base"]["name"] / "config.json").is_file()
    assert len(list((tmp_path / "out").iterdir())) == 2  # the third candidate was never built


def test_the_tables_header_states_the_rule():
    lines = planted_bases.render({})
    assert lines[0] == "# The counted tasks' bases, chosen on validation prompts" and lines[1] == ""
    assert lines[2] == (
        f"{planted_bases.VALIDATION_PROMPTS} validation prompts x {planted_bases.SAMPLES} samples at T = 1; a "
        f"candidate meets the rule when at least {MIN_RARE_ONLY} prompts are rare-only, its Pass@32 on them is above 0 "
        f"and its Pass@1 on them is at most {RARITY:g} x its Pass@1 on all prompts."
    )
    assert lines[3:] == [
        "",
        "| task | recipe | Pass@1 | Pass@32 | rare-only prompts | their Pass@1 | their Pass@32 | enough | reachable "
        "| rare | chosen |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    two = {
        "settings": {"rare_keep": "0.6", "rare_share": "0.05"},
        "measure": _measure(),
        "conditions": meets(_measure()),
    }
    row = planted_bases.render({"subset_sum": {"candidates": [two], "chosen": None}})[-1]
    assert row.startswith("| subset_sum | rare_keep=0.6, rare_share=0.05 | ") and row.endswith("| yes | yes | yes |  |")


def test_an_undefined_rate_is_a_dash():
    m = _measure() | {"rare_only_prompts": 0, "rare_only_pass_at_k": {"1": None, "32": None}}
    c = {"settings": {}, "measure": m, "conditions": meets(m)}
    (row,) = [
        x for x in planted_bases.render({"grid_paths": {"candidates": [c], "chosen": None}}) if x.startswith("| grid")
    ]
    assert row == "| grid_paths | as shipped | 0.400 | 0.900 | 0 | - | - | no | no | no |  |"


def test_a_candidate_failing_every_condition_says_no_in_each_column():
    few = _measure(rare_prompts=MIN_RARE_ONLY - 1, rare1=0.4)
    row = planted_bases.render(
        {"grid_paths": {"candidates": [{"settings": {}, "measure": few, "conditions": meets(few)}], "chosen": None}}
    )[-1]
    assert row.endswith("| no | no | no |  |")


def test_the_command_keeps_a_tasks_choice_once_made_and_writes_the_table(tmp_path, capsys):
    # a record that holds both tasks is not measured again: the command only writes the table from it
    import argparse
    import json

    from escov.paper_checks.reproduce.planted_bases import RECORD_JSON, RECORD_MD, main_args

    chosen = {"settings": {}, "measure": _measure(), "conditions": meets(_measure())}
    record = {t: {"task": t, "candidates": [chosen], "chosen": {}} for t in ("subset_sum", "grid_paths")}
    (tmp_path / RECORD_JSON).write_text(json.dumps(record), encoding="utf-8")
    assert main_args(argparse.Namespace(out=tmp_path, task=None, no_progress=True)) == 0
    assert json.loads((tmp_path / RECORD_JSON).read_text(encoding="utf-8")) == record
    table = (tmp_path / RECORD_MD).read_text(encoding="utf-8")
    assert table == "\n".join(planted_bases.render(record)) + "\n" and table in capsys.readouterr().out + "\n"
    assert table.index("| grid_paths |") < table.index("| subset_sum |")


def test_the_command_measures_only_the_task_it_is_given_then_only_the_tasks_its_record_lacks(
    tmp_path, monkeypatch, capsys
):
    """`--task subset_sum` on an empty folder measures subset_sum's candidates alone (a 3-step base, which meets
    nothing), quietly with --no-progress; then the command without --task measures grid_paths alone, keeping
    subset_sum's record as it was."""
    import argparse
    import json

    from escov.paper_checks.reproduce.planted_bases import RECORD_JSON, RECORD_MD, main_args

    monkeypatch.setenv("ESCOV_CACHE", str(tmp_path / "cache"))
    tiny = (("steps", "3"), ("batch_size", "4"), ("warmup_steps", "1"))
    monkeypatch.setattr(planted_bases, "CANDIDATES", (tiny,))
    monkeypatch.setattr(planted_bases, "VALIDATION_PROMPTS", 4)
    monkeypatch.setattr(planted_bases, "SAMPLES", 2)
    out = tmp_path / "new" / "folder"  # made with its parents
    assert main_args(argparse.Namespace(out=out, task="subset_sum", no_progress=True)) == 0
    record = json.loads((out / RECORD_JSON).read_text(encoding="utf-8"))
    assert set(record) == {"subset_sum"}
    subset = record["subset_sum"]
    assert subset["task"] == "subset_sum" and subset["chosen"] is None
    assert [c["settings"] for c in subset["candidates"]] == [dict(tiny)]
    assert subset["candidates"][0]["measure"]["prompts"] == 4 and subset["candidates"][0]["measure"]["n"] == 2
    printed = capsys.readouterr()
    assert "pretrain" not in printed.err and "| subset_sum | steps=3" in printed.out  # no pretraining bar
    assert (out / RECORD_MD).read_text(encoding="utf-8") == "\n".join(planted_bases.render(record)) + "\n"

    measured = []
    grid = {"task": "grid_paths", "candidates": [], "chosen": None}
    monkeypatch.setattr(planted_bases, "choose", lambda task, out, progress: measured.append((task, progress)) or grid)
    assert main_args(argparse.Namespace(out=out, task=None, no_progress=False)) == 0
    assert measured == [("grid_paths", True)]  # the bar on unless --no-progress
    assert json.loads((out / RECORD_JSON).read_text(encoding="utf-8")) == record | {"grid_paths": grid}
