"""Full-parameter Evolution Strategies for LLMs, as in PAPER.md ("ES, one-point standardized").

One iteration at the center theta (fp32 master weights, never perturbed themselves):

    for each member i = 1..N:
        write theta + sigma * eps_i into the engine        (eps_i ~ N(0, I), regenerated from seeds)
        R_i = mean verifier reward of its rollouts on the batch of prompts
    write theta back into the engine
    z_i = (R_i - mean R) / (std R + 1e-8)                  (population std, ddof 0)
    theta <- theta + alpha * (1/N) * sum_i z_i eps_i       (1/sigma folded into alpha)

Noise is never stored: eps_i for one parameter tensor is drawn from a generator seeded by a hash of
(iteration seed, direction index, parameter name), chunk by chunk, so every tensor gets independent
noise (re-seeding one generator with the same seed for every tensor would give equal-shaped layers
identical noise) and the update is rebuilt from the seeds and z alone.

Options: member rollouts greedy (member_temperature = 0, the paper's easy setting) or sampled;
two-point antithetic pairs (member 2d uses +eps_d, member 2d+1 uses -eps_d); z-scoring off (rewards
are only centered, R_i - mean R, optionally times a fixed center_scale: the step size rescaled to the
z-scored update's norm); a parameter subset (regular expression on parameter names); a
null control whose z are random numbers (no reward signal); and `inplace_bf16`, which reproduces
the paper's code: perturb the engine's bf16 weights in place by adding sigma * eps, evaluate,
subtract it again (leaving rounding residue), and add the update member by member in bf16.
All-equal rewards give z = 0, so a zero update (never NaN).
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Iterator, TYPE_CHECKING

import numpy as np
import torch

from llm.rollout import NonFiniteError, derive_seed, rollout
from llm.tasks.base import Problem, Task

if TYPE_CHECKING:
    from llm.engines.base import Engine

PAPER_SIGMA = 1.5e-3
PAPER_ALPHA = 2.5e-4
ZSCORE_EPS = 1e-8


@dataclass
class ESConfig:
    population_size: int = 32        # N members (antithetic: N/2 directions, each used with + and -)
    sigma: float = 1.5e-3            # perturbation scale (paper 1.5e-3)
    alpha: float = 2.5e-4            # step size with 1/sigma folded in (paper 2.5e-4)
    member_temperature: float = 0.0  # 0: greedy member rollouts (paper, easy setting); > 0: sampled
    member_samples: int = 1          # rollouts per prompt per member (1 when greedy)
    antithetic: bool = False         # two-point: pairs +eps, -eps
    zscore: bool = True              # False: z_i = R_i - mean R (centered, not scaled)
    center_scale: float = 1.0        # zscore False: centered rewards times this (alpha rescaled to the z-scored update norm)
    param_pattern: str = ""          # regex on parameter names to perturb ("" = all parameters)
    null_control: bool = False       # z replaced by standardized random normals (no reward signal)
    inplace_bf16: bool = False       # the paper code's in-place add / subtract on bf16 engine weights
    noise_chunk: int = 1 << 20       # elements generated per call for large tensors

    def validate(self) -> None:
        n = self.population_size
        if isinstance(n, bool) or not isinstance(n, int) or n < 2:
            raise ValueError(f"es.population_size must be an integer >= 2, got {n!r}")
        if self.antithetic and n % 2:
            raise ValueError(f"es.population_size must be even with es.antithetic, got {n}")
        if self.zscore and self.center_scale != 1.0:
            raise ValueError(f"es.center_scale rescales centered rewards: it needs es.zscore = false, got {self.center_scale!r}")
        for name in ("sigma", "alpha", "center_scale"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"es.{name} must be a finite number > 0, got {v!r}")
        if not isinstance(self.member_temperature, (int, float)) or not 0 <= self.member_temperature < float("inf"):
            raise ValueError(f"es.member_temperature must be >= 0 (0 = greedy), got {self.member_temperature!r}")
        if isinstance(self.member_samples, bool) or not isinstance(self.member_samples, int) or self.member_samples < 1:
            raise ValueError(f"es.member_samples must be an integer >= 1, got {self.member_samples!r}")
        if self.member_temperature == 0 and self.member_samples != 1:
            raise ValueError(f"es.member_samples must be 1 with greedy rollouts (member_temperature 0), got {self.member_samples}")
        if isinstance(self.noise_chunk, bool) or not isinstance(self.noise_chunk, int) or self.noise_chunk < 1:
            raise ValueError(f"es.noise_chunk must be an integer >= 1, got {self.noise_chunk!r}")
        try:
            re.compile(self.param_pattern)
        except re.error as err:
            raise ValueError(f"es.param_pattern is not a valid regular expression: {err}") from None


# ----------------------------------------------------------------------------- noise from seeds

def noise_chunks(seed: int, direction: int, name: str, numel: int, chunk: int) -> Iterator[torch.Tensor]:
    """eps for one tensor (flattened), chunk by chunk, from a generator seeded by (seed, direction, name)."""
    gen = torch.Generator().manual_seed(derive_seed(seed, direction, name))
    for start in range(0, numel, chunk):
        yield torch.randn(min(chunk, numel - start), generator=gen)


def noise(seed: int, direction: int, name: str, shape: torch.Size, chunk: int = 1 << 20) -> torch.Tensor:
    """The whole eps tensor of one parameter (fp32)."""
    chunks = list(noise_chunks(seed, direction, name, math.prod(shape), chunk))
    return (chunks[0] if len(chunks) == 1 else torch.cat(chunks)).view(shape)


def member_direction(member: int, antithetic: bool) -> tuple[int, float]:
    """(noise direction, sign) of a member: member i uses +eps_i, or +-eps_{i//2} with antithetic pairs."""
    return (member // 2, 1.0 if member % 2 == 0 else -1.0) if antithetic else (member, 1.0)


def iteration_seeds(run_seed: int, step: int) -> tuple[int, int]:
    """(noise seed, rollout seed) of an iteration; each member samples from its own seed derived from
    the rollout seed (member_rollout_seed)."""
    return derive_seed(run_seed, step, "es-noise"), derive_seed(run_seed, step, "es-rollout")


def member_rollout_seed(gen_seed: int, member: int) -> int:
    """The sampling seed of one member: sampled members draw independently of each other (as in
    simulate), not common random numbers; greedy members do not use it."""
    return derive_seed(gen_seed, member, "member")


def standardize(rewards: np.ndarray, zscore: bool = True) -> np.ndarray:
    """z_i = (R_i - mean R) / (std R + 1e-8) (population std); only centered when zscore is False.

    All-equal rewards give exactly zero (so a zero update)."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.max() == r.min():
        return np.zeros_like(r)
    centered = r - r.mean()
    return centered / (r.std() + ZSCORE_EPS) if zscore else centered


def direction_coefficients(z: np.ndarray, antithetic: bool) -> np.ndarray:
    """c_d = sum over members m with direction d of sign_m z_m; the update is alpha/N sum_d c_d eps_d."""
    n_dir = len(z) // 2 if antithetic else len(z)
    coef = np.zeros(n_dir)
    for m, zm in enumerate(z):
        d, sign = member_direction(m, antithetic)
        coef[d] += sign * zm
    return coef


def combined_noise(it_seed: int, name: str, shape: torch.Size, coef: np.ndarray, chunk: int = 1 << 20,
                   draw=noise) -> torch.Tensor:
    """sum_d c_d eps_d for one parameter tensor (fp32), each eps_d from draw (default: regenerated from its seed)."""
    out = torch.zeros(shape)
    for d, c in enumerate(coef):
        if c != 0.0:
            out.add_(draw(it_seed, d, name, shape, chunk), alpha=float(c))
    return out


def select_parameters(named: Iterator[tuple[str, torch.nn.Parameter]], pattern: str) -> list[str]:
    """Names of the parameters matched by the pattern (all when it is empty); error when none match."""
    names = [n for n, _ in named if not pattern or re.search(pattern, n)]
    if not names:
        raise ValueError(f"es.param_pattern {pattern!r} matches no parameter name")
    return names


# ----------------------------------------------------------------------------- the trainer

@dataclass
class ESStep:
    rewards: np.ndarray       # [N] member fitness
    z: np.ndarray             # [N] standardized fitness used in the update
    update_norm: float        # ||theta_new - theta_old|| (fp32)
    n_tokens: int             # generated tokens
    weight_seconds: float     # time spent perturbing, restoring and updating weights
    seconds: float            # the whole iteration


class ES:
    """ES on an engine. master: fp32 center weights by HF parameter name (None with inplace_bf16).

    With inplace_bf16 the engine must expose the live HF module as `engine.model` (HFEngine)."""

    def __init__(self, cfg: ESConfig, engine: Engine, task: Task, names: list[str],
                 master: dict[str, torch.Tensor] | None, *, max_new_tokens: int, seed: int):
        self.cfg, self.engine, self.task, self.names = cfg, engine, task, names
        self.master, self.max_new_tokens, self.seed = master, max_new_tokens, seed
        self.master_modified = False  # by the update of the current step
        if cfg.inplace_bf16:
            if not hasattr(engine, "model"):
                raise ValueError("es.inplace_bf16 needs an engine exposing its HF model (engine = 'hf')")
            self.live = dict(engine.model.named_parameters())
        elif master is None or set(master) != set(names):
            raise ValueError("master must hold fp32 weights for exactly the perturbed parameter names")

    # -- weights ---------------------------------------------------------------------------
    def _eps(self, it_seed: int, direction: int, name: str, shape: torch.Size) -> torch.Tensor:
        return noise(it_seed, direction, name, shape, self.cfg.noise_chunk)

    def _combined(self, it_seed: int, name: str, shape: torch.Size, coef: np.ndarray) -> torch.Tensor:
        """sum_d c_d eps_d of one parameter (the update's direction before alpha / N)."""
        return combined_noise(it_seed, name, shape, coef, self.cfg.noise_chunk)

    def write_member(self, it_seed: int, member: int) -> None:
        """Engine weights <- theta + sign * sigma * eps_d (from the fp32 master, or in place in bf16)."""
        d, sign = member_direction(member, self.cfg.antithetic)
        if self.cfg.inplace_bf16:
            with torch.no_grad():
                for name in self.names:
                    p = self.live[name]
                    p.add_(self._eps(it_seed, d, name, p.shape).to(p.dtype), alpha=sign * self.cfg.sigma)
            return
        self.engine.load_weights((name, self.master[name] + (sign * self.cfg.sigma) * self._eps(it_seed, d, name, self.master[name].shape))
                                 for name in self.names)

    def restore(self, it_seed: int, member: int) -> None:
        """Engine weights <- theta (copied from the master; in place: subtract the same sigma * eps)."""
        if self.cfg.inplace_bf16:
            d, sign = member_direction(member, self.cfg.antithetic)
            with torch.no_grad():
                for name in self.names:
                    p = self.live[name]
                    p.add_(self._eps(it_seed, d, name, p.shape).to(p.dtype), alpha=-sign * self.cfg.sigma)
            return
        self.engine.load_weights((name, self.master[name]) for name in self.names)

    def apply_update(self, it_seed: int, z: np.ndarray, step: int) -> float:
        """theta <- theta + alpha (1/N) sum_i z_i eps_i, rebuilt from seeds; returns the update's norm."""
        n = len(z)
        coef = direction_coefficients(z, self.cfg.antithetic)
        sq_norm = 0.0
        with torch.no_grad():
            if self.cfg.inplace_bf16:  # the paper's code: member by member, each add rounded to bf16
                for name in self.names:
                    p = self.live[name]
                    before = p.float()
                    for d, c in enumerate(coef):
                        if c != 0.0:
                            p.add_(self._eps(it_seed, d, name, p.shape).to(p.dtype), alpha=self.cfg.alpha * c / n)
                    sq_norm += float(((p.float() - before) ** 2).sum())
                    if not torch.isfinite(p).all():
                        raise NonFiniteError(f"step {step}: weight {name} is not finite after the ES update")
                return sq_norm ** 0.5
            for name in self.names:  # tensor by tensor: one tensor of scratch memory, no second model
                theta = self.master[name]
                new = theta + (self.cfg.alpha / n) * self._combined(it_seed, name, theta.shape, coef)
                if not torch.isfinite(new).all():
                    raise NonFiniteError(f"step {step}: weight {name} is not finite after the ES update")
                sq_norm += float(((new - theta) ** 2).sum())
                theta.copy_(new)
                self.master_modified = True
        self.engine.load_weights((name, self.master[name]) for name in self.names)
        return sq_norm ** 0.5

    # -- one iteration -----------------------------------------------------------------------
    def member_rewards(self, it_seed: int, gen_seed: int, problems: list[Problem], members: list[int],
                       step: int) -> tuple[np.ndarray, int, float]:
        """(mean reward of each listed member, generated tokens, seconds spent writing weights):
        member by member, each written into the engine, its rollouts scored, the center restored after
        the last one (from the master the next write overwrites every perturbed tensor anyway)."""
        kw = dict(n=self.cfg.member_samples, temperature=self.cfg.member_temperature,
                  max_new_tokens=self.max_new_tokens, step=step)
        rewards, tokens, weight_s = np.zeros(len(members)), 0, 0.0
        for i, m in enumerate(members):
            tw = time.perf_counter()
            self.write_member(it_seed, m)
            weight_s += time.perf_counter() - tw
            out = rollout(self.engine, self.task, problems, seed=member_rollout_seed(gen_seed, m), **kw)
            rewards[i], tokens = out.rewards.mean(), tokens + out.n_tokens
            if self.cfg.inplace_bf16 or i == len(members) - 1:
                tw = time.perf_counter()
                self.restore(it_seed, m)
                weight_s += time.perf_counter() - tw
        return rewards, tokens, weight_s

    def fitness(self, rewards: np.ndarray, step: int) -> np.ndarray:
        """z from the rewards (or standardized random normals under the null control). The null skips
        the steps where real ES would not update (all rewards equal: z = 0), so both move equally often."""
        if self.cfg.null_control and np.ptp(rewards) > 0:
            return standardize(np.random.default_rng(derive_seed(self.seed, step, "es-null")).standard_normal(len(rewards)))
        z = standardize(rewards, self.cfg.zscore)
        return z if self.cfg.zscore else z * self.cfg.center_scale

    def step(self, problems: list[Problem], step: int) -> ESStep:
        """Evaluate the N members on the batch, standardize their fitness and update the center."""
        t0 = time.perf_counter()
        self.master_modified = False
        it_seed, gen_seed = iteration_seeds(self.seed, step)
        rewards, tokens, weight_s = self.member_rewards(it_seed, gen_seed, problems,
                                                        list(range(self.cfg.population_size)), step)
        z = self.fitness(rewards, step)
        tw = time.perf_counter()
        norm = self.apply_update(it_seed, z, step)
        weight_s += time.perf_counter() - tw
        return ESStep(rewards=rewards, z=z, update_norm=norm, n_tokens=tokens, weight_seconds=weight_s,
                      seconds=time.perf_counter() - t0)

    def center_weights(self, copy: bool = True) -> dict[str, torch.Tensor]:
        """The current center of the perturbed parameters (fp32 copies; copy=False: the master itself)."""
        if self.cfg.inplace_bf16:
            return {n: self.live[n].detach().float() for n in self.names}
        return {n: t.clone() if copy else t for n, t in self.master.items()}

    def state_is_intact(self) -> bool:
        """Whether the center is still the one before the current step: no master tensor updated yet
        (an update stopped by a non-finite tensor may have written the tensors before it)."""
        return not self.cfg.inplace_bf16 and not self.master_modified
