"""Reading run directories written by `python -m llm train` (the interface between llm and paper_checks).

A run directory holds `config.json`, `metrics.jsonl` (one JSON object per step), `eval.json`,
`population.json` and `checkpoints/step-N/`. Reading never crashes on a partial run: what is
missing or damaged is recorded in `Run.problems`, with the file named, so that a report can
mark the claims that needed it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


class RunDirError(ValueError):
    """A run directory that cannot be used at all (no such directory, no config)."""


@dataclass
class Run:
    path: Path
    config: dict
    metrics: list[dict] = field(default_factory=list)
    eval: dict | None = None
    population: dict | None = None
    problems: list[str] = field(default_factory=list)

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


def _read_json(path: Path, problems: list[str]) -> dict | None:
    if not path.exists():
        problems.append(f"{path}: missing")
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        problems.append(f"{path}: not valid JSON ({err.msg} at line {err.lineno})")
        return None


def read_metrics(path: Path, problems: list[str]) -> list[dict]:
    """Rows of a metrics.jsonl; a cut-off last line is dropped and reported, a bad middle line too."""
    if not path.exists():
        problems.append(f"{path}: missing")
        return []
    rows = []
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            where = "last line cut off" if number == len(lines) else f"line {number} is not JSON"
            problems.append(f"{path}: {where}; that row is skipped")
    return rows


def load_run(path: str | Path) -> Run:
    """Load one run directory; raise RunDirError only when it has no usable config."""
    path = Path(path)
    if not path.is_dir():
        raise RunDirError(f"run directory {path} does not exist or is not a directory")
    problems: list[str] = []
    config = _read_json(path / "config.json", problems)
    if config is None:
        raise RunDirError(f"{path / 'config.json'}: a run directory needs a readable config.json ({problems[-1]})")
    return Run(
        path=path,
        config=config,
        metrics=read_metrics(path / "metrics.jsonl", problems),
        eval=_read_json(path / "eval.json", problems),
        population=_read_json(path / "population.json", problems) if (path / "population.json").exists() else None,
        problems=problems,
    )


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
