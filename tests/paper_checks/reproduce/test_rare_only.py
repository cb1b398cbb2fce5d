"""The rare-only prompts at the answer's endpoints (paper_checks/reproduce/rare_only.py), against hand computations:
which test prompts are rare-only (every shortest path starts vertically, found by brute force over all move strings,
not by the task's dynamic programme), the base's Pass@n on them, kept / lost / gained per seed, and the exact share
of each prompt's solution set found (distinct correct answers over the brute-force count of shortest paths)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from escov.llm.config import TrainConfig
from escov.llm.problem_sets import eval_set
from escov.llm.rundir import write_json
from escov.paper_checks.reproduce import endpoints, rare_only
from escov.paper_checks.reproduce.bases import shipped_base_dir

SEEDS, N = (0, 1), 16
SETTINGS = {"task": "grid_paths", "eval_problems": 24, "eval_skip": 8, "max_completion_length": 24}


def _brute_paths(grid_text: str) -> list[str]:
    """Every shortest path of a grid, by walking every move string of each length until one reaches the goal."""
    rows = grid_text.split("|")
    cells = {(r, c): ch for r, row in enumerate(rows) for c, ch in enumerate(row)}
    start = next(p for p, ch in cells.items() if ch == "S")
    step = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
    for length in range(1, 13):
        found = []
        for moves in itertools.product("UDLR", repeat=length):
            r, c = start
            for m in moves:
                r, c = r + step[m][0], c + step[m][1]
                if cells.get((r, c), "#") == "#":
                    break
            else:
                if cells[(r, c)] == "G":
                    found.append("".join(moves))
        if found:
            return found
    raise AssertionError(f"no path in {grid_text}")


# each endpoint's model and step: the base, then each seed's GRPO (last checkpoint 150) and ES (450) run
MODELS = [("base", 0)] + [(f"{v}-s{s}", step) for v, step in (("grpo", 150), ("es", 450)) for s in SEEDS]


def _write_runs(out, model, settings: dict = SETTINGS) -> list:
    """Run directories with config.json and one complete checkpoint each (GRPO at 150, ES at 450); their test
    problems."""
    for name, step in MODELS[1:]:
        run = out / "runs" / name
        (run / "checkpoints" / f"step-{step}").mkdir(parents=True)
        (run / "checkpoints" / f"step-{step}" / "trainer_state.json").write_text("{}")
        variant, seed = name.rsplit("-s", 1)
        write_json(run / "config.json", settings | {"algo": variant, "seed": int(seed), "model": str(model)})
    (out / endpoints.ENDPOINTS_DIR).mkdir()
    return eval_set(TrainConfig.from_dict(settings | {"algo": "grpo", "model": str(model)})).problems


def _write_endpoint(out, name: str, step: int, t: float, prompts: list, correct, distinct=None) -> None:
    """One endpoint evaluation's file, as reproduce/endpoints.py writes it (the fields the record reads)."""
    distinct = [min(int(c), 1) for c in correct] if distinct is None else distinct
    write_json(
        endpoints.endpoint_file(out, name, step, t),
        {
            "n": N,
            "prompts": list(prompts),
            "correct": list(map(int, correct)),
            "distinct_correct_answers": list(distinct),
        },
    )


def test_the_rare_only_record_against_a_brute_force_enumeration(tmp_path):
    model = shipped_base_dir("grid_paths")
    out = tmp_path / "answer"
    problems = _write_runs(out, model)
    ids = [p.id for p in problems]
    paths = [_brute_paths(p.meta["grid"]) for p in problems]
    rare = np.array([all(path[0] in "UD" for path in ps) for ps in paths])
    assert 2 < rare.sum() < len(ids)  # the draw holds both families: the counts below compare something
    rng = np.random.default_rng(0)
    counts = {}
    for t in (0.6, 1.0):
        for name, step in MODELS:
            c = rng.integers(0, 3, len(ids)) * rng.integers(0, 2, len(ids))  # many zeros: kept and lost both occur
            if name == "base":  # the base solves two prompts in three, so some rare-only prompt is solved
                c = np.where(np.arange(len(ids)) % 3 == 2, 0, 1 + c)
            distinct = np.minimum(c, [len(ps) for ps in paths])
            counts[name, t] = (c, distinct)
            _write_endpoint(out, name, step, t, ids, c, distinct.tolist())
    record = rare_only.rare_only_record(out, SEEDS, (0.6, 1.0), "grid_paths")
    assert record["prompts"] == len(ids) and record["rare_only_prompts"] == int(rare.sum())
    assert record["ids"] == [i for i, r in zip(ids, rare) if r]
    for t in (0.6, 1.0):
        entry = record["by_temperature"][f"{t:g}"]
        base = counts["base", t][0][rare] > 0
        assert entry["base_pass_at_n"] == pytest.approx(base.mean()) and entry["base_solved"] == base.sum()
        for group, variant in (("grpo_plateau", "grpo"), ("es_end", "es")):
            for seed, row in zip(SEEDS, entry[group]["per_seed"]):
                solved = counts[f"{variant}-s{seed}", t][0][rare] > 0
                kept = sum(b and s for b, s in zip(base, solved))
                assert row["kept"] == pytest.approx(kept / base.sum())
                assert row["lost"] == pytest.approx(1 - kept / base.sum())
                assert row["gained"] == sum(s and not b for b, s in zip(base, solved))
            assert entry[group]["lost"] == pytest.approx(np.mean([r["lost"] for r in entry[group]["per_seed"]]))
        base_share = np.mean(counts["base", t][1] / [len(ps) for ps in paths])
        assert entry["solution_share_found"]["base"] == pytest.approx(base_share)
        grpo_shares = [counts[f"grpo-s{s}", t][1] / [len(ps) for ps in paths] for s in SEEDS]
        assert entry["solution_share_found"]["grpo_plateau"] == pytest.approx(np.mean(grpo_shares))
    assert record["rare_only_base_pass_at_k"] == record["by_temperature"]["1"]["base_pass_at_n"]
    json.dumps(record)  # it goes into report.json as it is


def test_kept_and_lost_leave_out_a_base_that_solved_nothing():
    # no rare-only prompt solved by the base: nothing to keep or lose (None), only gains counted
    row = rare_only.kept_lost(np.array([0, 0, 0]), np.array([[0, 2, 0], [1, 1, 0]]))
    assert row["kept"] is None and row["lost"] is None and row["gained"] == pytest.approx(1.5)
    row = rare_only.kept_lost(np.array([3, 1, 0, 2]), np.array([[1, 0, 5, 0]]))
    assert row["per_seed"] == [{"kept": pytest.approx(1 / 3), "lost": pytest.approx(2 / 3), "gained": 1}]


def test_evaluations_of_other_prompts_are_refused(tmp_path):
    model = shipped_base_dir("grid_paths")
    out = tmp_path / "answer"
    problems = _write_runs(out, model)
    ids = [p.id for p in problems]
    for name, step in MODELS:
        _write_endpoint(out, name, step, 1.0, ids[::-1] if name == "es-s1" else ids, [0] * len(ids))
    with pytest.raises(ValueError, match="es-s1-step450-T1.json"):
        rare_only.rare_only_record(out, SEEDS, (1.0,), "grid_paths")
    endpoints.endpoint_file(out, "base", 0, 1.0).unlink()
    with pytest.raises(ValueError, match="missing: .*base-step0-T1.json"):
        rare_only.rare_only_record(out, SEEDS, (1.0,), "grid_paths")


def test_the_report_section_writes_each_reading_in_its_cell():
    from escov.paper_checks.premise_attachments import render_rare_only

    def method(kept, lost, gained):
        return {"kept": kept, "lost": lost, "gained": gained, "per_seed": []}

    att = {
        "prompts": 64,
        "rare_only_prompts": 9,
        "by_temperature": {
            "0.6": {
                "n": 1024,
                "base_pass_at_n": 0.0,
                "base_solved": 0,
                "grpo_plateau": method(None, None, 0.5),
                "es_end": method(None, None, 0),
                "solution_share_found": {"base": 0.25, "grpo_plateau": 0.125, "es_end": 0.5},
            },
            "1": {
                "n": 1024,
                "base_pass_at_n": 4 / 9,
                "base_solved": 4,
                "grpo_plateau": method(0.25, 0.75, 1.5),
                "es_end": method(1.0, 0.0, 0),
                "solution_share_found": {"base": 0.375, "grpo_plateau": 0.0625, "es_end": 0.75},
            },
        },
    }
    lines = render_rare_only(att)
    assert lines[:6] == [
        "### The rare-only test prompts at the endpoints",
        "",
        "9 of the 64 test prompts are rare-only (every solution uses the rare strategy of the base's corpus). Per "
        "temperature: how many the base solves in 1024 samples (its Pass@1024 on them), and of those, the share GRPO's "
        "plateau and ES's end keep / lose (mean over seeds; in brackets the rare-only prompts the base never solved "
        "that they solve, per seed). Exploratory: no interval.",
        "",
        "| T | solved by the base | base Pass@1024 | GRPO kept / lost (gained) | ES kept / lost (gained) |",
        "|---|---|---|---|---|",
    ]
    assert lines[8:10] == [
        "",
        "The share of each test prompt's enumerated solution set found in 1024 samples (mean over prompts, and seeds): "
        "T = 0.6: base 25.0%, GRPO 12.5%, ES 50.0%; T = 1: base 37.5%, GRPO 6.2%, ES 75.0%.",
    ]
    unmeasured = {**att, "by_temperature": {"1": {**att["by_temperature"]["1"], "base_pass_at_n": None}}}
    assert "| 1 | 4 | - | 25% / 75% (1.5) | 100% / 0% (0) |" in render_rare_only(unmeasured)
    assert "| 0.6 | 0 | 0.0% | - / - (0.5) | - / - (0) |" in lines
    assert "| 1 | 4 | 44.4% | 25% / 75% (1.5) | 100% / 0% (0) |" in lines
    assert lines[-1].endswith("T = 0.6: base 25.0%, GRPO 12.5%, ES 50.0%; T = 1: base 37.5%, GRPO 6.2%, ES 75.0%.")
    del att["by_temperature"]["1"]["solution_share_found"]  # Countdown: no enumerated solution set
    assert not any("enumerated solution set" in line for line in render_rare_only(att))


def test_attaching_twice_leaves_one_section_at_the_end_of_the_premises(tmp_path):
    from escov.llm.rundir import read_json

    record = {
        "prompts": 4,
        "rare_only_prompts": 1,
        "rare_only_base_pass_at_k": 1.0,
        "by_temperature": {
            "1": {
                "n": 8,
                "base_pass_at_n": 1.0,
                "base_solved": 1,
                "grpo_plateau": {"kept": 0.0, "lost": 1.0, "gained": 0, "per_seed": []},
                "es_end": {"kept": 1.0, "lost": 0.0, "gained": 0, "per_seed": []},
            }
        },
    }
    write_json(tmp_path / "report.json", {"premise": {"verdict": "narrowed"}, "other": 1})
    md = "# r\n\n## The premise: x\n\n- (a)\n\n### Draws\n\n| d |\n\n## All claims\n\n| t |\n"
    (tmp_path / "REPORT.md").write_text(md, encoding="utf-8")
    rare_only.attach(tmp_path, record)
    once = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    rare_only.attach(tmp_path, record | {"rare_only_prompts": 2})
    text = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert text.count("### The rare-only test prompts") == 1 and "2 of the 4 test prompts" in text
    assert text.index("| d |") < text.index("### The rare-only") < text.index("## All claims")
    assert text.replace("2 of the 4", "1 of the 4") == once
    report = read_json(tmp_path / "report.json")
    assert report["other"] == 1 and report["premise"]["verdict"] == "narrowed"
    assert report["premise"]["rare_only_base_pass_at_k"] == 1.0 and report["premise"]["rare_only"]["prompts"] == 4


def _countdown_out(out, model) -> list:
    return _write_runs(
        out, model, {"task": "countdown3", "eval_problems": 40, "eval_skip": 0, "max_completion_length": 24}
    )


def test_countdown_prompts_are_rare_only_by_the_bases_corpus(tmp_path):
    # the published answer's base keeps worked solutions that divide rarely (rare_ops "/"): a prompt is rare-only when
    # every distinct solution divides, read through the base's own pretrain.json; Countdown has no enumerated share
    from escov.llm.tasks.countdown import distinct_solutions
    from escov.paper_checks.reproduce.budgets import BUDGETS

    model = shipped_base_dir(BUDGETS["answer"].base_preset, BUDGETS["answer"].base_settings)
    out = tmp_path / "answer"
    problems = _countdown_out(out, model)
    ids = [p.id for p in problems]
    rare = [all("/" in s for s in distinct_solutions(p.meta["numbers"], int(p.meta["target"]))) for p in problems]
    assert 0 < sum(rare) < len(ids)
    c = [3 * (i % 2) for i in range(len(ids))]
    for name, step in MODELS:
        _write_endpoint(out, name, step, 1.0, ids, c)
    record = rare_only.rare_only_record(out, SEEDS, (1.0,), "countdown3")
    assert record["task"] == "countdown3" and record["temperatures"] == [1.0]
    assert record["ids"] == [i for i, r in zip(ids, rare) if r]
    entry = record["by_temperature"]["1"]
    solved = [x > 0 for x, r in zip(c, rare) if r]
    assert entry["n"] == N and entry["base_pass_at_n"] == pytest.approx(np.mean(solved))
    assert "solution_share_found" not in entry


def test_temperatures_of_other_prompts_and_prompts_outside_the_runs_test_set_are_refused(tmp_path):
    model = shipped_base_dir("grid_paths")
    out = tmp_path / "answer"
    ids = [p.id for p in _write_runs(out, model)]
    for t, given in ((0.6, ids), (1.0, ids[::-1])):  # each temperature consistent, the two not
        for name, step in MODELS:
            _write_endpoint(out, name, step, t, given, [1] * len(ids))
    with pytest.raises(ValueError, match="other prompts than .*base-step0-T1.json"):
        rare_only.rare_only_record(out, SEEDS, (0.6, 1.0), "grid_paths")
    for name, step in (("grpo-s1", 150), ("es-s0", 450)):  # within one temperature: each file of other prompts named
        _write_endpoint(out, name, step, 0.6, ids[::-1], [1] * len(ids))
    with pytest.raises(ValueError) as err:
        rare_only.rare_only_record(out, SEEDS, (0.6,), "grid_paths")
    assert str(err.value).endswith("grpo-s1-step150-T0.6.json, " + str(endpoints.endpoint_file(out, "es-s0", 450, 0.6)))
    stranger = ids[:-4] + [f"grid_paths/stranger-{i}" for i in range(4)]
    for name, step in MODELS:
        _write_endpoint(out, name, step, 0.6, stranger, [1] * len(ids))
    with pytest.raises(ValueError) as err:  # the first three strangers named
        rare_only.rare_only_record(out, SEEDS, (0.6,), "grid_paths")
    assert str(err.value).endswith(
        "grpo-s0: endpoint prompts not among its test prompts: "
        "grid_paths/stranger-0, grid_paths/stranger-1, grid_paths/stranger-2"
    )
    for name in ("es-s0", "es-s1"):
        endpoints.endpoint_file(out, name, 450, 0.6).unlink()
    with pytest.raises(ValueError) as err:  # every missing evaluation named
        rare_only.rare_only_record(out, SEEDS, (0.6,), "grid_paths")
    assert str(err.value).endswith("es-s0-step450-T0.6.json, " + str(endpoints.endpoint_file(out, "es-s1", 450, 0.6)))


def test_attaching_keeps_the_next_subsection_and_closes_a_report_without_a_premise_section(tmp_path):
    from escov.llm.rundir import read_json

    record = {
        "prompts": 4,
        "rare_only_prompts": 0,
        "rare_only_base_pass_at_k": None,
        "by_temperature": {
            "1": {
                "n": 8,
                "base_pass_at_n": None,
                "base_solved": 0,
                "grpo_plateau": {"kept": None, "lost": None, "gained": 0, "per_seed": []},
                "es_end": {"kept": None, "lost": None, "gained": 0, "per_seed": []},
            }
        },
    }
    (tmp_path / "report.json").write_text('{"premise": {"x": 1}}', encoding="utf-8")
    md = "# r\n\n## The premise\n\n### The rare-only test prompts at the endpoints\n\nold\n\n### Next\n\nkept\n"
    (tmp_path / "REPORT.md").write_text(md, encoding="utf-8")
    rare_only.attach(tmp_path, record)
    text = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert "old" not in text and "### Next\n\nkept" in text and text.count("### The rare-only") == 1
    assert text.endswith("|\n\n")  # no next "## ": the section closes the file
    assert read_json(tmp_path / "report.json")["premise"] == {
        "x": 1,
        "rare_only": record,
        "rare_only_base_pass_at_k": None,
    }
    (tmp_path / "REPORT.md").write_text("# a report without a premise section\n\n## Other\n\nx\n", encoding="utf-8")
    rare_only.attach(tmp_path, record)
    text = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert text.startswith("# a report without a premise section\n\n## Other\n\nx\n### The rare-only test prompts")


def test_a_base_without_a_rare_family_has_no_rare_only_prompt(tmp_path):
    # a Countdown base whose corpus has no rare family (no pretrain.json: not a tiny model of this project): every
    # prompt is "other", and the base's Pass@n on rare-only prompts is not a number but absent
    model = tmp_path / "some-model"
    model.mkdir()
    out = tmp_path / "answer"
    ids = [p.id for p in _countdown_out(out, model)]
    for name, step in MODELS:
        _write_endpoint(out, name, step, 1.0, ids, [1] * len(ids))
    record = rare_only.rare_only_record(out, SEEDS, (1.0,), "countdown3")
    assert record["rare_only_prompts"] == 0 and record["ids"] == []
    assert record["rare_only_base_pass_at_k"] is None and record["by_temperature"]["1"]["base_solved"] == 0


def test_the_premise_section_ends_at_the_next_heading_after_it_or_at_the_end():
    from escov.paper_checks.premise_attachments import premise_section_end

    text = "# r\n\n## The premise: x\n\n- a\n\n## B\n\nb\n\n## C\n\nc\n"
    assert text[premise_section_end(text) :].startswith("## B\n")
    last = "# r\n\n## A\n\n## The premise: x\n\n- a\n"
    assert premise_section_end(last) == len(last)
    assert premise_section_end("# r\n\n## A\n") == len("# r\n\n## A\n")  # no premise section: the end
