"""The budgets of a reproduction (`python -m escov.paper_checks reproduce --budget NAME`): each a Budget of sizes
and settings shared by its runs, the ES variants its runs choose from, and the published report each is set beside.

Budgets: `small` (the quick look: the answer's base, task and step sizes, ES and GRPO on 4 seeds x 64
prompts, sized to decide the large effects), `full` (every claim's runs, 4 seeds, longer), and `answer`: the
headline question only (ES vs GRPO at matched Pass@1, with the schedules and ES with sampled members
beside them), on the 3-number Countdown task whose base lies near the paper's bases, with checkpoints
evaluated along training at the paper's T = 0.6 (64 samples per prompt), placed by Pass@1 so that every
method has measured points across the compared range (ANSWER_CURVE, llm/curve.py); its seeds and test
prompts are sized in docs/answer-budget.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from escov.llm.curve import MAX_POINTS
from escov.paper_checks.reproduce.answer_arms import ANSWER_ARMS, AnswerArms
from escov.paper_checks.reproduce.lemma_as_stated_measurement import ANSWER_LEMMA_AS_STATED, StatedDesign
from escov.paper_checks.reproduce.lemma_grid_measurement import GridDesign
from escov.paper_checks.reproduce.premise_control import CONTROL_GRPO, SELECTION_EVAL
from escov.paper_checks.summary import PUBLISHED
from escov.theory.matched import RESOLUTION

SEEDS_FULL = (0, 1, 2, 3)
# the answer budget (docs/answer-budget.md: measured cost per run, and the power it gives)
ANSWER_SEEDS = tuple(range(8))
ANSWER_STEPS = 40
# test prompts per base, each sized from its own measured variance components (docs/answer-budget.md): from
# the paper-regime base 98% of the matched Pass@32 difference's variance is prompts, and 64 prompts detect only
# 3.3 points (2 needs about 256, more than countdown3's test split now holds: about 152 since the held-out tenth
# was halved into validation and test, so 128, drawn in about 20 s); from the diffuse base 64 prompts already
# detect 1.7 points
ANSWER_PROMPTS, ANSWER_PROMPTS_DIFFUSE = 128, 64
ANSWER_BATCH = 16
# the step sizes chosen by `python -m escov.paper_checks sweep` on the paper-regime base (training-split curves; its
# record: results/step-sweep/): of the pairs meeting the rule, the widest common Pass@1 range (0.34-0.69), then
# the most curve points in it
ANSWER_ES = {"population_size": 32, "sigma": 0.02, "alpha": 0.01}
ANSWER_GRPO = {"num_generations": 8, "learning_rate": 3e-5}
# Curves measured where they are compared (theory.matched's support rule): a checkpoint after each of the
# first ANSWER_DENSE steps, where GRPO's Pass@1 climbs (the first answer run: 13 to 30 points in 5 steps), then
# every ANSWER_CHECKPOINT_EVERY; llm curve refines any segment whose Pass@1 jump exceeds the resolution. 64
# samples per prompt, so the no-correct share is measured beside Pass@32 rather than being 1 - Pass@32.
# Disk: 25 checkpoints per run (about 1 MB of weights each, 3 MB with GRPO's optimizer state).
# Every 2 after that: with every 5 (the first run from the paper-regime base) GRPO and ES moved more than the
# resolution between checkpoints above Pass@1 0.45, so 3 of the 5 compared levels had no support.
ANSWER_DENSE, ANSWER_CHECKPOINT_EVERY = 10, 2
ANSWER_CURVE = {"points": 8, "samples": 64, "temperature": 0.6, "resolution": RESOLUTION, "max_points": MAX_POINTS}


# The Lemma 1 grid of each budget, on the runs' own task, temperature and completion length (grid_settings).
# The answer's: sized in docs/answer-budget.md ("The Lemma 1 grid") from a pilot on the answer's base (countdown3,
# T = 0.6): each draw an antithetic pair of populations measured against its own members' prediction, so a row's
# spread is the estimators' (JSpol by the chain rule, Q from 8 center completions per prompt), not the noise's.
# Measured: 5.5 CPU-minutes on one thread; 3 in-regime rows narrower than 0.1 (docs/answer-budget.md).
ANSWER_GRID = GridDesign(
    sigmas=(1e-3, 2e-3, 4e-3, 2e-2),
    members=(2, 4, 16, 32),
    draws={2: 8, 4: 6, 16: 4, 32: 3},
    prompts=8,
    samples=2,
    center_samples=8,
    sigmas_of={16: (1e-3, 4e-3, 2e-2), 32: (1e-3,)},
)
# the small budget's: a quick look on its own task; 23 CPU-s on the answer's base (39 s of wall time, loaded machine)
SMALL_GRID = GridDesign(
    sigmas=(1e-3, 4e-3, 2e-2), members=(2, 4), draws={2: 3, 4: 3}, prompts=4, samples=2, center_samples=4
)


@dataclass(frozen=True)
class Budget:
    """Sizes of one reproduction; `common` holds TrainConfig settings shared by every run."""

    base_preset: str
    sweep_preset: str
    seeds: tuple[int, ...]
    common: dict
    es: dict
    grpo: dict
    sweep_populations: tuple[int, ...]
    simulate_scale: float
    grid: GridDesign  # the Lemma 1 grid on the base (reproduce/lemma_grid_measurement.py)
    switch_fraction: float = 0.5
    task: str = "countdown"
    es_variants: tuple[str, ...] | None = None  # names of ES_VARIANTS to run (None: all of them)
    schedules: bool = True  # the sequential schedules es-grpo and grpo-es
    curve: dict | None = None  # llm.curve.evaluate_curve settings; None: no curve
    purpose: str = ""  # what its report can decide, stated in the report's header
    base_settings: tuple[tuple[str, str], ...] = ()  # base_preset's fields replaced (`llm pretrain --set F=V`)
    premise_control: bool = False  # GRPO to its plateau on validation prompts first (premise.py)
    es_updates: int | None = None  # ES runs' length in ES updates (plan.py: as a budget of GRPO steps); None: steps
    es_common: dict | None = None  # common settings replaced in every ES run (its checkpoints, probe)
    es_variant_updates: tuple[tuple[str, int], ...] = ()  # (ES variant, its length in updates) where not es_updates
    arms: AnswerArms | None = None  # endpoints, the ES null arm, base draws (reproduce/answer_arms.py)
    lemma_as_stated: StatedDesign | None = None  # Lemma 1 as stated on the base (lemma_as_stated_measurement.py)


# ES members in one batched generate (the rewards and weights of member by member up to floating-point
# near-ties; 2-2.5x faster here);
# the bf16 variant perturbs the engine in place, member by member, as the paper's code does.
BATCHED = {"batched": True}
PAPER_REGIME = Budget(
    base_preset="paper",
    sweep_preset="narrow",
    seeds=ANSWER_SEEDS,
    task="countdown3",
    common={
        "steps": ANSWER_STEPS,
        "batch_size": ANSWER_BATCH,
        "max_completion_length": 32,
        "eval_problems": ANSWER_PROMPTS,
        "eval_samples": 32,
        "eval_temperature": 0.6,
        "heldout_problems": 32,
        "threshold_keep": (50.0,),
        "checkpoint_every": ANSWER_CHECKPOINT_EVERY,
        "checkpoint_dense": ANSWER_DENSE,
        "probe_every": ANSWER_STEPS // 4,
        "probe_prompts": 4,
        "probe_members": 8,
        "probe_samples": 8,
        "probe_center_samples": 16,
        "threads": 1,
        "population": BATCHED,
    },
    es=ANSWER_ES,
    grpo=ANSWER_GRPO,
    sweep_populations=(),
    simulate_scale=0.5,
    grid=ANSWER_GRID,
    es_variants=("es-sampled",),
    schedules=True,
    curve=ANSWER_CURVE,
)

# The answer (docs/answer-budget.md, "The premise"): ES against GRPO on a base where GRPO narrows coverage, the
# premise's positive control run first on validation prompts. Everything not named here is the paper-regime
# budget's (its base preset, task, prompts, curves, ES step sizes, Lemma 1 grid):
# - the base keeps each instance's canonical solution three times in four and other orders or trees otherwise, and
#   a worked solution that divides with probability 0.02 (on validation prompts GRPO lowered Pass@32 from it by 6.8
#   points [1.7, 11.8]; from 0.05 and 0.15 it did not);
# - GRPO at the control's step (lr 1e-4) for PREMISE_STEPS steps: in the control its Pass@1 stopped rising by step
#   100 (0.64-0.66 from step 50 on) and its Pass@32 stood 5-8 points below the base's from step 100; 150 rather than
#   the control's 300 because ES (about 1.5 CPU-s a step here) could not run 300 steps on 8 seeds twice within the
#   answer's 2 hours;
# - ES at the paper-regime step sizes, and ES at SMALL_SIGMA (es-small-sigma), inside Lemma 1's regime;
# - no schedules or ES with sampled members (their claims: results/paper-regime/).
PREMISE_BASE = (("solution_form", "dominant"), ("rare_keep", "0.02"))
PREMISE_STEPS = 150
# The answer's ES (issue 49): the ES pilot's choice (paper_checks/reproduce/es_pilot.py, on validation prompts: its
# chosen setting and cap), filled in from its record before the run; GRPO stays at PREMISE_STEPS, its plateau. The
# pilot on the answer's block (results/es-pilot/): no setting reached GRPO's plateau (both lost Pass@1 from 0.60 to
# 0.43-0.50 in 450 updates), so by its rule `es` (the highest mean last Pass@1) for PILOT_UPDATES, outcome (f).
ANSWER_ES_SETTINGS = {"population_size": 32, "sigma": 0.02, "alpha": 0.01}
ANSWER_ES_UPDATES = 450
SMALL_SIGMA_UPDATES = 150  # es-small-sigma's length in the published answer (results/)
# Curves of the answer: a point at least every ANSWER_EVERY steps of each method, every checkpoint measured (a
# layout fixed in advance, no refinement). GRPO checkpoints after each of its first 10 steps and every 5 after them
# (39 points in 150 steps): in the control its Pass@1 rose 0.25 -> 0.64 by step 50, so its points are densest where
# it climbs; ES every 10 updates (46 points at 450): it climbs about 0.2 Pass@1 points an update on this base, about
# 2 points in 10, within the matched reading's 6-point resolution. At the highest common level, the registered
# reading, both move slowest, so it is read across gaps of a few points (docs/answer-budget.md). Refinement on
# checkpoints every 2 (the paper-regime answer's layout) would keep 225 checkpoints per ES run on disk for it.
# ANSWER_CHECKPOINTS: the most checkpoints of either method (GRPO's dense steps 5 and 10 are also multiples of 5).
ANSWER_EVERY, ANSWER_GRPO_EVERY = 10, 5
ANSWER_CHECKPOINTS = max(ANSWER_ES_UPDATES // ANSWER_EVERY, ANSWER_DENSE + PREMISE_STEPS // ANSWER_GRPO_EVERY - 2)
ANSWER_LONG_CURVE = ANSWER_CURVE | {"points": ANSWER_CHECKPOINTS, "max_points": ANSWER_CHECKPOINTS + 1}
PREMISE_PURPOSE = (
    "This is the answer on a base where GRPO narrows coverage (the paper's premise): its positive "
    "control, GRPO trained to its plateau on validation prompts, is run first, then ES and GRPO on "
    f"{len(ANSWER_SEEDS)} seeds x {ANSWER_PROMPTS} test prompts, GRPO for {PREMISE_STEPS} steps and ES for "
    f"{ANSWER_ES_UPDATES} updates, with the "
    "endpoints registered in docs/answer-budget.md before the run (the record 'premise')."
)
BUDGETS = {
    "full": Budget(
        base_preset="default",
        sweep_preset="narrow",
        seeds=SEEDS_FULL,
        common={
            "steps": 100,
            "batch_size": 16,
            "max_completion_length": 32,
            "eval_problems": 200,
            "eval_samples": 32,
            "heldout_problems": 200,
            "checkpoint_every": 25,
            "probe_every": 50,
            "threads": 1,
            "population": BATCHED,
        },
        es={"population_size": 32, "sigma": 0.01, "alpha": 0.005},
        grpo={"num_generations": 8, "learning_rate": 1e-4},
        sweep_populations=(8, 16, 32, 64),
        simulate_scale=1.0,
        grid=ANSWER_GRID,
    ),
    "answer": replace(
        PAPER_REGIME,
        base_settings=PREMISE_BASE,
        grpo=ANSWER_GRPO | CONTROL_GRPO,
        es=ANSWER_ES_SETTINGS,
        # eval_solutions 2: the test (and the control's validation) prompts are the instances with exactly 2
        # distinct solutions, a block no earlier answer, quick look, sweep, pilot, base choice or control read (they
        # all drew at least 3 solutions; the 128 test prompts of that draw were read before: docs/answer-budget.md,
        # "Prompts"); countdown3 holds 368 of them in test, so ANSWER_PROMPTS stays 128
        common=PAPER_REGIME.common
        | {
            "steps": PREMISE_STEPS,
            "probe_every": PREMISE_STEPS // 4,
            "checkpoint_every": ANSWER_GRPO_EVERY,
            "checkpoint_dense": ANSWER_DENSE,
            "eval_solutions": 2,
            # past the block's first test prompts, which every run that chose a setting (the premise controls, the
            # ES pilot) evaluated at its end (premise_control.SELECTION_EVAL)
            "eval_skip": SELECTION_EVAL["eval_problems"],
            # the training pool from the same block: trained on the task's own draw (at least 3 solutions), GRPO
            # lowered Pass@1 on the exactly-2 validation prompts from 0.60 to 0.43-0.48 in 300 steps (a control on
            # them, 2026-12-06): the prompts measured must be the kind trained on
            "train_solutions": 2,
        },
        es_variants=("es-small-sigma",),
        schedules=False,
        premise_control=True,
        purpose=PREMISE_PURPOSE,
        curve=ANSWER_LONG_CURVE,
        es_updates=ANSWER_ES_UPDATES,
        es_common={"checkpoint_every": ANSWER_EVERY, "checkpoint_dense": 0, "probe_every": ANSWER_ES_UPDATES // 4},
        # es-small-sigma at its published length: its question (does ES learn inside Lemma 1's regime) was
        # answered there, and 300 more updates of it would cost 3,432 CPU-s (docs/answer-budget.md)
        es_variant_updates=(("es-small-sigma", SMALL_SIGMA_UPDATES),),
        arms=ANSWER_ARMS,
        lemma_as_stated=ANSWER_LEMMA_AS_STATED,
    ),
    # the answer published before the premise could be tested: the base in the paper's Pass@1/Pass@32 regime,
    # where GRPO did not narrow (results/paper-regime/)
    "answer-paper-regime": PAPER_REGIME,
}
# the same answer from the diffuse base (Pass@1 about 0.12, Pass@32 about 0.90 at T = 0.6), reported beside it
BUDGETS["answer-diffuse"] = replace(
    PAPER_REGIME, base_preset="default", common=PAPER_REGIME.common | {"eval_problems": ANSWER_PROMPTS_DIFFUSE}
)

# The quick look (README's main job): the published answer (results/) at a smaller design, so that its last screen
# tells the answer's story: on the answer's base (the premise's, shipped, so a fresh clone does not pretrain), task,
# temperature and step sizes (GRPO lr 1e-4; ES N 32, sigma 0.02, alpha 0.01: BUDGETS["answer"]'s, which it follows),
# ES and GRPO only, on the task's ordinary test prompts (no eval_solutions block: the answer's fresh prompts stay
# unread), sized to fit 5 minutes on an idle 2-core machine. Measured on the answer's base (a 100-step run of each
# on seed 0, 64 test prompts x 32 samples at T = 0.6; the machine loaded, so CPU seconds): GRPO cost 85 CPU-s and
# ES 101 (with the 40-step runs below: about 50 CPU-s of evaluations, curve and start-up whatever the length, then
# 0.4 (GRPO) and 0.5 (ES) CPU-s a step); GRPO's Pass@1 went 0.28 -> 0.55 by step 14 and 0.61 by step 36, where its
# Pass@32 had fallen from 0.80 to 0.73 (0.72 at step 100: the fall comes between steps 14 and 36, as in the control,
# Pass@1 0.64 by step 50 and Pass@32 5-8 points down by 100); ES's Pass@1 went to 0.45 by step 14, 0.50 by 36 and
# 0.54 by 100, its Pass@32 0.78-0.81 throughout.
# - steps: the answer-paper-regime's 40, past GRPO's fall (step 14 -> 36 above) and most of ES's climb; 30 would
#   stop inside the fall, 100 costs 1.4x;
# - seeds: 4 (t = 3.18 over seeds; 3 give 4.30, 2 give 12.7): GRPO's Pass@32 - base in the answer has a per-seed sd
#   of about 1.4 points (v_seeds, results/report.json), so 4 seeds add about 2.3 points to the interval's half
#   width, 3 seeds 3.6. Each seed costs two runs (49-73 CPU-s each at 40 steps, measured);
# - prompts: 64: GRPO's Pass@1 gain (+37 points in the answer) and ES's (+27) are decided with room; GRPO's Pass@32
#   fall (-6 points in the answer at 8 x 128, half width 3.6) cannot be decided here: this design measured it at
#   -3.91 [-10.77, +2.96] (per seed -7.8, 0.0, -6.2, -1.6 points), so the quick look shows its sign and size and
#   the answer (8 x 128, 150 steps) decides it. ES - GRPO at matched Pass@1 is likewise left to the answer;
# - curves: 32 samples per prompt instead of 64 (the curve is about half of a run's cost), so the no-correct share
#   is 1 - Pass@32 there and matched_no_correct is not decided; 4 evenly spread checkpoints before refinement
#   (the answer: more): refinement still measures every segment whose Pass@1 jump exceeds the resolution, so the
#   matched reading keeps its support where it compares (theory.matched);
# - simulate at a tenth of its scale; the Lemma 1 grid SMALL_GRID; no held-out task, thresholded checkpoints or
#   Lemma 1 probe (what they decide needs the answer's design or the full budget's runs).
# Measured (`reproduce --budget small --jobs 2`, on a 2-core machine loaded about 7-fold by other work): 8.6 CPU-min
# (the 8 runs 7.7, theory, simulate and the grid 0.8, the report 0.1) in 34.5 min of wall time; idle, at the wall
# time per CPU-minute of the previous design (7.6 CPU-min in 4 min 46 s), about 5 minutes (estimated, not measured).
QUICK_SEEDS = tuple(range(4))
QUICK_PROMPTS = 64
QUICK_STEPS = ANSWER_STEPS
QUICK_CURVE = ANSWER_CURVE | {"samples": 32, "points": 4}
QUICK_PURPOSE = (
    "This is the quick look: the published answer's base (where GRPO narrows coverage), task (3-number Countdown), "
    f"temperature (0.6) and step sizes for ES and GRPO, on {len(QUICK_SEEDS)} seeds x {QUICK_PROMPTS} test prompts "
    f"for {QUICK_STEPS} steps instead of the answer's {len(ANSWER_SEEDS)} x {ANSWER_PROMPTS} for {PREMISE_STEPS}, "
    "sized so that GRPO's Pass@1 gain and ES's are decided and GRPO's Pass@32 against the base is shown with its "
    "interval (the answer decides whether it narrows); its summary sets each figure beside the published answer's "
    "(results/). The table 'What would decide the rest' gives the design each undecided part needs. The headline "
    "question is answered by the answer budget: `python -m escov.paper_checks reproduce --budget answer` "
    "(docs/answer-budget.md)."
)
BUDGETS["small"] = replace(
    PAPER_REGIME,
    base_settings=BUDGETS["answer"].base_settings,
    es=BUDGETS["answer"].es,
    grpo=BUDGETS["answer"].grpo,
    seeds=QUICK_SEEDS,
    es_variants=(),
    schedules=False,
    simulate_scale=0.1,
    curve=QUICK_CURVE,
    grid=SMALL_GRID,
    purpose=QUICK_PURPOSE,
    common=PAPER_REGIME.common
    | {
        "steps": QUICK_STEPS,
        "eval_problems": QUICK_PROMPTS,
        "heldout_task": "",
        "threshold_keep": (),
        "probe": False,
        "probe_every": 0,
    },
)

# The answer on the counted tasks (issue 54; docs/answer-tasks.md, registered before their runs): the Countdown
# answer's protocol (its premise control on validation prompts first, GRPO at the control's step to PREMISE_STEPS, ES
# at the answer's settings for ANSWER_ES_UPDATES, curves at T = 0.6, the registered endpoints, Pass@k to 1024 at the
# endpoints) on a planted base of the task (llm/tinymodel_planted.py), chosen on validation prompts by
# reproduce/planted_bases.py's rule. What differs from the Countdown answer, and why:
# - the base: TASK_BASES, the planted recipe planted_bases.py chose (its record: results/tasks/planted_bases.json);
# - seeds 4 and test prompts 64 (the Countdown answer: 8 x 128): the three tasks' answers fit 5 hours on 2 cores only
#   so (docs/answer-tasks.md, "Cost"); the pooled answer gains its precision across tasks;
# - completions of at most 24 tokens (a 5 x 5 grid's path or a subset's list is shorter; measure_base's length);
# - the test prompts start after the first 8 of the task's draw (the control's runs evaluate those at their end);
# - no Lemma 1 probe or thresholded checkpoints (claims the Countdown answer reads), no ES null arm, base draws or
#   step-size control (the Countdown answer's arms: issue 49), no es-small-sigma; simulate at a tenth, SMALL_GRID;
# - ES's settings and length are the Countdown answer's (its pilot's choice), not piloted on these tasks: a task
#   where ES never reaches GRPO's plateau reads outcome (f), as the Countdown answer did.
TASK_BASES: dict[str, tuple[tuple[str, str], ...]] = {"grid_paths": (), "subset_sum": ()}
TASK_SEEDS = tuple(range(4))
TASK_PROMPTS = 64
TASK_COMPLETION = 24
TASK_ARMS = AnswerArms(null_seeds=(), draw_seeds=(), lr_control=None)
COUNTDOWN_ONLY = ("eval_solutions", "train_solutions")  # draws by Countdown's solution count (solution_blocks.py)


def task_answer(task: str) -> Budget:
    """The answer's budget on a counted task (the comment above)."""
    answer = BUDGETS["answer"]
    return replace(
        answer,
        base_preset=task,
        base_settings=TASK_BASES[task],
        task=task,
        seeds=TASK_SEEDS,
        common={k: v for k, v in answer.common.items() if k not in COUNTDOWN_ONLY}
        | {
            "eval_problems": TASK_PROMPTS,
            "eval_skip": SELECTION_EVAL["eval_problems"],
            "max_completion_length": TASK_COMPLETION,
            "threshold_keep": (),
            "probe": False,
            "probe_every": 0,
        },
        es_common=answer.es_common | {"probe_every": 0},
        es_variants=(),
        es_variant_updates=(),
        simulate_scale=0.1,
        grid=SMALL_GRID,
        arms=TASK_ARMS,
        lemma_as_stated=None,
        purpose=(
            f"This is the answer on the task {task}, whose solutions and planted strategies are enumerated exactly: "
            f"its positive control on validation prompts first, then ES and GRPO on {len(TASK_SEEDS)} seeds x "
            f"{TASK_PROMPTS} test prompts, GRPO for {PREMISE_STEPS} steps and ES for {ANSWER_ES_UPDATES} updates, "
            "with the endpoints registered in docs/answer-tasks.md before the run (the record 'premise')."
        ),
    )


for _task in TASK_BASES:
    BUDGETS[f"answer-{_task}"] = task_answer(_task)

# The sweep only needs the training reward: its runs evaluate little.
SWEEP_EVAL = {"eval_problems": 8, "heldout_task": "", "threshold_keep": ()}
# The runs whose magnitude-thresholded checkpoints a check or plot reads (thresholded_pass1: es; the
# update-magnitude plot: es, es-null, es-bf16, grpo); the others skip those evaluations.
THRESHOLDED = ("es", "es-null", "es-bf16", "grpo")
# The runs whose Lemma 1 probe a check or the open questions read (lemma1, lemma2: es; greedy vs sampled: es,
# es-sampled); the others are not probed (the probe is a population measurement at every probed step).
PROBED = ("es", "es-sampled")

# ES inside Lemma 1's small-perturbation regime (members' divergence s <= 0.05): the Lemma 1 grid on the
# paper-regime base measured s = 0.014 at sigma 2e-3 (4e-3: 0.046-0.049, the regime's edge; the runs' 2e-2: 3.7-4.1)
SMALL_SIGMA = 2e-3

# ES variants of the ablations and null controls: name -> ESConfig overrides. Every variant runs on
# every seed of the budget, like the main runs. z-scoring is ablated two ways: centered rewards at the
# same alpha (a ~1/std(R) smaller step), and centered at alpha rescaled to the z-scored update norm
# (es-rescaled, added once the main runs give their reward spread: see rescaled_variant).
ES_VARIANTS = {
    "es-sampled": {"member_temperature": 1.0, "member_samples": 1},
    "es-nozscore": {"zscore": False},
    "es-twopoint": {"antithetic": True},
    "es-null": {"null_control": True},
    "es-bf16": {"inplace_bf16": True},
    "es-small-sigma": {"sigma": SMALL_SIGMA, "tag": "small-sigma"},
}


# The published report a budget's report is set beside (its summary's key figure, its table of what would decide the
# rest): the one measured from the same base. results/report.json is the answer's.
PUBLISHED_BY_BASE = {
    ("paper", PREMISE_BASE): PUBLISHED,
    ("paper", ()): PUBLISHED.parent / "paper-regime" / "report.json",
    ("default", ()): PUBLISHED.parent / "diffuse" / "report.json",
} | {(task, TASK_BASES[task]): PUBLISHED.parent / "tasks" / task / "report.json" for task in TASK_BASES}


def published_for(budget: Budget) -> Path:
    """The published report from the budget's base (PUBLISHED_BY_BASE; the answer's for any other base)."""
    return PUBLISHED_BY_BASE.get((budget.base_preset, budget.base_settings), PUBLISHED)
