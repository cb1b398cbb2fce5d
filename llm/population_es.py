"""ES with the whole population evaluated in one batched generate, and optional low-rank noise.

`PopulationES` is `llm.es.ES` with these options (same seeds, same z-scoring, same update rule):

    batched     the N members' rollouts come from one population-batched generate
                (llm/population_forward.py): member weights built once per iteration from the seeds,
                then one forward per decoding step for all N x B rows. Off: member by member, as ES.
    noise_rank  0: full-rank eps_d (exactly ES's noise). r > 0: EGGROLL low-rank noise
                E_d = A_d B_d^T / sqrt(r) for weight matrices (llm/population_noise.py), and the update
                theta <- theta + alpha / N sum_d c_d E_d rebuilt from the same seeds.
    keep_noise_mb  the noise drawn for the members is kept (up to this size) and reused by the update.
    lowrank_layout  low rank, batched: "factored" x W^T + (x B_m) A_m^T per layer (memory N r (in + out)
                per matrix, three matmuls); "stacked" W_m built once per iteration, one grouped matmul, as
                with full rank (memory N in out); "auto": stacked while the stacked matrices take at most
                STACK_AUTO_BYTES (on a CPU, small layers are faster stacked), factored beyond.

With batched off and noise_rank 0 it is ES itself. `member_rewards` evaluates any subset of members
(the Ray workers in llm/distributed.py call it on their share of the population).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from llm.engines.hf import HFEngine
from llm.es import ES, ESConfig, member_rollout_seed
from llm.population_forward import PopulationWeights, check_supported, generate_population
from llm.population_noise import PopulationNoise, check_rank
from llm.rollout import score_completions
from llm.tasks.base import Problem, Task

if TYPE_CHECKING:
    from llm.engines.base import Engine


LOWRANK_LAYOUTS = ("auto", "factored", "stacked")
STACK_AUTO_BYTES = 256 * 2 ** 20  # "auto" stacks low-rank members while their matrices take at most this


@dataclass
class PopulationConfig:
    batched: bool = False     # all members in one batched generate (HF engine); False: member by member
    noise_rank: int = 0       # 0: full-rank noise; r > 0: low-rank E = A B^T / sqrt(r) for weight matrices
    max_rows: int = 4096      # rows per batched forward (whole members per block)
    lowrank_layout: str = "auto"  # low rank, batched: factored x W^T + (x B) A^T | stacked W_m | auto
    keep_noise_mb: int = 1024  # noise drawn for the members, kept for the update (0: drawn again from the seeds)

    def validate(self) -> None:
        if not isinstance(self.batched, bool):
            raise ValueError(f"population.batched must be true or false, got {self.batched!r}")
        if isinstance(self.noise_rank, bool) or not isinstance(self.noise_rank, int) or self.noise_rank < 0:
            raise ValueError(f"population.noise_rank must be an integer >= 0 (0 = full rank), got {self.noise_rank!r}")
        if isinstance(self.max_rows, bool) or not isinstance(self.max_rows, int) or self.max_rows < 1:
            raise ValueError(f"population.max_rows must be an integer >= 1, got {self.max_rows!r}")
        if isinstance(self.keep_noise_mb, bool) or not isinstance(self.keep_noise_mb, int) or self.keep_noise_mb < 0:
            raise ValueError(f"population.keep_noise_mb must be an integer >= 0, got {self.keep_noise_mb!r}")
        if self.lowrank_layout not in LOWRANK_LAYOUTS:
            raise ValueError(f"population.lowrank_layout must be one of {list(LOWRANK_LAYOUTS)}, got {self.lowrank_layout!r}")

    def factored(self, members: int, matrices: list[torch.Tensor], dtype: torch.dtype) -> bool:
        """Whether low-rank members are applied factored (see lowrank_layout)."""
        if self.lowrank_layout != "auto":
            return self.lowrank_layout == "factored"
        stacked = members * sum(m.numel() for m in matrices) * torch.finfo(dtype).bits // 8
        return stacked > STACK_AUTO_BYTES


class PopulationES(ES):
    """ES whose population is evaluated in one batched generate and/or perturbed with low-rank noise."""

    def __init__(self, cfg: ESConfig, engine: Engine, task: Task, names: list[str],
                 master: dict[str, torch.Tensor] | None, *, max_new_tokens: int, seed: int,
                 population: PopulationConfig | None = None):
        super().__init__(cfg, engine, task, names, master, max_new_tokens=max_new_tokens, seed=seed)
        self.pop = population if population is not None else PopulationConfig()
        self.pop.validate()
        shapes = {n: tuple(t.shape) for n, t in (master.items() if master is not None else
                                                  ((n, self.live[n]) for n in names))}
        check_rank(self.pop.noise_rank, shapes)
        self.noise = PopulationNoise(cfg.sigma, cfg.antithetic, self.pop.noise_rank, cfg.noise_chunk,
                                     keep_bytes=self.pop.keep_noise_mb * 2 ** 20)
        if self.pop.batched:
            if cfg.inplace_bf16:
                raise ValueError("population.batched cannot reproduce es.inplace_bf16 (in-place perturbation); "
                                 "turn one of them off")
            if not isinstance(engine, HFEngine):
                raise ValueError("population.batched needs the HF engine (engine = 'hf'); "
                                 "use member-by-member evaluation on other engines")
            check_supported(engine.model, names)
            self.dtype = next(engine.model.parameters()).dtype
            self.factored = self.pop.factored(cfg.population_size, [t for t in self.master.values() if t.dim() == 2],
                                              self.dtype)

    def _eps(self, it_seed: int, direction: int, name: str, shape: torch.Size) -> torch.Tensor:
        return self.noise.direction(it_seed, direction, name, shape)

    def _combined(self, it_seed: int, name: str, shape: torch.Size, coef: np.ndarray) -> torch.Tensor:
        """sum_d c_d E_d: full rank as ES, low rank (A * c) B^T / sqrt(r), from the iteration's kept draws."""
        return self.noise.combined(it_seed, name, shape, coef)

    # -- evaluation -------------------------------------------------------------------------
    def member_rewards(self, it_seed: int, gen_seed: int, problems: list[Problem], members: list[int],
                       step: int) -> tuple[np.ndarray, int, float]:
        """As ES.member_rewards; batched: the members' weights built once, then one batched generate."""
        if not self.pop.batched:
            return super().member_rewards(it_seed, gen_seed, problems, members, step)
        tw = time.perf_counter()
        weights = PopulationWeights.build(self.master, self.noise, it_seed, list(members), self.dtype,
                                          self.factored)
        weight_s = time.perf_counter() - tw
        per_member = generate_population(self.engine, weights, [p.prompt for p in problems], n=self.cfg.member_samples,
                                         temperature=self.cfg.member_temperature, max_new_tokens=self.max_new_tokens,
                                         seed=[member_rollout_seed(gen_seed, m) for m in members],
                                         max_rows=self.pop.max_rows)
        rewards, tokens = np.zeros(len(members)), 0
        for i, completions in enumerate(per_member):
            out = score_completions(self.task, problems, completions, step)
            rewards[i], tokens = out.rewards.mean(), tokens + out.n_tokens
        return rewards, tokens, weight_s


# ----------------------------------------------------------------------------- choosing the trainer

def check_setup(model: torch.nn.Module, names: list[str], cfg: ESConfig, population: PopulationConfig,
                distributed=None) -> None:
    """Every check the trainers make on these options, callable before any work (model = the HF module)."""
    population.validate()
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters() if n in names}
    check_rank(population.noise_rank, shapes)
    if population.batched:
        if cfg.inplace_bf16:
            raise ValueError("population.batched cannot reproduce es.inplace_bf16; turn one of them off")
        check_supported(model, names)
    if distributed is not None and (distributed.workers > 1 or distributed.address):
        from llm.distributed import check_distributed

        check_distributed(cfg, distributed)


def make_es(cfg: ESConfig, engine: Engine, task: Task, names: list[str], master: dict[str, torch.Tensor] | None, *,
            max_new_tokens: int, seed: int, population: PopulationConfig | None = None, distributed=None,
            model_dir: str | None = None, weights: dict[str, torch.Tensor] | None = None) -> ES:
    """ES (no options), PopulationES (batched or low rank) or DistributedES (workers > 1 or a Ray address).

    distributed: a llm.distributed.DistributedConfig; model_dir and weights (the full center) go to the actors."""
    kw = dict(max_new_tokens=max_new_tokens, seed=seed)
    if distributed is not None and (distributed.workers > 1 or distributed.address):
        from llm.distributed import DistributedES

        if model_dir is None:
            raise ValueError("model_dir is required with Ray workers (each actor loads its own replica)")
        return DistributedES(cfg, engine, task, names, master, model_dir=model_dir, population=population,
                             distributed=distributed, weights=weights, **kw)
    if population is not None and (population.batched or population.noise_rank):
        return PopulationES(cfg, engine, task, names, master, population=population, **kw)
    return ES(cfg, engine, task, names, master, **kw)
