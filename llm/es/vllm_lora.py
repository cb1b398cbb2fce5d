"""ES members as LoRA adapters: a low-rank population in one vLLM `generate` call (`VLLMLoRA`, multi-LoRA).

With low-rank noise (llm/es/noise.py) member m's weight matrix is theta + s sigma A B^T / sqrt(r),
A [out, r], B [in, r] from the seeds. A LoRA adapter adds x lora_A^T lora_B^T * (lora_alpha / r), so

    lora_A = B^T,   lora_B = s sigma A / sqrt(r),   lora_alpha = r  (scaling 1)

is exactly the member. Adapters are written in the PEFT layout (adapter_config.json +
adapter_model.safetensors), one directory per member slot, and every request of the call names its
member's adapter (`VLLMEngine.generate_with_adapters`): vLLM batches the N adapters in one forward
(punica kernels; a plain-torch version on the CPU build). The engine must be a VLLMEngine made with
enable_lora=True, max_loras >= N and max_lora_rank >= r (vLLM allows ranks 1, 8, 16, 32, 64, ...).
The center's weights stay in the engine (written there by the update); only the adapters change.

Only the projections vLLM's LoRA layers wrap can be perturbed this way (LORA_PATTERN: attention
q/k/v/o and MLP gate/up/down weights); embeddings, norms and biases cannot. vLLM's CPU attention also
needs a head size that is a multiple of 32 (32, 64, 80, ...).
"""

from __future__ import annotations

import json
import math
import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from escov.llm.engines.base import Completion, Engine
from escov.llm.es.members import MemberEvaluator, Sampling, member_fitness
from escov.llm.es.noise import PopulationNoise
from escov.llm.tasks.base import Problem, Task

if TYPE_CHECKING:
    from escov.llm.es.plan import IterationPlan, Member

LORA_PATTERN = r"\.(q|k|v|o|gate|up|down)_proj\.weight$"
TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def check_lora_population(noise: PopulationNoise, names: list[str], population_size: int, engine: Engine) -> None:
    """ValueError (before any work) unless the perturbed set, rank and engine allow a LoRA population."""
    if noise.rank < 1:
        raise ValueError("a vLLM LoRA population needs low-rank noise (noise_rank >= 1)")
    bad = [n for n in names if not re.search(LORA_PATTERN, n)]
    if bad:
        raise ValueError(
            f"a vLLM LoRA population can only perturb {LORA_PATTERN!r} weights; "
            f"not {bad[:3]}{'...' if len(bad) > 3 else ''} (set es.param_pattern to it)"
        )
    capacity = engine.lora_capacity()
    if capacity is None:
        raise ValueError("the engine must be a VLLMEngine made with enable_lora=True (and max_loras, max_lora_rank)")
    max_loras, max_lora_rank = capacity
    if max_loras < population_size or max_lora_rank < noise.rank:
        raise ValueError(
            f"the engine allows max_loras={max_loras}, max_lora_rank={max_lora_rank}; "
            f"the population needs {population_size} adapters of rank {noise.rank}"
        )


def write_adapter(
    path: Path, noise: PopulationNoise, plan: IterationPlan, member: Member, shapes: dict[str, tuple[int, int]]
) -> None:
    """PEFT LoRA directory equal to the member's low-rank perturbation of the named weight matrices."""
    from safetensors.torch import save_file

    tensors = {}
    for name, shape in shapes.items():
        a, b = noise.factors(plan.noise_seed, member.direction, name, shape)
        prefix = "base_model.model." + name.removesuffix(".weight")
        tensors[prefix + ".lora_A.weight"] = b.T.contiguous()
        tensors[prefix + ".lora_B.weight"] = (a * (member.sign * plan.sigma / math.sqrt(noise.rank))).contiguous()
    path.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path / "adapter_model.safetensors"))
    (path / "adapter_config.json").write_text(
        json.dumps(
            {
                "peft_type": "LORA",
                "task_type": "CAUSAL_LM",
                "r": noise.rank,
                "lora_alpha": noise.rank,
                "target_modules": sorted({n.split(".")[-2] for n in shapes}),
                "bias": "none",
                "lora_dropout": 0.0,
            }
        )
    )


def generate_lora_population(
    engine: Engine,
    noise: PopulationNoise,
    plan: IterationPlan,
    shapes: dict[str, tuple[int, int]],
    prompts: list[str],
    *,
    n: int,
    temperature: float,
    max_new_tokens: int,
    workdir: str | Path,
    top_p: float = 1.0,
) -> list[list[list[Completion]]]:
    """[member][prompt][sample]: every planned member's requests in one vLLM generate, the k-th member on
    adapter slot k + 1, each carrying the seeds a VLLMEngine.generate call with its rollout seed would use."""
    paths = write_adapters(workdir, noise, plan, shapes)
    return engine.generate_with_adapters(
        prompts,
        paths,
        n=n,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        seed=[m.rollout_seed for m in plan.members],
        top_p=top_p,
    )


def write_adapters(
    workdir: str | Path, noise: PopulationNoise, plan: IterationPlan, shapes: dict[str, tuple[int, int]]
) -> list[str]:
    """One adapter directory per planned member (workdir/member-slot-k for the k-th), their paths in order."""
    paths = []
    for slot, member in enumerate(plan.members):
        path = Path(workdir) / f"member-slot-{slot}"
        write_adapter(path, noise, plan, member, shapes)
        paths.append(str(path))
    return paths


def linear_shapes(model_dir: str | Path, names: list[str]) -> dict[str, tuple[int, int]]:
    """Shapes of the named weight matrices, read from the checkpoint (no model built)."""
    from safetensors import safe_open

    shapes = {}
    for f in sorted(Path(model_dir).glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as fh:
            for key in fh.keys():
                if key in names:
                    shapes[key] = tuple(fh.get_slice(key).get_shape())
    missing = set(names) - set(shapes)
    if missing:
        raise ValueError(f"the checkpoint in {model_dir} has no tensors {sorted(missing)}")
    return shapes


# ----------------------------------------------------------------------------- the ES strategy


class VLLMLoRA(MemberEvaluator):
    """Member evaluation for ES on a LoRA-enabled VLLMEngine: the planned members written as adapters
    (in a temporary directory), then one generate for all of them. Needs low-rank noise on the LoRA
    projections only (check_lora_population). The center's weights stay in the engine (ES's center
    loads them there after each update)."""

    def __init__(
        self,
        engine: Engine,
        task: Task,
        sampling: Sampling,
        noise: PopulationNoise,
        names: list[str],
        population_size: int,
    ):
        check_lora_population(noise, names, population_size, engine)
        self.engine, self.task, self.sampling, self.noise = engine, task, sampling, noise
        self.shapes = linear_shapes(engine.model_dir, names)
        self.workdir = tempfile.TemporaryDirectory(prefix="es-lora-")

    def rewards(self, plan: IterationPlan, problems: list[Problem]) -> tuple[np.ndarray, int, float]:
        tw = time.perf_counter()
        paths = write_adapters(self.workdir.name, self.noise, plan, self.shapes)
        weight_s = time.perf_counter() - tw
        s = self.sampling
        per_member = self.engine.generate_with_adapters(
            [p.prompt for p in problems],
            paths,
            n=s.n,
            temperature=s.temperature,
            max_new_tokens=s.max_new_tokens,
            seed=[m.rollout_seed for m in plan.members],
        )
        rewards, tokens = member_fitness(self.task, problems, per_member, plan.step, s.temperature)
        return rewards, tokens, weight_s

    def close(self) -> None:
        self.workdir.cleanup()
