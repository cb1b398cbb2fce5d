"""One writer at a time: run.lock, held with flock(2) by the one process that writes the run directory."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

from escov.llm.rundir.records import RunDirError

LOCK = "run.lock"


class RunDirBusy(RunDirError):
    """Another live process holds the run directory's lock."""


class WriterLock:
    """The run directory's lock: `run.lock`, held with an exclusive flock(2) by the one process that
    writes the directory, and holding that process's {"pid", "host", "since"} for the message a second
    writer gets. The kernel releases a flock when its holder dies (kill -9 included), so a crashed run's
    lock file is stale by construction: the next writer takes it over and names the dead holder.
    The file stays after the run, emptied (removing it would let a second writer lock a file no longer there)."""

    def __init__(self, run: Path):
        self.path = Path(run) / LOCK
        self.fd: int | None = None

    def acquire(self) -> dict | None:
        """Take the lock; returns the stale holder's record (a run that died holding it) or None.
        RunDirBusy (one line naming the holder) when a live process holds it."""
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = lock_holder(self.path) or {}
            raise RunDirBusy(
                f"{self.path}: the run directory is in use by pid {holder.get('pid', '?')} on "
                f"{holder.get('host', '?')} (since {holder.get('since', '?')}); one run writes a "
                "directory at a time"
            ) from None
        stale = lock_holder(self.path)
        me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        self.fd = fd
        return stale

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)  # an empty lock file: released cleanly (a crash leaves the holder's record)
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None

    def __enter__(self) -> "WriterLock":
        stale = self.acquire()
        if stale:
            print(
                f"note: {self.path} was left by pid {stale.get('pid')} on {stale.get('host')}, which no longer "
                "holds it (a crashed run); taken over",
                file=sys.stderr,
            )
        return self

    def __exit__(self, *exc) -> None:
        if is_empty(self.path.parent):  # a run that stopped before writing anything leaves nothing behind
            self.path.unlink(missing_ok=True)
        self.release()


def lock_holder(path: Path) -> dict | None:
    """The {"pid", "host", "since"} record in a lock file, or None when it is empty or unreadable."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def in_use(run: Path) -> dict | None:
    """The holder's record when a live process holds `run`'s lock now (a run in progress), else None."""
    import fcntl

    path = Path(run) / LOCK
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return lock_holder(path) or {}
    finally:
        os.close(fd)
    return None


def is_empty(run: Path) -> bool:
    """True when `run` holds nothing but its lock file and temporary files of atomic writes (JSON files, metrics
    rewrites: `NAME.tmp`) a kill cut short before their rename (a directory a new run may start in: a kill during
    the first config.json write leaves only config.json.tmp)."""
    return not any(p.name != LOCK and not (p.is_file() and p.name.endswith(".tmp")) for p in Path(run).iterdir())
