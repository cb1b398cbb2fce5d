"""The CPU stand-in for the GPU checks: `ESCOV_GPU_STANDIN=cpu` runs them on the CPU.

With it, the tests marked `gpu` (tests/llm/test_gpu.py) run on the CPU instead of being skipped, and
`scripts/gpu_check.sh` runs every part on the CPU at the tiny size, so that the checks' own code
(its parts, its JSON, the Ray test's set-up) is tried on a machine without CUDA before a GPU is lent.
Figures from a stand-in run are not GPU figures. Standard library only: the GPU check's driver reads
it before it knows whether torch is installed.
"""

from __future__ import annotations

import os

ENV = "ESCOV_GPU_STANDIN"


def active() -> bool:
    """True when the GPU checks run on the CPU (ENV is "cpu")."""
    return os.environ.get(ENV, "") == "cpu"


def device() -> str:
    """The device the GPU checks compute on: "cpu" under the stand-in, else "cuda:0"."""
    return "cpu" if active() else "cuda:0"
