"""How ES evaluates its population: the settings (the strategies' own rules are in factory.py).

`PopulationConfig` (the `[population]` table of a run's config, defined in llm/config.py):

    batched     the N members' rollouts come from one population-batched generate on the HF engine
                (batched_hf.py): member weights built once per iteration from the seeds, then one
                forward per decoding step for all N x B rows. Off: member by member (members.py).
    noise_rank  0: full-rank eps_d. r > 0: EGGROLL low-rank noise E_d = A_d B_d^T / sqrt(r) for weight
                matrices (noise.py), and the update theta <- theta + alpha / N sum_d c_d E_d rebuilt from
                the same seeds.
    keep_noise_mb  the noise runs read for the members are kept (up to this size) and reused by the update.
    members     the member-evaluation strategy (factory.py): "one_by_one" (members.py, each member
                written through the engine's load_weights), "batched_hf" (batched_hf.py), "ray"
                (ray_actors.py, the Ray workers of the run), "vllm_lora" (vllm_lora.py: low-rank members
                as LoRA adapters, engine = "vllm"), "vllm_inplace" (vllm_inplace.py; vLLM on CUDA only);
                "auto" (the default): "ray" with Ray workers, "batched_hf" when batched, else "one_by_one".
    lowrank_layout  low rank, batched: "factored" x W^T + (x B_m) A_m^T per layer (memory N r (in + out)
                per matrix, three matmuls); "stacked" W_m built once per iteration, one grouped matmul, as
                with full rank (memory N in out); "auto": stacked while the stacked matrices take at most
                llm.config.STACK_AUTO_BYTES (on a CPU, small layers are faster stacked), factored beyond.

`DistributedConfig`: the Ray actors that evaluate the members (ray_actors.py). `strategy_name` is the
one rule that turns these settings into a strategy; factory.py holds every rule between them
(`check_options`, `check_setup`).
"""
from __future__ import annotations

import socket
from dataclasses import dataclass

from escov.llm.config import PopulationConfig  # defined with every other setting (importable without torch)


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


def strategy_name(population: PopulationConfig, distributed: DistributedConfig | None) -> str:
    """The member-evaluation strategy the settings choose: population.members, or with "auto" Ray when
    there are Ray workers, batched_hf when population.batched, else one_by_one."""
    if population.members != "auto":
        return population.members
    if uses_workers(distributed):
        return "ray"
    return "batched_hf" if population.batched else "one_by_one"
