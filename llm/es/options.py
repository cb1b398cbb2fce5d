"""How ES evaluates its population: the settings explained, and the Ray checks that need the machine.

`PopulationConfig` (the `[population]` table of a run's config, defined in llm/settings/population_config.py):

    batched     the N members' rollouts come from one population-batched generate on the HF engine
                (batched_hf.py): member weights built once per iteration from the seeds, then one
                forward per decoding step for all N x B rows. Off: member by member (members.py).
    noise_rank  0: full-rank eps_d. r > 0: EGGROLL low-rank noise E_d = A_d B_d^T / sqrt(r) for weight
                matrices (noise.py), and the update theta <- theta + alpha / N sum_d c_d E_d rebuilt from
                the same seeds.
    keep_noise_mb  the noise runs read for the members are kept (up to this size) and reused by the update.
    members     the member-evaluation strategy (factory.py; its rules: llm/member_options.py):
                "one_by_one" (members.py, each member written through the engine's load_weights),
                "batched_hf" (batched_hf.py), "ray" (ray_actors.py, the Ray workers of the run),
                "vllm_lora" (vllm_lora.py: low-rank members as LoRA adapters, engine = "vllm"),
                "vllm_inplace" (vllm_inplace.py; vLLM on CUDA only); "auto" (the default): "ray" with
                Ray workers, "batched_hf" when batched, else "one_by_one".
    lowrank_layout  low rank, batched: "factored" x W^T + (x B_m) A_m^T per layer (memory N r (in + out)
                per matrix, three matmuls); "stacked" W_m built once per iteration, one grouped matmul, as
                with full rank (memory N in out); "auto": stacked while the stacked matrices take at most
                llm.settings.STACK_AUTO_BYTES (on a CPU, small layers are faster stacked), factored beyond.

`DistributedConfig` (the Ray actors that evaluate the members: ray_actors.py), `strategy_name` (the
one rule that turns these settings into a strategy) and every strategy's rules on the options
(`check_options`) are settings, defined with the others in llm/member_options.py (no torch there).
What needs the machine stays here: Ray installed and its cluster reachable (`check_ray`); factory.py
adds the checks that need the model (`check_setup`).
"""

from __future__ import annotations

import socket

from escov.llm.config import PopulationConfig  # defined with every other setting (importable without torch)
from escov.llm.member_options import DistributedConfig, strategy_name, uses_workers  # settings, without torch

__all__ = [
    "PopulationConfig",
    "DistributedConfig",
    "strategy_name",
    "uses_workers",
    "RayMissing",
    "import_ray",
    "check_address",
    "check_ray",
    "token_auth_as_ray_start",
]


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


def token_auth_as_ray_start() -> None:
    """Connect to a cluster with Ray's token authentication when `ray start` turned it on: RAY_AUTH_MODE unset and a
    token at hand (~/.ray/auth_token, which a local `ray.init()` writes). `ray start` then requires the token, but
    `ray.init(address=...)` sends it only in token mode; Ray's own rule for `ray start` decides (nothing to do on a
    Ray without token authentication)."""
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
