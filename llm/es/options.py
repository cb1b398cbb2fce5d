"""How ES evaluates its population, and the one validator of every ES option.

`PopulationConfig` (the `[population]` table of a run's config, defined in llm/config.py):

    batched     the N members' rollouts come from one population-batched generate on the HF engine
                (batched_hf.py): member weights built once per iteration from the seeds, then one
                forward per decoding step for all N x B rows. Off: member by member (members.py).
    noise_rank  0: full-rank eps_d. r > 0: EGGROLL low-rank noise E_d = A_d B_d^T / sqrt(r) for weight
                matrices (noise.py), and the update theta <- theta + alpha / N sum_d c_d E_d rebuilt from
                the same seeds.
    keep_noise_mb  the noise drawn for the members is kept (up to this size) and reused by the update.
    members     "auto": the member evaluation follows batched and the Ray workers (batched_hf.py,
                ray_actors.py, or one by one through the engine's load_weights: members.py);
                "vllm_inplace": members perturbed and restored in place inside vLLM's workers
                (vllm_inplace.py; vLLM on CUDA only, engine = "vllm", one process).
    lowrank_layout  low rank, batched: "factored" x W^T + (x B_m) A_m^T per layer (memory N r (in + out)
                per matrix, three matmuls); "stacked" W_m built once per iteration, one grouped matmul, as
                with full rank (memory N in out); "auto": stacked while the stacked matrices take at most
                llm.config.STACK_AUTO_BYTES (on a CPU, small layers are faster stacked), factored beyond.

`DistributedConfig`: the Ray actors that evaluate the members (ray_actors.py). `check_options` holds
every rule between these settings, ES's and the Ray workers'; `check_setup` adds what needs the model
or the machine (rank within every matrix, modules the batched forward supports, Ray installed and
the cluster reachable).
`population_noise` and `local_members` build the noise and the in-process member evaluation.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from llm.config import ESConfig, PopulationConfig  # defined with every other setting (importable without torch)
from llm.es.batched_hf import BatchedHF, batched_module, check_batched_engine, check_supported
from llm.es.members import OneByOne
from llm.es.noise import PopulationNoise, check_rank

if TYPE_CHECKING:
    from llm.engines.base import Engine
    from llm.es.members import MemberEvaluator


@dataclass
class DistributedConfig:
    workers: int = 2                 # K Ray actors; es.population_size must be divisible by K
    address: str = ""                # "": start a local Ray; "host:port", "ray://host:port" or "auto": a cluster
    cpus_per_worker: float = 1.0     # Ray CPUs reserved by each actor
    threads_per_worker: int = 1      # torch threads inside each actor
    actor_timeout_s: float = 600.0   # a call not answered in time counts as a dead actor
    gpus_per_worker: float = 0.0     # Ray GPUs reserved by each actor (1: one engine per GPU, on CUDA)

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
        if isinstance(self.threads_per_worker, bool) or not isinstance(self.threads_per_worker, int) \
                or self.threads_per_worker < 1:
            raise ValueError(f"threads_per_worker must be an integer >= 1, got {self.threads_per_worker!r}")


class RayMissing(ImportError, ValueError):
    """Ray is not installed: an ImportError, and a ValueError (a setting this machine cannot honour) for CLIs."""


def import_ray():
    try:
        import ray
    except ImportError:
        raise RayMissing("distributed ES (workers > 1 or a ray address) needs Ray: pip install 'ray>=2.30'") from None
    return ray


def check_address(address: str, timeout_s: float = 5.0) -> None:
    """ValueError unless a "host:port" / "ray://host:port" address accepts a TCP connection ("auto" passes)."""
    if address in ("", "auto"):
        return
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"ray address must be 'host:port', 'ray://host:port' or 'auto', got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as err:
        raise ValueError(f"ray address {address!r}: no Ray cluster reachable ({err})") from None


def check_ray(dist: DistributedConfig):
    """Ray importable and the cluster reachable; returns the ray module."""
    ray = import_ray()
    check_address(dist.address)
    return ray


def uses_workers(distributed: DistributedConfig | None) -> bool:
    return distributed is not None and (distributed.workers > 1 or bool(distributed.address))


def check_options(cfg: ESConfig, population: PopulationConfig, engine: str,
                  distributed: DistributedConfig | None = None) -> None:
    """ValueError naming the setting when ES's options do not go together (engine: "hf" or "vllm")."""
    cfg.validate()
    population.validate()
    if population.batched and cfg.inplace_bf16:
        raise ValueError("population.batched cannot reproduce es.inplace_bf16 (in-place perturbation); "
                         "turn one of them off")
    if population.members == "vllm_inplace":
        check_inplace_options(cfg, population, engine, distributed)
    if uses_workers(distributed):
        if cfg.inplace_bf16:
            raise ValueError("distributed ES keeps fp32 replicas; es.inplace_bf16 is not supported with workers")
        distributed.validate(cfg.population_size)
    elif population.batched:
        check_batched_engine(engine)


def check_inplace_options(cfg: ESConfig, population: PopulationConfig, engine: str,
                          distributed: DistributedConfig | None) -> None:
    """The rules of population.members = "vllm_inplace" (llm/es/vllm_inplace.py)."""
    if engine != "vllm":
        raise ValueError(f"population.members vllm_inplace needs engine = 'vllm', got {engine!r}")
    if population.batched:
        raise ValueError("population.members vllm_inplace evaluates members in vLLM; turn population.batched off")
    if uses_workers(distributed):
        raise ValueError("population.members vllm_inplace runs in one process; it does not combine with Ray workers "
                         "(workers > 1 or a ray address)")
    if cfg.inplace_bf16:
        raise ValueError("population.members vllm_inplace keeps an fp32 master in the workers; es.inplace_bf16 "
                         "(the paper's bf16 add / subtract) runs on the HF engine (engine = 'hf')")


def check_setup(model: torch.nn.Module, names: list[str], cfg: ESConfig, population: PopulationConfig,
                distributed: DistributedConfig | None = None, engine: str = "hf") -> None:
    """Every check the ES trainers make on these options, callable before any work (model = the HF module)."""
    check_options(cfg, population, engine, distributed)
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters() if n in names}
    check_rank(population.noise_rank, shapes)
    if population.batched:
        check_supported(model, names)
    if uses_workers(distributed):
        check_ray(distributed)
    check_inplace_machine(population)


def check_inplace_machine(population: PopulationConfig) -> None:
    """ValueError when population.members is "vllm_inplace" on a machine without CUDA (checked before vLLM starts)."""
    if population.members == "vllm_inplace" and not torch.cuda.is_available():
        raise ValueError("population.members vllm_inplace needs vLLM on a CUDA GPU (this machine has none): vLLM's "
                         "CPU build repacks linear weights, so in-place edits never reach generation; leave "
                         "population.members at 'auto' (members written by reload)")


def population_noise(cfg: ESConfig, population: PopulationConfig, device: torch.device | str = "cpu") -> PopulationNoise:
    """The members' noise (drawn on the device): full or low rank; the draws kept for the update unless ES runs plain."""
    keep = 0 if population.plain else population.keep_noise_mb * 2 ** 20
    return PopulationNoise(cfg.sigma, cfg.antithetic, population.noise_rank, cfg.noise_chunk, keep_bytes=keep,
                           device=device)


def local_members(cfg: ESConfig, population: PopulationConfig, engine: Engine, names: list[str],
                  shapes: dict[str, tuple[int, ...]]) -> MemberEvaluator:
    """Member evaluation in this process: one batched generate (population.batched) or one by one."""
    check_rank(population.noise_rank, shapes)
    if not population.batched:
        return OneByOne()
    dtype = next(batched_module(engine).parameters()).dtype
    factored = population.factored(cfg.population_size, [s for s in shapes.values() if len(s) == 2], dtype)
    return BatchedHF(engine, names, max_rows=population.max_rows, factored=factored)
