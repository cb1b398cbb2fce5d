"""run_info.json: what a reproduction's report states about the runs that made it, every invocation kept.

A reproduction into one folder may take several invocations (an interrupted run resumed, a report rebuilt after a
code change); each appends its record to `invocations`:

    command, budget, jobs               as invoked
    commit, uncommitted_changes         the checkout it ran from (git_commit)
    started_utc, finished_utc           its start and finish (UTC, to the second)
    wall_seconds, stages                its own wall time and each stage's time (reproduce/jobs.py stage_times)
    machine                             platform, processor, cores, Python, torch

and the top-level fields describe the whole: the first invocation's command, budget, jobs, commit and start
(never replaced by a later invocation's), the last finish, every commit seen in order (`commits`), whether any
invocation ran with uncommitted changes, the wall seconds summed over invocations (the time spent working, not
the span between first start and last finish), each stage's times summed, and the first invocation's machine.
A run_info.json written before invocations were kept (one record, no `invocations`) is read as its first.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

UTC_FORMAT = "%Y-%m-%d %H:%M:%S UTC"
FIRST = ("command", "budget", "jobs", "commit", "started_utc", "machine")  # top-level fields the first one sets


def git_commit() -> tuple[str, bool]:
    """(HEAD commit, whether tracked files differ from it) of the checkout this code runs from."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=here
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=here
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)", False
    return commit, dirty


def machine() -> dict:
    """The machine an invocation ran on."""
    import platform

    import torch

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def earlier_invocations(path: Path) -> list[dict]:
    """The invocations an existing run_info.json records ([] when there is none or it is unreadable)."""
    try:
        info = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(info, dict):
        return []
    if isinstance(info.get("invocations"), list):
        return info["invocations"]
    old = {k: info.get(k) for k in ("command", "budget", "jobs", "commit", "uncommitted_changes", "wall_seconds")}
    return [
        old
        | {
            "started_utc": None,
            "finished_utc": info.get("finished_utc"),
            "stages": info.get("stages", {}),
            "machine": info.get("machine"),
        }
    ]  # a record written before invocations were kept


def summed_stages(invocations: list[dict]) -> dict[str, dict]:
    """Each stage's times summed over the invocations (stages in order of first appearance)."""
    total: dict[str, dict] = {}
    for inv in invocations:
        for name, times in (inv.get("stages") or {}).items():
            into = total.setdefault(name, {k: 0 for k in times})
            for k, v in times.items():
                into[k] = round(into.get(k, 0) + v, 1) if isinstance(v, float) else into.get(k, 0) + v
    return total


def whole(invocations: list[dict]) -> dict:
    """The top-level fields of run_info.json from its invocations (module docstring)."""
    first, last = invocations[0], invocations[-1]
    return {k: first.get(k) for k in FIRST} | {
        "uncommitted_changes": any(bool(inv.get("uncommitted_changes")) for inv in invocations),
        "commits": list(dict.fromkeys(inv["commit"] for inv in invocations if inv.get("commit"))),
        "finished_utc": last.get("finished_utc"),
        "wall_seconds": round(sum(inv.get("wall_seconds") or 0.0 for inv in invocations), 1),
        "stages": summed_stages(invocations),
        "invocations": invocations,
    }


def write_run_info(
    path: Path,
    budget_name: str,
    jobs: int,
    seconds: float,
    command: str | None,
    commit: tuple[str, bool],
    stages: dict[str, dict] | None = None,
    started: float | None = None,
) -> dict:
    """Append this invocation (it began at `started`, epoch seconds; default: `seconds` ago) to path's
    run_info.json and rewrite the top-level fields; returns the record written."""
    now = time.time()
    invocation = {
        "command": command or f"paper_checks.reproduce.reproduce({budget_name!r}, ...)",
        "budget": budget_name,
        "jobs": jobs,
        "commit": commit[0],
        "uncommitted_changes": commit[1],
        "started_utc": time.strftime(UTC_FORMAT, time.gmtime(now - seconds if started is None else started)),
        "finished_utc": time.strftime(UTC_FORMAT, time.gmtime(now)),
        "wall_seconds": round(seconds, 1),
        "stages": stages or {},
        "machine": machine(),
    }
    info = whole(earlier_invocations(path) + [invocation])
    Path(path).write_text(json.dumps(info, indent=1), encoding="utf-8")
    return info
