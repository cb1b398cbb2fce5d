"""Evolution Strategies on the bandit, as the paper runs it (one-point, standardized rewards).

One step, for each seed:
    eps_i ~ N(0, I_d), i = 1..N          (two-point: eps_{i + N/2} = -eps_i)
    theta_i = theta + sigma eps_i
    R_i = mean reward of member i over the batch prompts, its rollouts either greedy
          (argmax path, the paper's easy setting) or sampled at `temperature`
    z_i = (R_i - mean R) / (std R + 1e-8)   (population std; `zscore=False`: centered, (R_i - mean R)
                                            times `center_scale`, as llm's ES does)
    theta <- theta + alpha (1/N) sum_i z_i eps_i      (1/sigma folded into alpha, as in the paper)
For two-point runs the same sum is (alpha/N) sum_{pairs} (z_i+ - z_i-) eps_i.
`null=True` replaces z by standardized N(0, 1) draws: the same noise, no reward signal (and no update
where all rewards are equal, as real ES).
`bf16=True` emulates in-place perturb / restore / update of bfloat16 weights (see bf16.py).
Expectation (zscore off, center_scale 1): E[alpha (1/N) sum (R_i - mean R) eps_i] ~ E[alpha (1/N) sum R_i eps_i] = alpha sigma grad F_sigma(theta), with
F_sigma(theta) = E_eps F(theta + sigma eps) the Gaussian-smoothed reward.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bandit import Task, _check_range, sample, softmax
from .bf16 import perturb_restore_bf16, round_to_bf16

ZSCORE_EPS = 1e-8


@dataclass(frozen=True)
class ESConfig:
    population: int = 32          # N
    sigma: float = 0.5            # perturbation scale (logit units: Phi eps has unit variance per logit)
    lr: float = 0.05              # alpha, with 1/sigma folded in
    rollout: str = "greedy"       # "greedy" or "sampled" member rollouts
    temperature: float = 1.0      # of sampled member rollouts
    samples_per_prompt: int = 1   # sampled rollouts per member and prompt
    zscore: bool = True
    center_scale: float = 1.0     # zscore off: centered rewards times this (alpha rescaled to the z-scored norm)
    antithetic: bool = False      # two-point estimator
    null: bool = False            # random z: the signal-free control
    bf16: bool = False            # emulate bfloat16 weights perturbed in place
    batch_size: int | None = None  # prompts per step (None: all)

    name = "es"

    def __post_init__(self):
        _check_range("population", self.population, 2, integer=True)
        _check_range("sigma", self.sigma, 0, low_open=True)
        _check_range("lr", self.lr, 0, low_open=True)
        _check_range("center_scale", self.center_scale, 0, low_open=True)
        if self.zscore and self.center_scale != 1.0:
            raise ValueError(f"center_scale rescales centered rewards: it needs zscore=False, got {self.center_scale!r}")
        if self.rollout not in ("greedy", "sampled"):
            raise ValueError(f"rollout must be 'greedy' or 'sampled', got {self.rollout!r}")
        _check_range("temperature", self.temperature, 0, low_open=True)
        _check_range("samples_per_prompt", self.samples_per_prompt, 1, integer=True)
        if self.antithetic and self.population % 2:
            raise ValueError(f"population must be even for antithetic (two-point) ES, got {self.population}")
        if self.batch_size is not None:
            _check_range("batch_size", self.batch_size, 1, integer=True)

    def responses_per_step(self, n_batch: int) -> int:
        """Sampled responses per update: one rollout per member and prompt (greedy) or samples_per_prompt."""
        return self.population * n_batch * (1 if self.rollout == "greedy" else self.samples_per_prompt)

    def flops_per_step(self, n_batch: int) -> float:
        """The paper's count, per response of unit length and per parameter: forward passes only, 2 N B."""
        return 2.0 * self.responses_per_step(n_batch)


def standardize(r: np.ndarray) -> np.ndarray:
    """z = (r - mean r) / (std r + 1e-8) over the last (member) axis, population std."""
    return (r - r.mean(-1, keepdims=True)) / (r.std(-1, keepdims=True) + ZSCORE_EPS)


def member_fitness(task: Task, member_logits: np.ndarray, batch: np.ndarray, cfg: ESConfig,
                   rng: np.random.Generator) -> np.ndarray:
    """R_i: each member's mean reward over the batch prompts. member_logits (S, N, P, V) -> (S, N)."""
    logits = member_logits[:, :, batch]
    if cfg.rollout == "greedy":
        paths = logits.argmax(-1)[..., None]
    else:
        paths = sample(rng, softmax(logits, cfg.temperature), cfg.samples_per_prompt)
    reward = task.reward[:, batch].reshape(task.n_seeds, 1, len(batch), task.n_paths)
    return np.take_along_axis(reward, paths, axis=-1).mean(axis=(-2, -1))


def es_step(task: Task, theta: np.ndarray, cfg: ESConfig, rng: np.random.Generator):
    """One ES update of theta (S, d). Returns (new theta, info dict)."""
    S, d, N = task.n_seeds, task.dim, cfg.population
    n_batch = task.n_prompts if cfg.batch_size is None else min(cfg.batch_size, task.n_prompts)
    batch = np.sort(rng.choice(task.n_prompts, size=n_batch, replace=False))
    eps = rng.standard_normal((S, N, d))
    if cfg.antithetic:
        eps[:, N // 2:] = -eps[:, :N // 2]
    if cfg.bf16:
        members, theta = perturb_restore_bf16(theta, cfg.sigma * eps)
    else:
        members = theta[:, None, :] + cfg.sigma * eps
    member_logits = task.logits(members)
    fitness = member_fitness(task, member_logits, batch, cfg, rng)
    if cfg.null:
        z = standardize(rng.standard_normal((S, N))) * (np.ptp(fitness, axis=-1, keepdims=True) > 0)
    elif cfg.zscore:
        z = standardize(fitness)
    else:
        z = (fitness - fitness.mean(-1, keepdims=True)) * cfg.center_scale
    update = cfg.lr / N * np.einsum("sn,snd->sd", z, eps)
    new_theta = round_to_bf16(theta + update) if cfg.bf16 else theta + update
    return new_theta, {"fitness": fitness, "z": z, "member_logits": member_logits, "batch": batch,
                       "responses": cfg.responses_per_step(n_batch), "flops": cfg.flops_per_step(n_batch)}
