"""Training runs of a reproduction, its sweep, its pilot or the premise's control: each trained (or resumed) to its end
in a run directory, then its curve evaluated (llm/curve.py), `jobs` at a time in separate processes
(paper_checks/reproduce/jobs.py); a run whose final evaluation and curve are complete is skipped."""

from __future__ import annotations

from pathlib import Path

import torch

from escov.paper_checks.reproduce.jobs import Job, run_jobs


def trained(run_dir: Path) -> bool:
    """Whether a run has its final evaluation (a damaged eval.json: RunDirError naming it)."""
    from escov.llm.rundir import read_eval

    return "final" in (read_eval(run_dir) or {})


def run_one(name: str, cfg: dict, run_dir: Path, curve: dict | None, shared: Path | None = None) -> str:
    """Train (or resume) one run to its end, then evaluate its curve; in a worker process, on cfg's threads.
    shared: the folder of step-0 measurements shared by runs from the same base (llm.train.train)."""
    from transformers.utils import logging as hf_logging

    from escov.llm.config import TrainConfig
    from escov.llm.train import train

    hf_logging.disable_progress_bar()  # its "Loading weights" bar, once per model load, would bury the stage lines
    torch.set_num_threads(cfg["threads"])
    if not trained(run_dir):
        resume = (run_dir / "config.json").exists()
        train(TrainConfig.from_dict(cfg | {"out": str(run_dir)}), resume=resume, show_progress=False, shared=shared)
    if curve is not None:
        from escov.llm.curve import evaluate_curve

        evaluate_curve(run_dir, **curve)
    return name


def run_all(runs: dict[str, dict], root: Path, curve: dict | None, jobs: int, log) -> None:
    """Every run of `runs` under root/NAME, `jobs` at a time (separate processes; 1: in this process).
    A failed run is named and the others go on; the first failure is raised at the end."""
    todo = run_jobs_of(runs, root, curve)
    if todo:
        log(f"{len(todo)} of {len(runs)} runs to do, {jobs} at a time")
        run_jobs(todo, jobs, log)


def run_jobs_of(
    runs: dict[str, dict],
    root: Path,
    curve: dict | None,
    stage: str = "training runs",
    after: tuple[str, ...] = (),
    shared: Path | None = None,
) -> list[Job]:
    """A job per run of `runs` not yet finished (with its curve, when the budget has one)."""
    return [
        Job(name, stage, lambda name=name, cfg=cfg: (run_one, (name, cfg, root / name, curve, shared)), after)
        for name, cfg in runs.items()
        if not complete(root / name, curve)
    ]


def complete(run_dir: Path, curve: dict | None) -> bool:
    """Whether a run is trained and, when there is a curve to measure, its curve is measured."""
    return trained(run_dir) and (curve is None or curve_done(run_dir, curve))


def curve_done(run_dir: Path, curve: dict) -> bool:
    """Whether the run's curve holds every point of its layout (llm.curve.layout on the stored points measured as
    the curve asks: llm.curve.same_settings, the run's own temperature and prompt count where the curve names none)."""
    from escov.llm import rundir
    from escov.llm.config import load_config
    from escov.llm.curve import SAMPLES, layout, same_settings, settings_of

    temperature, n_problems = settings_of(load_config(run_dir), curve.get("temperature"), curve.get("n_problems"))
    asked = (n_problems, curve.get("samples", SAMPLES), temperature, curve.get("split", "test"))
    stored = {
        p["step"]: p["sampled"]["pass_at_k"]["1"] for p in rundir.read_curve(run_dir) or [] if same_settings(p, *asked)
    }

    class Unmeasured(Exception):
        pass

    def recall(step: int) -> float:
        if step not in stored:
            raise Unmeasured
        return stored[step]

    try:
        layout(
            rundir.checkpoint_steps(run_dir)[0],
            recall,
            **{k: curve[k] for k in ("points", "resolution", "max_points") if k in curve},
        )
    except Unmeasured:
        return False
    return True
