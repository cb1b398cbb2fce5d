"""Cheap ES-vs-GRPO bandit analogues of the paper's experiments (numpy only).

    bandit.py        the task: a reasoning benchmark as a contextual bandit with shared, network-like parameters
    es.py            Evolution Strategies on the bandit, as the paper runs it (one-point, standardized rewards)
    grpo.py          GRPO on the bandit, with exact gradients of the sampled surrogate
    bf16.py          bfloat16 weights emulated in numpy (the paper's code perturbs bf16 weights in place)
    measure.py       per-step metrics, from exact policy probabilities wherever possible
    schedules.py     GRPO->ES and ES->GRPO schedules; the three ways to give two methods the same budget
    train.py         the training loop: phases of GRPO and/or ES on a task, the per-step metrics recorded
    cli.py           `python -m escov.simulate list | run NAME | all`
    experiments/     the paper's experiments as bandit analogues (experiments/__init__.py maps them)

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
from .train import BanditRun, NonFiniteError, train  # noqa: E402

__all__ = [
    "BanditTask",
    "TaskShape",
    "make_task",
    "ESConfig",
    "GRPOConfig",
    "MeasureConfig",
    "BUDGETS",
    "grpo_budget",
    "schedule",
    "NonFiniteError",
    "BanditRun",
    "train",
]
