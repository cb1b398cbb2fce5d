"""Cheap ES-vs-GRPO bandit analogues of the paper's experiments (numpy only).

The matrices here are small, so a multi-threaded BLAS only adds contention (on a busy 2-core
machine it made runs 10-20x slower); unless the user has chosen, numpy's OpenBLAS runs on one
thread when this package is imported before numpy.
"""
import os as _os
import sys as _sys

if "numpy" not in _sys.modules:
    _os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .bandit import BanditTask, TaskShape, make_task  # noqa: E402
from .es import ESConfig  # noqa: E402
from .grpo import GRPOConfig  # noqa: E402
from .measure import MeasureConfig  # noqa: E402
from .schedules import BUDGETS, grpo_budget, schedule  # noqa: E402
from .train import NonFiniteError, BanditRun, train  # noqa: E402

__all__ = ["BanditTask", "TaskShape", "make_task", "ESConfig", "GRPOConfig", "MeasureConfig", "BUDGETS",
           "grpo_budget", "schedule", "NonFiniteError", "BanditRun", "train"]
