"""How ES evaluates its members, as settings: the Ray workers (`DistributedConfig`), the rule that turns
the settings into a member-evaluation strategy (`strategy_name`), and each strategy's option rules
(`check_options`). Imports no torch and no llm.es module, so llm/settings/ validates a run's settings
with it before anything heavy loads.

The strategies (their code: llm/es/factory.py, which adds what needs a model or the machine: the
noise rank against the weight shapes, the model's modules, Ray and CUDA being there):

    one_by_one    any engine    each member written into the engine in turn
    batched_hf    hf            one population-batched generate
    ray           any driver    K Ray actors, each evaluating its block one by one or batched
    vllm_lora     vllm          low-rank members as LoRA adapters in one generate
    vllm_inplace  vllm (CUDA)   members perturbed in place inside vLLM's workers

`population.members = "auto"` (the default) picks "ray" with Ray workers, "batched_hf" when
population.batched, else "one_by_one".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from escov.llm.config import ESConfig, PopulationConfig

VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # the max_lora_rank values vLLM accepts


@dataclass
class DistributedConfig:
    workers: int = 2  # K Ray actors; es.population_size must be divisible by K
    address: str = ""  # "": start a local Ray; "host:port", "ray://host:port" or "auto": a cluster
    cpus_per_worker: float = 1.0  # Ray CPUs reserved by each actor
    threads_per_worker: int = 1  # torch threads inside each actor
    actor_timeout_s: float = 600.0  # a call not answered in time counts as a dead actor
    gpus_per_worker: float = 0.0  # Ray GPUs reserved by each actor (1: one engine per GPU, on CUDA)

    def validate(self, population_size: int) -> None:
        k = self.workers
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"workers must be an integer >= 1, got {k!r}")
        if population_size % k:
            raise ValueError(f"es.population_size ({population_size}) must be divisible by workers ({k})")
        if not self.cpus_per_worker > 0 or not self.actor_timeout_s > 0:
            raise ValueError("cpus_per_worker and actor_timeout_s must be > 0")
        if not self.gpus_per_worker >= 0:
            raise ValueError(f"gpus_per_worker must be >= 0, got {self.gpus_per_worker!r}")
        if (
            isinstance(self.threads_per_worker, bool)
            or not isinstance(self.threads_per_worker, int)
            or self.threads_per_worker < 1
        ):
            raise ValueError(f"threads_per_worker must be an integer >= 1, got {self.threads_per_worker!r}")


def uses_workers(distributed: DistributedConfig | None) -> bool:
    return distributed is not None and (distributed.workers > 1 or bool(distributed.address))


def strategy_name(population: PopulationConfig, distributed: DistributedConfig | None) -> str:
    """The member-evaluation strategy the settings choose: population.members, or with "auto" Ray when
    there are Ray workers, batched_hf when population.batched, else one_by_one."""
    if population.members != "auto":
        return population.members
    if uses_workers(distributed):
        return "ray"
    return "batched_hf" if population.batched else "one_by_one"


# ----------------------------------------------------------------------------- each strategy's option rules


def check_batched_engine(engine: str) -> None:
    """ValueError unless the engine kind is batched_hf's (OPTION_RULES: "hf", the batched forward swaps modules of the
    HF model), in words that name population.batched, the usual way to ask for it."""
    if engine != OPTION_RULES["batched_hf"].engine:
        raise ValueError(
            "population.batched needs engine = 'hf' (one batched forward for all members); "
            "set population.batched = false to evaluate members one by one on vLLM"
        )


def _no_bf16(name: str, cfg: ESConfig) -> None:
    if cfg.inplace_bf16:
        raise ValueError(
            f"population.members {name} keeps an fp32 master; es.inplace_bf16 (the paper's bf16 add / "
            "subtract) runs with one_by_one on the HF engine (engine = 'hf')"
        )


def _one_process(name: str, population: PopulationConfig, distributed: DistributedConfig | None) -> None:
    if population.batched:
        raise ValueError(f"population.members {name} evaluates members one way; turn population.batched off")
    if uses_workers(distributed):
        raise ValueError(
            f"population.members {name} runs in one process; it does not combine with Ray workers "
            "(workers > 1 or a ray address)"
        )


def check_one_by_one(cfg, population, engine, distributed) -> None:
    _one_process("one_by_one", population, distributed)


def check_batched(cfg, population, engine, distributed) -> None:
    if cfg.inplace_bf16:
        raise ValueError(
            "population.batched cannot reproduce es.inplace_bf16 (in-place perturbation); turn one of them off"
        )
    if uses_workers(distributed):
        raise ValueError(
            "population.members batched_hf runs in one process; with Ray workers use 'ray' "
            "(each actor batched when population.batched)"
        )


def check_ray_options(cfg, population, engine, distributed) -> None:
    if not uses_workers(distributed):
        raise ValueError("population.members ray needs Ray workers (workers > 1 or a ray address)")
    if cfg.inplace_bf16:
        raise ValueError("distributed ES keeps fp32 replicas; es.inplace_bf16 is not supported with workers")
    distributed.validate(cfg.population_size)


def check_vllm_lora(cfg, population, engine, distributed) -> None:
    _one_process("vllm_lora", population, distributed)
    _no_bf16("vllm_lora", cfg)
    if population.noise_rank < 1:
        raise ValueError("population.members vllm_lora needs low-rank noise (population.noise_rank >= 1)")
    if population.noise_rank > VLLM_LORA_RANKS[-1]:
        raise ValueError(
            f"population.members vllm_lora: vLLM allows LoRA ranks up to {VLLM_LORA_RANKS[-1]}, "
            f"got population.noise_rank {population.noise_rank}"
        )


def check_vllm_inplace(cfg, population, engine, distributed) -> None:
    _one_process("vllm_inplace", population, distributed)
    _no_bf16("vllm_inplace", cfg)


@dataclass(frozen=True)
class OptionRules:
    """What a strategy asks of the settings."""

    engine: str  # the engine kind it needs ("hf", "vllm"; "any")
    check: Callable  # (ESConfig, PopulationConfig, engine, DistributedConfig | None): ValueError naming a setting


OPTION_RULES = {
    "one_by_one": OptionRules("any", check_one_by_one),
    "batched_hf": OptionRules("hf", check_batched),
    "ray": OptionRules("any", check_ray_options),
    "vllm_lora": OptionRules("vllm", check_vllm_lora),
    "vllm_inplace": OptionRules("vllm", check_vllm_inplace),
}
MEMBER_MODES = ("auto", *OPTION_RULES)  # the values of population.members


def check_options(
    cfg: ESConfig, population: PopulationConfig, engine: str, distributed: DistributedConfig | None = None
) -> None:
    """ValueError naming the setting when ES's options do not go together (engine: "hf" or "vllm")."""
    cfg.validate()
    population.validate()
    name = strategy_name(population, distributed)
    rules = OPTION_RULES[name]
    if name == "batched_hf":
        check_batched_engine(engine)  # its message names population.batched, the usual way to ask for it
    elif rules.engine not in ("any", engine):
        raise ValueError(f"population.members {name} needs engine = {rules.engine!r}, got {engine!r}")
    rules.check(cfg, population, engine, distributed)
