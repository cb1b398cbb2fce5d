"""What a reader checks: metrics rows exactly steps 1..n, config.json as the run ran it, no writer at work."""

from __future__ import annotations

import json
from pathlib import Path

from escov.llm.rundir.config_files import CONFIG_HISTORY, NOT_COMPARED, config_history, setting_changes
from escov.llm.rundir.files import read_steps
from escov.llm.rundir.lock import LOCK, in_use
from escov.llm.rundir.records import CONFIG, METRICS, RunDirError


def step_problems(steps: list[int], through: int | None = None) -> list[str]:
    """What is wrong with a run's metrics rows, by their step numbers in file order: steps out of order,
    repeated, or missing from 1..max (or 1..through when given); [] when they are exactly 1, 2, ..., n."""
    problems = []
    repeated = sorted({s for s in steps if steps.count(s) > 1})
    if repeated:
        problems.append(f"steps written more than once: {_ranges(repeated)}")
    if any(b < a for a, b in zip(steps, steps[1:])) and not repeated:
        problems.append("steps out of order")
    last = max(steps, default=0) if through is None else through
    missing = sorted(set(range(1, last + 1)) - set(steps))
    if missing:
        problems.append(f"steps missing: {_ranges(missing)}")
    return problems


def _ranges(steps: list[int]) -> str:
    """'1-3, 5' for [1, 2, 3, 5]."""
    parts, start = [], None
    for i, s in enumerate(steps):
        if start is None:
            start = s
        if i + 1 == len(steps) or steps[i + 1] != s + 1:
            parts.append(f"{start}-{s}" if s != start else f"{s}")
            start = None
    return ", ".join(parts)


def integrity_problems(run: Path, config: dict, rows: list[dict], finished: bool) -> list[str]:
    """What makes a run directory's data untrustworthy, each naming the file: metrics rows not exactly
    steps 1..n (n = the run's total steps when it finished), config.json differing from the settings
    recorded in config_history.jsonl (edited by hand), settings changed mid-run, a writer still at work."""
    run = Path(run)
    problems = []
    total = (config.get("schedule") or {}).get("total_steps") if isinstance(config.get("schedule"), dict) else None
    steps = [r["step"] for r in rows if isinstance(r.get("step"), int)]
    through = total if finished and isinstance(total, int) else None
    problems += [f"{run / METRICS}: {p}" for p in step_problems(steps, through)]
    if isinstance(total, int) and steps and max(steps) > total:
        problems.append(f"{run / METRICS}: steps beyond the run's {total}")
    try:
        history = config_history(run)
    except RunDirError as err:
        return problems + [str(err)]
    if history:
        changes = setting_changes(history[-1]["config"], config, ignore=NOT_COMPARED)
        if changes:
            problems.append(
                f"{run / CONFIG}: differs from the settings the run ran with (edited by hand?): "
                + ", ".join(f"{k} {json.dumps(a)} -> {json.dumps(b)}" for k, a, b in changes)
            )
        for record in history[1:]:
            named = ", ".join(
                f"{c['setting']} {json.dumps(c['was'])} -> {json.dumps(c['now'])}"
                for c in record["changed"]
                if c["setting"] not in NOT_COMPARED
            )
            if named:
                problems.append(
                    f"{run / CONFIG_HISTORY}: settings changed mid-run after step {record['from_step']}: {named}"
                )
    holder = in_use(run)
    if holder is not None:
        problems.append(
            f"{run / LOCK}: a run is still writing this directory (pid {holder.get('pid', '?')} on "
            f"{holder.get('host', '?')})"
        )
    return problems


def grading_timeouts(rows: list[dict], ev: dict | None) -> int:
    """Answers a run graded wrong at the math grader's wall-clock safety net (llm/tasks/math_grader.py): the
    `grading_timeouts` of its metrics rows and of its evaluations (0 unless the machine stalled)."""
    ev = ev if isinstance(ev, dict) else {}
    evaluations = [ev.get(p) for p in ("base", "base_greedy", "final", "final_greedy")]
    evaluations += list((ev.get("heldout") or {}).values()) if isinstance(ev.get("heldout"), dict) else []
    counts = [r.get("grading_timeouts") for r in rows] + [
        e.get("grading_timeouts") for e in evaluations if isinstance(e, dict)
    ]
    return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool))


def rows_missing_through(run: Path, step: int) -> str | None:
    """Whether metrics.jsonl holds the rows of steps 1..step exactly once each (what resuming from
    checkpoint `step` needs; later rows are dropped by keep_steps): None, or what is wrong."""
    rows = [r for r in read_steps(run) if r["step"] <= step]
    problems = step_problems([r["step"] for r in rows], through=step)
    return "; ".join(problems) or None
