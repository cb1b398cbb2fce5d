"""Evolution Strategies on the bandit, as the paper runs it (one-point, standardized rewards).

One step, for each seed:
    eps_i ~ N(0, I_d), i = 1..N          (two-point: eps_{i + N/2} = -eps_i)
    theta_i = theta + sigma eps_i
    R_i = mean reward of member i over the batch prompts, its rollouts either greedy
          (argmax path, member_temperature 0, the paper's easy setting) or sampled at member_temperature
    z_i = (R_i - mean R) / (std R + 1e-8)   (theory.standardize; `zscore=False`: centered, (R_i - mean R)
                                            times `center_scale`, as llm's ES does)
    theta <- theta + alpha (1/N) sum_i z_i eps_i      (1/sigma folded into alpha, as in the paper)
For two-point runs the same sum is (alpha/N) sum_{pairs} (z_i+ - z_i-) eps_i.
`null_control=True` replaces z by standardized N(0, 1) draws: the same noise, no reward signal (and no
update where all rewards are equal, as real ES).
`inplace_bf16=True` emulates in-place perturb / restore / update of bfloat16 weights (see bf16.py).
Expectation (zscore off, center_scale 1):
E[alpha (1/N) sum (R_i - mean R) eps_i] ~ E[alpha (1/N) sum R_i eps_i] = alpha sigma grad F_sigma(theta), with
F_sigma(theta) = E_eps F(theta + sigma eps) the Gaussian-smoothed reward.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escov.theory.budget import es_flops
from escov.theory.paper import ES_ZSCORE_EPS, PAPER_POPULATION_SIZE
from escov.theory.standardize import standardize

from .bandit import BanditTask, _check_range, sample, softmax
from .bf16 import perturb_restore_bf16, round_to_bf16


@dataclass(frozen=True)
class ESConfig:
    """The bandit's ES settings, named as llm.es.ESConfig names the same settings."""

    population_size: int = PAPER_POPULATION_SIZE  # N
    sigma: float = 0.5  # perturbation scale (logit units: Phi eps has unit variance per logit)
    alpha: float = 0.05  # step size, with 1/sigma folded in
    member_temperature: float = 0.0  # 0: greedy member rollouts (the paper's easy setting); > 0: sampled at it
    member_samples: int = 1  # sampled rollouts per member and prompt (1 when greedy)
    zscore: bool = True
    center_scale: float = 1.0  # zscore off: centered rewards times this (alpha rescaled to the z-scored norm)
    antithetic: bool = False  # two-point estimator
    null_control: bool = False  # random z: the signal-free control
    inplace_bf16: bool = False  # emulate bfloat16 weights perturbed in place
    batch_size: int | None = None  # prompts per step (None: all)

    name = "es"

    def __post_init__(self):
        _check_range("population_size", self.population_size, 2, integer=True)
        _check_range("sigma", self.sigma, 0, low_open=True)
        _check_range("alpha", self.alpha, 0, low_open=True)
        _check_range("center_scale", self.center_scale, 0, low_open=True)
        if self.zscore and self.center_scale != 1.0:
            raise ValueError(
                f"center_scale rescales centered rewards: it needs zscore=False, got {self.center_scale!r}"
            )
        _check_range("member_temperature", self.member_temperature, 0)
        _check_range("member_samples", self.member_samples, 1, integer=True)
        if self.greedy and self.member_samples != 1:
            raise ValueError(
                f"member_samples must be 1 with greedy rollouts (member_temperature 0), got {self.member_samples}"
            )
        if self.antithetic and self.population_size % 2:
            raise ValueError(f"population_size must be even for antithetic (two-point) ES, got {self.population_size}")
        if self.batch_size is not None:
            _check_range("batch_size", self.batch_size, 1, integer=True)

    @property
    def greedy(self) -> bool:
        return self.member_temperature == 0

    def responses_per_step(self, n_batch: int) -> int:
        """Sampled responses per update: member_samples rollouts per member and prompt."""
        return self.population_size * n_batch * self.member_samples

    def flops_per_step(self, n_batch: int) -> float:
        """The paper's count (theory.budget), per response of unit length and per parameter: 2 N m B."""
        return es_flops(self.population_size, self.member_samples) * n_batch


def member_fitness(
    task: BanditTask, member_logits: np.ndarray, batch: np.ndarray, cfg: ESConfig, rng: np.random.Generator
) -> np.ndarray:
    """R_i: each member's mean reward over the batch prompts. member_logits (S, N, P, V) -> (S, N)."""
    logits = member_logits[:, :, batch]
    if cfg.greedy:
        paths = logits.argmax(-1)[..., None]
    else:
        paths = sample(rng, softmax(logits, cfg.member_temperature), cfg.member_samples)
    reward = task.reward[:, batch].reshape(task.n_seeds, 1, len(batch), task.n_paths)
    return np.take_along_axis(reward, paths, axis=-1).mean(axis=(-2, -1))


def es_step(task: BanditTask, theta: np.ndarray, cfg: ESConfig, rng: np.random.Generator):
    """One ES update of theta (S, d). Returns (new theta, info dict)."""
    S, d, N = task.n_seeds, task.dim, cfg.population_size
    n_batch = task.n_prompts if cfg.batch_size is None else min(cfg.batch_size, task.n_prompts)
    batch = np.sort(rng.choice(task.n_prompts, size=n_batch, replace=False))
    eps = rng.standard_normal((S, N, d))
    if cfg.antithetic:
        eps[:, N // 2 :] = -eps[:, : N // 2]
    if cfg.inplace_bf16:
        members, theta = perturb_restore_bf16(theta, cfg.sigma * eps)
    else:
        members = theta[:, None, :] + cfg.sigma * eps
    member_logits = task.logits(members)
    fitness = member_fitness(task, member_logits, batch, cfg, rng)
    if cfg.null_control:
        z = standardize(rng.standard_normal((S, N)), ES_ZSCORE_EPS) * (np.ptp(fitness, axis=-1, keepdims=True) > 0)
    elif cfg.zscore:
        z = standardize(fitness, ES_ZSCORE_EPS)
    else:
        z = (fitness - fitness.mean(-1, keepdims=True)) * cfg.center_scale
    update = cfg.alpha / N * np.einsum("sn,snd->sd", z, eps)
    new_theta = round_to_bf16(theta + update) if cfg.inplace_bf16 else theta + update
    return new_theta, {
        "fitness": fitness,
        "z": z,
        "member_logits": member_logits,
        "batch": batch,
        "responses": cfg.responses_per_step(n_batch),
        "flops": cfg.flops_per_step(n_batch),
    }
