"""The premise control's runner (paper_checks/reproduce/premise_control.py) in this process: one real tiny control,
then its runs' curve files rewritten with designed correct counts and the control read again (its runs are complete,
so nothing is trained twice). control.json's endpoints, intervals, plateau records, curve rows and verdict are checked
against arithmetic done here on the counts written (Pass@32 from binomial coefficients, the seeds x prompts t
interval written out below), not against paper_checks/premise.py or paper_checks/design.py. The counts are then
written the other way round (the plateau's as the base's): every endpoint's sign and the verdict must turn."""

import json
import math
import re
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from escov.llm import rundir
from escov.paper_checks.reproduce import premise_control as pc
from escov.paper_checks.reproduce.budgets import BUDGETS

SEEDS = (300, 301)
GRPO_STEP = {"learning_rate": 2e-2}  # the step-size control's override of CONTROL_GRPO
SAMPLES = 40  # more than 32: Pass@32 is an estimate, not "some sample correct"
# correct counts of 40 per (seed, prompt), in the curve's prompt order: every prompt solved at the base, three of
# four lost at the plateau on each seed (a different one kept); the seeds' mean drops differ by 0.04, so the
# interval has a seed part and a prompt part
BASE = {300: [5, 3, 10, 2], 301: [6, 1, 4, 3]}
TOP = {300: [0, 0, 0, 12], 301: [0, 0, 14, 0]}
MIDDLE = {300: [30, 30, 30, 30], 301: [1, 1, 1, 1]}  # step 1: s300 climbs above its last point, s301 does not


def _pass32(c: int) -> float:
    """The unbiased Pass@32 of c correct among SAMPLES: 1 - C(n - c, 32) / C(n, 32)."""
    return 1 - math.comb(SAMPLES - c, 32) / math.comb(SAMPLES, 32)


def _interval(values: np.ndarray) -> tuple[float, float, float]:
    """(mean, half width, half width with the seed variance not divided by S) of the seeds x prompts design: the seed
    part t_{S-1} sqrt(Var_s(row means) / S), the prompt part t_{P-1} sqrt(Var_p(column means) / P) (the bootstrap's
    variance of a mean of P prompt means resampled with replacement: the population variance over P), added in
    quadrature."""
    s, p = values.shape
    v_seed = values.mean(1).var(ddof=1) / s
    v_prompt = values.mean(0).var(ddof=0) / p
    t_s, t_p = stats.t.ppf(0.975, s - 1), stats.t.ppf(0.975, p - 1)
    half = math.hypot(t_s * math.sqrt(v_seed), t_p * math.sqrt(v_prompt))
    return float(values.mean()), half, math.hypot(t_s * math.sqrt(v_seed * s), t_p * math.sqrt(v_prompt))


def _write_counts(out: Path, by_step: dict[int, dict[int, list[int]]]) -> None:
    """Each run's curve points rewritten with these correct counts (and the Pass@k their counts give)."""
    for seed in SEEDS:
        run = out / "runs" / f"grpo-s{seed}"
        for point in rundir.read_curve(run):
            counts = by_step[point["step"]][seed]
            rows = point["sampled"]["per_problem"]
            for row, c in zip(rows, counts):
                row["correct"] = c
            point["sampled"]["pass_at_k"]["1"] = sum(counts) / (SAMPLES * len(counts))
            point["sampled"]["pass_at_k"]["32"] = sum(_pass32(c) for c in counts) / len(counts)
            rundir.record_curve_point(run, point)


@pytest.fixture(scope="module")
def control(tiny_model_dir, tmp_path_factory):
    """(the control's folder, control.json read back with the designed counts, the same with base and plateau
    exchanged)."""
    out = tmp_path_factory.mktemp("control")
    budget = replace(BUDGETS["answer"], common=BUDGETS["answer"].common | {"train_pool": 16, "probe": False})
    curve = pc.CONTROL_CURVE | {"samples": SAMPLES, "points": 2, "max_points": 3}
    logged = out / "log.txt"  # the messages of the first call, the one that trains

    def log(msg: str) -> None:
        with logged.open("a", encoding="utf-8") as f:
            f.write(msg + "\n")

    kw = dict(jobs=1, seeds=SEEDS, steps=2, problems=4, checkpoint_every=1, curve=curve, grpo=GRPO_STEP)
    started = time.perf_counter()
    pc.run_control(Path(tiny_model_dir), out, budget, **kw, log=log)
    (out / "seconds.txt").write_text(str(time.perf_counter() - started))
    kw["log"] = lambda msg: None
    _write_counts(out, {0: BASE, 1: MIDDLE, 2: TOP})
    returned = pc.run_control(Path(tiny_model_dir), out, budget, **kw)
    narrowed = json.loads((out / "control.json").read_text())
    assert narrowed == json.loads(json.dumps(returned))
    (out / "narrowed.md").write_text((out / "control.md").read_text())
    _write_counts(out, {0: TOP, 1: MIDDLE, 2: BASE})
    pc.run_control(Path(tiny_model_dir), out, budget, **kw)
    widened = json.loads((out / "control.json").read_text())
    return out, narrowed, widened


def _diffs(base: dict, top: dict, measure) -> np.ndarray:
    return np.array([[measure(t) - measure(b) for b, t in zip(base[s], top[s])] for s in SEEDS])


def test_the_controls_endpoints_and_intervals_are_the_plateau_minus_the_base_of_the_counts_its_runs_wrote(control):
    _, record, _ = control
    e = record["endpoints"]
    for name, measure in (("pass@32", _pass32), ("no_correct", lambda c: float(c == 0))):
        mean, half, half_seeds_undivided = _interval(_diffs(BASE, TOP, measure))
        assert e[name]["mean"] == pytest.approx(mean, abs=1e-12)
        assert (e[name]["lo"] + e[name]["hi"]) / 2 == pytest.approx(mean, abs=1e-12)
        # the prompt part is a bootstrap (2,000 draws): its variance within a few percent of the closed form
        assert (e[name]["hi"] - e[name]["lo"]) / 2 == pytest.approx(half, rel=0.04)
    mean, half, undivided = _interval(_diffs(BASE, TOP, _pass32))
    assert mean == pytest.approx(-0.7190, abs=1e-4) and half == pytest.approx(0.4532, abs=1e-4)
    assert undivided > 1.1 * half  # the seed part matters: a seed variance not divided by S would be seen
    assert e["pass@32"]["hi"] < 0 and record["verdict"] == "narrowed"
    # the no-correct share rises by the lost prompts: 6 of 8 (seed, prompt) cells
    assert e["no_correct"]["mean"] == pytest.approx(6 / 8) and e["no_correct"]["lo"] > 0
    assert sum(f["lost"] for f in e["families"].values()) == 6
    assert sum(f["gained"] for f in e["families"].values()) == 0
    assert sum(f["prompts"] for f in e["families"].values()) == 4
    # base Pass@1 and Pass@32 over every family's prompts: the means of BASE / n and of their Pass@32, weighted by
    # each family's prompt count
    fams = [f for f in e["families"].values() if f["prompts"]]
    base_pass1 = sum(f["base_pass1"] * f["prompts"] for f in fams) / 4
    assert base_pass1 == pytest.approx(sum(BASE[300] + BASE[301]) / (8 * SAMPLES))
    base_pass32 = sum(f["base_pass32"] * f["prompts"] for f in fams) / 4
    assert base_pass32 == pytest.approx(sum(_pass32(c) for c in BASE[300] + BASE[301]) / 8)
    # no prompt is solved at both points on every seed: no distinct-solution endpoint
    assert e["distinct"] == {"prompts": 0, "reason": "fewer than 2 prompts solved"}


def test_the_controls_lost_prompts_are_those_solved_at_the_base_and_not_at_the_plateau(control):
    out, record, widened = control
    ids = [r["id"] for r in rundir.read_curve(out / "runs" / "grpo-s300")[0]["sampled"]["per_problem"]]
    assert record["endpoints"]["lost_prompts"] == sorted(ids)  # each prompt is lost on some seed
    assert widened["endpoints"]["lost_prompts"] == []


def test_the_control_read_the_other_way_round_widened_every_endpoint_with_its_sign_turned(control):
    _, narrowed, widened = control
    e = widened["endpoints"]
    for name, measure in (("pass@32", _pass32), ("no_correct", lambda c: float(c == 0))):
        mean, half, _ = _interval(_diffs(TOP, BASE, measure))
        assert e[name]["mean"] == pytest.approx(mean, abs=1e-12) == pytest.approx(-narrowed["endpoints"][name]["mean"])
        assert (e[name]["hi"] - e[name]["lo"]) / 2 == pytest.approx(half, rel=0.04)
    assert e["pass@32"]["lo"] > 0 and e["no_correct"]["hi"] < 0
    assert widened["verdict"] == "widened"
    assert sum(f["gained"] for f in e["families"].values()) == 6
    assert sum(f["lost"] for f in e["families"].values()) == 0


def test_the_controls_curve_rows_and_plateaus_are_read_from_the_runs_files(control):
    out, record, _ = control
    assert record["split"] == "validation" and record["samples"] == SAMPLES and record["seeds"] == list(SEEDS)
    assert (
        record["prompts"] == 4
        and record["steps"] == 2
        and record["grpo"]["learning_rate"] == GRPO_STEP["learning_rate"]
    )
    for seed in SEEDS:
        rows = record["curves"][f"grpo-s{seed}"]
        assert [r["step"] for r in rows] == [0, 1, 2]
        for row, counts in zip(rows, (BASE[seed], MIDDLE[seed], TOP[seed])):
            assert row["pass1"] == pytest.approx(sum(counts) / (4 * SAMPLES))
            assert row["pass32"] == pytest.approx(sum(_pass32(c) for c in counts) / 4)
            assert row["no_correct"] == pytest.approx(sum(c == 0 for c in counts) / 4)
        points = rundir.read_curve(out / "runs" / f"grpo-s{seed}")
        assert [r["entropy"] for r in rows] == [p["sampled"]["mean_token_entropy"] for p in points]
        assert all(r["entropy"] > 0 for r in rows)
        assert all(p["sampled"]["temperature"] == record["temperature"] for p in points)
    assert record["non_finite"] == []  # every interval of 2 seeds is finite
    assert record["temperature"] == pc.CONTROL_CURVE["temperature"] == 0.6
    # last third of 2 steps: from step 2 itself (rise 0); s300's highest Pass@1 (step 1, 120/160) is far above its
    # last (12/160): not a plateau; s301's last (14/160) equals its highest (the base's, 14/160): a plateau
    p300, p301 = record["plateau"]["grpo-s300"], record["plateau"]["grpo-s301"]
    assert p300["step"] == p301["step"] == 2
    assert p300["highest"] == pytest.approx(120 / 160) and p300["pass1"] == pytest.approx(12 / 160)
    assert p300["reached"] is False and p301["reached"] is True
    assert p301["rise_last_third"] == 0
    assert "**narrowed**" in (out / "narrowed.md").read_text()


def test_the_controls_curves_measured_validation_prompts_only_and_its_plot_was_drawn(control):
    """Every curve point of the control's runs names the validation split and holds exactly the validation prompts
    the run's settings give (llm/problem_sets.py split_set), none of the test prompts."""
    from escov.llm.config import load_config
    from escov.llm.problem_sets import split_set

    out, _, _ = control
    for seed in SEEDS:
        run = out / "runs" / f"grpo-s{seed}"
        points = rundir.read_curve(run)
        assert [p.get("split") for p in points] == ["validation"] * 3
        ids = {r["id"] for p in points for r in p["sampled"]["per_problem"]}
        assert ids == set(split_set(load_config(run), "validation", 4).ids)
        assert not ids & set(split_set(load_config(run), "test", 4).ids)
    assert (out / "control.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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
    # every other setting is the budget's but the checkpoints (none dense), the probe, the held-out task, the
    # thresholds and the trainer's own final evaluation (8 test prompts, never read)
    b = BUDGETS["answer"]
    fixed = {"steps": 12, "checkpoint_every": 4, "checkpoint_dense": 0, "probe_every": 0, "heldout_task": ""}
    fixed |= {"eval_problems": 8, "eval_skip": 0, "threshold_keep": (), "algo": "grpo", "model": "base", "task": b.task}
    assert runs["grpo-s7"] == b.common | fixed | {"seed": 7, "grpo": b.grpo | {"learning_rate": 1e-4}}


def test_the_control_refuses_a_folder_without_a_model_and_a_single_seed(tmp_path, tiny_model_dir):
    with pytest.raises(ValueError, match="not a model directory"):
        pc.run_control(tmp_path, tmp_path / "out", BUDGETS["answer"])
    with pytest.raises(ValueError, match="at least 2 seeds"):
        pc.run_control(Path(tiny_model_dir), tmp_path / "out", BUDGETS["answer"], seeds=(300,))


def test_the_families_are_read_for_every_measured_prompt_on_the_controls_own_task():
    """_families on a planted task (grid paths, its shipped base) for more prompts than the runs' own final evaluation
    holds (SELECTION_EVAL's 8): each prompt is rare-only exactly when every shortest path starts vertically, found by
    brute force over move strings (test_rare_only's), not by the task's code."""
    from escov.llm.config import TrainConfig
    from escov.llm.problem_sets import SELECTION_SPLIT, split_set
    from escov.paper_checks.reproduce.bases import shipped_base_dir
    from tests.paper_checks.reproduce.test_rare_only import _brute_paths

    model = shipped_base_dir("grid_paths")
    budget = BUDGETS["answer-grid_paths"]
    runs = pc.control_runs(model, budget)
    count = pc.SELECTION_EVAL["eval_problems"] + 4
    problems = split_set(TrainConfig.from_dict(runs["grpo-s300"]), SELECTION_SPLIT, count).problems
    families = pc._families(runs, [p.id for p in problems], model)
    expected = [
        "rare-only" if all(path[0] in "UD" for path in _brute_paths(p.meta["grid"])) else "other" for p in problems
    ]
    assert families == expected and len(families) == count and "rare-only" in expected and "other" in expected


def test_the_control_trains_with_its_step_override_and_checkpoint_spacing_and_logs_its_elapsed_time(control):
    out, narrowed, _ = control
    assert narrowed["grpo"]["learning_rate"] == GRPO_STEP["learning_rate"] != pc.CONTROL_GRPO["learning_rate"]
    for seed in SEEDS:
        run = out / "runs" / f"grpo-s{seed}"
        assert rundir.read_config(run)["grpo"]["learning_rate"] == GRPO_STEP["learning_rate"]
        assert sorted(rundir.checkpoint_steps(run)[0]) == [1, 2]  # checkpoint_every = 1 over 2 steps
    lines = (out / "log.txt").read_text(encoding="utf-8").splitlines()
    seconds = float((out / "seconds.txt").read_text())
    assert lines
    for line in lines:
        elapsed = re.match(r"^\[ *(\d+) s\] \S", line)
        assert elapsed and int(elapsed.group(1)) <= seconds + 1, line


def test_without_a_curve_the_control_reaches_its_runs(tmp_path, tiny_model_dir):
    """curve None (the control's own CONTROL_CURVE, with its prompts and split) is accepted: the control reaches its
    runs, stopped here at run_all's first message, before any training. Which settings that curve then measures with
    is not read here (the module fixture's control is measured with a curve given)."""

    class Reached(Exception):
        pass

    def stop(msg: str) -> None:
        raise Reached(msg)

    with pytest.raises(Reached, match=r"^\[ *\d+ s\] 2 of 2 runs to do, 1 at a time$"):
        pc.run_control(Path(tiny_model_dir), tmp_path / "out", BUDGETS["answer"], jobs=1, seeds=SEEDS, log=stop)
