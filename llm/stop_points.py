"""Named points of a training run where a test kills it (SIGKILL, as a crash would): ESCOV_TEST_STOP_AT names one.

start             base evaluation and step-0 probe written
step-N            metrics row N appended, its checkpoint not yet written
checkpoint-N      checkpoint N written (at a phase switch, before the next phase starts)
final-population  the final probe written
final-eval        final evaluation done, eval.json not written
"""

from __future__ import annotations

import os
import signal

STOP_ENV = "ESCOV_TEST_STOP_AT"  # tests: kill -9 this process at the named point of the run


def stop_point(name: str) -> None:
    """Kill this process (SIGKILL, as a crash would) when ESCOV_TEST_STOP_AT names this point:
    "start" (base evaluation and step-0 probe written), "step-N" (metrics row N appended, its
    checkpoint not yet written), "checkpoint-N" (checkpoint N written; at a phase switch, before the
    next phase starts), "final-population", "final-eval" (final evaluation done, eval.json not written)."""
    if os.environ.get(STOP_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
