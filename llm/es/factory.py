"""make_es: the ES trainer for a run's options; the one table of member-evaluation strategies.

One setting chooses the strategy (population.members; "auto" by default: llm/member_options.py
strategy_name). The engine each strategy needs and its rules on the options are settings, checked with
every other setting (llm/member_options.py `check_options`, without torch); each strategy named there
has one row here, in STRATEGIES: the class that evaluates its members and its constructor, its setup
checks on the model and the Ray cluster, the engine settings it needs and what the machine must offer
(both before the engine starts), and whether the center writes each member into the engine:

    one_by_one    OneByOne     any engine    each member written into the engine in turn
    batched_hf    BatchedHF    hf            one population-batched generate
    ray           RayActors    any driver    K Ray actors, each evaluating its block one by one or batched
    vllm_lora     VLLMLoRA     vllm          low-rank members as LoRA adapters in one generate
    vllm_inplace  VLLMInPlace  vllm (CUDA)   members perturbed in place inside vLLM's workers

with full-rank or low-rank noise (population.noise_rank), and the center (center.py) in fp32 or, with
es.inplace_bf16, the paper's bf16 arithmetic in place. Every option is checked first (`check_options`,
then `check_setup` on the model), so a bad combination fails before any work.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import torch

from escov.llm.config import PopulationConfig
from escov.llm.engines.hf import HFEngine
from escov.llm.es.algorithm import ES, ESConfig
from escov.llm.es.batched_hf import BatchedHF, batched_module, check_supported
from escov.llm.es.center import Center, InPlaceBF16, MasterCenter
from escov.llm.es.members import MemberEvaluator, OneByOne, Sampling
from escov.llm.es.noise import PopulationNoise, check_rank
from escov.llm.es.options import check_ray
from escov.llm.es.ray_actors import RayActors
from escov.llm.es.vllm_inplace import ENGINE_KWARGS, VLLMInPlace
from escov.llm.es.vllm_lora import LORA_PATTERN, VLLMLoRA
from escov.llm.member_options import OPTION_RULES, VLLM_LORA_RANKS, DistributedConfig, check_options, strategy_name
from escov.llm.tasks.base import Problem, Task

if TYPE_CHECKING:
    from escov.llm.engines.base import Engine


# ----------------------------------------------------------------------------- each strategy's model and machine checks


def setup_batched(model, names, population, distributed) -> None:
    check_supported(model, names)


def setup_ray(model, names, population, distributed) -> None:
    if population.batched:
        check_supported(model, names)


def setup_vllm_lora(model, names, population, distributed) -> None:
    import re

    bad = [n for n in names if not re.search(LORA_PATTERN, n)]
    if bad:
        raise ValueError(
            f"population.members vllm_lora can only perturb {LORA_PATTERN!r} weights; not "
            f"{bad[:3]}{'...' if len(bad) > 3 else ''} (set es.param_pattern to it)"
        )


def machine_vllm_inplace(distributed) -> None:
    if not torch.cuda.is_available():
        raise ValueError(
            "population.members vllm_inplace needs vLLM on a CUDA GPU (this machine has none): vLLM's "
            "CPU build repacks linear weights, so in-place edits never reach generation; use "
            "population.members 'one_by_one' (members written by reload)"
        )


def lora_engine_settings(cfg: ESConfig, population: PopulationConfig) -> dict:
    rank = next(r for r in VLLM_LORA_RANKS if r >= population.noise_rank)
    return {"enable_lora": True, "max_loras": cfg.population_size, "max_lora_rank": rank}


@dataclass(frozen=True)
class MemberBuild:
    """What a strategy's constructor gets: the options, the engine, the task, the members' sampling, the center,
    and (Ray) the run's seed (the actors rebuild each iteration's plan from it), the model directory and full
    weights each actor starts from, and the problems the batches come from (a batch crosses as positions)."""

    cfg: ESConfig
    population: PopulationConfig
    engine: Engine
    task: Task
    sampling: Sampling
    center: Center
    names: list[str]
    distributed: DistributedConfig | None
    model_dir: str | None
    weights: dict[str, torch.Tensor] | None
    seed: int = 0
    problem_pool: list[Problem] | None = None


def build_one_by_one(b: MemberBuild) -> MemberEvaluator:
    return local_members(b.cfg, b.population, b.engine, b.task, b.sampling, b.center, batched=False)


def build_batched(b: MemberBuild) -> MemberEvaluator:
    return local_members(b.cfg, b.population, b.engine, b.task, b.sampling, b.center, batched=True)


def build_ray(b: MemberBuild) -> MemberEvaluator:
    if b.model_dir is None:
        raise ValueError("model_dir is required with Ray workers (each actor loads its own replica)")
    weights = b.weights
    if weights is None:
        module = b.engine.live_module()
        if module is None:
            raise ValueError("weights (the full center for the actors) are required with a non-HF driver engine")
        weights = {n: p.detach().float().clone() for n, p in module.named_parameters()}
    return RayActors(
        b.task,
        b.sampling,
        b.center,
        functools.partial(local_evaluation, b.cfg, b.population),
        model_dir=b.model_dir,
        weights=weights,
        distributed=b.distributed,
        planner=ES.planner(b.cfg, b.seed),
        pool=b.problem_pool,
    )


def build_vllm_lora(b: MemberBuild) -> MemberEvaluator:
    return VLLMLoRA(b.engine, b.task, b.sampling, b.center.noise, b.names, b.cfg.population_size)


def build_vllm_inplace(b: MemberBuild) -> MemberEvaluator:
    return VLLMInPlace(b.engine, b.task, b.sampling, b.center)


@dataclass(frozen=True)
class Strategy:
    """A member-evaluation strategy's row (its engine and option rules: llm/member_options.py OPTION_RULES)."""

    evaluator: type  # the MemberEvaluator class that evaluates its members
    build: Callable[[MemberBuild], MemberEvaluator]  # its constructor
    setup: Callable | None = None  # (HF model, names, population, distributed): model / cluster rules
    engine_settings: Callable = lambda cfg, population: {}  # extra keyword arguments of make_engine
    machine: Callable | None = None  # (distributed): what this machine must offer, checked before the
    # problems are generated and the engine starts
    center_loads: bool = True  # the center writes each member through engine.load_weights
    # (False: the strategy writes the members itself)


# every strategy, once; llm/member_options.py OPTION_RULES holds their rules on the settings (no torch there)
STRATEGIES = {
    "one_by_one": Strategy(OneByOne, build_one_by_one),
    "batched_hf": Strategy(BatchedHF, build_batched, setup_batched),
    "ray": Strategy(RayActors, build_ray, setup_ray, machine=check_ray),  # Ray installed, its cluster reachable
    "vllm_lora": Strategy(VLLMLoRA, build_vllm_lora, setup_vllm_lora, lora_engine_settings),
    "vllm_inplace": Strategy(
        VLLMInPlace,
        build_vllm_inplace,
        None,
        lambda cfg, population: dict(ENGINE_KWARGS),
        machine_vllm_inplace,
        center_loads=False,
    ),  # the workers write the members themselves
}
if set(STRATEGIES) != set(OPTION_RULES):
    raise ImportError(
        f"llm/es/factory.py STRATEGIES and llm/member_options.py OPTION_RULES must name the same "
        f"strategies: {sorted(set(STRATEGIES) ^ set(OPTION_RULES))} differ"
    )


def check_setup(
    model: torch.nn.Module,
    names: list[str],
    cfg: ESConfig,
    population: PopulationConfig,
    distributed: DistributedConfig | None = None,
    engine: str = "hf",
) -> None:
    """Every check the ES trainers make on these options, callable before any work (model = the HF
    module): the options, the noise rank within every matrix, and the strategy's own setup rules."""
    check_options(cfg, population, engine, distributed)
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters() if n in names}
    check_rank(population.noise_rank, shapes)
    strategy = STRATEGIES[strategy_name(population, distributed)]
    if strategy.setup is not None:
        strategy.setup(model, names, population, distributed)


def engine_settings(cfg: ESConfig, population: PopulationConfig, distributed: DistributedConfig | None) -> dict:
    """The keyword arguments the chosen strategy needs the engine made with, after checking that this
    machine offers what it needs (both before the engine starts)."""
    strategy = STRATEGIES[strategy_name(population, distributed)]
    if strategy.machine is not None:
        strategy.machine(distributed)
    return strategy.engine_settings(cfg, population)


# ----------------------------------------------------------------------------- composing ES


def engine_kind(engine: Engine) -> str:
    from escov.llm.engines.vllm_engine import VLLMEngine

    return "hf" if isinstance(engine, HFEngine) else "vllm" if isinstance(engine, VLLMEngine) else "other"


def population_noise(
    cfg: ESConfig, population: PopulationConfig, device: torch.device | str = "cpu"
) -> PopulationNoise:
    """The members' noise (drawn on the device): full or low rank; the draws kept for the update unless ES runs
    plain."""
    keep = 0 if population.plain else population.keep_noise_mb * 2**20
    return PopulationNoise(population.noise_rank, cfg.noise_chunk, keep_bytes=keep, device=device)


def local_evaluation(
    cfg: ESConfig,
    population: PopulationConfig,
    engine: Engine,
    task: Task,
    sampling: Sampling,
    master: dict[str, torch.Tensor],
    device: torch.device | str,
) -> tuple[MasterCenter, MemberEvaluator]:
    """A Ray replica's center and member evaluation in its process: batched (population.batched) or one by one."""
    center = MasterCenter(master, population_noise(cfg, population, device), engine.load_weights)
    return center, local_members(cfg, population, engine, task, sampling, center, batched=population.batched)


def local_members(
    cfg: ESConfig,
    population: PopulationConfig,
    engine: Engine,
    task: Task,
    sampling: Sampling,
    center: Center,
    *,
    batched: bool,
) -> MemberEvaluator:
    """OneByOne, or BatchedHF with the low-rank layout population.lowrank_layout picks."""
    check_rank(population.noise_rank, {n: tuple(t.shape) for n, t in center.weights().items()})
    if not batched:
        return OneByOne(engine, task, sampling, center)
    dtype = next(batched_module(engine).parameters()).dtype
    shapes = [tuple(t.shape) for t in center.weights().values() if t.dim() == 2]
    return BatchedHF(
        engine,
        task,
        sampling,
        center,
        max_rows=population.max_rows,
        factored=population.factored(cfg.population_size, shapes, dtype),
    )


def make_es(
    cfg: ESConfig,
    engine: Engine,
    task: Task,
    names: list[str],
    master: dict[str, torch.Tensor] | None,
    *,
    max_new_tokens: int,
    seed: int,
    population: PopulationConfig | None = None,
    distributed: DistributedConfig | None = None,
    model_dir: str | None = None,
    weights: dict[str, torch.Tensor] | None = None,
    problem_pool: list[Problem] | None = None,
    sample_center=None,
) -> ES:
    """ES on the engine; master: fp32 center of the perturbed parameters (None with es.inplace_bf16).

    With Ray workers, model_dir (each actor loads its own replica), weights (the full center the actors
    start from; default: the engine's own HF module) and problem_pool (the problems the batches come from,
    so that a batch crosses as positions) go to the actors. sample_center: see ES."""
    population = population if population is not None else PopulationConfig()
    check_options(cfg, population, engine_kind(engine), distributed)
    strategy = STRATEGIES[strategy_name(population, distributed)]
    sampling = Sampling(cfg.member_samples, cfg.member_temperature, max_new_tokens)
    if cfg.inplace_bf16:
        module = engine.live_module()
        if module is None:
            raise ValueError("es.inplace_bf16 needs an engine holding its HF module in this process (engine = 'hf')")
        live = dict(module.named_parameters())
        device = next(module.parameters()).device
        center: Center = InPlaceBF16({n: live[n] for n in names}, population_noise(cfg, population, device))
    else:
        if master is None or set(master) != set(names):
            raise ValueError("master must hold fp32 weights for exactly the perturbed parameter names")
        device = next(iter(master.values())).device
        noise = population_noise(cfg, population, device)  # drawn where the weights it perturbs live
        load = engine.load_weights if strategy.center_loads else None  # in place: the workers write themselves
        center = MasterCenter({n: master[n] for n in names}, noise, load)
    check_rank(population.noise_rank, {n: tuple(t.shape) for n, t in center.weights().items()})
    members = strategy.build(
        MemberBuild(
            cfg, population, engine, task, sampling, center, names, distributed, model_dir, weights, seed, problem_pool
        )
    )
    return ES(cfg, center, members, seed=seed, sample_center=sample_center)
