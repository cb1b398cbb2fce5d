"""Reading run directories written by `python -m escov.llm train` (the interface between llm and paper_checks).

A run directory holds `config.json`, `metrics.jsonl` (one JSON object per step), `eval.json`,
`probe.json` (or an older run's `population.json`), `curve.json` and `checkpoints/step-N/`; its records and the one
reader and writer of its
files are in llm/rundir.py. Reading never crashes on a partial run: what is missing or damaged
(a file that is not UTF-8 or not JSON, a record of the wrong shape) is recorded in `Run.problems`,
with the file named, and skipped, so that a report can mark the claims that needed it. So is what
makes the data untrustworthy though every file reads (llm/rundir.py integrity_problems): metrics
rows not exactly steps 1..n, config.json edited since the run wrote it, settings changed mid-run, a
run still writing the directory, records that contradict their witnesses (llm/witnesses.py: a checkpoint's
settings hash, eval.json's base fingerprint), answers graded at the math grader's wall-clock safety net.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from escov.llm import rundir, witnesses
from escov.llm.rundir import RunDirError


@dataclass
class Run:
    """One run directory as paper_checks reads it (llm/train.py's TrainingRun is the run being trained)."""

    path: Path
    config: dict
    metrics: list[dict] = field(default_factory=list)
    eval: dict | None = None
    probe: dict | None = None
    curve: list[dict] | None = None  # curve.json's points (llm/curve.py), step order
    problems: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # settings or code changed mid-run (config_history.jsonl)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def algo(self) -> str:
        return str(self.config.get("algo", "unknown"))

    @property
    def task(self) -> str:
        return str(self.config.get("task", "unknown"))

    @property
    def seed(self) -> int | None:
        return self.config.get("seed")


def load_run(path: str | Path) -> Run:
    """Load one run directory; raise RunDirError only when it has no usable config."""
    path = Path(path)
    if not path.is_dir():
        raise RunDirError(f"run directory {path} does not exist or is not a directory")
    try:
        config = rundir.read_config(path)
    except RunDirError as err:
        raise RunDirError(f"{path / rundir.CONFIG}: a run directory needs a readable config.json ({err})") from None
    problems: list[str] = []
    metrics, ev, probe = (
        rundir.read_steps(path, problems),
        rundir.read_eval(path, problems),
        rundir.read_probe(path, problems),
    )
    curve = rundir.read_curve(path, problems)
    if curve and any(point.get("split", "test") != "test" for point in curve):
        problems.append(
            f"{path / rundir.CURVE}: measured on the training split (llm curve --split train), not the "
            f"test prompts; not read"
        )
        curve = None
    run = Run(path=path, config=config, metrics=metrics, eval=ev, probe=probe, curve=curve, problems=problems)
    finished = isinstance(run.eval, dict) and "final" in run.eval
    problems += rundir.integrity_problems(path, config, run.metrics, finished)
    problems += witnesses.problems(path)  # records that contradict their witnesses (llm/witnesses.py)
    timeouts = rundir.grading_timeouts(run.metrics, run.eval)
    if timeouts:
        problems.append(
            f"{path}: {timeouts} answer{'s' * (timeouts > 1)} graded wrong at the math grader's wall-clock "
            "safety net (grading_timeouts in metrics.jsonl and eval.json): grades that depend on the "
            "machine's load"
        )
    run.changed = changes_mid_run(path)
    return run


def changes_mid_run(path: Path) -> list[str]:
    """'after step N: setting was -> now' for each change config_history.jsonl records after the run started
    (settings a resume was allowed to change, a change of code)."""
    try:
        history = rundir.config_history(path)
    except RunDirError:
        return []  # named among the run's problems
    return [
        f"after step {record.get('from_step')}: "
        + ", ".join(f"{c['setting']} {c['was']} -> {c['now']}" for c in changed)
        for record in history[1:]
        if (changed := [c for c in record.get("changed", []) if c.get("setting") not in rundir.NOT_COMPARED])
    ]


def load_runs(paths) -> tuple[list[Run], list[str]]:
    """Load several run directories; unusable ones are reported, not raised. All runs must share a task."""
    runs, problems = [], []
    for p in paths:
        try:
            run = load_run(p)
        except RunDirError as err:
            problems.append(str(err))
            continue
        runs.append(run)
        problems.extend(run.problems)
    tasks = sorted({r.task for r in runs})
    if len(tasks) > 1:
        by_task = {t: [r.name for r in runs if r.task == t] for t in tasks}
        raise RunDirError(f"runs of different tasks cannot share one report: {by_task}")
    return runs, problems
