"""Ctrl-C (SIGINT) and SIGTERM during a run: stop at the next safe point instead of mid-write.

    with stop_on_signals():        # the `llm train` command installs the handlers for the run
        ... stop_if_requested() ...  # the training loop's safe points (after a step and its checkpoint)

The first signal only records itself (and says so on stderr); the loop raises `Interrupted` at its
next safe point, after the step in progress and the checkpoint due at it are written, or in the final
stage before eval.json records the final evaluation (a resume then measures it again). A second signal
raises `InterruptedAtOnce` wherever Python is (inside a reward function that never returns, in the final
evaluation): the run unwinds like any error, so a run that measured nothing yet removes the folder it
created, any other is left to resume from its last checkpoint, and the command prints how. A third
signal gets the default action, which ends the process even in C code that never lets Python's own
handlers run (the kernel ends it; nothing more is written, and the run resumes from its last checkpoint).
Without the handlers (the library used from Python), `stop_if_requested` never stops anything.
Exit codes follow the shell's convention: 128 + the signal number (130 for SIGINT, 143 for SIGTERM);
a second signal ends the process by that signal (the shell shows the same codes).
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_requested: list[int] = []  # the signal received, while the handlers are installed


class Interrupted(Exception):
    """A run stopped by a signal at a safe point."""

    def __init__(self, signum: int, where: str):
        self.signum, self.where = signum, where
        super().__init__(f"stopped by {signal.Signals(signum).name} {where}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class InterruptedAtOnce(BaseException):
    """A run stopped by a second signal wherever it was (a BaseException: a reward function's `except Exception`
    does not swallow it)."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"stopped at once by a second {signal.Signals(signum).name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _record(signum: int, frame) -> None:
    _requested.append(signum)
    for s in SIGNALS:  # a second signal stops at once
        signal.signal(s, _at_once)
    print(
        f"\n{signal.Signals(signum).name}: stopping at the next safe point (after the current step, and its "
        "checkpoint when one is due); a second SIGINT (Ctrl-C) or SIGTERM stops at once",
        file=sys.stderr,
        flush=True,
    )


def _at_once(signum: int, frame) -> None:
    for s in SIGNALS:  # a third signal: the default action, which ends the process even inside C code
        signal.signal(s, signal.SIG_DFL)
    raise InterruptedAtOnce(signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Record SIGINT / SIGTERM instead of dying, for the duration of the block (main thread only;
    elsewhere signals cannot be caught and the block runs unchanged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _record) for s in SIGNALS}
    _requested.clear()
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _requested.clear()


def stop_if_requested(where: str) -> None:
    """A safe point: raise Interrupted when a signal arrived (where: e.g. "after step 7")."""
    if _requested:
        raise Interrupted(_requested[0], where)
