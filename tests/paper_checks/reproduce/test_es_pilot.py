"""The ES pilot's reading (paper_checks/reproduce/es_pilot.py): crossings, the choice and the cap, each against a
hand computation on curves written here; and its refusals of a control that does not describe the pilot's prompts."""

from __future__ import annotations

import json
import math

import pytest

from escov.paper_checks.reproduce.budgets import BUDGETS
from escov.paper_checks.reproduce.es_pilot import (
    CAP_MARGIN,
    CAP_ROUND,
    PILOT_UPDATES,
    choose,
    crossing_update,
    plateau_level,
    run_es_pilot,
)


def points(pass1: list[float], pass32: list[float] | None = None, every: int = 10) -> list[dict]:
    pass32 = pass32 or [0.7] * len(pass1)
    return [{"step": every * i, "pass1": a, "pass32": b} for i, (a, b) in enumerate(zip(pass1, pass32))]


def test_the_crossing_is_the_first_interpolated_update_at_the_level():
    # 0.2 -> 0.4 between updates 10 and 20: 0.3 is crossed halfway, at 15; a later, higher crossing does not count
    assert crossing_update([0, 10, 20, 30], [0.1, 0.2, 0.4, 0.9], 0.3) == pytest.approx(15.0)
    assert crossing_update([0, 10, 20], [0.1, 0.2, 0.25], 0.3) is None
    assert crossing_update([0, 10], [0.3, 0.5], 0.3) == 0.0


def test_the_plateau_level_is_the_mean_of_the_controls_last_points():
    control = {"curves": {"a": [{"pass1": 0.2}, {"pass1": 0.6}], "b": [{"pass1": 0.3}, {"pass1": 0.7}]}}
    assert plateau_level(control) == pytest.approx(0.65)


def test_the_setting_whose_slowest_seed_crosses_first_is_chosen_and_the_cap_is_its_margin_rounded_up():
    level = 0.6
    curves = {
        # every seed crosses: at 20 + 10 * (0.6 - 0.5) / (0.7 - 0.5) = 25 and at 30 (exactly at a point)
        "slow": {"slow-s1": points([0.3, 0.4, 0.5, 0.7]), "slow-s2": points([0.3, 0.4, 0.5, 0.6, 0.62])},
        # its slowest seed crosses at 10 + 10 * (0.6 - 0.5) / (0.8 - 0.5) = 13.33: chosen
        "fast": {"fast-s1": points([0.3, 0.5, 0.8]), "fast-s2": points([0.3, 0.6, 0.61])},
        # one seed never gets there: not reached, whatever the other does
        "stuck": {"stuck-s1": points([0.3, 0.9]), "stuck-s2": points([0.3, 0.55, 0.58])},
    }
    record = choose(curves, level, updates=40)
    assert record["reached"] and record["chosen"] == "fast"
    assert record["settings"]["slow"]["slowest_crossing"] == pytest.approx(30.0)
    assert record["settings"]["fast"]["slowest_crossing"] == pytest.approx(10 + 10 / 3)
    assert not record["settings"]["stuck"]["reached"] and record["settings"]["stuck"]["slowest_crossing"] is None
    assert record["cap_updates"] == CAP_ROUND * math.ceil(CAP_MARGIN * (10 + 10 / 3) / CAP_ROUND) == 50
    # Pass@32 at the crossing minus the base's, interpolated like Pass@1
    row = choose({"x": {"x-s1": points([0.4, 0.8], [0.70, 0.60])}}, 0.6, updates=10)["settings"]["x"]["runs"]["x-s1"]
    assert row["pass32_at_level_minus_base"] == pytest.approx(-0.05)
    assert row["last_pass32_minus_base"] == pytest.approx(-0.10)


def test_with_no_setting_reaching_the_level_the_highest_last_pass1_is_run_for_the_pilots_length():
    curves = {
        "a": {"a-s1": points([0.3, 0.5]), "a-s2": points([0.3, 0.52])},
        "b": {"b-s1": points([0.3, 0.55]), "b-s2": points([0.3, 0.54])},
    }
    record = choose(curves, 0.65)
    assert not record["reached"] and record["chosen"] == "b" and record["cap_updates"] == PILOT_UPDATES


def test_a_control_from_another_base_split_or_prompt_block_is_refused_in_one_line(tmp_path, tiny_model_dir):
    control = tmp_path / "control.json"
    budget = BUDGETS["answer"]

    def refused(record: dict) -> str:
        control.write_text(json.dumps(record), encoding="utf-8")
        with pytest.raises(ValueError) as err:
            run_es_pilot(tiny_model_dir, control, tmp_path / "out", budget, seeds=(1,), updates=10, prompts=2)
        assert "\n" not in str(err.value)
        return str(err.value)

    from escov.paper_checks.base_info import base_record

    same = {k: v for k, v in base_record(tiny_model_dir).items() if k != "name"}
    assert "measured from base" in refused({"base": {"preset": "other"}, "split": "validation"})
    assert "read on 'test' prompts" in refused({"base": same, "split": "test"})
    assert "no run directory beside it" in refused({"base": same, "split": "validation"})
    # a control whose runs drew other prompts than the budget's (here: the task's own draw, no solution block)
    run = tmp_path / "runs" / "grpo-s300"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"eval_solutions": 0, "train_solutions": 0}), encoding="utf-8")
    wanted = {k: budget.common.get(k, 0) for k in ("eval_solutions", "train_solutions")}
    assert wanted != {"eval_solutions": 0, "train_solutions": 0}  # the answer reads a block
    assert f"the budget's {wanted}" in refused({"base": same, "split": "validation"})
    assert not (tmp_path / "out").exists()  # nothing trained


@pytest.mark.slow
def test_only_decides_from_the_settings_it_ran_and_records_the_others_as_not_run(tmp_path, tiny_model_dir):
    """About 80 CPU-s. One tiny ES run of `es` (1 seed, 10 updates, 2 prompts): without --only the record waits for
    every setting (naming the missing runs), with it the record holds `es` alone, its choice, and the others as
    not run."""
    from escov.paper_checks.base_info import base_record
    from escov.paper_checks.reproduce.es_pilot import SETTINGS, render

    budget = BUDGETS["answer"]
    control = tmp_path / "control" / "control.json"
    (tmp_path / "control" / "runs" / "grpo-s300").mkdir(parents=True)
    prompts = {k: budget.common[k] for k in ("eval_solutions", "train_solutions")}
    (tmp_path / "control" / "runs" / "grpo-s300" / "config.json").write_text(json.dumps(prompts), encoding="utf-8")
    record = {
        "base": {k: v for k, v in base_record(tiny_model_dir).items() if k != "name"},
        "split": "validation",
        "seeds": [300],
        "steps": 10,
        "grpo": {},
        "curves": {"grpo-s300": [{"step": 10, "pass1": 0.99}]},
    }
    control.write_text(json.dumps(record), encoding="utf-8")
    sizes = {"seeds": (1,), "updates": 10, "prompts": 2, "settings": ("es",)}
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"runs not finished yet \(es-n64-a0.02-s1, es-sampled-s1\)"):
        run_es_pilot(tiny_model_dir, control, out, budget, jobs=1, log=lambda m: None, **sizes)
    with pytest.raises(ValueError, match="--only decides from the settings named in --settings"):
        run_es_pilot(tiny_model_dir, control, out, budget, jobs=1, only=True, **(sizes | {"settings": ()}))
    got = run_es_pilot(tiny_model_dir, control, out, budget, jobs=1, log=lambda m: None, only=True, **sizes)
    assert list(got["settings"]) == ["es"] and got["chosen"] == "es" and not got["reached"]  # L = 0.99: not reached
    assert got["not_run"] == [n for n in SETTINGS if n != "es"] and got["cap_updates"] == 10
    assert "Not run, so not among the choices: `es-n64-a0.02`, `es-sampled`." in render(got)
    assert json.loads((out / "es_pilot.json").read_text(encoding="utf-8"))["not_run"] == got["not_run"]
