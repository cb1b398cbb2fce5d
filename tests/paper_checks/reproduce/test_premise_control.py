"""The premise control's runner (paper_checks/reproduce/premise_control.py) in this process: one real tiny control,
then its runs' curve files rewritten with designed correct counts and the control read again (its runs are complete,
so nothing is trained twice). control.json's endpoints, plateau records, curve rows and verdict are checked against
arithmetic done here on the counts written, not against paper_checks/premise.py."""

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from escov.llm import rundir
from escov.paper_checks.reproduce import premise_control as pc
from escov.paper_checks.reproduce.budgets import BUDGETS

SEEDS = (300, 301)
SAMPLES = 32
# correct counts of 32 per (seed, prompt), in the curve's prompt order: every prompt solved at the base, three of
# four lost at the plateau on each seed (a different one kept), so both seeds' mean Pass@32 falls by 3/4
BASE = {300: [5, 3, 10, 2], 301: [1, 2, 1, 1]}
TOP = {300: [0, 0, 0, 12], 301: [0, 0, 9, 0]}
MIDDLE = {300: [30, 30, 30, 30], 301: [1, 1, 1, 1]}  # step 1: s300 climbs above its last point, s301 does not


def _pass32(c: int) -> float:
    return 1 - math.comb(SAMPLES - c, 32) / math.comb(SAMPLES, 32)


@pytest.fixture(scope="module")
def control(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("control")
    budget = replace(BUDGETS["answer"], common=BUDGETS["answer"].common | {"train_pool": 16, "probe": False})
    curve = pc.CONTROL_CURVE | {"samples": SAMPLES, "points": 2, "max_points": 3}
    kw = dict(jobs=1, seeds=SEEDS, steps=2, problems=4, checkpoint_every=1, curve=curve, log=lambda msg: None)
    pc.run_control(Path(tiny_model_dir), out, budget, **kw)
    for seed in SEEDS:
        run = out / "runs" / f"grpo-s{seed}"
        for point in rundir.read_curve(run):
            counts = {0: BASE, 1: MIDDLE, 2: TOP}[point["step"]][seed]
            rows = point["sampled"]["per_problem"]
            for row, c in zip(rows, counts):
                row["correct"] = c
            point["sampled"]["pass_at_k"]["1"] = sum(counts) / (SAMPLES * len(counts))
            point["sampled"]["pass_at_k"]["32"] = sum(_pass32(c) for c in counts) / len(counts)
            rundir.record_curve_point(run, point)
    again = pc.run_control(Path(tiny_model_dir), out, budget, **kw)
    return out, again


def test_the_controls_endpoints_are_the_plateau_minus_the_base_of_the_counts_its_runs_wrote(control):
    out, returned = control
    record = json.loads((out / "control.json").read_text())
    assert record == json.loads(json.dumps(returned))
    e = record["endpoints"]
    diffs = [_pass32(t) - _pass32(b) for s in SEEDS for b, t in zip(BASE[s], TOP[s])]
    assert e["pass@32"]["mean"] == pytest.approx(sum(diffs) / len(diffs)) == pytest.approx(-0.75)
    assert e["pass@32"]["hi"] < 0 < -e["pass@32"]["lo"]
    assert record["verdict"] == "narrowed"
    # the no-correct share rises by the lost prompts: 6 of 8 (seed, prompt) cells
    assert e["no_correct"]["mean"] == pytest.approx(6 / 8) and e["no_correct"]["lo"] > 0
    assert sum(f["lost"] for f in e["families"].values()) == 6
    assert sum(f["gained"] for f in e["families"].values()) == 0
    assert sum(f["prompts"] for f in e["families"].values()) == 4
    # base Pass@1 over every family's prompts: the mean of BASE / 32, weighted by each family's prompt count
    fams = [f for f in e["families"].values() if f["prompts"]]
    base_pass1 = sum(f["base_pass1"] * f["prompts"] for f in fams) / 4
    assert base_pass1 == pytest.approx(sum(BASE[300] + BASE[301]) / (8 * SAMPLES))
    ids = [r["id"] for r in rundir.read_curve(out / "runs" / "grpo-s300")[0]["sampled"]["per_problem"]]
    assert e["lost_prompts"] == sorted(ids)  # each prompt is lost on some seed
    # no prompt is solved at both points on every seed: no distinct-solution endpoint
    assert e["distinct"] == {"prompts": 0, "reason": "fewer than 2 prompts solved"}


def test_the_controls_curve_rows_and_plateaus_are_read_from_the_runs_files(control):
    out, _ = control
    record = json.loads((out / "control.json").read_text())
    assert record["split"] == "validation" and record["samples"] == SAMPLES and record["seeds"] == list(SEEDS)
    for seed in SEEDS:
        rows = record["curves"][f"grpo-s{seed}"]
        assert [r["step"] for r in rows] == [0, 1, 2]
        for row, counts in zip(rows, (BASE[seed], MIDDLE[seed], TOP[seed])):
            assert row["pass1"] == pytest.approx(sum(counts) / (4 * SAMPLES))
            assert row["pass32"] == pytest.approx(sum(c > 0 for c in counts) / 4)
            assert row["no_correct"] == pytest.approx(sum(c == 0 for c in counts) / 4)
    # last third of 2 steps: from step 2 itself (rise 0); s300's highest Pass@1 (step 1, 120/128) is far above its
    # last (12/128): not a plateau; s301's last (9/128) is its highest (base 5/128, middle 4/128): a plateau
    p300, p301 = record["plateau"]["grpo-s300"], record["plateau"]["grpo-s301"]
    assert p300["step"] == p301["step"] == 2
    assert p300["highest"] == pytest.approx(120 / 128) and p300["pass1"] == pytest.approx(12 / 128)
    assert p300["reached"] is False and p301["reached"] is True
    assert p301["rise_last_third"] == 0
    assert "**narrowed**" in (out / "control.md").read_text()


def test_the_controls_runs_are_grpo_on_its_seeds_with_its_step_and_no_probe():
    runs = pc.control_runs(Path("base"), BUDGETS["answer"], seeds=(7, 9), steps=12, checkpoint_every=4)
    assert sorted(runs) == ["grpo-s7", "grpo-s9"]
    for seed, cfg in ((7, runs["grpo-s7"]), (9, runs["grpo-s9"])):
        assert cfg["algo"] == "grpo" and cfg["seed"] == seed and cfg["model"] == "base"
        assert cfg["steps"] == 12 and cfg["checkpoint_every"] == 4 and cfg["probe_every"] == 0
        assert cfg["grpo"]["learning_rate"] == 1e-4 and cfg["task"] == BUDGETS["answer"].task
    assert (
        pc.control_runs(Path("b"), BUDGETS["answer"], grpo={"learning_rate": 3e-5})["grpo-s300"]["grpo"][
            "learning_rate"
        ]
        == 3e-5
    )
    assert set(pc.CONTROL_SEEDS).isdisjoint(range(0, 8)) and 100 not in pc.CONTROL_SEEDS


def test_the_control_refuses_a_folder_without_a_model_and_a_single_seed(tmp_path, tiny_model_dir):
    with pytest.raises(ValueError, match="not a model directory"):
        pc.run_control(tmp_path, tmp_path / "out", BUDGETS["answer"])
    with pytest.raises(ValueError, match="at least 2 seeds"):
        pc.run_control(Path(tiny_model_dir), tmp_path / "out", BUDGETS["answer"], seeds=(300,))
