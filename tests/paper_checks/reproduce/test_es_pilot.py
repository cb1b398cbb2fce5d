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
    longer = {"curves": {"a": [{"pass1": 0.2}, {"pass1": 0.5}, {"pass1": 0.6}], "b": [{"pass1": 0.3}, {"pass1": 0.7}]}}
    assert plateau_level(longer) == pytest.approx(0.65)  # the last point, not the second
    peaked = {"curves": {"a": [{"pass1": 0.2}, {"pass1": 0.8}, {"pass1": 0.6}], "b": [{"pass1": 0.3}, {"pass1": 0.7}]}}
    assert plateau_level(peaked) == pytest.approx(0.65)  # where a run ends, not its peak (0.75)


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


def test_each_pilot_run_is_the_budgets_es_with_its_setting_for_the_updates_in_grpo_steps_of_equal_flops(tmp_path):
    """An ES update of N members and m samples costs 2 N m (P L units), a GRPO step (2 + 6) G = 64 at G = 8: N = 32,
    m = 1 costs one step an update, N = 64 two."""
    from escov.paper_checks.reproduce.es_pilot import SETTINGS, pilot_runs

    b = BUDGETS["answer"]
    assert b.grpo["num_generations"] == 8 and b.grpo.get("num_iterations", 1) == 1
    runs = pilot_runs(tmp_path / "base", b, seeds=(1, 2), updates=30)
    steps = {"es": 30, "es-n64-a0.02": 60, "es-sampled": 30}
    assert list(runs) == [f"{name}-s{seed}" for name in SETTINGS for seed in (1, 2)]
    fixed = {
        "checkpoint_every": 10,
        "checkpoint_dense": 0,
        "probe_every": 0,
        "probe": False,
        "heldout_task": "",
        "eval_problems": 8,
        "eval_skip": 0,  # the block's first 8 test prompts, which the answer skips
        "threshold_keep": (),
    }
    for name in SETTINGS:
        for seed in (1, 2):
            want = b.common | fixed | {"algo": "es", "model": str(tmp_path / "base"), "task": b.task}
            want |= {"es": b.es | SETTINGS[name], "seed": seed, "steps": steps[name]}
            assert runs[f"{name}-s{seed}"] == want
    assert list(pilot_runs(tmp_path, b, seeds=(5,), updates=10, settings=("es-sampled",))) == ["es-sampled-s5"]


def test_the_controls_prompts_are_read_from_its_first_run_with_missing_settings_as_0(tmp_path):
    from escov.paper_checks.reproduce.es_pilot import control_prompts

    for name, config in (
        ("grpo-s301", {"eval_solutions": 5, "train_solutions": 5}),
        ("grpo-s300", {"eval_solutions": 2}),
    ):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert control_prompts(tmp_path / "control.json") == {"eval_solutions": 2, "train_solutions": 0}
    with pytest.raises(ValueError) as err:
        control_prompts(tmp_path / "elsewhere" / "control.json")
    assert str(err.value) == (
        f"--control {tmp_path / 'elsewhere' / 'control.json'}: no run directory beside it (runs/NAME/config.json)"
    )


def test_an_unknown_setting_is_refused_naming_the_known_ones(tmp_path, tiny_model_dir):
    from escov.paper_checks.base_info import base_record

    budget = BUDGETS["answer"]
    (tmp_path / "runs" / "grpo-s300").mkdir(parents=True)
    prompts = {k: budget.common.get(k, 0) for k in ("eval_solutions", "train_solutions")}
    (tmp_path / "runs" / "grpo-s300" / "config.json").write_text(json.dumps(prompts), encoding="utf-8")
    control = tmp_path / "control.json"
    control.write_text(json.dumps({"base": base_record(tiny_model_dir), "split": "validation"}), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        run_es_pilot(tiny_model_dir, control, tmp_path / "out", budget, settings=("es", "nope", "also-not"))
    assert str(err.value) == "--settings: unknown also-not, nope; known: es, es-n64-a0.02, es-sampled"
    with pytest.raises(ValueError) as err:
        run_es_pilot(tiny_model_dir, tmp_path / "absent.json", tmp_path / "out", budget)
    assert str(err.value) == (
        f"--control {tmp_path / 'absent.json'}: no such file (the premise control's control.json)"
    )
    with pytest.raises(ValueError) as err:
        run_es_pilot(tmp_path / "nowhere", control, tmp_path / "out", budget)
    assert str(err.value) == f"--model {tmp_path / 'nowhere'}: not a model directory (no config.json)"
    assert not (tmp_path / "out").exists()


def test_the_pilots_table_gives_each_runs_crossing_pass32_and_plateau_and_the_choice():
    from escov.paper_checks.reproduce.es_pilot import _num, render

    runs = {
        "es-s310": {
            "crossing_update": 24.6,
            "pass32_at_level_minus_base": 0.05,
            "last_pass1": 0.7,
            "last_pass32_minus_base": -0.1,
            "plateau": {"rise_last_third": 0.012, "reached": True},
        },
        "es-s311": {
            "crossing_update": None,
            "pass32_at_level_minus_base": None,
            "last_pass1": 0.55,
            "last_pass32_minus_base": 0.02,
            "plateau": {"rise_last_third": 0.1, "reached": False},
        },
    }
    record = {
        "level": 0.6,
        "seeds": [310, 311],
        "prompts": 128,
        "split": "validation",
        "samples": 64,
        "temperature": 0.6,
        "updates": 450,
        "settings": {"es": {"runs": runs}},
        "chosen": "es",
        "reached": True,
        "cap_updates": 50,
    }
    table = [
        "# ES pilot: GRPO's plateau Pass@1 L = 0.600 (premise control, validation prompts)",
        "",
        "2 seeds x 128 validation prompts x 64 samples at T = 0.6, 450 ES updates.",
        "",
        "| setting | run | update crossing L | Pass@32 there - base | last Pass@1 | last Pass@32 - base | "
        "rise over the last third | plateau |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        "| es | es-s310 | 25 | +0.050 | 0.700 | -0.100 | +0.012 | yes |",
        "| es | es-s311 | - | - | 0.550 | +0.020 | +0.100 | no |",
        "",
    ]
    assert render(record) == "\n".join(
        table + ["Chosen: every seed of `es` reaches L; the answer's ES runs 50 updates.", ""]
    )
    stuck = record | {"reached": False, "cap_updates": 450}
    assert render(stuck).splitlines()[-1] == (
        "Chosen: no setting brings every seed to L within 450 updates; the answer runs `es` (highest mean last "
        "Pass@1) for 450 updates and reports (f)."
    )
    assert _num(0.12345) == "0.123" and _num(None) == "-"


def test_the_record_keeps_each_runs_last_point_plateau_and_setting_and_the_level():
    """Names ordered against the rule (the faster and the higher sort last by name). es-sampled reaches L = 0.6 at
    update 100, es at 100 + 50 x (0.6 - 0.5) / (0.7 - 0.5) = 125: es-sampled is chosen, and its cap spans several
    rounds, 50 x ceil(1.25 x 100 / 50) = 150."""
    from escov.paper_checks.premise import plateau
    from escov.paper_checks.reproduce.es_pilot import SETTINGS

    steps = [0, 50, 100, 150]
    curves = {
        "es-sampled": {"es-sampled-s1": points([0.3, 0.5, 0.6, 0.65], [0.70, 0.66, 0.62, 0.60], every=50)},
        "es": {"es-s1": points([0.3, 0.4, 0.5, 0.7], every=50)},
    }
    record = choose(curves, 0.6, updates=150)
    assert record["level"] == 0.6 and record["chosen"] == "es-sampled" and record["cap_updates"] == 150
    run = record["settings"]["es-sampled"]["runs"]["es-sampled-s1"]
    assert run["last_pass1"] == 0.65 and run["last_pass32_minus_base"] == pytest.approx(-0.10)
    assert run["plateau"] == plateau(steps, [0.3, 0.5, 0.6, 0.65])
    assert (
        record["settings"]["es"]["es"] == SETTINGS["es"]
        and record["settings"]["es-sampled"]["es"] == SETTINGS["es-sampled"]
    )
    assert choose({"other": {"other-s1": points([0.3, 0.7])}}, 0.6)["settings"]["other"]["es"] is None
    # none reached: the highest mean last Pass@1 (b), not the last name (z)
    stuck = {
        "z": {"z-s1": points([0.3, 0.4])},
        "b": {"b-s1": points([0.3, 0.55])},
        "a": {"a-s1": points([0.3, 0.5])},
    }
    assert choose(stuck, 0.6)["chosen"] == "b"


def test_each_runs_curve_is_read_under_its_own_setting_in_step_order(tmp_path):
    """read_curves on curve.json files written here: a run named SETTING-sSEED goes under SETTING (es-sampled-s310
    under es-sampled, not es), its points in step order with the sampled Pass@1 and Pass@32 (not the greedy ones)."""
    from escov.llm.rundir import write_json
    from escov.paper_checks.reproduce.es_pilot import read_curves
    from tests.paper_checks.reproduce.test_training_runs_done import _evaluation

    def point(step: int, p1: float, p32: float) -> dict:
        sampled = _evaluation(n=64) | {"pass_at_k": {"1": p1, "16": 0.0, "32": p32}}
        greedy = _evaluation(n=1, temperature=0.0) | {"ks": [1], "pass_at_k": {"1": 1.0 - p1}}
        return {"step": step, "sampled": sampled, "greedy": greedy}

    written = {
        "es-s310": [point(20, 0.3, 0.6), point(0, 0.1, 0.4), point(10, 0.2, 0.5)],
        "es-sampled-s310": [point(0, 0.15, 0.45), point(10, 0.25, 0.65)],
        "es-sampled-s311": [point(0, 0.12, 0.42)],
    }
    for run, points in written.items():
        (tmp_path / run).mkdir()
        write_json(tmp_path / run / "curve.json", {"points": points})
    curves = read_curves(tmp_path, list(written), ["es", "es-sampled", "es-n64-a0.02"])
    assert curves == {
        "es": {
            "es-s310": [
                {"step": 0, "pass1": 0.1, "pass32": 0.4},
                {"step": 10, "pass1": 0.2, "pass32": 0.5},
                {"step": 20, "pass1": 0.3, "pass32": 0.6},
            ]
        },
        "es-sampled": {
            "es-sampled-s310": [
                {"step": 0, "pass1": 0.15, "pass32": 0.45},
                {"step": 10, "pass1": 0.25, "pass32": 0.65},
            ],
            "es-sampled-s311": [{"step": 0, "pass1": 0.12, "pass32": 0.42}],
        },
        "es-n64-a0.02": {},
    }
