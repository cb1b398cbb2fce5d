"""JSON without NaN: non-finite numbers never reach a file (NonFiniteError naming the field), files are
written atomically (a temporary file, then a rename), and a damaged file is a RunDirError naming it."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from escov.llm.rundir.disk import writing
from escov.llm.rundir.records import RunDirError
from escov.theory.errors import NonFiniteError


def check_finite(data: Any, where: str, path: str = "") -> None:
    """NonFiniteError naming `where` and the field when data holds a NaN or an infinity anywhere."""
    if isinstance(data, float) and not math.isfinite(data):
        raise NonFiniteError(f"{where}: field {path or '(top level)'} is {data}; non-finite values are never written")
    if isinstance(data, dict):
        for key, value in data.items():
            check_finite(value, where, f"{path}.{key}" if path else str(key))
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            check_finite(value, where, f"{path}[{i}]")


def dumps(data: Any, where: str, **kw) -> str:
    """JSON text of data; NonFiniteError (naming where and the field) instead of NaN / Infinity."""
    check_finite(data, where)
    return json.dumps(data, allow_nan=False, **kw)


def write_json(path: Path, data: Any) -> None:
    """Write data as JSON atomically (a temporary file, then a rename)."""
    path = Path(path)
    text = dumps(data, str(path), indent=1)
    tmp = path.with_name(path.name + ".tmp")
    with writing(path):
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)


MAX_FILE_BYTES = 1 << 30  # a run file larger than 1 GiB is not one (a link to an endless or foreign file)


def read_text(path: Path) -> str:
    """The UTF-8 text of a file; RunDirError naming it when it cannot be read, is not a regular file (a device, a
    pipe: perhaps endless), is larger than MAX_FILE_BYTES or is not UTF-8."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise RunDirError(f"{path}: not a regular file (a device or a pipe?); a run file is a plain file")
        if info.st_size > MAX_FILE_BYTES:
            raise RunDirError(
                f"{path}: {info.st_size / 2**20:.0f} MB, larger than a run file can be "
                f"({MAX_FILE_BYTES / 2**20:.0f} MB)"
            )
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise RunDirError(f"{path}: larger than a run file can be ({MAX_FILE_BYTES / 2**20:.0f} MB)")
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RunDirError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise RunDirError(f"{path}: cannot be read ({err.strerror})") from None


def read_json(path: Path, allow_non_finite: bool = False) -> Any:
    """The JSON value of a file; RunDirError naming the file (and the line) when it is damaged or
    holds NaN / Infinity (unless allow_non_finite: files of other levels, e.g. simulate summaries)."""
    try:
        return json.loads(read_text(path), parse_constant=None if allow_non_finite else _no_constant)
    except json.JSONDecodeError as err:
        raise RunDirError(f"{path}: not valid JSON ({err.msg} at line {err.lineno})") from None
    except ValueError as err:
        if isinstance(err, RunDirError):
            raise
        raise RunDirError(f"{path}: {err}") from None


def _no_constant(name: str):
    raise ValueError(f"holds {name}, which JSON does not allow")


def _report_or_raise(err: RunDirError, problems: list[str] | None) -> None:
    if problems is None:
        raise err
    problems.append(str(err))
