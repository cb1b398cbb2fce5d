"""One registered endpoint pooled across tasks (issue 54): each task's estimate (a seeds x prompts mean with its
standard error, paper_checks/design.py) combined into one random-effects mean, with the between-task spread.

Model: task i's estimate y_i = mu + u_i + e_i, its own effect u_i ~ N(0, tau^2) and its estimation error
e_i ~ N(0, s_i^2) with s_i known (the task's standard error). mu is the effect averaged over tasks like these.

    tau^2      DerSimonian-Laird: with w_i = 1 / s_i^2, ybar = sum w_i y_i / sum w_i and Q = sum w_i (y_i - ybar)^2,
               tau^2 = max(0, (Q - (k - 1)) / (sum w_i - sum w_i^2 / sum w_i))
    mu         sum w*_i y_i / sum w*_i with w*_i = 1 / (s_i^2 + tau^2)
    interval   mu +- t_{k-1, 0.975} sqrt(max(1, q) / sum w*_i), q = sum w*_i (y_i - mu)^2 / (k - 1): the
               Hartung-Knapp-Sidik-Jonkman interval with its variance factor kept at least 1 (the "modified"
               form), which holds its coverage with as few as 3 tasks (93-100% on synthetic tasks; at no spread it
               covers always, the price of the t quantile on 2 degrees of freedom); the normal interval on
               DerSimonian-Laird's weights (82% with 3 tasks that differ) and the unfloored form (90% with tasks of
               unequal precision) do not (tests/paper_checks/test_pooled.py)
    spread     tau (the between-task standard deviation), I^2 = max(0, (Q - (k - 1)) / Q), and the tasks' own means

With one task there is nothing to pool (the record says so); with two the t quantile on 1 degree of freedom
(12.7) makes the interval wide, as it should be.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

LEVEL = 0.95


def pooled(estimates: dict[str, dict]) -> dict:
    """The random-effects pool (module docstring) of task -> {"mean", "se", ...}: {"mean", "lo", "hi", "se", "df",
    "tau", "i2", "tasks", "by_task"} (by_task: each task's mean), or {"reason", "tasks"} with fewer than 2 tasks."""
    names = sorted(estimates)
    if len(names) < 2:
        return {"reason": f"{len(names)} task(s): nothing to pool", "tasks": names}
    y = np.array([float(estimates[n]["mean"]) for n in names])
    s = np.array([float(estimates[n]["se"]) for n in names])
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(s)) and np.all(s > 0)):
        raise ValueError(f"pooled: every task needs a finite mean and a standard error > 0, got {estimates}")
    k = len(names)
    w = 1.0 / s**2
    ybar = float(np.sum(w * y) / np.sum(w))
    q_stat = float(np.sum(w * (y - ybar) ** 2))
    tau2 = max(0.0, (q_stat - (k - 1)) / (np.sum(w) - np.sum(w**2) / np.sum(w)))
    w_star = 1.0 / (s**2 + tau2)
    mu = float(np.sum(w_star * y) / np.sum(w_star))
    q = float(np.sum(w_star * (y - mu) ** 2) / (k - 1))
    se = math.sqrt(max(1.0, q) / float(np.sum(w_star)))
    half = float(stats.t.ppf(0.5 + LEVEL / 2, k - 1)) * se
    return {
        "mean": mu,
        "lo": mu - half,
        "hi": mu + half,
        "se": se,
        "df": k - 1,
        "tau": math.sqrt(tau2),
        "i2": max(0.0, (q_stat - (k - 1)) / q_stat) if q_stat > 0 else 0.0,
        "tasks": names,
        "by_task": {n: float(v) for n, v in zip(names, y)},
    }
