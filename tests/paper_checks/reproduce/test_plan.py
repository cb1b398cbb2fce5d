"""The reproduction plan covers every variant the claims need, with configs the trainer accepts."""

from pathlib import Path

import numpy as np
import pytest

from escov.llm import schedules
from escov.llm.config import TrainConfig
from escov.paper_checks.evidence import variant
from escov.paper_checks.reproduce.budgets import BUDGETS
from escov.paper_checks.reproduce.plan import plan


def test_plan_builds_valid_configs_for_every_variant():
    b = BUDGETS["full"]
    runs = plan(b, Path("base"), Path("other"), reward_std={s: 0.04 for s in b.seeds})
    configs = {name: TrainConfig.from_dict(cfg | {"out": f"o/{name}"}) for name, cfg in runs.items()}
    variants = {variant(c.to_dict()) for c in configs.values()}
    assert variants >= {
        "es",
        "grpo",
        "es-grpo",
        "grpo-es",
        "es[sampled]",
        "es[no-zscore]",
        "es[no-zscore,rescaled]",
        "es[two-point]",
        "es[null]",
        "es[bf16]",
    }
    # same seeds everywhere: every variant, schedule and sweep point runs on the main runs' seeds
    by_point = {}
    for c in configs.values():
        by_point.setdefault((variant(c.to_dict()), c.model, c.es.population_size), set()).add(c.seed)
    assert all(seeds == set(b.seeds) for seeds in by_point.values()), by_point
    rescaled = [c for c in configs.values() if variant(c.to_dict()) == "es[no-zscore,rescaled]"]
    assert all(c.es.center_scale == 25.0 and not c.es.zscore for c in rescaled)
    # Table 6 protocol: every sweep point makes as many ES updates as the main runs
    main_updates = {
        sum(p.steps for p in schedules.plan(c))
        for c in configs.values()
        if variant(c.to_dict()) == "es" and c.model == "base" and c.es.population_size == b.es["population_size"]
    }
    sweep = {
        (c.model, c.es.population_size): sum(p.steps for p in schedules.plan(c))
        for c in configs.values()
        if variant(c.to_dict()) == "es"
    }
    assert {m for m, _ in sweep} == {"base", "other"} and len({n for _, n in sweep}) >= 2
    assert set(sweep.values()) == main_updates and len(main_updates) == 1


def test_answer_plan_is_the_headline_comparison_with_curves():
    b = BUDGETS["answer-paper-regime"]
    runs = plan(b, Path("base"), None, reward_std={s: 0.04 for s in b.seeds})
    configs = [TrainConfig.from_dict(cfg | {"out": f"o/{name}"}) for name, cfg in runs.items()]
    assert {variant(c.to_dict()) for c in configs} == {"es", "grpo", "es[sampled]", "es-grpo", "grpo-es"}
    assert all(c.task == "countdown3" and c.eval_temperature == 0.6 and c.threads == 1 for c in configs)
    assert {c.seed for c in configs} == set(b.seeds) and len(b.seeds) >= 4
    assert b.curve["samples"] > 32, "the no-correct share needs more samples than Pass@32's k"


def test_answer_plan_measures_every_method_where_it_is_compared():
    """The answer budget's checkpoints (llm.train.checkpoint_due) and curve layout (llm.curve.layout) on
    Pass@1 paths like the first answer run's (GRPO 13 -> 30 points in 5 of 40 steps, then 59; ES and ES
    with sampled members in straight lines to 32 and 23): every level of every pair's common range is
    supported (theory.matched). The first run's plan (a checkpoint every 5 steps, 8 curve points) on the
    same paths supports no level between ES and GRPO."""
    from escov.llm.curve import curve_steps, layout
    from escov.llm.train import checkpoint_due
    from escov.theory.matched import compared_levels
    from tests.paper_checks import known_frontier as kf

    b = BUDGETS["answer-paper-regime"]
    configs = {variant(cfg): TrainConfig.from_dict(cfg | {"out": "o"}) for cfg in plan(b, Path("base"), None).values()}
    paths = {"es": kf.slow(), "grpo": kf.fast(), "es[sampled]": kf.slow(end=0.23)}
    assert set(paths) | {"es-grpo", "grpo-es"} == set(configs)
    curves = {}
    for name, path in paths.items():
        cfg = configs[name]
        total = sum(p.steps for p in schedules.plan(cfg))
        assert total == len(path) - 1
        checkpoints = [s for s in range(1, total + 1) if checkpoint_due(cfg, s, total)]
        steps = layout(
            checkpoints, lambda s: path[s], **{k: b.curve[k] for k in ("points", "resolution", "max_points")}
        )
        curves[name] = path[steps]
    for a, c in (("es", "grpo"), ("es", "es[sampled]"), ("grpo", "es[sampled]")):
        _, _, levels, kept = compared_levels([curves[a], curves[c]], b.curve["resolution"])
        assert levels.size and kept.all(), (a, c, levels, kept)
    old = [paths[name][curve_steps(range(5, total + 1, 5), 8)] for name in ("es", "grpo")]
    _, _, levels, kept = compared_levels(old, b.curve["resolution"])
    assert levels.size and not kept.any()


def test_the_answer_measures_es_and_grpo_where_they_are_compared_when_grpo_climbs_within_ten_steps():
    """The answer's GRPO (lr 1e-4) rose from Pass@1 0.25 to 0.64 by step 50 in the premise control, the first
    checkpoint it measured. On a path that climbs faster still (time constant 8 steps) and ES's straight line
    to 0.5, the answer's checkpoints and curve layout support every level of their common range."""
    from escov.llm.curve import layout
    from escov.llm.train import checkpoint_due
    from escov.theory.matched import compared_levels

    b = BUDGETS["answer"]
    cfg = TrainConfig.from_dict(plan(b, Path("base"), None)["grpo-s0"] | {"out": "o"})
    t = np.arange(cfg.steps + 1)
    paths = (0.25 + 0.39 * (1 - np.exp(-t / 8.0)), 0.25 + 0.25 * t / cfg.steps)
    checkpoints = [s for s in range(1, cfg.steps + 1) if checkpoint_due(cfg, s, cfg.steps)]
    curves = [
        path[
            layout(
                checkpoints,
                lambda s, path=path: path[s],
                **{k: b.curve[k] for k in ("points", "resolution", "max_points")},
            )
        ]
        for path in paths
    ]
    _, _, levels, kept = compared_levels(curves, b.curve["resolution"])
    assert levels.size and kept.all() and levels.max() >= 0.45


def test_the_quick_look_is_the_answer_at_a_smaller_design():
    """The small budget trains ES and GRPO as the published answer does (its base, task, temperature and step sizes),
    with the paper-regime answer's steps, batch, checkpoints and curve layout rule, on fewer seeds and test prompts,
    with enough seeds for a t interval over seeds. Its curve starts from fewer evenly spread points; refinement must
    still support every level of ES vs GRPO's common range on Pass@1 paths like the first answer run's."""
    from escov.llm.curve import layout
    from escov.llm.train import checkpoint_due
    from escov.theory.matched import compared_levels
    from tests.paper_checks import known_frontier as kf

    quick, answer, regime = BUDGETS["small"], BUDGETS["answer"], BUDGETS["answer-paper-regime"]
    assert (quick.base_preset, quick.base_settings, quick.task, quick.es, quick.grpo) == (
        answer.base_preset,
        answer.base_settings,
        answer.task,
        answer.es,
        answer.grpo,
    )
    assert quick.grpo["learning_rate"] == 1e-4 and quick.base_settings  # the premise's base and GRPO step
    assert quick.curve | {k: regime.curve[k] for k in ("samples", "points")} == regime.curve
    assert quick.curve["samples"] >= 32 and quick.curve["points"] <= regime.curve["points"]
    assert quick.curve["temperature"] == answer.curve["temperature"] == 0.6
    same = (
        "steps",
        "batch_size",
        "max_completion_length",
        "eval_temperature",
        "eval_samples",
        "checkpoint_every",
        "checkpoint_dense",
        "threads",
    )
    assert {k: quick.common[k] for k in same} == {k: regime.common[k] for k in same}
    assert quick.common["steps"] < answer.common["steps"]
    assert 4 <= len(quick.seeds) < len(answer.seeds) and set(quick.seeds) < set(answer.seeds)
    assert quick.common["eval_problems"] < answer.common["eval_problems"]
    configs = [
        TrainConfig.from_dict(cfg | {"out": f"o/{name}"}) for name, cfg in plan(quick, Path("base"), None).items()
    ]
    assert sorted(variant(c.to_dict()) for c in configs) == sorted(["es", "grpo"] * len(quick.seeds))
    assert all(c.eval_temperature == 0.6 and c.task == "countdown3" for c in configs)
    cfg = configs[0]
    checkpoints = [s for s in range(1, cfg.steps + 1) if checkpoint_due(cfg, s, cfg.steps)]
    curves = [
        path[
            layout(
                checkpoints,
                lambda s, path=path: path[s],
                **{k: quick.curve[k] for k in ("points", "resolution", "max_points")},
            )
        ]
        for path in (kf.slow(), kf.fast())
    ]
    _, _, levels, kept = compared_levels(curves, quick.curve["resolution"])
    assert levels.size and kept.all()


def test_a_schedules_second_method_is_checkpointed_densely_from_its_switch():
    """ES->GRPO and GRPO->ES of the answer budget: a checkpoint after each of the first checkpoint_dense steps of
    each phase (GRPO climbs fast wherever it starts), every checkpoint_every steps, and at the end."""
    from escov.llm.train import checkpoint_due

    b = BUDGETS["answer-paper-regime"]
    for name, cfg in plan(b, Path("base"), None).items():
        if not name.startswith(("es-grpo-s0", "grpo-es-s0", "es-s0")):
            continue
        cfg = TrainConfig.from_dict(cfg | {"out": "o"})
        phases = schedules.plan(cfg)
        total = sum(p.steps for p in phases)
        expected = {s for p in phases for s in range(p.start + 1, p.start + cfg.checkpoint_dense + 1)}
        expected |= set(range(cfg.checkpoint_every, total + 1, cfg.checkpoint_every)) | {total}
        assert {s for s in range(1, total + 1) if checkpoint_due(cfg, s, total)} == expected, name
        assert len(phases) == (1 if name.startswith("es-s") else 2)
        if name == "es-grpo-s0":  # switching at step 20 of 40, dense for 10 steps, every 2
            assert [s for s in range(1, total + 1) if checkpoint_due(cfg, s, total)] == [
                *range(1, 11),
                12,
                14,
                16,
                18,
                20,
                *range(21, 31),
                32,
                34,
                36,
                38,
                40,
            ]


def test_the_quick_look_is_set_beside_the_published_answer_on_the_tasks_ordinary_test_prompts():
    """The quick look's base is the published answer's: its key in PUBLISHED_BY_BASE maps to results/report.json.
    Its runs read the task's ordinary test prompts (the first eval_problems of the test split's rule), never a
    block of prompts kept for the answer (eval_solutions 0 or unset)."""
    from escov.llm.problem_sets import eval_set
    from escov.paper_checks.reproduce.budgets import PUBLISHED_BY_BASE, published_for
    from escov.paper_checks.summary import PUBLISHED

    quick = BUDGETS["small"]
    assert PUBLISHED_BY_BASE[(quick.base_preset, quick.base_settings)] == PUBLISHED == published_for(quick)
    assert PUBLISHED.relative_to(PUBLISHED.parents[1]).as_posix() == "results/report.json" and PUBLISHED.is_file()
    assert published_for(BUDGETS["answer-paper-regime"]) != PUBLISHED  # the paper-regime base: its own report
    ordinary = eval_set(TrainConfig(task=quick.task, eval_problems=quick.common["eval_problems"])).ids
    for name, cfg in plan(quick, Path("base"), None).items():
        assert cfg.get("eval_solutions", 0) == 0, name
        assert eval_set(TrainConfig.from_dict(cfg | {"out": f"o/{name}"})).ids == ordinary, name


def test_rescaled_variant_waits_for_the_main_runs():
    assert not any("rescaled" in name for name in plan(BUDGETS["small"], Path("base"), None))


def test_unknown_budget_is_an_error(tmp_path):
    from escov.paper_checks.reproduce.reproduction import reproduce

    with pytest.raises(ValueError, match="budget"):
        reproduce("huge", tmp_path)
    out = tmp_path / "out"
    with pytest.raises(ValueError) as err:
        reproduce("small", out, model=tmp_path)
    assert str(err.value) == f"--model {tmp_path}: not a model directory (no config.json)"
    with pytest.raises(ValueError) as err:
        reproduce("small", out, jobs=0)
    assert str(err.value) == "--jobs must be >= 1, got 0"
    assert not out.exists()  # refused before anything is written


def _point(step: int, pass1: float, n: int = 64) -> dict:
    ev = {
        "task": "countdown3",
        "num_problems": 2,
        "n": n,
        "ks": [1],
        "temperature": 0.6,
        "top_p": 1.0,
        "max_new_tokens": 8,
        "seed": 0,
        "pass_at_k": {"1": pass1},
        "maj_at_k": {},
        "mean_token_entropy": 1.0,
        "mean_response_tokens": 4.0,
        "truncated_fraction": 0.0,
        "solved_fraction": 1.0,
        "distinct_correct_answers": 1.0,
        "distinct_correct_texts": 1.0,
        "seconds": 0.1,
        "per_problem": [],
    }
    return {"step": step, "sampled": ev, "greedy": ev | {"n": 1, "temperature": 0.0}}


def test_a_curve_is_done_when_its_layout_is_measured(tmp_path):
    """reproduce skips a run's curve only when every point of its layout is in curve.json: a Pass@1 jump
    wider than the resolution with a checkpoint inside still has a point to measure."""
    import json

    from escov.paper_checks.reproduce.training_runs import curve_done

    (tmp_path / "config.json").write_text(json.dumps({"task": "countdown3", "eval_problems": 2}))  # points on 2
    for step in (1, 2, 3, 4):
        (tmp_path / "checkpoints" / f"step-{step}").mkdir(parents=True)
        (tmp_path / "checkpoints" / f"step-{step}" / "trainer_state.json").write_text(
            '{"step": %d, "elapsed": 1.0}' % step
        )
    curve = {"points": 2, "samples": 64, "temperature": 0.6, "resolution": 0.06, "max_points": 40}
    write = lambda pts: (tmp_path / "curve.json").write_text(json.dumps({"points": pts}))
    write([_point(0, 0.10), _point(1, 0.12), _point(4, 0.15)])  # layout 0 1 4, no jump above 6 points
    assert curve_done(tmp_path, curve)
    write([_point(0, 0.10), _point(1, 0.12), _point(4, 0.40)])  # 1 -> 4 jumps 28 points: step 2 or 3 is due
    assert not curve_done(tmp_path, curve)
    write([_point(0, 0.10), _point(1, 0.12), _point(2, 0.2), _point(3, 0.3), _point(4, 0.40)])
    assert curve_done(tmp_path, curve)
    assert not curve_done(tmp_path, curve | {"samples": 32}), "points of other settings do not count"
    assert not curve_done(tmp_path, curve | {"n_problems": 3}), "nor points on fewer prompts"


def test_the_paper_regime_answer_runs_from_the_paper_regime_base_and_again_from_the_diffuse_one():
    from dataclasses import replace

    answer, diffuse = BUDGETS["answer-paper-regime"], BUDGETS["answer-diffuse"]
    assert (answer.base_preset, diffuse.base_preset) == ("paper", "default")
    assert (answer.common["eval_problems"], diffuse.common["eval_problems"]) == (128, 64)  # each base's own design
    same_prompts = diffuse.common | {"eval_problems": answer.common["eval_problems"]}
    assert replace(diffuse, base_preset="paper", common=same_prompts) == answer  # nothing else differs


def test_the_answer_differs_from_the_paper_regime_answer_only_where_the_premise_needs():
    from dataclasses import replace

    from escov.paper_checks.reproduce.budgets import ANSWER_ES_UPDATES, PREMISE_BASE, PREMISE_STEPS, SMALL_SIGMA
    from escov.paper_checks.reproduce.premise_control import CONTROL_GRPO

    answer, regime = BUDGETS["answer"], BUDGETS["answer-paper-regime"]
    # the base the positive control narrowed on, GRPO at the control's step, ES also inside Lemma 1's regime
    assert dict(answer.base_settings) == {"solution_form": "dominant", "rare_keep": "0.02"} == dict(PREMISE_BASE)
    assert answer.grpo["learning_rate"] == CONTROL_GRPO["learning_rate"] == 1e-4 and answer.premise_control
    runs = plan(answer, Path("base"), None)
    assert sorted({n.rsplit("-s", 1)[0] for n in runs}) == ["es", "es-null", "es-small-sigma", "grpo"]
    assert {runs[f"es-small-sigma-s{s}"]["es"]["sigma"] for s in answer.seeds} == {SMALL_SIGMA}
    assert SMALL_SIGMA <= runs["es-s0"]["es"]["sigma"] / 5
    configs = {n: TrainConfig.from_dict(c | {"out": n}) for n, c in runs.items()}
    assert {variant(c.to_dict()) for c in configs.values()} == {"es", "es[null]", "es[small-sigma]", "grpo"}
    # GRPO to its plateau; ES (N = 32 against G = 8: an update per GRPO step of equal FLOPs) to the ES cap
    # (es-small-sigma at its published 150 updates: its question was answered there)
    for name, c in configs.items():
        want = PREMISE_STEPS if c.algo != "es" else 150 if name.startswith("es-small-sigma") else ANSWER_ES_UPDATES
        assert c.steps == want, name
    same = replace(
        answer,
        base_settings=(),
        grpo=regime.grpo,
        es=regime.es,
        es_variants=regime.es_variants,
        schedules=True,
        premise_control=False,
        purpose="",
        curve=regime.curve,
        es_updates=None,
        es_common=None,
        es_variant_updates=(),
        arms=None,
        lemma_as_stated=None,
        common={k: v for k, v in answer.common.items() if k not in ("eval_solutions", "train_solutions", "eval_skip")}
        | {k: regime.common[k] for k in ("steps", "probe_every", "checkpoint_every", "checkpoint_dense")},
    )
    assert same == regime  # nothing else differs
    # the fresh prompts, and a training pool of the same kind
    assert answer.common["eval_solutions"] == answer.common["train_solutions"] == 2
    assert "eval_solutions" not in regime.common and "train_solutions" not in regime.common
    assert answer.common["eval_skip"] == 8 and "eval_skip" not in regime.common  # past the selection runs' prompts
    from escov.paper_checks.reproduce.lemma_as_stated_measurement import ANSWER_LEMMA_AS_STATED

    assert answer.lemma_as_stated == ANSWER_LEMMA_AS_STATED and regime.lemma_as_stated is None


# The readers of the runs' probes and thresholded checkpoints, by their variant names (paper_checks/evidence.py
# variant): the Lemma 1 and 2 checks and the open questions' population diversity read the main ES runs' probes, and
# the open questions' greedy-vs-sampled comparison ES with sampled members'; thresholded_pass1 reads the main ES
# runs' thresholded checkpoints, and the update-magnitude plot those of ES, its null, its bf16 variant and GRPO
PROBES_READ = {"es", "es[sampled]"}
THRESHOLDED_READ = {"es", "es[null]", "es[bf16]", "grpo"}


@pytest.mark.parametrize("budget", ["full", "answer-paper-regime"])
def test_every_run_a_reader_reads_a_probe_or_thresholded_checkpoints_of_has_them_and_no_other(budget):
    runs = plan(BUDGETS[budget], Path("base"), Path("other"))
    defaults = TrainConfig()
    seen = set()
    for name, cfg in runs.items():
        if name.startswith("sweep-"):  # the N sweep's runs: its check reads their training rows only
            assert not cfg.get("probe", defaults.probe) and not cfg.get("threshold_keep", ()), name
            continue
        name_of = variant(cfg)
        seen.add(name_of)
        probed = cfg.get("probe", defaults.probe)
        thresholds = tuple(cfg.get("threshold_keep", defaults.threshold_keep))
        assert probed == (name_of in PROBES_READ), name
        assert (cfg.get("probe_every", defaults.probe_every) > 0) <= probed, name
        assert bool(thresholds) == (name_of in THRESHOLDED_READ), name
    assert PROBES_READ <= seen  # every reader's runs are in the plan
    if budget == "full":
        assert THRESHOLDED_READ <= seen


@pytest.mark.parametrize("budget", sorted(BUDGETS))
def test_every_run_every_budget_plans_is_a_valid_run_and_its_null_arm_and_controls_too(budget):
    """Each planned run's settings pass every rule a run's config.json is held to (llm/settings/), so no budget
    stops at its first run's start; the premise control's runs as well."""
    from escov.paper_checks.reproduce import premise_control

    b = BUDGETS[budget]
    runs = plan(b, Path("base"), Path("other"))
    for name, cfg in runs.items():
        TrainConfig.from_dict(cfg | {"out": f"o/{name}"}, source=f"{budget}: {name}")
    if b.premise_control:
        for name, cfg in premise_control.control_runs(Path("base"), b).items():
            TrainConfig.from_dict(cfg | {"out": f"o/{name}"}, source=f"{budget}: {name}")
