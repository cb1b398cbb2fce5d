"""A full disk: a write that fails (ENOSPC, a quota, a read-only file system) is one RunDirError naming the file."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from escov.llm.rundir.records import RunDirError


@contextlib.contextmanager
def writing(path: Path, needed: int | None = None):
    """Turn an OSError while writing `path` (a full disk: ENOSPC, a quota, a read-only file system)
    into a RunDirError naming the file, so that it ends a run in one line rather than a traceback.
    With `needed` (bytes the write takes): refused before it starts when the disk has less free, and
    any error of the write (safetensors and torch raise their own types) on a disk left with less than
    that is a full disk; both messages name the space needed and the space free."""
    if needed is not None and free_bytes(path) < needed:
        raise RunDirError(f"{path}: cannot be written: {_space(needed, free_bytes(path))}")
    try:
        yield
    except RunDirError:
        raise
    except OSError as err:
        full = needed is not None and free_bytes(path) < needed
        space = f"; {_space(needed, free_bytes(path))}" if full else ""
        raise RunDirError(f"{path}: cannot be written ({err.strerror or err}){space}") from None
    except Exception as err:
        if needed is None or free_bytes(path) >= needed:
            raise
        space = _space(needed, free_bytes(path))
        raise RunDirError(f"{path}: cannot be written ({type(err).__name__}); {space}") from None


def free_bytes(path: Path) -> int:
    """Free bytes on the disk that holds path (or the nearest folder above it that exists)."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def _space(needed: int, free: int) -> str:
    return f"it needs {needed / 2**20:.1f} MB free on its disk, which has {free / 2**20:.1f} MB"
