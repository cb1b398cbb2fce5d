"""Experiment tracking (TRL's `report_to`): the run's measurements sent to TensorBoard, W&B or trackio as they are made.

    report_to = "none" | "tensorboard" | "wandb" | "trackio"

The run directory stays the record (llm/rundir/); a tracker is a view of it. Everything is
offline: TensorBoard event files go to RUN_DIR/tensorboard/ (`tensorboard --logdir RUN_DIR`),
W&B runs in offline mode under RUN_DIR/wandb/ (unless WANDB_MODE says otherwise; `wandb sync`
uploads later), trackio keeps its local database (it uploads only when told to). Each backend is
a dependency extra: `pip install -e ".[tensorboard]"` (installed by scripts/setup.sh),
`".[wandb]"`, `".[trackio]"`; a missing one is a one-line error naming the extra.

Names (stable; "/" separates a tracker's groups), each logged at a training step:
    train/<field>                   every number of a metrics.jsonl row (llm/rundir/records.py StepMetrics),
                                    train/drift_layers/<group> for the per-layer drift,
                                    train/rewards/<function>/mean (and std, applied) for each reward
                                    function, train/by_data_source/<source>/<metric>, at the row's step
    eval/<label>/<metric>           every evaluation as it is measured (label base, base_greedy,
                                    heldout_base at step 0; final, final_greedy, heldout_final at the
                                    last step); <metric>: pass_at_k/<k>, maj_at_k/<k>, mean_token_entropy,
                                    mean_response_tokens, truncated_fraction, solved_fraction,
                                    distinct_correct_answers, distinct_correct_texts, reward_mean,
                                    reward_std, reward_zero_std_share, rewards/<function>/mean (std,
                                    applied), by_data_source/<source>/<metric>
    probe/<measurement>             every number of a Lemma 1 probe measurement (llm/lemma_measurements.py)
    curve/sampled/<metric>, curve/greedy/<metric>   each `llm curve` point, at its checkpoint's step
    completions/<source>            the kept completions (completions.jsonl) as a table of text
Settings of a measurement (seed, sample counts, temperature) and an evaluation's duration
(`seconds`) are not sent.
A resumed run purges the TensorBoard events after its resume step, so the curves show one history;
W&B and trackio are sent the measured-again steps anew (W&B drops steps it has already seen).
"""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path

REPORT_TO = ("none", "tensorboard", "wandb", "trackio")
MODULE = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio"}  # the import each backend needs
EXTRA = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio"}  # the pyproject extra installing it
TENSORBOARD_DIR = "tensorboard"
PROJECT = "escov"
# an evaluation's settings and bookkeeping, not measurements: not sent
NOT_MEASURED = {
    "step",
    "phase",
    "task",
    "num_problems",
    "n",
    "ks",
    "temperature",
    "top_p",
    "max_new_tokens",
    "seed",
    "correct_threshold",
    "seconds",
    "sigma",
    "members",
    "samples_per_member",
    "center_samples",
    "per_problem",
    "per_prompt",
    "es_rewards",
}


def check_backend(report_to: str) -> None:
    """ValueError (one line, naming the extra) when the backend's package is not installed."""
    if report_to not in REPORT_TO:
        raise ValueError(f"report_to must be one of {list(REPORT_TO)}, got {report_to!r}")
    if report_to != "none" and importlib.util.find_spec(MODULE[report_to]) is None:
        raise ValueError(
            f'report_to {report_to!r} needs the {MODULE[report_to]} package: pip install -e ".[{EXTRA[report_to]}]"'
        )


def scalars(prefix: str, record: dict) -> dict[str, float]:
    """The record's finite numbers by name, nested dicts joined with "/" (settings and lists left out)."""
    out: dict[str, float] = {}
    for key, value in record.items():
        if key in NOT_MEASURED:
            continue
        name = f"{prefix}/{key}"
        if isinstance(value, dict):
            out |= scalars(name, value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[name] = float(value)
    return out


def completions_table(records: list[dict]) -> str:
    """Kept completions as a Markdown table (TensorBoard's text plugin renders Markdown)."""

    def cell(text) -> str:
        return str(text).replace("|", "\\|").replace("\n", "<br>")

    rows = [f"| {cell(r['prompt'])} | {cell(r['completion'])} | {r['reward']:.4g} |" for r in records]
    return "\n".join(["| prompt | completion | reward |", "| --- | --- | --- |", *rows])


class Tracker:
    """report_to = "none": nothing is sent (the run directory still holds everything)."""

    def log(self, values: dict[str, float], step: int) -> None:
        """Send named numbers measured at a training step."""

    def log_completions(self, source: str, records: list[dict], step: int) -> None:
        """Send kept completions (dicts with prompt, completion, reward) under completions/<source>."""

    def close(self) -> None:
        """Flush and close."""

    def log_record(self, prefix: str, record: dict, step: int) -> None:
        self.log(scalars(prefix, record), step)


class TensorBoardTracker(Tracker):
    def __init__(self, run_dir: Path, config: dict, purge_from: int | None):
        from torch.utils.tensorboard import SummaryWriter

        # purge_step: the events of steps >= purge_from, written before an interruption, are hidden
        self.writer = SummaryWriter(log_dir=str(Path(run_dir) / TENSORBOARD_DIR), purge_step=purge_from)
        if not purge_from:
            self.writer.add_text("config", "```\n" + "\n".join(f"{k} = {v!r}" for k, v in config.items()) + "\n```", 0)

    def log(self, values: dict[str, float], step: int) -> None:
        for name, value in values.items():
            self.writer.add_scalar(name, value, step)
        self.writer.flush()

    def log_completions(self, source: str, records: list[dict], step: int) -> None:
        self.writer.add_text(f"completions/{source}", completions_table(records), step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class LoggerModuleTracker(Tracker):
    """W&B and trackio: the same calls (init, log(values, step=), Table, finish)."""

    def __init__(self, module_name: str, run_dir: Path, config: dict):
        import importlib

        self.module = importlib.import_module(module_name)
        if module_name == "wandb":
            self.module.init(
                project=PROJECT,
                name=Path(run_dir).name,
                dir=str(run_dir),
                config=config,
                mode=os.environ.get("WANDB_MODE", "offline"),
            )
        else:
            self.module.init(project=PROJECT, name=Path(run_dir).name, config=config)

    def log(self, values: dict[str, float], step: int) -> None:
        if values:
            self.module.log(values, step=step)

    def log_completions(self, source: str, records: list[dict], step: int) -> None:
        table = self.module.Table(
            columns=["prompt", "completion", "reward"],
            data=[[str(r["prompt"]), r["completion"], r["reward"]] for r in records],
        )
        self.module.log({f"completions/{source}": table}, step=step)

    def close(self) -> None:
        self.module.finish()


def open_tracker(report_to: str, run_dir, config: dict, purge_from: int | None = None) -> Tracker:
    """The tracker report_to names, for a run directory. purge_from (a resumed run): the first step
    measured again, whose earlier events TensorBoard hides (None: nothing to hide)."""
    check_backend(report_to)
    if report_to == "none":
        return Tracker()
    if report_to == "tensorboard":
        return TensorBoardTracker(Path(run_dir), config, purge_from)
    return LoggerModuleTracker(MODULE[report_to], Path(run_dir), config)
