"""A pool of jobs with dependencies, each timed: what `paper_checks reproduce` runs its stages on.

A job is a top-level function with its arguments, built when the jobs it waits for have finished
(so a job can use their results, e.g. the rescaled runs use the main ES runs' reward spread). Ready
jobs start in the order they are listed, so listing the long ones first keeps every worker busy to
the end. Workers are separate processes (spawn); with one worker the jobs run in this process, one
after the other, in list order.

Workers start with one BLAS thread (ONE_THREAD, unless the caller's environment sets those variables):
a numpy stage (simulate, theory) in a process that imported torch otherwise spins a second thread
against the other worker (measured: 29 CPU-s instead of 18 for the small budget's simulate).

Every job is timed where it runs: wall seconds and CPU seconds (user + system of the worker and of
the processes it waited for), so a reader can tell a slow machine from a busy one. `stage_times`
sums the jobs of each stage: the stage's span (first start to last end, on the pool's clock), the
sum of its jobs' wall seconds, and the sum of their CPU seconds.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable

ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass
class Job:
    """name: unique; stage: the group it is timed in; after: names of jobs that must finish first;
    make: called (in the parent) once they have, returns (function, args) to run."""

    name: str
    stage: str
    make: Callable[[], tuple[Callable, tuple]]
    after: tuple[str, ...] = ()


@dataclass
class JobTime:
    stage: str
    start: float  # seconds since the pool started
    seconds: float  # wall seconds of the job
    cpu_seconds: float  # user + system CPU seconds of the job's process (and children it waited for)
    result: Any = field(default=None, repr=False)


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its finished, waited-for children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(function: Callable, args: tuple) -> tuple[Any, float, float]:
    """(function(*args), wall seconds, CPU seconds), measured in the process that runs it."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = function(*args)
    return result, time.perf_counter() - wall, cpu_seconds() - cpu


def check_order(jobs: list[Job]) -> None:
    """ValueError unless names are unique and every job comes after the jobs it waits for."""
    seen: set[str] = set()
    for job in jobs:
        if job.name in seen:
            raise ValueError(f"job {job.name!r} is listed twice")
        missing = [a for a in job.after if a not in seen]
        if missing:
            raise ValueError(f"job {job.name!r} waits for {missing}, which are not listed before it")
        seen.add(job.name)


def run_jobs(jobs: list[Job], workers: int, log: Callable[[str], None]) -> dict[str, JobTime]:
    """Run every job, at most `workers` at a time; returns each finished job's times (and result).

    A failed job is named; the jobs waiting for it are skipped (named), the others go on, and the
    first failure is raised at the end."""
    check_order(jobs)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    origin = time.perf_counter()
    finished: dict[str, JobTime] = {}
    failed: list[tuple[str, BaseException]] = []
    blocked: set[str] = set()

    def record(job: Job, started: float, outcome: tuple[Any, float, float]) -> None:
        result, seconds, cpu = outcome
        finished[job.name] = JobTime(job.stage, round(started - origin, 3), seconds, cpu, result)
        log(f"{len(finished)}/{len(jobs)} done: {job.name} ({seconds:.0f} s, {cpu:.0f} s CPU)")

    def fail(job: Job, err: BaseException) -> None:
        log(f"{job.name} failed: {type(err).__name__}: {err}")
        failed.append((job.name, err))
        blocked.add(job.name)

    pending = list(jobs)
    if workers == 1:
        for job in pending:
            if any(a in blocked for a in job.after):
                log(f"{job.name} skipped: it needs a job that failed")
                blocked.add(job.name)
                continue
            started = time.perf_counter()
            try:
                record(job, started, timed(*job.make()))
            except Exception as err:  # noqa: BLE001 - named, and raised after the others finish
                fail(job, err)
    else:
        added = {k: v for k, v in ONE_THREAD.items() if k not in os.environ}  # inherited by the spawned workers
        os.environ.update(added)
        try:
            with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                running: dict = {}
                while pending or running:
                    for job in list(pending):
                        if any(a in blocked for a in job.after):
                            log(f"{job.name} skipped: it needs a job that failed")
                            blocked.add(job.name)
                            pending.remove(job)
                        elif len(running) < workers and all(a in finished for a in job.after):
                            pending.remove(job)
                            try:
                                running[pool.submit(timed, *job.make())] = (job, time.perf_counter())
                            except Exception as err:  # noqa: BLE001 - a job whose arguments cannot be made
                                fail(job, err)
                    if not running:
                        continue
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        job, started = running.pop(future)
                        try:
                            record(job, started, future.result())
                        except Exception as err:  # noqa: BLE001 - named, and raised after the others finish
                            fail(job, err)
        finally:
            for k in added:
                os.environ.pop(k, None)
    if failed:
        raise failed[0][1]
    return finished


def stage_times(times: dict[str, JobTime]) -> dict[str, dict]:
    """Per stage, in the order stages first started: span (first start to last end), the sum of its
    jobs' wall seconds, the sum of their CPU seconds, and the number of jobs."""
    stages: dict[str, dict] = {}
    for t in sorted(times.values(), key=lambda t: t.start):
        s = stages.setdefault(
            t.stage, {"first": t.start, "last": t.start, "job_seconds": 0.0, "cpu_seconds": 0.0, "jobs": 0}
        )
        s["last"] = max(s["last"], t.start + t.seconds)
        s["job_seconds"] += t.seconds
        s["cpu_seconds"] += t.cpu_seconds
        s["jobs"] += 1
    return {
        name: {
            "span_seconds": round(s["last"] - s["first"], 1),
            "job_seconds": round(s["job_seconds"], 1),
            "cpu_seconds": round(s["cpu_seconds"], 1),
            "jobs": s["jobs"],
        }
        for name, s in stages.items()
    }
