"""The training loop: run phases of GRPO and/or ES on a task and record the per-step metrics.

A phase is (config, steps); a pure run has one phase, a schedule such as GRPO->ES has two (the
optimizer state is fresh in each phase; GRPO's KL reference is always the base policy).
Policy metrics are recorded at theta_0 .. theta_T (T + 1 rows), update metrics for updates
1 .. T (T rows; NaN where a metric does not apply to that step's algorithm). Every array has a
seed axis. A step that makes theta, the logits or a metric non-finite raises NonFiniteError
naming the step and the quantity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from tqdm.auto import tqdm

from escov.theory.errors import NonFiniteError
from escov.theory.lemmas import es_update_prediction

from .bandit import BanditTask
from .bf16 import round_to_bf16
from .es import ESConfig, es_step
from .grpo import GRPOConfig, grpo_step
from .measure import MeasureConfig, policy_metrics, population_metrics

Phase = tuple["GRPOConfig | ESConfig", int]


@dataclass
class BanditRun:
    policy: dict[str, np.ndarray]  # name -> (T + 1, S)
    updates: dict[str, np.ndarray]  # name -> (T, S)
    success: np.ndarray  # (T + 1, S, P): p_theta(x) at every step
    mixture_success: np.ndarray  # (T, S, P): p_w(x) of ES steps' fitness-weighted mixtures (NaN for GRPO)
    predicted_change: np.ndarray  # (T, S, P): ES steps' first-order change of p(x), (alpha/sigma) Cov(z, p_i)
    responses: np.ndarray  # (T + 1,) cumulative sampled responses (per seed)
    flops: np.ndarray  # (T + 1,) cumulative cost in the paper's FLOP units (per seed)
    algorithm: list[str]  # (T,) "grpo" or "es" for each update
    theta0: np.ndarray  # (S, d)
    theta: np.ndarray  # (S, d) final parameters
    phases: list = field(default_factory=list)

    @property
    def steps(self) -> int:
        return len(self.algorithm)

    def final(self, name: str) -> np.ndarray:
        """The last row of a policy metric: one value per seed."""
        return self.policy[name][-1]


def _check_finite(step: int, algo: str, name: str, arr: np.ndarray) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        raise NonFiniteError(
            f"step {step} ({algo}): {name} became non-finite ({int(bad.sum())} of {arr.size} entries NaN or inf)"
        )


def _check_phases(phases: Sequence[Phase]) -> list[Phase]:
    phases = list(phases)
    if not phases:
        raise ValueError("phases must hold at least one (config, steps) pair")
    for cfg, steps in phases:
        if not isinstance(cfg, (GRPOConfig, ESConfig)):
            raise ValueError(f"phases must pair a GRPOConfig or ESConfig with a step count, got {type(cfg).__name__}")
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
            raise ValueError(f"phase steps must be an integer >= 0, got {steps!r}")
    return phases


def train(
    task: BanditTask,
    phases: Sequence[Phase],
    measure: MeasureConfig = MeasureConfig(),
    seed: int = 0,
    progress: bool = True,
    desc: str | None = None,
    population: bool = True,
) -> BanditRun:
    """Run the phases in order from theta_0 and return the recorded metrics.
    population=False skips the ES population metrics (faster; their rows are then NaN)."""
    phases = _check_phases(phases)
    rng = np.random.default_rng([seed, *task.seeds])
    theta = task.theta0.copy()
    if any(isinstance(cfg, ESConfig) and cfg.inplace_bf16 for cfg, _ in phases):
        theta = round_to_bf16(theta).astype(np.float64)  # the base model stored in bfloat16
    theta0 = theta.copy()
    S, P = task.n_seeds, task.n_prompts

    def measure_at(step: int, algo: str):
        _check_finite(step, algo, "logits", task.logits(theta))
        metrics, p = policy_metrics(task, theta, theta0, measure, rng)
        for name, value in metrics.items():
            _check_finite(step, algo, name, value)
        return metrics, p

    first, p = measure_at(0, "base")
    policy_rows, success = [first], [p]
    update_rows, mixture, predicted, algorithm = [], [], [], []
    responses, flops = [0.0], [0.0]
    total = sum(steps for _, steps in phases)
    bar = tqdm(total=total, desc=desc or " -> ".join(cfg.name for cfg, _ in phases), disable=not progress, leave=False)
    for cfg, steps in phases:
        state: dict = {}
        for _ in range(steps):
            step = len(algorithm) + 1
            if isinstance(cfg, GRPOConfig):
                new_theta, info = grpo_step(task, theta, cfg, rng, theta0, state)
                row = {k: info[k] for k in ("reward", "zero_std_share", "clipped_share")}
                p_w = pred = np.full((S, P), np.nan)
            else:
                new_theta, info = es_step(task, theta, cfg, rng)
                row = {"fitness_mean": info["fitness"].mean(-1), "fitness_std": info["fitness"].std(-1)}
                p_w = pred = np.full((S, P), np.nan)
            _check_finite(step, cfg.name, "theta", new_theta)
            row["update_norm"] = np.linalg.norm(new_theta - theta, axis=-1)
            if isinstance(cfg, ESConfig) and population:
                _check_finite(step, cfg.name, "member logits", info["member_logits"])
                pop, p_i, p_w = population_metrics(task, theta, info["member_logits"], info["z"], cfg.sigma)
                row.update(pop)
                z = np.broadcast_to(info["z"][:, None, :], p_i.shape)
                pred = es_update_prediction(z, p_i, cfg.alpha, cfg.sigma)
            theta = new_theta
            metrics, p = measure_at(step, cfg.name)
            policy_rows.append(metrics)
            success.append(p)
            update_rows.append(row)
            mixture.append(p_w)
            predicted.append(pred)
            algorithm.append(cfg.name)
            responses.append(responses[-1] + info["responses"])
            flops.append(flops[-1] + info["flops"])
            bar.update()
    bar.close()
    update_names = sorted({k for row in update_rows for k in row})
    nan = np.full(S, np.nan)
    return BanditRun(
        policy={k: np.array([row[k] for row in policy_rows]) for k in policy_rows[0]},
        updates={
            k: np.array([row.get(k, nan) for row in update_rows]).reshape(len(update_rows), S) for k in update_names
        },
        success=np.array(success),
        mixture_success=np.array(mixture).reshape(len(mixture), S, P),
        predicted_change=np.array(predicted).reshape(len(predicted), S, P),
        responses=np.array(responses),
        flops=np.array(flops),
        algorithm=algorithm,
        theta0=theta0,
        theta=theta,
        phases=phases,
    )
