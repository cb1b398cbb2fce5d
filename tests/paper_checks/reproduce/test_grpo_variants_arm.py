"""The answer's extra arm (paper_checks/reproduce/grpo_variants.py): the choice of the coverage-keeping GRPO variant
on curves whose reading is worked by hand, and the whole path on a tiny design of the tiny model (not the real run)."""

import json
from dataclasses import replace
from math import comb

import numpy as np
import pytest

from escov.paper_checks.matched import Curve
from escov.paper_checks.reproduce import grpo_variants


def _curve(seed, pass1, counts, n=64):
    t = len(pass1)
    counts = np.array(counts)
    return Curve(
        seed=seed,
        steps=np.arange(t) * 10,
        pass1=np.array(pass1, dtype=float),
        counts=counts,
        n=n,
        entropy=np.zeros(t),
        greedy=np.zeros(t),
        ids=tuple(f"p{i}" for i in range(counts.shape[1])),
        distinct=np.minimum(counts, 1),  # one distinct solution where any sample is correct
    )


def _p32(c, n=64):
    return 1 - comb(n - c, 32) / comb(n, 32)


SELECTION = {"chosen": "keeps", "settings": {"entropy_coef": 0.01}, "reason": None}


def test_es_against_the_variant_is_read_only_where_the_variant_has_narrowed():
    """The variant in GRPO's place of the premise's (b'): L* = the lowest of the runs' highest Pass@1 (0.5, ES's
    last point); the variant (Pass@1 0.2 -> 0.6) is read there at weight 0.75 on its last point; its fall F = base -
    variant Pass@32 per (seed, prompt) is computed by hand, and so is ES - variant. With ES never above the base, L*
    is the base's Pass@1, F is 0 and the comparison is not readable (both read at their shared start)."""
    es = [_curve(s, [0.2, 0.5], [[10, 2], [30 + s, 10]]) for s in (0, 1)]
    variant = [_curve(s, [0.2, 0.6], [[10, 2], [40, 1 - s]]) for s in (0, 1)]
    rec = grpo_variants.record(SELECTION, es, variant)
    b = rec["es_at_variant_plateau"]
    assert b["level"] == pytest.approx(0.5) and b["grpo_plateau_pass1"] == pytest.approx(0.6)
    assert b["es_reaches_grpo_plateau"] is False  # 0.5 < 0.6 - 0.02

    def v_at(s, p):  # the variant's Pass@32 at L*, seed s, prompt p
        return 0.25 * _p32((10, 2)[p]) + 0.75 * _p32(((40, 1), (40, 0))[s][p])

    falls = [_p32((10, 2)[p]) - v_at(s, p) for s in (0, 1) for p in (0, 1)]
    diffs = [_p32(((30, 10), (31, 10))[s][p]) - v_at(s, p) for s in (0, 1) for p in (0, 1)]
    assert b["grpo_fall"]["mean"] == pytest.approx(np.mean(falls)) and np.mean(falls) > b["min_fall"]
    assert b["difference"]["mean"] == pytest.approx(np.mean(diffs)) and b["reading"] != "not_readable"
    assert rec["variant_plateau_minus_base"]["pass@32"]["mean"] == pytest.approx(
        np.mean([_p32(((40, 1), (40, 0))[s][p]) - _p32((10, 2)[p]) for s in (0, 1) for p in (0, 1)])
    )

    falling = [_curve(s, [0.2, 0.1], [[10, 2], [5, 1]]) for s in (0, 1)]
    low = grpo_variants.record(SELECTION, falling, variant)["es_at_variant_plateau"]
    assert low["level"] == pytest.approx(0.2) and low["grpo_fall"]["mean"] == pytest.approx(0.0, abs=1e-12)
    assert low["reading"] == "not_readable"
    chosen_on = grpo_variants.choose(variant, {"keeps": variant}) | SELECTION
    text = "\n".join(grpo_variants.render(grpo_variants.record(chosen_on, falling, variant)))
    assert "**not readable**" in text and "Pass@1 20.0" in text
    below = [_curve(s, [0.15, 0.1], [[10, 2], [5, 1]]) for s in (0, 1)]  # ES's highest under the variant's base
    apart = grpo_variants.record(chosen_on, below, variant)
    assert apart["es_at_variant_plateau"]["reading"] == "not_readable" and "reason" in apart["es_at_variant_plateau"]
    assert "**not readable** (no common Pass@1 range" in "\n".join(grpo_variants.render(apart))


def test_choose_reads_each_candidate_where_it_reaches_grpos_plateau_and_skips_one_that_never_gets_there():
    """Plain GRPO ends at Pass@1 0.5 and 0.6: the plateau is 0.55 and a run reaches it at 0.55 - REACH_TOLERANCE
    (0.53; plain GRPO's first seed, ending at 0.5, does not). Candidate "keeps" crosses 0.53 between points 1 and 2
    (weight 0.15 on point 2) on both seeds, "loses" too (weight 0.4) with lower counts; "stalls" keeps everything but
    reaches 0.53 on one seed only: it must not win."""
    from escov.paper_checks.premise_plateau import REACH_TOLERANCE

    assert REACH_TOLERANCE == pytest.approx(0.02)  # the weights below are worked for it
    plain = [_curve(0, [0.2, 0.5], [[10, 2], [6, 1]]), _curve(1, [0.2, 0.6], [[10, 2], [6, 0]])]
    keeps = [_curve(s, [0.2, 0.5, 0.7], [[10, 2], [9, 2], [8, 1]]) for s in (0, 1)]
    loses = [_curve(s, [0.2, 0.45, 0.65], [[10, 2], [5, 1], [3, 0]]) for s in (0, 1)]
    stalls = [_curve(0, [0.2, 0.3, 0.5], [[10, 2], [10, 2], [10, 2]]), _curve(1, [0.2, 0.3, 0.6], [[10, 2]] * 3)]
    got = grpo_variants.choose(plain, {"loses": loses, "keeps": keeps, "stalls": stalls})
    assert got["plateau"] == pytest.approx(0.55) and got["level"] == pytest.approx(0.53)

    def at(c1, c2, w):  # per prompt, interpolated, minus the base's
        return [(1 - w) * _p32(a) + w * _p32(b) - _p32(base) for a, b, base in zip(c1, c2, (10, 2))]

    assert got["candidates"]["keeps"]["pass32_minus_base"] == pytest.approx(np.mean(at((9, 2), (8, 1), 0.15)))
    assert got["candidates"]["loses"]["pass32_minus_base"] == pytest.approx(np.mean(at((5, 1), (3, 0), 0.4)))
    assert got["candidates"]["stalls"] == {
        "seeds": 2,
        "pass32_minus_base": None,
        "reaches": False,
        "highest": [pytest.approx(0.5), pytest.approx(0.6)],
    }
    assert got["chosen"] == "keeps" and got["reason"] is None
    assert got["plain_pass32_minus_base"] == pytest.approx(
        np.mean([_p32(6) - _p32(10), _p32(1) - _p32(2), _p32(6) - _p32(10), _p32(0) - _p32(2)])
    )
    assert got["plain_at_level"] is None and got["plain_highest"] == [pytest.approx(0.5), pytest.approx(0.6)]
    none = grpo_variants.choose(plain, {"stalls": stalls})
    assert none["chosen"] is None and "0.530" in none["reason"] and "0.550" in none["reason"]
    # a plain GRPO whose every seed reaches the level is read there as the candidates are
    level_plain = grpo_variants.choose(plain[1:] * 2, {"keeps": keeps})
    assert level_plain["level"] == pytest.approx(0.58)
    assert level_plain["plain_at_level"] == pytest.approx(np.mean(at((10, 2), (6, 0), (0.58 - 0.2) / 0.4)))


def test_the_arm_runs_end_to_end_on_a_tiny_design(tiny_model_dir, tmp_path):
    """A tiny answer (its premise control on validation prompts, two GRPO and two ES runs on test prompts), then the
    arm with two candidates: the selection reads validation curves only, the chosen variant runs as the answer's
    GRPO runs with its settings added, and report.json gains the `grpo_variants` record with its endpoints."""
    import torch

    from escov.llm.rundir import read_json, write_json
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.premise_control import run_control
    from escov.paper_checks.reproduce.reproduction import PREMISE_DIR, REPORT_DIR
    from escov.paper_checks.reproduce.training_runs import run_all

    torch.set_num_threads(1)
    curve = {"points": 2, "samples": 32, "temperature": 1.0, "resolution": 0.99, "max_points": 3}
    common = {
        "steps": 2,
        "batch_size": 2,
        "max_completion_length": 5,
        "eval_problems": 3,
        "eval_samples": 2,
        "eval_ks": (1,),
        "heldout_task": "",
        "threshold_keep": (),
        "probe": False,
        "checkpoint_every": 1,
        "checkpoint_dense": 0,
        "threads": 1,
        "step_samples": 1,
    }
    budget = replace(
        BUDGETS["answer"],
        common=common,
        curve=curve,
        grpo={"num_generations": 4},
        es={"population_size": 4, "sigma": 0.02, "alpha": 0.01},
    )
    design = grpo_variants.Design(seeds=(300, 301), steps=2, checkpoint_every=1, prompts=3, curve=tuple(curve.items()))
    answer = tmp_path / "answer"
    run_control(
        tiny_model_dir,
        answer / PREMISE_DIR,
        budget,
        jobs=1,
        seeds=design.seeds,
        steps=2,
        problems=3,
        curve=curve,
        checkpoint_every=1,
        log=lambda msg: None,
    )
    runs = {
        f"{algo}-s{seed}": common
        | {
            "algo": algo,
            "model": str(tiny_model_dir),
            "seed": seed,
            "task": budget.task,
            "grpo": budget.grpo,
            "es": budget.es,
        }
        for algo in ("grpo", "es")
        for seed in (0, 1)
    }
    run_all(runs, answer / "runs", curve, 1, lambda msg: None)
    candidates = {"entropy-bonus": {"entropy_coef": 0.01}, "kl-cov": {"loss_type": "kl_cov"}}

    def arm(selection_only: bool = False) -> dict:
        return grpo_variants.run(
            answer,
            budget,
            premise_dir=PREMISE_DIR,
            report_dir=REPORT_DIR,
            design=design,
            candidates=candidates,
            jobs=1,
            selection_only=selection_only,
            log=lambda msg: None,
        )

    # beside an unfinished answer (no report yet): the selection alone runs; the rest is refused, naming why
    alone = arm(selection_only=True)
    assert alone == {"selection": read_json(answer / grpo_variants.VARIANTS_DIR / "selection.json")}
    assert not (answer / grpo_variants.VARIANTS_DIR / "test-runs").exists()
    with pytest.raises(ValueError, match="has not finished"):
        arm()
    (answer / REPORT_DIR).mkdir()
    write_json(answer / REPORT_DIR / "report.json", {"claims": []})
    (answer / REPORT_DIR / "REPORT.md").write_text("# report\n", encoding="utf-8")
    rec = arm()  # the selection's runs are kept: only the test runs train now

    selection = read_json(answer / grpo_variants.VARIANTS_DIR / "selection.json")
    assert set(selection["candidates"]) == set(candidates)
    for name in candidates:  # selection curves read validation prompts, never test ones
        for seed in design.seeds:
            cfg = read_json(answer / grpo_variants.VARIANTS_DIR / "selection" / f"{name}-s{seed}" / "config.json")
            assert all(cfg["grpo"][k] == v for k, v in candidates[name].items())
    report = read_json(answer / REPORT_DIR / "report.json")
    assert report["grpo_variants"] == json.loads(json.dumps(rec)) and report["claims"] == []
    assert "## Than which GRPO?" in (answer / REPORT_DIR / "REPORT.md").read_text(encoding="utf-8")
    assert sum(rec["commits"]["selection"].values()) == len(candidates) * len(design.seeds)
    assert sum(rec["commits"]["test"].values()) == (0 if rec["chosen"] is None else 2)
    if rec["chosen"] is None:
        assert "reason" in rec
        return
    assert rec["settings"] == candidates[rec["chosen"]]
    for seed in (0, 1):
        cfg = read_json(
            answer / grpo_variants.VARIANTS_DIR / "test-runs" / f"grpo[{rec['chosen']}]-s{seed}" / "config.json"
        )
        assert cfg["seed"] == seed and all(cfg["grpo"][k] == v for k, v in rec["settings"].items())
    assert rec["variant_plateau_minus_base"]["verdict"] in ("narrowed", "widened", "no_change_detected")
    assert "pass@32" in rec["variant_plateau_minus_base"]
    b = rec["es_at_variant_plateau"]
    assert "reason" in b or {"level", "grpo_fall", "difference", "reading"} <= set(b)


def test_grpos_plateau_is_the_mean_of_its_last_points_and_each_runs_highest_is_its_maximum():
    """Plain GRPO climbs to 0.7 then falls to 0.5 on one seed and ends at its highest 0.6 on the other: the plateau is
    the mean of the last points (0.55, not the highest's 0.65), the level 0.55 - REACH_TOLERANCE, and each run's
    highest Pass@1 its maximum (0.7, 0.6), not its last point."""
    from escov.paper_checks.premise_plateau import REACH_TOLERANCE

    plain = [_curve(0, [0.2, 0.7, 0.5], [[10, 2], [6, 1], [6, 1]]), _curve(1, [0.2, 0.6, 0.6], [[10, 2]] * 3)]
    got = grpo_variants.choose(plain, {"same": plain})
    assert got["plateau"] == pytest.approx(0.55) and got["level"] == pytest.approx(0.55 - REACH_TOLERANCE)
    assert got["plain_highest"] == [pytest.approx(0.7), pytest.approx(0.6)]
    assert got["candidates"]["same"]["highest"] == [pytest.approx(0.7), pytest.approx(0.6)]
    assert grpo_variants.kept_at([], 0.3) is None  # a candidate without runs reaches nothing


def test_the_chosen_variants_test_runs_are_the_plain_grpo_runs_with_its_settings_added(tmp_path):
    """From the answer's runs only plain GRPO (no variant tag, not ES or a schedule) is rerun with the chosen settings
    merged into its [grpo] table, without its schedule and device; fewer than 2 such runs are refused."""
    runs = {
        "grpo-s0": {"algo": "grpo", "seed": 0, "grpo": {"learning_rate": 1e-4}, "device": "cpu", "schedule": {}},
        "grpo-s1": {"algo": "grpo", "seed": 1, "grpo": {"learning_rate": 1e-4}},
        "grpo[dapo]-s0": {"algo": "grpo", "seed": 0, "grpo": {"loss_type": "dapo", "learning_rate": 1e-4}},
        "es-s0": {"algo": "es", "seed": 0, "es": {}},
        "es-grpo-s0": {"algo": "es-grpo", "seed": 0, "grpo": {"learning_rate": 1e-4}},
    }
    for name, cfg in runs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(cfg))
    got = grpo_variants.test_runs(tmp_path, "clip-higher", {"epsilon_high": 0.28})
    assert got == {
        f"grpo[clip-higher]-s{s}": {"algo": "grpo", "seed": s, "grpo": {"learning_rate": 1e-4, "epsilon_high": 0.28}}
        for s in (0, 1)
    }
    (tmp_path / "grpo-s1" / "config.json").unlink()
    with pytest.raises(ValueError, match=r"fewer than 2 plain GRPO runs to run the chosen variant as$"):
        grpo_variants.test_runs(tmp_path, "clip-higher", {"epsilon_high": 0.28})


def test_the_variants_verdict_is_read_from_its_pass32_endpoint():
    """A variant that loses most prompts (Pass@32 falls, the no-correct share rises) has narrowed: the verdict is
    Pass@32's (narrowed), not the no-correct endpoint's, whose sign is the opposite (widened)."""
    from escov.paper_checks.premise import verdict

    base = [10, 8, 12, 9, 11, 7]
    last = {0: [0, 0, 0, 20, 0, 1], 1: [0, 0, 1, 20, 0, 0], 2: [0, 1, 0, 21, 0, 0]}
    variant = [_curve(s, [0.2, 0.6], [base, last[s]]) for s in (0, 1, 2)]
    es = [_curve(s, [0.2, 0.5], [base, base]) for s in (0, 1, 2)]
    ends = grpo_variants.record(SELECTION, es, variant)["variant_plateau_minus_base"]
    assert ends["pass@32"]["hi"] < 0 < ends["no_correct"]["lo"]
    assert ends["verdict"] == "narrowed" == verdict(ends["pass@32"]) != verdict(ends["no_correct"])


def test_each_candidate_runs_the_controls_grpo_with_its_own_settings_on_every_selection_seed():
    from pathlib import Path

    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.premise_control import CONTROL_GRPO, CONTROL_SEEDS

    design = grpo_variants.Design()
    budget = BUDGETS["answer-paper-regime"]  # its own GRPO step (3e-5) is not the control's (1e-4)
    assert budget.grpo["learning_rate"] != CONTROL_GRPO["learning_rate"]
    runs = grpo_variants.selection_runs(Path("base"), budget, design, {"cand": {"epsilon_high": 0.28}})
    assert set(runs) == {f"grpo-s{s}" for s in CONTROL_SEEDS} | {f"cand-s{s}" for s in CONTROL_SEEDS}
    for s in CONTROL_SEEDS:
        plain, cand = runs[f"grpo-s{s}"]["grpo"], runs[f"cand-s{s}"]["grpo"]
        assert cand == plain | {"epsilon_high": 0.28} and cand["learning_rate"] == CONTROL_GRPO["learning_rate"]
        assert runs[f"cand-s{s}"]["seed"] == s and runs[f"cand-s{s}"]["steps"] == design.steps


def test_no_test_reading_without_a_chosen_variant_or_with_fewer_than_two_of_its_runs():
    """The record says why and reads nothing: no variant was chosen (the selection's reason), or the chosen one has
    fewer than 2 test runs with curves (a seeds x prompts interval needs 2 seeds); the curves are not touched."""
    chosen = {"chosen": "gspo", "settings": {"importance_sampling_level": "sequence"}, "reason": None}
    one = grpo_variants.record(chosen, [], [object()])
    assert one["reason"] == "fewer than 2 test runs of the chosen variant with curves"
    assert "variant_plateau_minus_base" not in one and one["chosen"] == "gspo"
    none = grpo_variants.record(chosen | {"chosen": None, "reason": "no candidate reached"}, [], [object()] * 2)
    assert none["reason"] == "no candidate reached" and "es_at_variant_plateau" not in none
