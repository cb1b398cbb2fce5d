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
    out/lemma_as_stated.json  Lemma 1 as stated on the base (the answer: budget.lemma_as_stated)
    out/premise-control/      the premise's positive control, when the budget has one (reproduce/premise_control.py)
    out/fresh_split.json      the test prompts checked against every earlier reader's, when the budget draws them
                              by solution count (eval_solutions; reproduce/fresh_split.py)
    out/endpoints/            the answer's endpoints to k = 1024, one file per evaluation (reproduce/endpoints.py)
    out/base-draws/           the answer's other base draws and step-size control (reproduce/base_draws.py)
    out/endpoints.json, out/base_draws.json   their attachments to report.json's premise record (answer_stages.py)
    out/report/               REPORT.md, report.json, plots, run_info.json (with each stage's time)

Each stage is skipped when its output is complete, so a rerun after an interruption only does what
is left (an interrupted training run resumes from its last checkpoint, an interrupted curve from its
last point). Every stage is a job of one pool (paper_checks/reproduce/jobs.py) that runs `jobs` at a time,
each in its own process on one thread (`--jobs`, default: the machine's cores): the two bases, theory
and simulate side by side, then the training runs, with the rescaled runs (after the main ES runs
whose reward spread they use) and the Lemma 1 grid among them, so no core waits for a stage to end.

Its budgets: paper_checks/reproduce/budgets.py; the runs each plans: plan.py; its base models: bases.py.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch

from escov.llm.rundir import read_json
from escov.paper_checks.evidence import load_lemma_grid
from escov.paper_checks.report import build_report
from escov.paper_checks.reproduce import answer_stages
from escov.paper_checks.reproduce.bases import obtain_base
from escov.paper_checks.reproduce.budgets import BUDGETS, Budget, published_for
from escov.paper_checks.reproduce.grpo_variants import VARIANTS_DIR
from escov.paper_checks.reproduce.grpo_variants import attach as attach_variants
from escov.paper_checks.reproduce.jobs import Job, cpu_seconds, run_jobs, stage_times
from escov.paper_checks.reproduce.plan import mean_reward_std, plan, planned_needs
from escov.paper_checks.reproduce.run_info import git_commit, write_run_info
from escov.paper_checks.reproduce.training_runs import complete, run_jobs_of, run_one
from escov.paper_checks.summary import load_published

REPORT_DIR = "report"  # out/report/: REPORT.md, report.json, plots, run_info.json


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

    cfg = TrainConfig.from_dict(
        budget.common | {"task": budget.task, "algo": "es", "es": budget.es, "grpo": budget.grpo},
        source="budget task settings",
    )
    return {
        "task": cfg.make_task(),
        "task_name": cfg.task,
        "temperature": cfg.eval_temperature,
        "max_new_tokens": cfg.max_completion_length,
    }


def _lemma_grid(path: Path, base: Path, budget: Budget, progress: bool) -> None:
    from escov.paper_checks.reproduce.lemma_grid_measurement import measure_grid

    torch.set_num_threads(budget.common["threads"])
    path.write_text(json.dumps(measure_grid(base, budget.grid, progress=progress, **grid_settings(budget))))


LEMMA_AS_STATED = "lemma_as_stated.json"  # out/: Lemma 1 as stated on the base (budget.lemma_as_stated)


def _lemma_as_stated(path: Path, base: Path, budget: Budget, progress: bool) -> None:
    from escov.paper_checks.reproduce.lemma_as_stated_measurement import measure_lemma_as_stated

    torch.set_num_threads(budget.common["threads"])
    measure_lemma_as_stated(base, grid_settings(budget), budget.lemma_as_stated, path, progress=progress)


PREMISE_DIR = "premise-control"  # out/premise-control/: the premise's positive control (reproduce/premise_control.py)


def _premise_control(base: Path, out: Path, budget: Budget) -> None:
    """The premise's positive control on the base with the budget's settings (its sizes: budget.arms.control, as the
    base draws' controls; () keeps run_control's), its runs one after another in this worker (one thread)."""
    from escov.paper_checks.reproduce.premise_control import run_control

    torch.set_num_threads(1)
    sizes = dict(budget.arms.control) if budget.arms is not None else {}
    run_control(base, out, budget, jobs=1, log=lambda msg: None, **sizes)


FRESH_SPLIT = "fresh_split.json"  # out/fresh_split.json: reproduce/fresh_split.py's check of the test prompts


def _fresh_split(path: Path, budget: Budget) -> None:
    from escov.llm.rundir import write_json
    from escov.paper_checks.reproduce.fresh_split import fresh_record

    write_json(path, fresh_record(budget))


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
        jobs.append(
            Job(
                "pretrain base",
                "pretrain",
                lambda: (obtain_base, (base, budget.base_preset, progress, budget.base_settings)),
            )
        )
        wait_base = ("pretrain base",)
    wait_other: tuple[str, ...] = ()  # the sweep's runs on the other base wait for that base only
    if other is not None:
        jobs.append(
            Job("pretrain sweep base", "pretrain", lambda: (obtain_base, (other, budget.sweep_preset, progress)))
        )
        wait_other = ("pretrain sweep base",)
    if not (out / "theory.json").exists():
        jobs.append(Job("theory", "theory", lambda: (_theory, (out / "theory.json", progress))))
    if not (out / "simulate" / "summary.json").exists():
        jobs.append(
            Job("simulate", "simulate", lambda: (_simulate, (out / "simulate", budget.simulate_scale, progress)))
        )
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
        jobs.append(
            Job(
                "premise control",
                "premise control",
                lambda: (_premise_control, (base, control, budget)),
                after=wait_base,
            )
        )
    if budget.common.get("eval_solutions") and not (out / FRESH_SPLIT).exists():
        jobs.append(Job("fresh split check", "fresh split", lambda: (_fresh_split, (out / FRESH_SPLIT, budget))))
    grid_path = out / "lemma_grid.json"
    if not grid_path.exists():
        jobs.append(
            Job(
                "Lemma 1 grid",
                "Lemma 1 grid",
                lambda: (_lemma_grid, (grid_path, base, budget, progress)),
                after=wait_base,
            )
        )
    if budget.lemma_as_stated is not None and not (out / LEMMA_AS_STATED).exists():
        jobs.append(
            Job(
                "Lemma 1 as stated",
                "Lemma 1 as stated",
                lambda: (_lemma_as_stated, (out / LEMMA_AS_STATED, base, budget, progress)),
                after=wait_base,
            )
        )
    null = answer_stages.null_runs(budget, runs)  # the answer's null arm: its own curve (answer_stages.arm_jobs)
    rest = {n: c for n, c in runs.items() if n not in first and "sweep-other" not in n and n not in null}
    # longest first: the runs that evaluate their members one by one (es-bf16) take about 3x a batched run
    rest = dict(sorted(rest.items(), key=lambda item: item[1].get("population", {}).get("batched", True)))
    jobs += run_jobs_of(rest, out / "runs", budget.curve, after=wait_base, shared=shared)
    jobs += run_jobs_of(
        {n: c for n, c in runs.items() if "sweep-other" in n},
        out / "runs",
        budget.curve,
        after=wait_other,
        shared=shared,
    )
    if budget.arms is not None:
        jobs += answer_stages.arm_jobs(budget, out, runs, {j.name for j in jobs}, shared, wait_base)
        # the base draws last: they read validation prompts and feed no ES-GRPO comparison, so a run cut short by
        # its session (the answer spans more than one) has its decisive part first (answer_stages.py)
        jobs += answer_stages.draw_jobs(budget, out, base, progress, wait_base)
    return jobs


def reproduce(
    budget_name: str,
    out,
    *,
    model: Path | None = None,
    progress: bool = True,
    jobs: int | None = None,
    command: str | None = None,
) -> dict:
    """Run (or continue) a reproduction into out; command: the command line, stated in run_info.json
    with the time of every stage (each invocation kept: reproduce/run_info.py)."""
    if budget_name not in BUDGETS:
        raise ValueError(f"budget must be one of {sorted(BUDGETS)}, got {budget_name!r}")
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    budget, out = BUDGETS[budget_name], Path(out)
    if model is not None and not (Path(model) / "config.json").exists():
        raise ValueError(f"--model {model}: not a model directory (no config.json)")
    out.mkdir(parents=True, exist_ok=True)
    start, started, commit = time.perf_counter(), time.time(), git_commit()
    log = lambda msg: print(f"[{time.perf_counter() - start:7.1f} s] {msg}", flush=True)

    torch.set_num_threads(budget.common["threads"])
    todo = reproduction_jobs(budget, out, model, progress)
    log(f"{len(todo)} jobs to do (bases, theory, simulate, training runs, Lemma 1 grid), {jobs} at a time")
    times = run_jobs(todo, jobs, log)
    log("report")
    t_report, cpu_report = time.perf_counter(), cpu_seconds()
    report = build_report(
        sorted((out / "runs").iterdir()),
        out / REPORT_DIR,
        out / "theory.json",
        out / "simulate" / "summary.json",
        load_lemma_grid(out / "lemma_grid.json"),
        budget.purpose,
        published=load_published(published_for(budget)),
        published_at=published_for(budget),
        planned=planned_needs(budget),
        premise_control=_with_fresh_split(out, budget),
        lemma_as_stated=read_json(out / LEMMA_AS_STATED) if (out / LEMMA_AS_STATED).is_file() else None,
    )
    if (out / VARIANTS_DIR / "grpo_variants.json").is_file():  # the arm run after the answer (grpo_variants.py)
        attach_variants(out / REPORT_DIR, read_json(out / VARIANTS_DIR / "grpo_variants.json"))
    if budget.arms is not None:  # the endpoints to k = 1024 and the base draws, in the premise record
        answer_stages.attach(out, out / REPORT_DIR, budget, out / PREMISE_DIR / "control.json")
    stages = stage_times(times) | {
        "report": {
            "span_seconds": round(time.perf_counter() - t_report, 1),
            "job_seconds": round(time.perf_counter() - t_report, 1),
            "cpu_seconds": round(cpu_seconds() - cpu_report, 1),
            "jobs": 1,
        }
    }
    seconds = time.perf_counter() - start
    write_run_info(out / REPORT_DIR / "run_info.json", budget_name, jobs, seconds, command, commit, stages, started)
    log(f"stages: {stage_line(stages)}")
    log(f"done: {out / REPORT_DIR / 'REPORT.md'}")
    return report


def _with_fresh_split(out: Path, budget: Budget) -> dict | None:
    """The premise control's record, with the fresh split's check beside it (premise_record.py reads it there)."""
    control = read_json(out / PREMISE_DIR / "control.json") if budget.premise_control else None
    if control is not None and (out / FRESH_SPLIT).is_file():
        control = control | {"test_split_fresh": read_json(out / FRESH_SPLIT)}
    return control


def stage_line(stages: dict[str, dict]) -> str:
    """One line: each stage's span in minutes (its CPU minutes in brackets), and the CPU total."""
    parts = [f"{name} {s['span_seconds'] / 60:.1f} ({s['cpu_seconds'] / 60:.1f} CPU)" for name, s in stages.items()]
    total = sum(s["cpu_seconds"] for s in stages.values()) / 60
    return ", ".join(parts) + f"; CPU total {total:.1f} min" if parts else "nothing to do"
