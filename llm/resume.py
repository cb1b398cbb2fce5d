"""Where a run continues from: the newest checkpoint that loads and that every earlier metrics row leads up to.

A run directory (llm/rundir/) holds checkpoints/step-N for the steps llm.train.checkpoint_due names. On
resume, each is tried newest first:

    rows       metrics.jsonl must hold a row for every step up to N; when it lacks some, the checkpoint is
               passed over for an earlier one (whose later steps are trained again, exactly), and with no
               earlier one the resume is refused in one line naming the file and the steps
    loads      the checkpoint's weights (and, inside a GRPO phase, its optimizer state, its LoRA adapters
               with use_peft and, with beta > 0 or use_peft, the phase's starting checkpoint) must load with the
               model's shapes; one that does not is set aside as step-N.damaged, named, and the previous one
               tried
    in range   a checkpoint beyond the run's steps is damaged in the same sense

Folders under checkpoints/ that are not step-N are named and ignored. With no usable checkpoint the run
starts over. A new run refused a folder that is not empty is told why (not_empty: a run to resume, or other files).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from escov.llm import rundir, schedules, tracking
from escov.llm.rundir import RunDirError

if TYPE_CHECKING:
    from escov.llm.config import TrainConfig
    from escov.llm.train import TrainingRun


def resume_point(run: TrainingRun) -> tuple[int, dict, float, dict | None] | None:
    """(step, weights, elapsed seconds, optimizer state or None) of the newest checkpoint that loads,
    or None when there is none. A checkpoint that fails to load is set aside (step-N.damaged) with a
    message naming it, and the previous one is tried; folders that are not step-N checkpoints are
    named and ignored. Inside a GRPO phase the optimizer state and (beta > 0) the phase's reference
    checkpoint must load too."""
    steps, other = rundir.checkpoint_steps(run.dir)
    for path in other:
        print(f"note: {path} is not a checkpoint (checkpoints/step-N); ignored", file=sys.stderr)
    shapes = {n: p.shape for n, p in run.hf_model.named_parameters()}
    rows_missing = None
    for step in steps:
        path = rundir.checkpoint_dir(run.dir, step)
        missing_here = rundir.rows_missing_through(run.dir, step) if step <= run.total_steps else None
        rows_missing = rows_missing or missing_here  # the newest checkpoint's gap names them all
        if missing_here:  # an earlier checkpoint re-runs the steps whose rows are lost, exactly
            print(
                f"note: {rundir.METRICS} lacks rows up to checkpoint {path.name} ({missing_here}); "
                "trying the previous checkpoint",
                file=sys.stderr,
            )
            continue
        phase = schedules.phase_at(run.phases, min(step, run.total_steps - 1))
        inside_grpo = phase.algo == "grpo" and step > phase.start and step < run.total_steps
        try:
            if step > run.total_steps:
                raise RunDirError(f"{path}: step {step} is beyond the run's {run.total_steps} steps")
            weights, state, optimizer_state = rundir.load_checkpoint(path, shapes, with_optimizer=inside_grpo)
            if inside_grpo and run.cfg.grpo.use_peft:  # the LoRA adapters travel with the optimizer state
                optimizer_state = optimizer_state | {"adapter": rundir.load_adapter(path)}
            needs_start = run.cfg.grpo.beta > 0 or run.cfg.grpo.use_peft  # the reference / LoRA's base weights
            if inside_grpo and needs_start and phase.start > 0:
                rundir.load_checkpoint(rundir.checkpoint_dir(run.dir, phase.start), shapes, with_optimizer=False)
        except RunDirError as err:
            print(
                f"warning: checkpoint {path} failed to load ({err}); set aside as "
                f"{rundir.set_aside(path).name}, trying the previous one",
                file=sys.stderr,
            )
            continue
        return step, weights, state["elapsed"], optimizer_state
    if rows_missing:
        raise RunDirError(
            f"{run.dir / rundir.METRICS}: {rows_missing}, and no checkpoint precedes them; resuming "
            "would leave the run without those rows (start the run again in a new directory)"
        )
    return None


def relog_step(run: TrainingRun, step: int) -> None:
    """Send the tracker a step's records again from the run directory (its metrics row, probe measurement and kept
    training completions): a resume after the last step hides that step's events, to measure the final stage again."""
    for row in rundir.read_steps(run.dir):
        if row["step"] == step:
            run.tracker.log_record("train", row, step)
    for measurement in (rundir.read_probe(run.dir) or {"measurements": []})["measurements"]:
        if measurement["step"] == step:
            run.tracker.log_record("probe", measurement, step)
    kept = [
        {k: r[k] for k in ("prompt", "completion", "reward")}
        for r in rundir.read_completions(run.dir)
        if r["step"] == step and r["source"] == "train"
    ]
    if kept:
        run.tracker.log_completions("train", kept, step)


def drop_later_checkpoints(out: Path, step: int) -> None:
    """Remove the checkpoints after `step`, the one a resume continues from: the resumed run trains them
    again (with the same settings it writes the same weights; with changed settings, others)."""
    for later in rundir.checkpoint_steps(out)[0]:
        if later > step:
            shutil.rmtree(rundir.checkpoint_dir(out, later))
            print(
                f"note: checkpoint step-{later} removed: the run continues from step {step} and trains it again",
                file=sys.stderr,
            )


def name_missing_side_records(cfg: TrainConfig, out: Path, step: int) -> None:
    """Warn, naming each, about the side records a resumed run lacks (deleted since): their records up
    to `step` are lost; the resumed run writes those after it."""
    if step == 0:
        return
    missing = []
    if cfg.completions_kept and not (out / rundir.COMPLETIONS).exists():
        missing.append(out / rundir.COMPLETIONS)
    if cfg.report_to == "tensorboard" and not (out / tracking.TENSORBOARD_DIR).is_dir():
        missing.append(out / tracking.TENSORBOARD_DIR)
    for path in missing:
        print(
            f"warning: {path} is missing: its records of steps 0-{step} are lost; the resumed run writes only "
            f"those after step {step}",
            file=sys.stderr,
        )


def not_empty(out: Path) -> str:
    """Why a new run cannot start in out: a run is there (--resume continues it), or other files are."""
    if (out / rundir.CONFIG).is_file() and "algo" in rundir.read_json(out / rundir.CONFIG):
        return f"out directory {out} holds a run already; use --resume {out} to continue it, or give another --out"
    return f"--out {out} is a folder with other files in it (not a run of `llm train`); give a new or empty folder"
