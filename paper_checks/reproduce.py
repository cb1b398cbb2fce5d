"""`python -m paper_checks reproduce`: the paper's experiments in miniature, cached, then the report.

    out/base/                 the tiny base model (pretrained here unless --model is given)
    out/base-sweep/           a second tiny model of another size, for the population-size sweep
    out/theory.json           python -m theory --json
    out/simulate/             python -m simulate all (summary.json + plots)
    out/runs/NAME/            one run directory per planned run (llm.train; with curve.json when the
                              budget evaluates checkpoints along training, llm/curve.py)
    out/lemma_grid.json       Lemma 1 over a grid of sigma and N on the base model
    out/report/               REPORT.md, report.json, plots

Each stage is skipped when its output is complete, so a rerun after an interruption only does what
is left (an interrupted training run resumes from its last checkpoint, an interrupted curve from its
last point). Training runs are independent of each other and run `jobs` at a time, each in its own
process on one thread (`--jobs`, default: the machine's cores).

Budgets: `small` (a quick look: every claim, 2 seeds), `full` (4 seeds, longer), and `answer`: the
headline question only (ES vs GRPO at matched Pass@1, with the schedules and ES with sampled members
beside them), on the 3-number Countdown task whose base lies near the paper's bases, with checkpoints
evaluated along training at the paper's T = 0.6 (64 samples per prompt), placed by Pass@1 so that every
method has measured points across the compared range (ANSWER_CURVE, llm/curve.py); its seeds and test
prompts are sized in docs/answer-budget.md.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from llm.curve import MAX_POINTS
from llm.rundir import read_steps
from paper_checks.evidence import load_lemma_grid
from paper_checks.report import build_report
from theory.budget import es_flops, grpo_flops
from theory.matched import RESOLUTION

REPORT_DIR = "report"  # out/report/: REPORT.md, report.json, plots, run_info.json
SEEDS_SMALL, SEEDS_FULL = (0, 1), (0, 1, 2, 3)
# the answer budget (docs/answer-budget.md: measured cost per run, and the power it gives)
ANSWER_SEEDS = tuple(range(8))
ANSWER_STEPS = 40
ANSWER_PROMPTS = 64
ANSWER_BATCH = 16
ANSWER_ES = {"population_size": 32, "sigma": 0.01, "alpha": 0.005}
# Curves measured where they are compared (theory.matched's support rule): a checkpoint after each of the
# first ANSWER_DENSE steps, where GRPO's Pass@1 climbs (the first answer run: 13 to 30 points in 5 steps), then
# every ANSWER_CHECKPOINT_EVERY; llm curve refines any segment whose Pass@1 jump exceeds the resolution. 64
# samples per prompt, so the no-correct share is measured beside Pass@32 rather than being 1 - Pass@32.
# Disk: 16 checkpoints per run (about 1 MB of weights each, 3 MB with GRPO's optimizer state).
ANSWER_DENSE, ANSWER_CHECKPOINT_EVERY = 10, 5
ANSWER_CURVE = {"points": 8, "samples": 64, "temperature": 0.6, "resolution": RESOLUTION, "max_points": MAX_POINTS}


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
    grid_sigmas: tuple[float, ...]
    grid_members: tuple[int, ...]
    grid_draws: int = 3              # independent populations per (sigma, N) of the Lemma 1 grid
    switch_fraction: float = 0.5
    task: str = "countdown"
    es_variants: tuple[str, ...] | None = None   # names of ES_VARIANTS to run (None: all of them)
    schedules: bool = True                        # the sequential schedules es-grpo and grpo-es
    curve: dict | None = None                     # llm.curve.evaluate_curve settings; None: no curve
    extra: dict = field(default_factory=dict)


# ES members in one batched generate (the rewards and weights of member by member up to floating-point
# near-ties; 2-2.5x faster here);
# the bf16 variant perturbs the engine in place, member by member, as the paper's code does.
BATCHED = {"batched": True}
BUDGETS = {
    "small": Budget(
        base_preset="small", sweep_preset="narrow", seeds=SEEDS_SMALL,
        common={"steps": 20, "batch_size": 8, "max_completion_length": 32, "eval_problems": 64, "eval_samples": 32,
                "heldout_problems": 32, "checkpoint_every": 10, "probe_prompts": 4, "probe_members": 8,
                "probe_samples": 8, "probe_center_samples": 16, "threads": 1,
                "population": BATCHED},
        es={"population_size": 32, "sigma": 0.01, "alpha": 0.005},
        grpo={"num_generations": 8, "learning_rate": 1e-4},
        sweep_populations=(8, 32), simulate_scale=0.5,
        grid_sigmas=(1e-3, 3e-3, 1e-2, 3e-2), grid_members=(4, 16)),
    "full": Budget(
        base_preset="default", sweep_preset="narrow", seeds=SEEDS_FULL,
        common={"steps": 100, "batch_size": 16, "max_completion_length": 32, "eval_problems": 200, "eval_samples": 32,
                "heldout_problems": 200, "checkpoint_every": 25, "probe_every": 50, "threads": 1,
                "population": BATCHED},
        es={"population_size": 32, "sigma": 0.01, "alpha": 0.005},
        grpo={"num_generations": 8, "learning_rate": 1e-4},
        sweep_populations=(8, 16, 32, 64), simulate_scale=1.0,
        grid_sigmas=(3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1), grid_members=(2, 4, 8, 16, 32), grid_draws=5),
    # the headline answer: sizes measured and chosen in docs/answer-budget.md
    "answer": Budget(
        base_preset="default", sweep_preset="narrow", seeds=ANSWER_SEEDS, task="countdown3",
        common={"steps": ANSWER_STEPS, "batch_size": ANSWER_BATCH, "max_completion_length": 32, "eval_problems": ANSWER_PROMPTS,
                "eval_samples": 32, "eval_temperature": 0.6, "heldout_problems": 32, "threshold_keep": (50.0,),
                "checkpoint_every": ANSWER_CHECKPOINT_EVERY, "checkpoint_dense": ANSWER_DENSE, "probe_every": ANSWER_STEPS // 4, "probe_prompts": 4,
                "probe_members": 8, "probe_samples": 8, "probe_center_samples": 16, "threads": 1, "population": BATCHED},
        es=ANSWER_ES, grpo={"num_generations": 8, "learning_rate": 1e-4},
        sweep_populations=(), simulate_scale=0.5, grid_sigmas=(1e-3, 1e-2, 3e-2), grid_members=(4, 16),
        es_variants=("es-sampled",), schedules=False, curve=ANSWER_CURVE),
}

# The sweep only needs the training reward: its runs evaluate little.
SWEEP_EVAL = {"eval_problems": 8, "heldout_task": "", "threshold_keep": (50.0,)}

# ES variants of the ablations and null controls: name -> ESConfig overrides. Every variant runs on
# every seed of the budget, like the main runs. z-scoring is ablated two ways: centered rewards at the
# same alpha (a ~1/std(R) smaller step), and centered at alpha rescaled to the z-scored update norm
# (es-rescaled, added once the main runs give their reward spread: see rescaled_variant).
ES_VARIANTS = {"es-sampled": {"member_temperature": 1.0, "member_samples": 1}, "es-nozscore": {"zscore": False},
               "es-twopoint": {"antithetic": True}, "es-null": {"null_control": True}, "es-bf16": {"inplace_bf16": True}}


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
    rescaled centered variant (center_scale = 1 / std, so its update has the z-scored norm on average)."""
    runs: dict[str, dict] = {}

    def add(name: str, algo: str, seed: int, model_dir: Path, es: dict | None = None, **extra) -> None:
        runs[name] = budget.common | {"algo": algo, "model": str(model_dir), "seed": seed, "task": budget.task,
                                      "es": budget.es | (es or {}), "grpo": budget.grpo} | extra

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
        if reward_std is not None and (budget.es_variants is None or "es-rescaled" in budget.es_variants):
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


def _done(run_dir: Path) -> bool:
    """Whether a run has its final evaluation (a damaged eval.json: RunDirError naming it)."""
    from llm.rundir import read_eval

    return "final" in (read_eval(run_dir) or {})


def _run_one(name: str, cfg: dict, run_dir: Path, curve: dict | None) -> str:
    """Train (or resume) one run to its end, then evaluate its curve; in a worker process, on cfg's threads."""
    from llm.config import TrainConfig
    from llm.train import train

    torch.set_num_threads(cfg["threads"])
    if not _done(run_dir):
        resume = (run_dir / "config.json").exists()
        train(TrainConfig.from_dict(cfg | {"out": str(run_dir)}), resume=resume, show_progress=False)
    if curve is not None:
        from llm.curve import evaluate_curve
        evaluate_curve(run_dir, **curve)
    return name


def run_all(runs: dict[str, dict], root: Path, curve: dict | None, jobs: int, log) -> None:
    """Every run of `runs` under root/NAME, `jobs` at a time (separate processes; 1: in this process).
    A failed run is named and the others go on; the first failure is raised at the end."""
    todo = {name: cfg for name, cfg in runs.items()
            if not (_done(root / name) and (curve is None or _curve_done(root / name, curve)))}
    if not todo:
        return
    log(f"{len(todo)} of {len(runs)} runs to do, {jobs} at a time")
    failures: list[tuple[str, BaseException]] = []
    if jobs == 1:
        for name, cfg in todo.items():
            log(f"run {name}")
            _run_one(name, cfg, root / name, curve)
        return
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_run_one, name, cfg, root / name, curve): name for name, cfg in todo.items()}
        for i, future in enumerate(as_completed(futures), start=1):
            name = futures[future]
            try:
                future.result()
                log(f"run {i}/{len(todo)} done: {name}")
            except Exception as err:  # noqa: BLE001 - named, and raised after the others finish
                log(f"run {name} failed: {type(err).__name__}: {err}")
                failures.append((name, err))
    if failures:
        raise failures[0][1]


def _curve_done(run_dir: Path, curve: dict) -> bool:
    """Whether the run's curve holds every point of its layout (llm.curve.layout on the stored points)."""
    from llm import rundir
    from llm.curve import layout

    stored = {p["step"]: p["sampled"]["pass_at_k"]["1"] for p in rundir.read_curve(run_dir) or []
              if p["sampled"]["n"] == curve["samples"] and p["sampled"]["temperature"] == curve["temperature"]}

    class Unmeasured(Exception):
        pass

    def recall(step: int) -> float:
        if step not in stored:
            raise Unmeasured
        return stored[step]
    try:
        layout(rundir.checkpoint_steps(run_dir)[0], recall, **{k: curve[k] for k in ("points", "resolution", "max_points")
                                                               if k in curve})
    except Unmeasured:
        return False
    return True


def _pretrain(out_dir: Path, preset: str, progress: bool) -> Path:
    from llm.tinymodel import pretrain
    if not (out_dir / "config.json").exists():
        pretrain(out_dir, preset=preset, seed=0, progress=progress)
    return out_dir


def reproduce(budget_name: str, out, *, model: Path | None = None, progress: bool = True, jobs: int | None = None,
              command: str | None = None) -> dict:
    """Run (or continue) a reproduction into out; command: the command line, stated in run_info.json."""
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
    log("base model")
    base = Path(model) if model is not None else _pretrain(out / "base", budget.base_preset, progress)
    other = None if model is not None or not budget.sweep_populations else _pretrain(out / "base-sweep", budget.sweep_preset, progress)

    theory_json = out / "theory.json"
    if not theory_json.exists():
        log("theory checks")
        from theory.checks import run_checks
        theory_json.write_text(json.dumps(run_checks(progress=progress), default=float))
    simulate_summary = out / "simulate" / "summary.json"
    if not simulate_summary.exists():
        log("simulate experiments")
        from simulate.cli import main as simulate_main
        simulate_main(["all", "--out", str(out / "simulate"), "--scale", str(budget.simulate_scale)]
                      + ([] if progress else ["--no-progress"]))

    run_all(plan(budget, base, other), out / "runs", budget.curve, jobs, log)
    if budget.es_variants is None or "es-rescaled" in budget.es_variants:  # needs the main ES runs' reward spread
        run_all(plan(budget, base, other, {seed: mean_reward_std(out / "runs" / f"es-s{seed}") for seed in budget.seeds}),
                out / "runs", budget.curve, jobs, log)

    grid_path = out / "lemma_grid.json"
    if not grid_path.exists():
        log("Lemma 1 grid")
        from paper_checks.lemma_grid import measure_grid
        grid_path.write_text(json.dumps(measure_grid(base, budget.grid_sigmas, budget.grid_members, draws=budget.grid_draws,
                                                   progress=progress)))
    log("report")
    report = build_report(sorted((out / "runs").iterdir()), out / REPORT_DIR, theory_json, simulate_summary,
                          load_lemma_grid(grid_path))
    write_run_info(out / REPORT_DIR / "run_info.json", budget_name, jobs, time.perf_counter() - start, command, commit)
    log(f"done: {out / REPORT_DIR / 'REPORT.md'}")
    return report


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
                   commit: tuple[str, bool]) -> None:
    """What a published report states about its run: command, the commit it started on, wall time,
    machine. The wall time is this invocation's (a resumed reproduction counts only what it did itself)."""
    import platform

    info = {"command": command or f"paper_checks.reproduce.reproduce({budget_name!r}, ...)", "budget": budget_name,
            "jobs": jobs, "commit": commit[0], "uncommitted_changes": commit[1],
            "wall_seconds": round(seconds, 1), "finished_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                        "cpu_count": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__}}
    path.write_text(json.dumps(info, indent=1), encoding="utf-8")
