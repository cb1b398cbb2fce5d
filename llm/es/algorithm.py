"""Evolution Strategies for LLMs, as in docs/paper.md ("ES, one-point standardized"): the paper's loop.

One iteration at the center theta (fp32 master weights, never perturbed themselves):

    for each member i = 1..N:                              (self.members: one of the strategies below)
        theta_i = theta + sigma * eps_i                    (eps_i ~ N(0, I), regenerated from seeds: noise.py)
        R_i = mean verifier reward of its rollouts on the batch of prompts
    z_i = (R_i - mean R) / (std R + 1e-8)                  (population std, ddof 0: theory.standardize)
    theta <- theta + alpha * (1/N) * sum_i z_i eps_i       (1/sigma folded into alpha)

How the members are evaluated is a strategy composed into ES (`members`), each handing the same
rewards to the same update: one by one in the engine (members.py), all in one batched forward on
the HF engine (batched_hf.py), spread over Ray actors (ray_actors.py), as vLLM LoRA adapters
(vllm_lora.py), or perturbed in place inside vLLM's workers (vllm_inplace.py). `make_es` (factory.py) composes them from the options.

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

import re
import time
from dataclasses import dataclass
from typing import Iterator, TYPE_CHECKING

import numpy as np
import torch

from llm.config import ESConfig  # defined with every other setting (importable without torch)
from llm.es.members import MemberEvaluator, OneByOne
from llm.es.noise import PopulationNoise, iteration_seeds, member_direction
from llm.rollout import derive_seed
from llm.tasks.base import Problem, Task
from theory.errors import NonFiniteError
from theory.paper_constants import ES_ZSCORE_EPS
from theory.standardize import standardize as standardize_group

if TYPE_CHECKING:
    from llm.engines.base import Engine


def standardize(rewards: np.ndarray, zscore: bool = True) -> np.ndarray:
    """z_i = (R_i - mean R) / (std R + 1e-8) (population std); only centered when zscore is False.

    All-equal rewards give exactly zero (so a zero update)."""
    return standardize_group(rewards, ES_ZSCORE_EPS, scale=zscore)


def direction_coefficients(z: np.ndarray, antithetic: bool) -> np.ndarray:
    """c_d = sum over members m with direction d of sign_m z_m; the update is alpha/N sum_d c_d eps_d."""
    n_dir = len(z) // 2 if antithetic else len(z)
    coef = np.zeros(n_dir)
    for m, zm in enumerate(z):
        d, sign = member_direction(m, antithetic)
        coef[d] += sign * zm
    return coef


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
    """ES on an engine. master: fp32 center weights by HF parameter name (None with inplace_bf16, where
    the center is the engine's own bf16 module). noise: the members' E_d (default: full rank, drawn
    every time); members: how the population is evaluated (default: one by one in the engine)."""

    def __init__(self, cfg: ESConfig, engine: Engine, task: Task, names: list[str],
                 master: dict[str, torch.Tensor] | None, *, max_new_tokens: int, seed: int,
                 noise: PopulationNoise | None = None, members: MemberEvaluator | None = None):
        self.cfg, self.engine, self.task, self.names = cfg, engine, task, names
        self.master, self.max_new_tokens, self.seed = master, max_new_tokens, seed
        self.noise = noise if noise is not None else PopulationNoise(cfg.sigma, cfg.antithetic, 0, cfg.noise_chunk)
        self.members = members if members is not None else OneByOne()
        self.master_modified = False  # by the update of the current step
        if cfg.inplace_bf16:
            module = engine.live_module()
            if module is None:
                raise ValueError("es.inplace_bf16 needs an engine holding its HF module in this process (engine = 'hf')")
            self.live = dict(module.named_parameters())
        elif master is None or set(master) != set(names):
            raise ValueError("master must hold fp32 weights for exactly the perturbed parameter names")

    def eps(self, it_seed: int, direction: int, name: str, shape: torch.Size) -> torch.Tensor:
        """E_d of one parameter (fp32)."""
        return self.noise.direction(it_seed, direction, name, shape)

    # -- one iteration -----------------------------------------------------------------------
    def fitness(self, rewards: np.ndarray, step: int) -> np.ndarray:
        """z from the rewards (or standardized random normals under the null control). NonFiniteError
        when a member's mean reward, or the rewards' mean or spread, is not finite (an overflow of
        finite rewards would otherwise give z = 0: a silent zero update). The null skips the steps where
        real ES would not update (all rewards equal: z = 0), so both move equally often. With z-scoring
        off, the centered rewards are multiplied by center_scale."""
        r = np.asarray(rewards, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            finite = bool(np.isfinite(r).all() and np.isfinite(r.mean()) and np.isfinite(r.std()))
        if not finite:
            raise NonFiniteError(f"step {step}: member mean rewards overflow (mean or spread not finite): {r.tolist()[:8]}")
        if self.cfg.null_control and np.ptp(r) > 0:
            return standardize(np.random.default_rng(derive_seed(self.seed, step, "es-null")).standard_normal(len(rewards)))
        z = standardize(rewards, self.cfg.zscore)
        return z if self.cfg.zscore else z * self.cfg.center_scale

    def step(self, problems: list[Problem], step: int) -> ESStep:
        """Evaluate the N members on the batch, standardize their fitness and update the center."""
        t0 = time.perf_counter()
        self.master_modified = False
        it_seed, gen_seed = iteration_seeds(self.seed, step)
        rewards, tokens, weight_s = self.members.rewards(self, it_seed, gen_seed, problems,
                                                         list(range(self.cfg.population_size)), step)
        z = self.fitness(rewards, step)
        tw = time.perf_counter()
        norm = self.apply_update(it_seed, z, step)
        weight_s += time.perf_counter() - tw
        self.members.after_update(self, step, z)
        return ESStep(rewards=rewards, z=z, update_norm=norm, n_tokens=tokens, weight_seconds=weight_s,
                      seconds=time.perf_counter() - t0)

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
                            p.add_(self.eps(it_seed, d, name, p.shape).to(p.dtype), alpha=self.cfg.alpha * c / n)
                    sq_norm += float(((p.float() - before) ** 2).sum())
                    if not torch.isfinite(p).all():
                        raise NonFiniteError(f"step {step}: weight {name} is not finite after the ES update")
                return sq_norm ** 0.5
            for name in self.names:  # tensor by tensor: one tensor of scratch memory, no second model
                theta = self.master[name]
                new = theta + (self.cfg.alpha / n) * self.noise.combined(it_seed, name, theta.shape, coef)
                if not torch.isfinite(new).all():
                    raise NonFiniteError(f"step {step}: weight {name} is not finite after the ES update")
                sq_norm += float(((new - theta) ** 2).sum())
                theta.copy_(new)
                self.master_modified = True
        self.members.load_center(self)
        return sq_norm ** 0.5

    # -- the center ----------------------------------------------------------------------------
    def write_member(self, it_seed: int, member: int) -> None:
        """Engine weights <- theta + sign * sigma * E_d (from the fp32 master, or in place in bf16)."""
        d, sign = member_direction(member, self.cfg.antithetic)
        if self.cfg.inplace_bf16:
            with torch.no_grad():
                for name in self.names:
                    p = self.live[name]
                    p.add_(self.eps(it_seed, d, name, p.shape).to(p.dtype), alpha=sign * self.cfg.sigma)
            return
        self.engine.load_weights((name, self.master[name] + (sign * self.cfg.sigma) * self.eps(it_seed, d, name, self.master[name].shape))
                                 for name in self.names)

    def restore(self, it_seed: int, member: int) -> None:
        """Engine weights <- theta (copied from the master; in place: subtract the same sigma * E_d)."""
        if self.cfg.inplace_bf16:
            d, sign = member_direction(member, self.cfg.antithetic)
            with torch.no_grad():
                for name in self.names:
                    p = self.live[name]
                    p.add_(self.eps(it_seed, d, name, p.shape).to(p.dtype), alpha=-sign * self.cfg.sigma)
            return
        self.engine.load_weights((name, self.master[name]) for name in self.names)

    def center_weights(self, copy: bool = True) -> dict[str, torch.Tensor]:
        """The current center of the perturbed parameters (fp32 copies; copy=False: the master itself)."""
        if self.cfg.inplace_bf16:
            return {n: self.live[n].detach().float() for n in self.names}
        return {n: t.clone() if copy else t for n, t in self.master.items()}

    def state_is_intact(self) -> bool:
        """Whether the center is still the one before the current step: no master tensor updated yet
        (an update stopped by a non-finite tensor may have written the tensors before it)."""
        return not self.cfg.inplace_bf16 and not self.master_modified

    def close(self) -> None:
        """Release what the member evaluation holds (Ray actors); a no-op otherwise."""
        self.members.close()
