"""Evolution Strategies for LLMs, as in docs/paper.md ("ES, one-point standardized"): the paper's loop.

One iteration at the center theta (fp32 master weights, never perturbed themselves):

    for each member i = 1..N:                              (self.members: one of the strategies below)
        theta_i = theta + sigma * eps_i                    (eps_i ~ N(0, I), regenerated from seeds: noise.py)
        R_i = mean verifier reward of its rollouts on the batch of prompts
    z_i = (R_i - mean R) / (std R + 1e-8)                  (population std, ddof 0: theory.standardize)
    theta <- theta + alpha * (1/N) * sum_i z_i eps_i       (1/sigma folded into alpha)

ES decides each iteration once (`IterationPlan`, plan.py: the noise seed, sigma, every member's
direction, sign and rollout seed) and hands the plan to the member evaluation, a strategy composed
into ES (`members`), each handing the same rewards to the same update: one by one in the engine
(members.py), all in one batched forward on the HF engine (batched_hf.py), spread over Ray actors
(ray_actors.py), as vLLM LoRA adapters (vllm_lora.py), or perturbed in place inside vLLM's workers
(vllm_inplace.py). The center and its arithmetic (write a member, restore, update) is one object
(center.py). `make_es` (factory.py) composes them from the options.

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

import functools
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import torch

from escov.llm.config import ESConfig  # defined with every other setting (importable without torch)
from escov.llm.es.center import Center
from escov.llm.es.members import MemberEvaluator
from escov.llm.es.plan import IterationPlan
from escov.llm.replay_log import ESUpdate, record_of
from escov.llm.rollout import Rollouts, derive_seed
from escov.llm.tasks.base import Problem
from escov.theory.errors import NonFiniteError
from escov.theory.paper import ES_ZSCORE_EPS
from escov.theory.standardize import standardize as standardize_group


def standardize(rewards: np.ndarray, zscore: bool = True) -> np.ndarray:
    """z_i = (R_i - mean R) / (std R + 1e-8) (population std); only centered when zscore is False.

    All-equal rewards give exactly zero (so a zero update)."""
    return standardize_group(rewards, ES_ZSCORE_EPS, scale=zscore)


def select_parameters(named: Iterator[tuple[str, torch.nn.Parameter]], pattern: str) -> list[str]:
    """Names of the parameters matched by the pattern (all when it is empty); error when none match."""
    names = [n for n, _ in named if not pattern or re.search(pattern, n)]
    if not names:
        raise ValueError(f"es.param_pattern {pattern!r} matches no parameter name")
    return names


# ----------------------------------------------------------------------------- the trainer


@dataclass
class ESStep:
    rewards: np.ndarray  # [N] member fitness
    z: np.ndarray  # [N] standardized fitness used in the update
    update_norm: float  # ||theta_new - theta_old|| (fp32)
    n_tokens: int  # generated tokens
    weight_seconds: float  # time spent perturbing, restoring and updating weights
    seconds: float  # the whole iteration (the center's samples not included)
    center: Rollouts | None = None  # samples from the center before the update (ES's sample_center), or None
    replay: ESUpdate | None = None  # the update applied and the center's SHA-256 after it: replay.jsonl's record
    traffic: dict = field(default_factory=dict)  # bytes to and from each Ray actor (es/traffic.py; {} in one process)

    @property
    def samples(self) -> Rollouts | None:
        """The samples the step's metrics describe: the center's, before the update."""
        return self.center

    @property
    def generated_tokens(self) -> int:
        """Every token the step generated: the members' and the center's samples'."""
        return self.n_tokens + (self.center.n_tokens if self.center is not None else 0)

    def metrics(self) -> dict:
        """The step's own fields of its metrics.jsonl row (StepMetrics, llm/rundir/records.py): the members'
        mean fitness as reward_mean, the center's samples' mean reward, and the es_* fields (needs `center`)."""
        return {
            "reward_mean": float(self.rewards.mean()),
            "center_reward_mean": float(self.center.rewards.mean()),
            "es_reward_std": float(self.rewards.std()),
            "es_rewards": self.rewards.tolist(),
            "es_update_norm": self.update_norm,
            "es_weight_share": self.weight_seconds / max(self.seconds, 1e-12),
            "es_zero_update": bool(np.ptp(self.rewards) == 0),
            **self.traffic,
        }


class ES:
    """ES on a center (center.py: the fp32 master, or the engine's own bf16 weights in place) whose
    members are evaluated by a strategy (members.py and its siblings); seed: the run's seed.
    sample_center(problems, step): samples from the center drawn at the start of each step, before the
    members (a training run's per-step metrics); None: none."""

    def __init__(
        self,
        cfg: ESConfig,
        center: Center,
        members: MemberEvaluator,
        *,
        seed: int,
        sample_center: Callable[[list[Problem], int], Rollouts] | None = None,
    ):
        self.cfg, self.center, self.members, self.seed = cfg, center, members, seed
        self.sample_center = sample_center

    @staticmethod
    def planner(cfg: ESConfig, seed: int):
        """planner(step, sigma=...): the plan of an iteration of a run with this seed and these options (the
        rule Ray actors rebuild a plan with)."""
        return functools.partial(
            IterationPlan.derive, seed, population_size=cfg.population_size, antithetic=cfg.antithetic
        )

    def plan(self, step: int) -> IterationPlan:
        """Everything about iteration `step` decided before any member is evaluated."""
        return self.planner(self.cfg, self.seed)(step, sigma=self.cfg.sigma)

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
            raise NonFiniteError(
                f"step {step}: member mean rewards overflow (mean or spread not finite): {r.tolist()[:8]}"
            )
        if self.cfg.null_control and np.ptp(r) > 0:
            return standardize(
                np.random.default_rng(derive_seed(self.seed, step, "es-null")).standard_normal(len(rewards))
            )
        z = standardize(rewards, self.cfg.zscore)
        return z if self.cfg.zscore else z * self.cfg.center_scale

    def step(self, problems: list[Problem], step: int) -> ESStep:
        """Evaluate the N members on the batch, standardize their fitness and update the center."""
        center = self.sample_center(problems, step) if self.sample_center is not None else None
        t0 = time.perf_counter()
        self.center.begin()
        plan = self.plan(step)
        rewards, tokens, weight_s = self.members.rewards(plan, problems)
        z = self.fitness(rewards, step)
        tw = time.perf_counter()
        update = plan.update(z, self.cfg.alpha)
        norm = self.center.apply(update)
        weight_s += time.perf_counter() - tw
        self.members.after_update(update)
        return ESStep(
            rewards=rewards,
            z=z,
            update_norm=norm,
            n_tokens=tokens,
            weight_seconds=weight_s,
            seconds=time.perf_counter() - t0,
            center=center,
            replay=record_of(step + 1, update, self.cfg.sigma, self.center.sha256()),
            traffic=self.members.traffic(),
        )

    def center_weights(self, copy: bool = True) -> dict[str, torch.Tensor]:
        """The current center of the perturbed parameters (fp32; copy=False: the master itself when it is fp32)."""
        live = self.center.weights()
        return {n: (t.detach().float().clone() if copy else t.detach().float()) for n, t in live.items()}

    def state_is_intact(self) -> bool:
        """Whether the center is still the one before the current step: no master tensor updated yet
        (an update stopped by a non-finite tensor may have written the tensors before it; in place in
        bf16 the center is never restored exactly)."""
        return self.center.exact_restore and not self.center.modified

    def checkpoint_state(self, base: str = "") -> tuple[None, None]:
        """What a checkpoint keeps besides the weights: nothing (no optimizer state, no adapters; base unused)."""
        return None, None

    def close(self) -> None:
        """Release what the member evaluation holds (Ray actors); a no-op otherwise."""
        self.members.close()
