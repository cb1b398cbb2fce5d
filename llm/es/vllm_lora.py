"""A low-rank ES population in one vLLM `generate` call: member m as a rank-r LoRA adapter (multi-LoRA).

With low-rank noise (llm/population_noise.py) member m's weight matrix is theta + s sigma A B^T / sqrt(r),
A [out, r], B [in, r] from the seeds. A LoRA adapter adds x lora_A^T lora_B^T * (lora_alpha / r), so

    lora_A = B^T,   lora_B = s sigma A / sqrt(r),   lora_alpha = r  (scaling 1)

is exactly the member. Adapters are written in the PEFT layout (adapter_config.json +
adapter_model.safetensors), one directory per member slot, and every request of the call names its
member's adapter: vLLM batches the N adapters in one forward (punica kernels; a plain-torch version
on the CPU build). The engine must be a VLLMEngine made with enable_lora=True, max_loras >= N and
max_lora_rank >= r (vLLM allows ranks 1, 8, 16, 32, 64, ...).

Only the projections vLLM's LoRA layers wrap can be perturbed this way (LORA_PATTERN: attention
q/k/v/o and MLP gate/up/down weights); embeddings, norms and biases cannot. vLLM's CPU attention also
needs a head size that is a multiple of 32 (32, 64, 80, ...).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from llm.engines.base import Completion, check_generate_args
from llm.es import member_direction
from llm.population_noise import PopulationNoise

LORA_PATTERN = r"\.(q|k|v|o|gate|up|down)_proj\.weight$"
TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def check_lora_population(noise: PopulationNoise, names: list[str], population_size: int, engine) -> None:
    """ValueError (before any work) unless the perturbed set, rank and engine allow a LoRA population."""
    if noise.rank < 1:
        raise ValueError("a vLLM LoRA population needs low-rank noise (noise_rank >= 1)")
    bad = [n for n in names if not re.search(LORA_PATTERN, n)]
    if bad:
        raise ValueError(f"a vLLM LoRA population can only perturb {LORA_PATTERN!r} weights; "
                         f"not {bad[:3]}{'...' if len(bad) > 3 else ''} (set es.param_pattern to it)")
    lora = getattr(getattr(getattr(engine, "llm", None), "llm_engine", None), "vllm_config", None)
    lora = getattr(lora, "lora_config", None)
    if lora is None:
        raise ValueError("the engine must be a VLLMEngine made with enable_lora=True (and max_loras, max_lora_rank)")
    if lora.max_loras < population_size or lora.max_lora_rank < noise.rank:
        raise ValueError(f"the engine allows max_loras={lora.max_loras}, max_lora_rank={lora.max_lora_rank}; "
                         f"the population needs {population_size} adapters of rank {noise.rank}")


def write_adapter(path: Path, noise: PopulationNoise, seed: int, member: int,
                  shapes: dict[str, tuple[int, int]]) -> None:
    """PEFT LoRA directory equal to member m's low-rank perturbation of the named weight matrices."""
    from safetensors.torch import save_file

    d, sign = member_direction(member, noise.antithetic)
    tensors = {}
    for name, shape in shapes.items():
        a, b = noise.factors(seed, d, name, shape)
        prefix = "base_model.model." + name.removesuffix(".weight")
        tensors[prefix + ".lora_A.weight"] = b.T.contiguous()
        tensors[prefix + ".lora_B.weight"] = (a * (sign * noise.sigma / math.sqrt(noise.rank))).contiguous()
    path.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path / "adapter_model.safetensors"))
    (path / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": noise.rank, "lora_alpha": noise.rank,
        "target_modules": sorted({n.split(".")[-2] for n in shapes}), "bias": "none", "lora_dropout": 0.0}))


def generate_lora_population(engine, noise: PopulationNoise, seed: int, members: list[int],
                             shapes: dict[str, tuple[int, int]], prompts: list[str], *, n: int, temperature: float,
                             max_new_tokens: int, sample_seed: int, workdir: str | Path,
                             top_p: float = 1.0) -> list[list[list[Completion]]]:
    """[member][prompt][sample]: every member's requests in one vLLM generate, member m on adapter slot m + 1.

    Each member's requests carry the seeds a VLLMEngine.generate call with sample_seed would use."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.lora.request import LoRARequest

    from llm.engines.vllm_engine import prompt_seed

    check_generate_args(prompts, n, temperature, max_new_tokens, top_p)
    adapters = []
    for slot, m in enumerate(members):
        path = Path(workdir) / f"member-slot-{slot}"
        write_adapter(path, noise, seed, m, shapes)
        adapters.append(LoRARequest(f"member-slot-{slot}", slot + 1, str(path), load_inplace=True))
    token_ids = [engine.prompt_token_ids(p) for p in prompts]
    requests, params, loras = [], [], []
    for adapter in adapters:
        for i, ids in enumerate(token_ids):
            requests.append(TokensPrompt(prompt_token_ids=ids))
            params.append(SamplingParams(n=n, temperature=float(temperature), top_p=float(top_p),
                                         max_tokens=max_new_tokens, logprobs=0, seed=prompt_seed(sample_seed, i),
                                         stop_token_ids=engine.stop_ids, detokenize=False))
            loras.append(adapter)
    outputs = engine.llm.generate(requests, params, lora_request=loras, use_tqdm=False)
    rows = [[_completion(engine, s) for s in sorted(out.outputs, key=lambda s: s.index)] for out in outputs]
    return [rows[k * len(prompts):(k + 1) * len(prompts)] for k in range(len(members))]


def _completion(engine, sample) -> Completion:
    """A vLLM sample as a Completion (as VLLMEngine.generate builds it)."""
    ids = list(sample.token_ids)
    logprobs = [step[tok].logprob for tok, step in zip(ids, sample.logprobs)]
    stopped = bool(ids) and ids[-1] in engine.stop_ids
    return Completion(text=engine.tokenizer.decode(ids, skip_special_tokens=True), token_ids=ids, logprobs=logprobs,
                      finish_reason="stop" if stopped else "length")


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

