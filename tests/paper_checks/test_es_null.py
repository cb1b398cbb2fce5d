"""ES beside its random-z null (paper_checks/es_null.py): the random walk's constant checked on the real ES update
(llm/es: the null's z, the plan's coefficients, the noise, the fp32 center), the published answer's drift against
the prediction from the shipped base's own weights, and the record read from run directories whose drift and
held-out evaluations were made here with a known truth."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from escov.paper_checks.es_null import (
    DRIFT_MARGIN,
    HELDOUT_MARGIN,
    NULL,
    drift_reading,
    es_null,
    heldout_reading,
    predicted_drift,
    render,
    run_drift,
)
from escov.paper_checks.report import collect
from escov.paper_checks.rundir import load_run
from tests.paper_checks.test_paper_checks_verdicts import N_PROBLEMS, N_SAMPLES, make_run

ROOT = Path(__file__).resolve().parents[2]


def _null_walk(antithetic: bool, seed: int, *, n: int = 8, alpha: float = 0.01, steps: int = 40) -> float:
    """||theta_T - theta_0||^2 after `steps` updates of the real ES null on a 2,000-parameter fp32 center."""
    import torch

    from escov.llm.config import ESConfig
    from escov.llm.es.algorithm import ES
    from escov.llm.es.center import MasterCenter
    from escov.llm.es.members import MemberEvaluator
    from escov.llm.es.noise import PopulationNoise

    class Rewards(MemberEvaluator):
        """Member rewards that differ (so the null updates); their values never reach the null's z."""

        def __init__(self):
            self.rng = np.random.default_rng(seed)

        def rewards(self, plan, problems):
            return self.rng.random(len(plan.members)), 0, 0.0

    master = {"w": torch.zeros(30, 40), "b": torch.zeros(800)}
    cfg = ESConfig(population_size=n, sigma=0.02, alpha=alpha, antithetic=antithetic, null_control=True)
    es = ES(cfg, MasterCenter(master, PopulationNoise(), None), Rewards(), seed=seed)
    for t in range(steps):
        es.step([], t)
    return sum(float((p.double() ** 2).sum()) for p in master.values())


@pytest.mark.parametrize("antithetic, constant", [(False, 1.0), (True, 8 / 7)])
def test_the_null_walks_as_derived_on_the_real_es_update(antithetic, constant):
    """E ||theta_T - theta_0||^2 = T d alpha^2 c / N with c = 1 one-point and N / (N - 1) = 8/7 antithetic: the
    mean over 24 runs of the measured square over T d alpha^2 / N is c (one-point: chi^2_d / d exactly, sd 0.032 a
    run; antithetic adds the spread of sum c_d^2, so its tolerance is wider and still far from 1)."""
    d, n, alpha, steps = 2000, 8, 0.01, 40
    ratios = [_null_walk(antithetic, seed) / (steps * d * alpha**2 / n) for seed in range(24)]
    assert abs(np.mean(ratios) / constant - 1) < (0.03 if not antithetic else 0.05)
    # the module's prediction is the root of the same expectation
    rms = predicted_drift(alpha, steps, d, n, antithetic)
    assert rms**2 == pytest.approx(steps * d * alpha**2 * constant / n)


def test_the_published_answers_drift_is_the_walk_predicted_from_the_shipped_base():
    """The answer's base (shipped): d = 269,120 weights and ||theta_0|| read here from its safetensors file; alpha
    0.01, N 32, 150 steps predict 0.1997; the published ES runs' drifts (report.json) against the walk predicted for
    each run's own number of updates: within the walk's own spread per run and on average."""
    from safetensors.numpy import load_file

    from escov.paper_checks.reproduce.bases import shipped_base_dir
    from escov.paper_checks.reproduce.budgets import PREMISE_BASE

    weights = load_file(str(shipped_base_dir("paper", PREMISE_BASE) / "model.safetensors"))
    d = sum(w.size for w in weights.values())
    norm = math.sqrt(sum(float((w.astype(np.float64) ** 2).sum()) for w in weights.values()))
    assert d == 269_120
    assert predicted_drift(0.01, 150, d, 32) / norm == pytest.approx(0.1997, abs=5e-5)  # the first answer's 150
    report = json.loads((ROOT / "results" / "report.json").read_text())
    rows = report["premise"]["es_null"]["drift"]["es"]["per_run"]
    assert len(rows) == 8
    ratios = [row["drift_rel"] / (predicted_drift(0.01, row["steps"], d, 32) / norm) for row in rows]
    # each run within 5 sd of the walk's chi_d spread (1 / sqrt(2 d) = 0.14%), their mean within 3 sd of its own
    spread = 1 / math.sqrt(2 * d)
    assert all(abs(r - 1) < 5 * spread for r in ratios) and abs(np.mean(ratios) - 1) < 3 * spread / math.sqrt(len(rows))


def _walk_metrics(run: Path, *, d: int, alpha_taken: float, n: int, seed: int) -> tuple[float, float]:
    """metrics.jsonl rewritten with a walk of N(0, alpha_taken^2 / N I_d) steps from a theta_0 of norm 50 (the step
    rows keep their other fields); update_analysis counts d entries. Returns (||theta_0||, final drift_rel)."""
    rng = np.random.default_rng(seed)
    theta0 = rng.standard_normal(d)
    theta0 *= 50 / np.linalg.norm(theta0)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    moved = np.zeros(d)
    for row in rows:
        step = rng.standard_normal(d) * alpha_taken / math.sqrt(n)
        moved += step
        row |= {"es_update_norm": float(np.linalg.norm(step)), "drift_rel": float(np.linalg.norm(moved) / 50)}
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev = json.loads((run / "eval.json").read_text())
    ev["update_analysis"]["entries"] = d
    (run / "eval.json").write_text(json.dumps(ev))
    return float(np.linalg.norm(theta0)), rows[-1]["drift_rel"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """4 seeds of ES (held-out Pass@1 down 15 points, steps 1.3x its alpha's), its null (held-out unchanged, steps
    of its alpha) and GRPO (held-out unchanged), on 40 held-out prompts x 32 samples; d = 20,000, N = 8."""
    root = tmp_path_factory.mktemp("runs")
    p = np.random.default_rng(0).uniform(0.05, 0.5, N_PROBLEMS)
    dirs, truth = [], {}
    for seed in range(4):
        for name, algo, es, drop, taken in (
            ("es", "es", {}, 0.15, 0.013),
            ("null", "es", {"null_control": True}, 0.0, 0.01),
            ("grpo", "grpo", {}, 0.0, None),
        ):
            es = {"population_size": 8, "alpha": 0.01} | es
            run = make_run(root, f"{name}{seed}", algo, seed, p, p, es=es, heldout_drop=drop)
            if taken is not None:
                truth[run.name] = _walk_metrics(run, d=20_000, alpha_taken=taken, n=8, seed=seed)
            dirs.append(run)
    return dirs, truth


@pytest.fixture
def record(runs):
    """The record read from the runs in each test that uses it (so that a mutation tool maps es_null to every one
    of them, not only to the first test of a module fixture)."""
    dirs, truth = runs
    return es_null(collect(dirs)), dirs, truth


def test_the_held_out_changes_and_es_minus_null_from_the_evaluations(record):
    rec, dirs, _ = record

    def change(run: Path) -> np.ndarray:  # final - base Pass@1 per prompt: correct / n, from eval.json by hand
        h = json.loads((run / "eval.json").read_text())["heldout"]
        return (
            np.array([f["correct"] - b["correct"] for b, f in zip(h["base"]["per_problem"], h["final"]["per_problem"])])
            / N_SAMPLES
        )

    by = {run.name: change(run) for run in dirs}
    for method, prefix in (("es", "es"), (NULL, "null"), ("grpo", "grpo")):
        mean = np.mean([by[f"{prefix}{s}"] for s in range(4)])
        assert rec["heldout_pass1_change"][method]["mean"] == pytest.approx(mean)
        assert rec["heldout_pass1_change"][method]["design"] == f"4 seeds x {N_PROBLEMS} prompts x {N_SAMPLES} samples"
    diff = rec["es_minus_null_heldout"]
    assert diff["mean"] == pytest.approx(np.mean([by[f"es{s}"] - by[f"null{s}"] for s in range(4)]))
    assert diff["hi"] < 0 and diff["reading"] == "es_forgets_more_than_null"
    assert rec["heldout_pass1_change"]["es"]["lo"] < -0.15 < rec["heldout_pass1_change"]["es"]["hi"]


def test_the_drift_against_the_walk_from_the_runs_records(record):
    """The null's steps are the walk of its alpha: ratio 1 within the margin, equals_random_walk; ES's steps are
    1.3x its alpha's: above_random_walk, though its drift is the walk of its own steps (ratio_to_steps 1)."""
    rec, _, truth = record
    null, es = rec["drift"][NULL], rec["drift"]["es"]
    for row in null["per_run"] + es["per_run"]:
        theta0, drift = truth[row["run"]]
        assert row["theta0_norm"] == pytest.approx(theta0, rel=1e-9) and row["drift_rel"] == drift
        assert row["steps"] == 10 and row["params"] == 20_000
        assert row["predicted_rel"] == pytest.approx(0.01 * math.sqrt(10 * 20_000 / 8) / theta0)
        assert row["ratio"] == pytest.approx(drift / row["predicted_rel"])
    assert 1 - DRIFT_MARGIN < null["ratio"]["lo"] and null["ratio"]["hi"] < 1 + DRIFT_MARGIN
    assert null["reading"] == "equals_random_walk" and null["ratio_to_steps"] == pytest.approx(1, abs=0.02)
    assert es["reading"] == "above_random_walk" and es["ratio"]["mean"] == pytest.approx(1.3, abs=0.03)
    assert es["ratio_to_steps"] == pytest.approx(1, abs=0.02)
    lines = render(rec)
    assert "ES - null" in lines[0] and "**es_forgets_more_than_null**" in lines[0]
    assert "**equals_random_walk**" in lines[1] and "**above_random_walk**" in lines[1]


@pytest.mark.parametrize("antithetic", [False, True])
def test_one_runs_drift_against_the_walk_from_its_own_records(tmp_path, antithetic):
    """run_drift on one run read here (not through the record): ||theta_0|| = the first moved step's update norm over
    its drift_rel, T = the steps that moved (a first step that did not move is not counted), d = update_analysis's
    entries, the walk alpha sqrt(T d c / N) with c = N / (N - 1) antithetic, the ratio to the steps' own root sum of
    squares; with no update, no alpha or no entries there is nothing to read."""
    p = np.random.default_rng(1).uniform(0.05, 0.5, N_PROBLEMS)
    es = {"population_size": 8, "alpha": 0.01, "antithetic": antithetic}
    run = make_run(tmp_path, "es0", "es", 0, p, p, es=es)
    _walk_metrics(run, d=5_000, alpha_taken=0.01, n=8, seed=3)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    rows[0] |= {"es_update_norm": 0.0, "drift_rel": 0.0}  # the first step skipped: all rewards equal
    norm0 = rows[1]["es_update_norm"] / rows[1]["drift_rel"]  # theta_0 from the first step that moved
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = run_drift(load_run(run))
    c = 8 / 7 if antithetic else 1.0
    walk = 0.01 * math.sqrt((len(rows) - 1) * 5_000 * c / 8)
    steps_walk = math.sqrt(sum(r["es_update_norm"] ** 2 for r in rows))
    assert got["run"] == "es0" and got["seed"] == 0 and got["steps"] == len(rows) - 1 and got["params"] == 5_000
    assert got["theta0_norm"] == pytest.approx(norm0, rel=1e-12) and got["drift_rel"] == rows[-1]["drift_rel"]
    assert got["predicted_rel"] == pytest.approx(walk / norm0, rel=1e-12)
    assert got["ratio"] == pytest.approx(rows[-1]["drift_rel"] * norm0 / walk, rel=1e-12)
    assert got["ratio_to_steps"] == pytest.approx(rows[-1]["drift_rel"] * norm0 / steps_walk, rel=1e-12)
    cfg = json.loads((run / "config.json").read_text())
    for change in ({"alpha": 0.0}, {"population_size": 0}):
        (run / "config.json").write_text(json.dumps(cfg | {"es": cfg["es"] | change}))
        assert run_drift(load_run(run)) is None
    (run / "config.json").write_text(json.dumps(cfg))
    ev = json.loads((run / "eval.json").read_text())
    (run / "eval.json").write_text(json.dumps(ev | {"update_analysis": {}}))
    assert run_drift(load_run(run)) is None
    (run / "eval.json").write_text(json.dumps(ev))
    still = [r | {"es_update_norm": 0.0} for r in rows]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in still))
    assert run_drift(load_run(run)) is None


def test_the_rendered_lines_carry_the_records_numbers_in_points(record):
    """The premise section's first line: each method's held-out change and ES - null, each mean [lo, hi] x 100 with
    two decimals and a sign, written out here from the record."""
    rec, _, _ = record

    def pm(e):
        return f"{100 * e['mean']:+.2f} [{100 * e['lo']:+.2f}, {100 * e['hi']:+.2f}]"

    h, d = rec["heldout_pass1_change"], rec["es_minus_null_heldout"]
    line = render(rec)[0]
    assert f"ES {pm(h['es'])}, null {pm(h[NULL])}, GRPO {pm(h['grpo'])}; ES - null {pm(d)}:" in line
    assert render(None) == [] and render({}) == []


@pytest.mark.parametrize(
    "lo, hi, reading",
    [
        (0.97, 1.03, "equals_random_walk"),
        (1.001, 1.004, "equals_random_walk"),  # above 1 and inside the margin: equal within 5%
        (0.90, 1.10, "inconclusive"),  # a test that cannot reject 1 is no equality
        (1.02, 1.20, "above_random_walk"),
        (0.70, 0.96, "below_random_walk"),
        (1 - DRIFT_MARGIN, 1 + DRIFT_MARGIN, "equals_random_walk"),  # the margin's ends are inside it
        (1.0, 1.10, "inconclusive"),  # touching 1 is not above it
        (0.90, 1.0, "inconclusive"),  # nor below it
    ],
)
def test_the_drift_reading_equals_only_inside_the_margin(lo, hi, reading):
    assert drift_reading({"lo": lo, "hi": hi}) == reading


@pytest.mark.parametrize(
    "lo, hi, reading",
    [
        (-0.13, -0.03, "es_forgets_more_than_null"),
        (0.01, 0.05, "es_forgets_less_than_null"),
        (-0.015, 0.012, "within_2_points_of_null"),
        (-0.05, 0.01, "inconclusive"),
        (-0.05, 0.0, "inconclusive"),  # touching 0 is not below it
        (0.0, 0.05, "inconclusive"),  # nor above it
        (-0.02, 0.01, "inconclusive"),  # the margin's ends are outside it
        (-0.01, 0.02, "inconclusive"),
    ],
)
def test_the_held_out_reading(lo, hi, reading):
    assert heldout_reading({"lo": lo, "hi": hi}) == reading


def test_without_null_runs_the_record_says_what_it_needs(tmp_path):
    p = np.random.default_rng(1).uniform(0.05, 0.5, N_PROBLEMS)
    dirs = [make_run(tmp_path, f"{a}{s}", a, s, p, p) for a in ("es", "grpo") for s in (0, 1)]
    rec = es_null(collect(dirs))
    assert (
        rec["heldout_pass1_change"][NULL] is None and "needs es and es[null]" in rec["es_minus_null_heldout"]["reason"]
    )
    assert "reason" in rec["drift"][NULL]
    assert "not measured (needs es and es[null]" in render(rec)[0]


@pytest.mark.parametrize("seeds", [1, 2])
def test_two_common_seeds_are_enough_for_es_minus_null_and_one_is_not(tmp_path, seeds):
    """ES and its null on `seeds` seeds (held-out evaluations on 40 prompts): with 2 the held-out changes and ES -
    null have intervals over the seeds x prompts design; with 1 each part says what it needs. The record names its
    null variant and both margins."""
    p = np.random.default_rng(2).uniform(0.05, 0.5, N_PROBLEMS)
    dirs = [
        make_run(
            tmp_path,
            f"{name}{seed}",
            "es",
            seed,
            p,
            p,
            es={"population_size": 8, "alpha": 0.01} | es,
            heldout_drop=drop,
        )
        for seed in range(seeds)
        for name, es, drop in (("es", {}, 0.1), ("null", {"null_control": True}, 0.0))
    ]
    rec = es_null(collect(dirs))
    assert (rec["null_variant"], rec["drift_margin"], rec["heldout_margin"]) == (NULL, DRIFT_MARGIN, HELDOUT_MARGIN)
    diff = rec["es_minus_null_heldout"]
    if seeds == 2:
        assert diff["design"] == f"2 seeds x {N_PROBLEMS} prompts x {N_SAMPLES} samples" and "reading" in diff
        assert rec["heldout_pass1_change"]["es"]["design"] == diff["design"]
    else:
        assert diff == {"reason": f"needs es and {NULL} runs of at least 2 common seeds with held-out evaluations"}
        assert rec["heldout_pass1_change"]["es"] is None and rec["heldout_pass1_change"]["grpo"] is None


def test_the_drift_line_word_for_word_from_the_record(record):
    """The second line: each method's drift range, its predicted drift, the ratio [lo, hi] to 4 decimals, its
    reading and run count, written out here; a method measured after one that is not still appears."""
    rec, _, _ = record

    def part(m: str) -> str:
        e = rec["drift"][m]
        r = e["ratio"]
        return (
            f"{m} {e['drift_rel'][0]:.4f}-{e['drift_rel'][1]:.4f} against {e['predicted_rel']:.4f} predicted, ratio "
            f"{r['mean']:.4f} [{r['lo']:.4f}, {r['hi']:.4f}] (**{e['reading']}**, 4 runs)"
        )

    head = "- Drift ||theta_T - theta_0|| / ||theta_0|| against the random walk alpha sqrt(T d c / N) / ||theta_0|| "
    assert render(rec)[1] == f"{head}(equal only inside 1 +- 0.05): {part('es')}; {part(NULL)}."
    assert rec["drift"]["es"]["runs"] == len(rec["drift"]["es"]["per_run"]) == 4
    single = rec["drift"][NULL] | {"ratio": rec["drift"][NULL]["ratio"] | {"lo": None, "hi": None}}
    one = rec | {"drift": {"es": {"reason": "no run"}, NULL: single}}
    r = single["ratio"]
    assert render(one)[1] == (
        f"{head}(equal only inside 1 +- 0.05): es not measured (no run); {NULL} "
        f"{single['drift_rel'][0]:.4f}-{single['drift_rel'][1]:.4f} against {single['predicted_rel']:.4f} predicted, "
        f"ratio {r['mean']:.4f} (**{single['reading']}**, 4 runs)."
    )


def test_each_interval_in_points_or_what_stands_in_for_it():
    """The first line's numbers: mean [lo, hi] x 100 with a sign; a mean without a finite interval; none at all."""
    base = {"mean": 0.01, "lo": -0.0234, "hi": 0.0432, "design": "x", "detectable": 0.1}
    cases = [
        (base, "+1.00 [-2.34, +4.32]"),
        (base | {"lo": None}, "+1.00 (no interval)"),
        (base | {"lo": -math.inf}, "+1.00 (no interval)"),
        (base | {"lo": math.nan}, "+1.00 (no interval)"),
        (None, "not measured"),
        ({"mean": None}, "not measured"),
    ]
    for e, text in cases:
        rec = {
            "heldout_pass1_change": {"es": e, NULL: base, "grpo": base},
            "es_minus_null_heldout": {"reason": "r"},
            "drift": {},
        }
        assert render(rec)[0].split("points: ES ")[1].startswith(f"{text}, null +1.00 [-2.34, +4.32], GRPO ")


def test_the_records_intervals_carry_their_design_and_detectable_difference_and_the_parts_their_keys(record):
    rec, _, _ = record
    for m in ("es", NULL, "grpo"):
        assert set(rec["heldout_pass1_change"][m]) == {"mean", "lo", "hi", "design", "detectable"}
        assert rec["heldout_pass1_change"][m]["detectable"] > 0
    assert set(rec["es_minus_null_heldout"]) == {"mean", "lo", "hi", "design", "detectable", "reading"}
    for m in ("es", NULL):
        assert set(rec["drift"][m]) == {
            "runs",
            "drift_rel",
            "predicted_rel",
            "ratio",
            "reading",
            "ratio_to_steps",
            "per_run",
        }
        assert set(rec["drift"][m]["ratio"]) == {"mean", "lo", "hi", "design"}


def test_a_runs_drift_needs_a_row_per_step_and_a_positive_first_moved_drift(tmp_path):
    """The update norms and drifts must pair step by step; theta_0 is read from the first step that moved, whose
    drift must be positive (a drift of exactly 0 there has no theta_0); a first step that did not move is skipped."""
    p = np.random.default_rng(1).uniform(0.05, 0.5, N_PROBLEMS)
    run = make_run(tmp_path, "es0", "es", 0, p, p, es={"population_size": 8, "alpha": 0.01})
    _walk_metrics(run, d=5_000, alpha_taken=0.01, n=8, seed=3)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]

    def drift_of(changed: list[dict]) -> dict | None:
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in changed))
        return run_drift(load_run(run))

    assert drift_of(rows)["theta0_norm"] == pytest.approx(rows[0]["es_update_norm"] / rows[0]["drift_rel"])
    assert drift_of([{k: v for k, v in rows[0].items() if k != "drift_rel"}] + rows[1:]) is None  # unpaired
    assert drift_of([rows[0] | {"drift_rel": 0.0}] + rows[1:]) is None  # moved, no drift: no theta_0
    assert drift_of([rows[0] | {"drift_rel": -0.1}] + rows[1:]) is None
    skipped = [rows[0] | {"es_update_norm": 0.0, "drift_rel": 0.0}, rows[1] | {"drift_rel": 0.0}] + rows[2:]
    assert drift_of(skipped) is None  # the first step that moved has drift 0: not the next one's


def _es_and_null_runs(tmp_path, seeds: int) -> list:
    """ES (held-out Pass@1 down 10 points) and its null on seeds 0..seeds-1, on the same 40 held-out prompts."""
    p = np.random.default_rng(2).uniform(0.05, 0.5, N_PROBLEMS)
    dirs = []
    for seed in range(seeds):
        for name, es in (("es", {}), ("null", {"null_control": True})):
            es = {"population_size": 8, "alpha": 0.01} | es
            dirs.append(make_run(tmp_path, f"{name}{seed}", "es", seed, p, p, es=es, heldout_drop=0.1))
    return dirs


def test_a_run_without_a_final_held_out_evaluation_or_its_prompts_is_left_out_of_the_held_out_change(tmp_path):
    """ES on seeds 0-2, its null on 0-2: seed 2's ES final held-out evaluation lacks per_problem and seed 1's null
    base evaluation is missing, so ES's change is over seeds 0 and 1, the null's over 0 and 2, and ES - null over
    seed 0 alone: not measured."""
    from escov.paper_checks.es_null import heldout_changes

    dirs = _es_and_null_runs(tmp_path, 3)
    for run, part, change in ((tmp_path / "es2", "final", "per_problem"), (tmp_path / "null1", "base", None)):
        ev = json.loads((run / "eval.json").read_text())
        if change:
            ev["heldout"][part].pop(change)
        else:
            ev["heldout"].pop(part)
        (run / "eval.json").write_text(json.dumps(ev))
    ev = collect(dirs)
    assert sorted(heldout_changes(ev.by_variant("es"))) == [0, 1]
    assert sorted(heldout_changes(ev.by_variant(NULL))) == [0, 2]
    rec = es_null(ev)
    assert rec["heldout_pass1_change"]["es"]["design"].startswith("2 seeds x")
    assert "reason" in rec["es_minus_null_heldout"]


def test_es_minus_null_needs_the_same_held_out_prompts_for_every_common_seed(tmp_path):
    """Two common seeds, but the null's seed 1 was evaluated on other held-out prompts (ids renamed): no difference
    is taken across prompt sets."""
    dirs = _es_and_null_runs(tmp_path, 2)
    ev_path = tmp_path / "null1" / "eval.json"
    ev = json.loads(ev_path.read_text())
    for part in ("base", "final"):
        for row in ev["heldout"][part]["per_problem"]:
            row["id"] = f"other-{row['id']}"
    ev_path.write_text(json.dumps(ev))
    rec = es_null(collect(dirs))
    assert rec["es_minus_null_heldout"] == {
        "reason": f"needs es and {NULL} runs of at least 2 common seeds with held-out evaluations"
    }
    assert rec["heldout_pass1_change"][NULL] is None  # its own two seeds hold two prompt sets


def test_the_nulls_drift_is_read_when_es_has_none_to_read(tmp_path):
    p = np.random.default_rng(2).uniform(0.05, 0.5, N_PROBLEMS)
    dirs = []
    for seed in range(2):
        dirs.append(make_run(tmp_path, f"es{seed}", "es", seed, p, p, es={"population_size": 8, "alpha": 0.01}))
        ev = json.loads((dirs[-1] / "eval.json").read_text())
        (dirs[-1] / "eval.json").write_text(json.dumps(ev | {"update_analysis": {}}))  # no parameter count
        null = {"population_size": 8, "alpha": 0.01, "null_control": True}
        dirs.append(make_run(tmp_path, f"null{seed}", "es", seed, p, p, es=null))
        _walk_metrics(dirs[-1], d=5_000, alpha_taken=0.01, n=8, seed=seed)
    rec = es_null(collect(dirs))
    assert rec["drift"]["es"] == {"reason": "no run with es_update_norm, drift_rel and update_analysis"}
    assert rec["drift"][NULL]["runs"] == 2 and [r["run"] for r in rec["drift"][NULL]["per_run"]] == ["null0", "null1"]


def test_held_out_changes_over_seeds_need_one_prompt_set_and_one_sample_count():
    from escov.paper_checks.es_null import _over_design

    ids, change = ("a", "b"), np.array([0.1, -0.1])
    assert _over_design([(ids, change, 8), (ids, change, 8)])["design"] == "2 seeds x 2 prompts x 8 samples"
    assert _over_design([(ids, change, 8), (ids, change, 16)]) is None
    assert _over_design([(ids, change, 8), (("a", "c"), change, 8)]) is None
    assert _over_design([(ids, change, 8)]) is None
