"""make_es: the ES trainer for a run's options, its member evaluation composed from them.

    workers > 1 or a Ray address   RayActors   (each actor evaluates its members batched or one by one)
    population.batched             BatchedHF   (one population-batched generate on the HF engine)
    population.members vllm_inplace VLLMInPlace (perturbed in place inside vLLM's workers, CUDA)
    otherwise                      OneByOne    (each member written into the engine in turn)

with full-rank or low-rank noise (population.noise_rank). Every option is checked first
(llm.es.options.check_options), so a bad combination fails before any work.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from llm.engines.hf import HFEngine
from llm.es.algorithm import ES, ESConfig
from llm.es.noise import check_rank
from llm.es.options import (DistributedConfig, PopulationConfig, check_options, local_members, population_noise,
                            uses_workers)
from llm.es.ray_actors import RayActors
from llm.es.vllm_inplace import VLLMInPlace
from llm.tasks.base import Task


if TYPE_CHECKING:
    from llm.engines.base import Engine


def engine_kind(engine: Engine) -> str:
    """"hf", "vllm" or "other": the engine setting check_options judges the options against."""
    from llm.engines.vllm_engine import VLLMEngine

    return "hf" if isinstance(engine, HFEngine) else "vllm" if isinstance(engine, VLLMEngine) else "other"


def make_es(cfg: ESConfig, engine: Engine, task: Task, names: list[str], master: dict[str, torch.Tensor] | None, *,
            max_new_tokens: int, seed: int, population: PopulationConfig | None = None,
            distributed: DistributedConfig | None = None, model_dir: str | None = None,
            weights: dict[str, torch.Tensor] | None = None) -> ES:
    """ES on the engine; master: fp32 center of the perturbed parameters (None with es.inplace_bf16).

    With Ray workers, model_dir (each actor loads its own replica) and weights (the full center the actors
    start from; default: the engine's own HF module) go to the actors."""
    population = population if population is not None else PopulationConfig()
    check_options(cfg, population, engine_kind(engine), distributed)
    if cfg.inplace_bf16:
        module = engine.live_module()
        shapes = {n: tuple(p.shape) for n, p in module.named_parameters() if n in names} if module is not None else {}
        device = next(module.parameters()).device if module is not None else torch.device("cpu")
    else:
        shapes = {n: tuple(t.shape) for n, t in master.items()} if master is not None else {}
        device = next(iter(master.values())).device if master else torch.device("cpu")
    noise = population_noise(cfg, population, device)  # drawn where the weights it perturbs live
    if population.members == "vllm_inplace":
        check_rank(population.noise_rank, shapes)
        members = VLLMInPlace(cfg, engine, master, rank=population.noise_rank)
        return ES(cfg, engine, task, names, master, max_new_tokens=max_new_tokens, seed=seed, noise=noise,
                  members=members)
    if not uses_workers(distributed):
        members = local_members(cfg, population, engine, names, shapes)
        return ES(cfg, engine, task, names, master, max_new_tokens=max_new_tokens, seed=seed, noise=noise,
                  members=members)
    check_rank(population.noise_rank, shapes)
    if model_dir is None:
        raise ValueError("model_dir is required with Ray workers (each actor loads its own replica)")
    if weights is None:
        module = engine.live_module()
        if module is None:
            raise ValueError("weights (the full center for the actors) are required with a non-HF driver engine")
        weights = {n: p.detach().float().clone() for n, p in module.named_parameters()}
    members = RayActors(cfg, task, names, master, max_new_tokens=max_new_tokens, seed=seed, model_dir=model_dir,
                        weights=weights, population=population, distributed=distributed)
    return ES(cfg, engine, task, names, master, max_new_tokens=max_new_tokens, seed=seed, noise=noise, members=members)
