"""`python -m escov.paper_checks reproduce`: the paper's experiments in miniature, cached, then the report.

    out/base/                 the tiny base model (pretrained here unless --model is given)
    out/base-sweep/           a second tiny model of another size, for the population-size sweep
    out/theory.json           python -m escov.theory --json
    out/simulate/             python -m escov.simulate all (summary.json + plots)
    out/runs/NAME/            one run directory per planned run (llm.train; with curve.json when the
                              budget evaluates checkpoints along training, llm/curve.py)
    out/shared/               the base evaluation and step-0 probe, once per setting
                              (the runs of one seed from one base share them)
    out/lemma_grid.json       Lemma 1 over a grid of sigma and N on the base model
    out/premise-control/      the premise's positive control, when the budget has one (paper_checks/premise.py)
    out/report/               REPORT.md, report.json, plots, run_info.json (with each stage's time)

Each stage is skipped when its output is complete, so a rerun after an interruption only does what
is left (an interrupted training run resumes from its last checkpoint, an interrupted curve from its
last point). Every stage is a job of one pool (paper_checks/jobs.py) that runs `jobs` at a time,
each in its own process on one thread (`--jobs`, default: the machine's cores): the two bases, theory
and simulate side by side, then the training runs, with the rescaled runs (after the main ES runs
whose reward spread they use) and the Lemma 1 grid among them, so no core waits for a stage to end.

The pretrained bases are keyed by their preset's settings, the seed, the torch version and the source
of the code that builds them (base_cache_key). A base is taken from the first of: the repository's
shipped bases (paper_checks/bases/PRESET-KEY: the `paper` preset's, the base of the quick look and of the
answer, 1.1 MB, so a fresh clone does not pretrain for 9 minutes; `python -m escov.paper_checks bases` rebuilds
it after that code changes), the cache outside the output folder ($ESCOV_CACHE/bases, default
~/.cache/escov/bases), or pretraining (then stored in the cache). `python -m escov.llm pretrain --preset paper
--seed 0 --threads 1 --out DIR` makes the same model on a machine like the one that built it (pretraining is
deterministic; another CPU may round differently).

Budgets: `small` (the quick look: the answer's base, task and step sizes, ES and GRPO on 4 seeds x 64
prompts, sized to decide the large effects), `full` (every claim's runs, 4 seeds, longer), and `answer`: the
headline question only (ES vs GRPO at matched Pass@1, with the schedules and ES with sampled members
beside them), on the 3-number Countdown task whose base lies near the paper's bases, with checkpoints
evaluated along training at the paper's T = 0.6 (64 samples per prompt), placed by Pass@1 so that every
method has measured points across the compared range (ANSWER_CURVE, llm/curve.py); its seeds and test
prompts are sized in docs/answer-budget.md.
"""
from __future__ import annotations

import ast
import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from escov.llm.curve import MAX_POINTS
from escov.llm.rundir import read_json, read_steps
from escov.paper_checks.evidence import load_lemma_grid
from escov.paper_checks.jobs import Job, cpu_seconds, run_jobs, stage_times
from escov.paper_checks.lemma_grid import GridDesign
from escov.paper_checks.grpo_variants import VARIANTS_DIR, attach as attach_variants
from escov.paper_checks.premise import CONTROL_GRPO
from escov.paper_checks.report import build_report
from escov.paper_checks.summary import PUBLISHED, load_published
from escov.paper_checks.training_runs import complete, run_jobs_of, run_one
from escov.theory.budget import es_flops, grpo_flops
from escov.theory.matched import RESOLUTION

REPORT_DIR = "report"  # out/report/: REPORT.md, report.json, plots, run_info.json
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
ANSWER_GRID = GridDesign(sigmas=(1e-3, 2e-3, 4e-3, 2e-2), members=(2, 4, 16, 32), draws={2: 8, 4: 6, 16: 4, 32: 3},
                         prompts=8, samples=2, center_samples=8, sigmas_of={16: (1e-3, 4e-3, 2e-2), 32: (1e-3,)})
# the small budget's: a quick look on its own task; 23 CPU-s on the answer's base (39 s of wall time, loaded machine)
SMALL_GRID = GridDesign(sigmas=(1e-3, 4e-3, 2e-2), members=(2, 4), draws={2: 3, 4: 3}, prompts=4, samples=2,
                        center_samples=4)


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
    grid: GridDesign                 # the Lemma 1 grid on the base (paper_checks/lemma_grid.py)
    switch_fraction: float = 0.5
    task: str = "countdown"
    es_variants: tuple[str, ...] | None = None   # names of ES_VARIANTS to run (None: all of them)
    schedules: bool = True                        # the sequential schedules es-grpo and grpo-es
    curve: dict | None = None                     # llm.curve.evaluate_curve settings; None: no curve
    purpose: str = ""                             # what its report can decide, stated in the report's header
    base_settings: tuple[tuple[str, str], ...] = ()  # base_preset's fields replaced (`llm pretrain --set F=V`)
    premise_control: bool = False                 # GRPO to its plateau on validation prompts first (premise.py)


# ES members in one batched generate (the rewards and weights of member by member up to floating-point
# near-ties; 2-2.5x faster here);
# the bf16 variant perturbs the engine in place, member by member, as the paper's code does.
BATCHED = {"batched": True}
PAPER_REGIME = Budget(
    base_preset="paper", sweep_preset="narrow", seeds=ANSWER_SEEDS, task="countdown3",
    common={"steps": ANSWER_STEPS, "batch_size": ANSWER_BATCH, "max_completion_length": 32, "eval_problems": ANSWER_PROMPTS,
            "eval_samples": 32, "eval_temperature": 0.6, "heldout_problems": 32, "threshold_keep": (50.0,),
            "checkpoint_every": ANSWER_CHECKPOINT_EVERY, "checkpoint_dense": ANSWER_DENSE, "probe_every": ANSWER_STEPS // 4, "probe_prompts": 4,
            "probe_members": 8, "probe_samples": 8, "probe_center_samples": 16, "threads": 1, "population": BATCHED},
    es=ANSWER_ES, grpo=ANSWER_GRPO,
    sweep_populations=(), simulate_scale=0.5, grid=ANSWER_GRID,
    es_variants=("es-sampled",), schedules=True, curve=ANSWER_CURVE)

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
PREMISE_PURPOSE = ("This is the answer on a base where GRPO narrows coverage (the paper's premise): its positive "
                   "control, GRPO trained to its plateau on validation prompts, is run first, then ES and GRPO on "
                   f"{len(ANSWER_SEEDS)} seeds x {ANSWER_PROMPTS} test prompts for {PREMISE_STEPS} steps, with the "
                   "endpoints registered in docs/answer-budget.md before the run (the record 'premise').")
BUDGETS = {
    "full": Budget(
        base_preset="default", sweep_preset="narrow", seeds=SEEDS_FULL,
        common={"steps": 100, "batch_size": 16, "max_completion_length": 32, "eval_problems": 200, "eval_samples": 32,
                "heldout_problems": 200, "checkpoint_every": 25, "probe_every": 50, "threads": 1,
                "population": BATCHED},
        es={"population_size": 32, "sigma": 0.01, "alpha": 0.005},
        grpo={"num_generations": 8, "learning_rate": 1e-4},
        sweep_populations=(8, 16, 32, 64), simulate_scale=1.0,
        grid=ANSWER_GRID),
    "answer": replace(PAPER_REGIME, base_settings=PREMISE_BASE, grpo=ANSWER_GRPO | CONTROL_GRPO,
                      common=PAPER_REGIME.common | {"steps": PREMISE_STEPS, "probe_every": PREMISE_STEPS // 4},
                      es_variants=("es-small-sigma",), schedules=False, premise_control=True, purpose=PREMISE_PURPOSE),
    # the answer published before the premise could be tested: the base in the paper's Pass@1/Pass@32 regime,
    # where GRPO did not narrow (results/paper-regime/)
    "answer-paper-regime": PAPER_REGIME,
}
# the same answer from the diffuse base (Pass@1 about 0.12, Pass@32 about 0.90 at T = 0.6), reported beside it
BUDGETS["answer-diffuse"] = replace(PAPER_REGIME, base_preset="default",
                                    common=PAPER_REGIME.common | {"eval_problems": ANSWER_PROMPTS_DIFFUSE})

# The quick look (README's main job): the answer on its own base, task, temperature and step sizes, ES and GRPO
# only, at a design sized to decide the large effects within 5 minutes on an idle 2-core machine, from the measured
# variances of the answer (results/report.json) and of the quick look's first, 6-seed design (docs/paper-checks.md):
# - seeds: 4. GRPO's entropy fall read +23.8% with a per-seed sd of 7.0% at 6 seeds (the answer's runs: sd 16.4%
#   around 25.6%), so at 4 seeds its t interval (t = 3.18) keeps a lower end near +12%; GRPO's Pass@1 gain (+31.6
#   points at 6 seeds, 96% of its variance from prompts) keeps a lower end near +20; the drift ratio (sd 0.024 of
#   GRPO's log drift) stays below the paper's range / 2 = 20.35x from 4 seeds. Each seed costs two runs (~60 CPU-s each);
# - prompts: GRPO's Pass@1 gain (+32 points, its variance 96% prompts at 256) keeps a lower end above +20 points
#   at 64 prompts; the matched Pass@32 difference detects about 3 points at 4 x 64 (the answer: 1.4 at 8 x 256);
# - steps: the answer's 40, because the drift ratio and the entropy fall change with the number of steps;
# - curves: 32 samples per prompt instead of 64 (the curve is about half of a run's cost), so the no-correct share
#   is 1 - Pass@32 there and matched_no_correct is not decided; 4 evenly spread checkpoints before refinement
#   (the answer: 8): refinement still measures every segment whose Pass@1 jump exceeds the resolution, so the
#   matched reading keeps its support where it compares (theory.matched);
# - simulate at a tenth of its scale; the Lemma 1 grid SMALL_GRID; no held-out task, thresholded checkpoints or
#   Lemma 1 probe (what they decide needs the answer's design or the full budget's runs).
QUICK_SEEDS = tuple(range(4))
QUICK_PROMPTS = 64
QUICK_CURVE = ANSWER_CURVE | {"samples": 32, "points": 4}
QUICK_PURPOSE = ("This is the quick look: the answer's base, task (3-number Countdown), temperature (0.6) and step sizes "
                 f"for ES and GRPO, on {len(QUICK_SEEDS)} seeds x {QUICK_PROMPTS} test prompts instead of the answer's "
                 f"{len(ANSWER_SEEDS)} x {ANSWER_PROMPTS}, sized so that the large effects are decided (GRPO's Pass@1 "
                 "gain, its entropy fall, the drift ratio); the table 'What would decide the rest' gives the design each "
                 "undecided part needs. The headline question, ES vs GRPO at matched Pass@1, is answered by the answer "
                 "budget: `python -m escov.paper_checks reproduce --budget answer` (docs/answer-budget.md).")
BUDGETS["small"] = replace(
    PAPER_REGIME, seeds=QUICK_SEEDS, es_variants=(), schedules=False, simulate_scale=0.1, curve=QUICK_CURVE,
    grid=SMALL_GRID, purpose=QUICK_PURPOSE,
    common=PAPER_REGIME.common | {"eval_problems": QUICK_PROMPTS, "heldout_task": "", "threshold_keep": (),
                                      "probe": False, "probe_every": 0})

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
ES_VARIANTS = {"es-sampled": {"member_temperature": 1.0, "member_samples": 1}, "es-nozscore": {"zscore": False},
               "es-twopoint": {"antithetic": True}, "es-null": {"null_control": True}, "es-bf16": {"inplace_bf16": True},
               "es-small-sigma": {"sigma": SMALL_SIGMA, "tag": "small-sigma"}}


def equal_update_budget(budget: Budget, population_size: int) -> int:
    """The `steps` (GRPO-step budget, FLOP-matched) at which ES with this population makes as many
    updates as the main ES runs: the paper's Table 6 compares N = 8 ... 64 after equal updates.
    One step of each costs what theory/budget.py says (the cost llm/schedules.py plans runs with)."""
    m = budget.es.get("member_samples", 1)
    grpo = grpo_flops(budget.grpo["num_generations"], budget.grpo.get("num_iterations", 1))
    main = es_flops(budget.es["population_size"], m)
    updates = budget.common["steps"] * grpo / main
    steps = updates * es_flops(population_size, m) / grpo
    if updates != int(updates) or steps != int(steps) or steps < 1:
        raise ValueError(f"population {population_size}: {updates:g} updates are not a whole GRPO-step budget")
    return int(steps)


def mean_reward_std(run_dir: Path) -> float:
    """Mean over the updating steps of a finished ES run of std(R) across members (es_reward_std)."""
    stds = [r["es_reward_std"] for r in read_steps(run_dir) if r.get("es_reward_std", 0) > 0]
    if not stds:
        raise ValueError(f"{run_dir}/metrics.jsonl: no ES step with reward spread (es_reward_std > 0)")
    return float(np.mean(stds))


def plan(budget: Budget, model: Path, sweep_model: Path | None, reward_std: dict[int, float] | None = None) -> dict[str, dict]:
    """Every run of a reproduction: run name -> TrainConfig as a dict (without `out`).

    reward_std: seed -> mean std(R) of that seed's main ES run; with it the plan also holds the
    rescaled centered variant of the seeds it names (center_scale = 1 / std, so its update has the z-scored norm on average)."""
    runs: dict[str, dict] = {}

    def add(name: str, algo: str, seed: int, model_dir: Path, es: dict | None = None, **extra) -> None:
        variant = name.rsplit("-s", 1)[0]
        skip = ({} if variant in THRESHOLDED else {"threshold_keep": ()}) | ({} if variant in PROBED else {"probe": False, "probe_every": 0})
        runs[name] = budget.common | {"algo": algo, "model": str(model_dir), "seed": seed, "task": budget.task,
                                      "es": budget.es | (es or {}), "grpo": budget.grpo} | skip | extra

    switch = max(1, int(budget.common["steps"] * budget.switch_fraction))
    for seed in budget.seeds:
        add(f"es-s{seed}", "es", seed, model)
        add(f"grpo-s{seed}", "grpo", seed, model)
    for seed in budget.seeds:
        if budget.schedules:
            add(f"es-grpo-s{seed}", "es-grpo", seed, model, switch_step=switch)
            add(f"grpo-es-s{seed}", "grpo-es", seed, model, switch_step=switch)
        for name, overrides in ES_VARIANTS.items():
            if budget.es_variants is not None and name not in budget.es_variants:
                continue
            extra = {"dtype": "bfloat16", "population": {"batched": False}} if name == "es-bf16" else {}
            add(f"{name}-s{seed}", "es", seed, model, overrides, **extra)
        if reward_std is not None and seed in reward_std and (budget.es_variants is None or "es-rescaled" in budget.es_variants):
            add(f"es-rescaled-s{seed}", "es", seed, model, {"zscore": False, "center_scale": 1.0 / reward_std[seed]})
    for n in budget.sweep_populations:
        for label, model_dir in (("base", model), ("other", sweep_model)):
            if model_dir is None:
                continue
            for seed in budget.seeds:
                if not (label == "base" and n == budget.es["population_size"]):  # those are the main ES runs
                    add(f"sweep-{label}-N{n}-s{seed}", "es", seed, model_dir, {"population_size": n},
                        **SWEEP_EVAL | {"steps": equal_update_budget(budget, n)})
    return runs


# The published report a budget's report is set beside (its summary's key figure, its table of what would decide the
# rest): the one measured from the same base. results/report.json is the answer's.
PUBLISHED_BY_BASE = {("paper", PREMISE_BASE): PUBLISHED, ("paper", ()): PUBLISHED.parent / "paper-regime" / "report.json",
                     ("default", ()): PUBLISHED.parent / "diffuse" / "report.json"}


def published_for(budget: Budget) -> Path:
    """The published report from the budget's base (PUBLISHED_BY_BASE; the answer's for any other base)."""
    return PUBLISHED_BY_BASE.get((budget.base_preset, budget.base_settings), PUBLISHED)


def planned_needs(budget: Budget) -> set[tuple[str, str]]:
    """What the budget's planned runs give the checks (real_checks.provided over every run of `plan`, with the
    rescaled variant the plan adds once the main ES runs exist, and TrainConfig's defaults for what the budget
    leaves unset): the report says "not run in this budget" for a claim that needs anything else."""
    from escov.llm.config import TrainConfig
    from escov.paper_checks.real_checks import provided

    other = Path("base-sweep") if budget.sweep_populations else None
    # any reward spread other than 1 gives center_scale != 1, the tag of the rescaled variant (evidence.ES_TAGS)
    runs = plan(budget, Path("base"), other, {seed: 0.5 for seed in budget.seeds})
    needs: set[tuple[str, str]] = set()
    for name, cfg in runs.items():
        full = TrainConfig.from_dict(cfg | {"out": name}, source=f"budget run {name}").to_dict()
        needs |= provided(full, curve=budget.curve is not None, sweep=name.startswith("sweep-"))
    return needs


# ----------------------------------------------------------------------------- the base models, cached

CACHE_ENV = "ESCOV_CACHE"  # folder of built base models (default ~/.cache/escov); see base_cache_key
SHIPPED_BASES = Path(__file__).resolve().parent / "bases"  # the quick look's base, built once: PRESET-KEY/
# the bases a fresh clone takes from SHIPPED_BASES: the quick look's and the answer's (neither has a sweep base)
SHIPPED_RECIPES = tuple(dict.fromkeys((BUDGETS[name].base_preset, BUDGETS[name].base_settings) for name in ("small", "answer")))


def code_shape(source: str) -> str:
    """A module's code as its syntax tree, without docstrings, comments, layout or import statements: what
    a base depends on in that file. Reformatting, rewording a docstring or renaming the package an import
    comes from leaves it unchanged; any change to what the code does changes it."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            body[:] = [s for s in body if not isinstance(s, (ast.Import, ast.ImportFrom))
                       and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                and isinstance(s.value.value, str))]
    return ast.dump(tree)


def base_cache_key(preset: str, seed: int = 0, settings: tuple[tuple[str, str], ...] = ()) -> str:
    """What a pretrained base depends on: its preset's settings (with `settings`, the `--set FIELD=VALUE` pairs
    of `llm pretrain`, applied), the seed, the code that builds it (tokenizer, corpus, training loop; as
    `code_shape`) and the torch version; sha256, first 16 hex digits."""
    import hashlib
    from dataclasses import asdict

    from escov.llm import tinymodel
    from escov.llm.tasks import arithmetic, countdown

    parts = [json.dumps(asdict(tinymodel.preset_with(preset, dict(settings))), sort_keys=True), str(seed), torch.__version__]
    parts += [code_shape(Path(m.__file__).read_text(encoding="utf-8")) for m in (tinymodel, countdown, arithmetic)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def pretrain_command(preset: str, settings: tuple[tuple[str, str], ...] = (), out: str = "DIR") -> str:
    """The command line that pretrains this base (one thread, seed 0: the shipped and cached bases' recipe)."""
    sets = "".join(f" --set {name}={value}" for name, value in settings)
    return f"python -m escov.llm pretrain --preset {preset}{sets} --seed 0 --threads 1 --out {out}"


def shipped_base_dir(preset: str, settings: tuple[tuple[str, str], ...] = ()) -> Path:
    """Where the base for the current code and torch ships (SHIPPED_BASES/PRESET-KEY), if it does."""
    return SHIPPED_BASES / f"{preset}-{base_cache_key(preset, settings=settings)}"


def base_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "escov") / "bases"


def _pretrain(out_dir: Path, preset: str, progress: bool, settings: tuple[tuple[str, str], ...] = ()) -> Path:
    """out_dir <- the base of the preset with `settings` applied: copied from the shipped bases or the cache when
    built before with the same settings (base_cache_key), else pretrained (`pretrain_command` makes the same
    model) and stored in the cache."""
    import shutil

    if (out_dir / "config.json").exists():
        return out_dir
    shipped = shipped_base_dir(preset, settings)
    cached = base_cache_dir() / shipped.name
    if (shipped / "config.json").exists():
        source = shipped
    else:
        _build_base(cached, preset, progress, settings)
        source = cached
    shutil.copytree(source, out_dir, dirs_exist_ok=True, ignore=shutil.ignore_patterns(SHIPPED_RECORD))
    print(f"base {preset}: {'the shipped' if source == shipped else 'the cached'} {source}", flush=True)
    return out_dir


def _build_base(target: Path, preset: str, progress: bool, settings: tuple[tuple[str, str], ...] = ()) -> None:
    """Pretrain the base (seed 0, one thread) into target, unless it is there; built in a side folder and
    renamed, so a half-built base is never taken for a built one."""
    import shutil

    from escov.llm.tinymodel import pretrain
    if (target / "config.json").exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    building = target.with_name(f"{target.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    torch.set_num_threads(1)
    pretrain(building, preset=preset, seed=0, progress=progress, overrides=dict(settings))
    try:
        building.rename(target)
    except OSError:  # another reproduction stored it first: the same model
        shutil.rmtree(building, ignore_errors=True)


SHIPPED_RECORD = "shipped.json"  # beside a shipped base: its preset, settings, key, torch version and command


def ship_bases(progress: bool = True) -> list[Path]:
    """Build the shipped bases (SHIPPED_RECIPES) for the current code and torch, copied from the cache when built
    there before with the same key, and remove every other folder of SHIPPED_BASES (stale keys, bases no longer
    shipped): what `python -m escov.paper_checks bases` runs after the code that builds a base has changed."""
    import shutil

    kept = []
    for preset, settings in SHIPPED_RECIPES:
        target = shipped_base_dir(preset, settings)
        cached = base_cache_dir() / target.name
        if not (target / "config.json").exists() and (cached / "config.json").exists():
            shutil.copytree(cached, target, dirs_exist_ok=True)
        _build_base(target, preset, progress, settings)
        (target / "loss.png").unlink(missing_ok=True)  # kept small: pretrain.json holds the loss curve
        (target / SHIPPED_RECORD).write_text(json.dumps(
            {"preset": preset, "settings": dict(settings), "key": target.name, "torch": torch.__version__,
             "command": pretrain_command(preset, settings)}, indent=1) + "\n")
        kept.append(target)
    for stale in SHIPPED_BASES.iterdir():
        if stale.is_dir() and stale not in kept:
            shutil.rmtree(stale)
    return kept


def _theory(path: Path, progress: bool) -> None:
    from escov.theory.checks import run_checks
    path.write_text(json.dumps(run_checks(progress=progress), default=float))


def _simulate(out_dir: Path, scale: float, progress: bool) -> None:
    from escov.simulate.cli import main as simulate_main
    simulate_main(["all", "--out", str(out_dir), "--scale", str(scale)] + ([] if progress else ["--no-progress"]))


def grid_settings(budget: Budget) -> dict:
    """The task, sampling temperature and completion length the budget's runs are evaluated with, for the Lemma 1
    grid that sits beside them: the task built from the budget's settings by llm.config.TrainConfig.make_task
    (as every run builds its own), the evaluation temperature and the completion length."""
    from escov.llm.config import TrainConfig

    cfg = TrainConfig.from_dict(budget.common | {"task": budget.task, "algo": "es", "es": budget.es, "grpo": budget.grpo},
                                source="budget task settings")
    return {"task": cfg.make_task(), "task_name": cfg.task, "temperature": cfg.eval_temperature,
            "max_new_tokens": cfg.max_completion_length}


def _lemma_grid(path: Path, base: Path, budget: Budget, progress: bool) -> None:
    from escov.paper_checks.lemma_grid import measure_grid
    torch.set_num_threads(budget.common["threads"])
    path.write_text(json.dumps(measure_grid(base, budget.grid, progress=progress, **grid_settings(budget))))


PREMISE_DIR = "premise-control"  # out/premise-control/: the premise's positive control (paper_checks/premise.py)


def _premise_control(base: Path, out: Path, budget: Budget) -> None:
    """The premise's positive control on the base with the budget's settings, its runs one after another in this
    worker (one thread)."""
    from escov.paper_checks.premise import run_control

    torch.set_num_threads(1)
    run_control(base, out, budget, jobs=1, log=lambda msg: None)


def reproduction_jobs(budget: Budget, out: Path, model: Path | None, progress: bool) -> list[Job]:
    """Every stage not yet complete, as jobs for one pool: the bases, theory, simulate, the training
    runs, the rescaled runs (after the main ES runs they are scaled by) and the Lemma 1 grid (after
    the base). Listed longest first where several are ready, so the workers stay busy to the end."""
    jobs: list[Job] = []
    shared = out / "shared"  # step-0 measurements of runs from the same base (llm.train.train's `shared`)
    base = Path(model) if model is not None else out / "base"
    other = None if model is not None or not budget.sweep_populations else out / "base-sweep"
    wait_base: tuple[str, ...] = ()
    if model is None:
        jobs.append(Job("pretrain base", "pretrain",
                        lambda: (_pretrain, (base, budget.base_preset, progress, budget.base_settings))))
        wait_base = ("pretrain base",)
    wait_other: tuple[str, ...] = ()  # the sweep's runs on the other base wait for that base only
    if other is not None:
        jobs.append(Job("pretrain sweep base", "pretrain", lambda: (_pretrain, (other, budget.sweep_preset, progress))))
        wait_other = ("pretrain sweep base",)
    if not (out / "theory.json").exists():
        jobs.append(Job("theory", "theory", lambda: (_theory, (out / "theory.json", progress))))
    if not (out / "simulate" / "summary.json").exists():
        jobs.append(Job("simulate", "simulate",
                        lambda: (_simulate, (out / "simulate", budget.simulate_scale, progress))))
    runs = plan(budget, base, other)
    rescaled = budget.es_variants is None or "es-rescaled" in budget.es_variants
    main_es = [f"es-s{seed}" for seed in budget.seeds]
    first = main_es if rescaled else []  # the rescaled runs wait for these: they go first
    jobs += run_jobs_of({n: runs[n] for n in first}, out / "runs", budget.curve, after=wait_base, shared=shared)
    if rescaled:
        def rescaled_run(seed: int) -> tuple:
            name = f"es-rescaled-s{seed}"
            cfg = plan(budget, base, other, {seed: mean_reward_std(out / "runs" / f"es-s{seed}")})[name]
            return run_one, (name, cfg, out / "runs" / name, budget.curve, shared)
        for seed in budget.seeds:
            name = f"es-rescaled-s{seed}"
            if not complete(out / "runs" / name, budget.curve):
                jobs.append(Job(name, "rescaled runs", lambda seed=seed: rescaled_run(seed), after=(f"es-s{seed}",)))
    control = out / PREMISE_DIR
    if budget.premise_control and not (control / "control.json").exists():
        jobs.append(Job("premise control", "premise control", lambda: (_premise_control, (base, control, budget)),
                        after=wait_base))
    grid_path = out / "lemma_grid.json"
    if not grid_path.exists():
        jobs.append(Job("Lemma 1 grid", "Lemma 1 grid", lambda: (_lemma_grid, (grid_path, base, budget, progress)),
                        after=wait_base))
    rest = {n: c for n, c in runs.items() if n not in first and "sweep-other" not in n}
    # longest first: the runs that evaluate their members one by one (es-bf16) take about 3x a batched run
    rest = dict(sorted(rest.items(), key=lambda item: item[1].get("population", {}).get("batched", True)))
    jobs += run_jobs_of(rest, out / "runs", budget.curve, after=wait_base, shared=shared)
    jobs += run_jobs_of({n: c for n, c in runs.items() if "sweep-other" in n}, out / "runs", budget.curve, after=wait_other, shared=shared)
    return jobs


def reproduce(budget_name: str, out, *, model: Path | None = None, progress: bool = True, jobs: int | None = None,
              command: str | None = None) -> dict:
    """Run (or continue) a reproduction into out; command: the command line, stated in run_info.json
    with the time of every stage."""
    if budget_name not in BUDGETS:
        raise ValueError(f"budget must be one of {sorted(BUDGETS)}, got {budget_name!r}")
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    budget, out = BUDGETS[budget_name], Path(out)
    if model is not None and not (Path(model) / "config.json").exists():
        raise ValueError(f"--model {model}: not a model directory (no config.json)")
    out.mkdir(parents=True, exist_ok=True)
    start, commit = time.perf_counter(), git_commit()
    log = lambda msg: print(f"[{time.perf_counter() - start:7.1f} s] {msg}", flush=True)

    torch.set_num_threads(budget.common["threads"])
    todo = reproduction_jobs(budget, out, model, progress)
    log(f"{len(todo)} jobs to do (bases, theory, simulate, training runs, Lemma 1 grid), {jobs} at a time")
    times = run_jobs(todo, jobs, log)
    log("report")
    t_report, cpu_report = time.perf_counter(), cpu_seconds()
    report = build_report(sorted((out / "runs").iterdir()), out / REPORT_DIR, out / "theory.json",
                          out / "simulate" / "summary.json", load_lemma_grid(out / "lemma_grid.json"), budget.purpose,
                          published=load_published(published_for(budget)), planned=planned_needs(budget),
                          premise_control=read_json(out / PREMISE_DIR / "control.json") if budget.premise_control else None)
    if (out / VARIANTS_DIR / "grpo_variants.json").is_file():  # the arm run after the answer (grpo_variants.py)
        attach_variants(out / REPORT_DIR, read_json(out / VARIANTS_DIR / "grpo_variants.json"))
    stages = stage_times(times) | {"report": {"span_seconds": round(time.perf_counter() - t_report, 1),
                                              "job_seconds": round(time.perf_counter() - t_report, 1),
                                              "cpu_seconds": round(cpu_seconds() - cpu_report, 1), "jobs": 1}}
    seconds = time.perf_counter() - start
    write_run_info(out / REPORT_DIR / "run_info.json", budget_name, jobs, seconds, command, commit, stages)
    log(f"stages: {stage_line(stages)}")
    log(f"done: {out / REPORT_DIR / 'REPORT.md'}")
    return report


def stage_line(stages: dict[str, dict]) -> str:
    """One line: each stage's span in minutes (its CPU minutes in brackets), and the CPU total."""
    parts = [f"{name} {s['span_seconds'] / 60:.1f} ({s['cpu_seconds'] / 60:.1f} CPU)" for name, s in stages.items()]
    total = sum(s["cpu_seconds"] for s in stages.values()) / 60
    return ", ".join(parts) + f"; CPU total {total:.1f} min" if parts else "nothing to do"


def git_commit() -> tuple[str, bool]:
    """(HEAD commit, whether tracked files differ from it) of the checkout this code runs from."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=here).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                    text=True, cwd=here).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)", False
    return commit, dirty


def write_run_info(path: Path, budget_name: str, jobs: int, seconds: float, command: str | None,
                   commit: tuple[str, bool], stages: dict[str, dict] | None = None) -> None:
    """What a published report states about its run: command, the commit it started on, wall time,
    machine. The wall time is this invocation's (a resumed reproduction counts only what it did itself)."""
    import platform

    info = {"command": command or f"paper_checks.reproduce.reproduce({budget_name!r}, ...)", "budget": budget_name,
            "jobs": jobs, "commit": commit[0], "uncommitted_changes": commit[1],
            "wall_seconds": round(seconds, 1), "stages": stages or {},
            "finished_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                        "cpu_count": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__}}
    path.write_text(json.dumps(info, indent=1), encoding="utf-8")
