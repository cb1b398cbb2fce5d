"""VLLMEngine: generation with vLLM's offline `LLM`, in-process, with in-place weight updates.

vLLM runs in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0, set here before vllm is imported),
so its model object is reachable. Sampling: one request per prompt with `n` samples and a seed
derived from (seed, prompt index) (vLLM gives sample j the request seed + j), log-probs in
"processed_logprobs" mode: after temperature and top-k / top-p / min-p, the same quantity HFEngine reports.

Weights: vLLM fuses q/k/v and gate/up projections and, on the CPU, repacks linear weights into
kernel formats and drops the originals. `load_weights` therefore keeps a CPU copy of every
checkpoint tensor under its HF name, updates it, and re-sends the changed tensors together with
their siblings (the tensors of the same parent module, e.g. all of self_attn, so that fused
projections are complete) through vLLM's in-place `reload_weights`, which loads, re-processes
and copies into the existing storage. The prefix cache is then reset so no key/value computed
with the old weights is reused. Cost: one copy of the checkpoint in CPU memory, and a reload
proportional to the size of the changed modules.

One VLLMEngine can be open per process (vLLM's parallel state is global to the process); a second
one raises ValueError until the first is closed.

Note: an in-process vLLM on the CPU makes torch.set_num_threads a no-op for the rest of the process
(set the thread count before making the engine, or with OMP_NUM_THREADS). Its OpenMP thread pinning
is off unless VLLM_CPU_OMP_THREADS_BIND is set. Chunked prefill is off by default (see __init__).
"""

from __future__ import annotations

import contextlib
import logging
import os
import weakref
from pathlib import Path
from typing import Iterable

import numpy as np
import torch

from escov.llm.engines.base import (
    Completion,
    Engine,
    check_generate_args,
    check_model_dir,
    load_tokenizer,
    stop_token_ids,
)

_LIVE_ENGINES: "weakref.WeakSet[VLLMEngine]" = weakref.WeakSet()  # one open engine per process
CPU_KV_CACHE_BYTES = 1 << 30  # KV cache reserved on a CPU platform unless kv_cache_memory_bytes is given


def prompt_seed(seed: int, index: int) -> int:
    """Request seed of the index-th prompt of a call with the given seed."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def module_group(name: str) -> str:
    """Parent of a parameter's module: 'model.layers.3.self_attn' for '...self_attn.q_proj.weight'."""
    parts = name.split(".")
    return ".".join(parts[:-2])


def read_checkpoint(model_dir: Path) -> dict[str, torch.Tensor]:
    """Every tensor of the directory's safetensors files, by HF name, on the CPU."""
    from safetensors.torch import load_file

    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise ValueError(f"model directory {str(model_dir)!r} has no .safetensors weights")
    weights: dict[str, torch.Tensor] = {}
    for f in files:
        weights |= load_file(str(f), device="cpu")
    return weights


@contextlib.contextmanager
def quiet_partial_reload_warnings():
    """vLLM warns about every layer a reload leaves untouched; a partial reload does that on purpose."""
    loggers = [logging.getLogger(f"vllm.model_executor.model_loader.reload.{m}") for m in ("layerwise", "inplace")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def refresh_kept_weight_kernels(model: torch.nn.Module) -> None:
    """Rebuild the CPU GEMM kernels of layers that keep their weight (embedding-type layers, e.g. an
    LM head tied to the input embedding): their packed copy would otherwise hold the old weights."""
    from vllm.model_executor.layers.vocab_parallel_embedding import UnquantizedEmbeddingMethod

    for module in model.modules():
        method = getattr(module, "quant_method", None)
        if isinstance(method, UnquantizedEmbeddingMethod) and hasattr(module, "cpu_linear"):
            method.process_weights_after_loading(module)


class VLLMEngine(Engine):
    def __init__(
        self,
        model_dir,
        *,
        dtype: torch.dtype | str = torch.float32,
        seed: int = 0,
        gpu_memory_utilization: float = 0.9,
        kv_cache_memory_bytes: int | None = None,
        max_model_len: int | None = None,
        **llm_kwargs,
    ):
        path = check_model_dir(model_dir)
        if any(e.llm is not None for e in _LIVE_ENGINES):
            raise ValueError(
                "another VLLMEngine is open in this process; vLLM keeps per-process global state, "
                "so a second in-process engine breaks the first: close() the other engine first, "
                "reuse it, or run this one in a subprocess"
            )
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # keep the engine core (and model) in this process
        # vLLM's CPU build pins the OpenMP threads of the process it runs in to a subset of cores;
        # in-process that would slow everything else in this process (training, scoring). Opt in
        # by setting VLLM_CPU_OMP_THREADS_BIND yourself.
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        from vllm import LLM
        from vllm.platforms import current_platform

        self.model_dir = str(path)
        self.tokenizer = load_tokenizer(path)
        self.stop_ids = sorted(stop_token_ids(self.tokenizer, path))
        self.weights = read_checkpoint(path)
        self.tracked: dict[str, torch.Tensor] = {}  # tensors the workers hold newer values of (track_center)
        self.cpu = current_platform.is_cpu()
        if kv_cache_memory_bytes is None and self.cpu:
            kv_cache_memory_bytes = CPU_KV_CACHE_BYTES
        dtype_name = str(dtype).removeprefix("torch.") if isinstance(dtype, torch.dtype) else dtype
        # Seeded requests whose prompt is split across steps (chunked prefill) fail on vLLM's CPU
        # build (it rewinds the request's generator, which CPU generators cannot do): off by default.
        llm_kwargs.setdefault("enable_chunked_prefill", False)
        self.llm = LLM(
            model=self.model_dir,
            dtype=dtype_name,
            seed=seed,
            gpu_memory_utilization=gpu_memory_utilization,
            kv_cache_memory_bytes=kv_cache_memory_bytes,
            max_model_len=max_model_len,
            logprobs_mode="processed_logprobs",
            **llm_kwargs,
        )
        _LIVE_ENGINES.add(self)

    def generate(
        self,
        prompts: list[str],
        *,
        n: int,
        temperature: float,
        max_new_tokens: int,
        seed: int,
        top_p: float = 1.0,
        top_k: int = 0,
        min_p: float = 0.0,
    ) -> list[list[Completion]]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        check_generate_args(prompts, n, temperature, max_new_tokens, top_p, top_k, min_p)
        requests = [TokensPrompt(prompt_token_ids=self.prompt_token_ids(p)) for p in prompts]
        greedy = temperature == 0  # vLLM takes n = 1 for greedy requests; the n samples are copies
        params = [
            SamplingParams(
                n=1 if greedy else n,
                temperature=float(temperature),
                top_p=float(top_p),
                max_tokens=max_new_tokens,
                top_k=top_k,
                min_p=float(min_p),  # 0: off (vLLM's defaults)
                logprobs=0,
                seed=prompt_seed(seed, i),
                stop_token_ids=self.stop_ids,
                detokenize=False,
            )
            for i in range(len(prompts))
        ]
        outputs = self.llm.generate(requests, params, use_tqdm=False)
        result = []
        for out in outputs:
            row = [self._completion(sample) for sample in sorted(out.outputs, key=lambda s: s.index)]
            result.append(
                [
                    Completion(row[0].text, list(row[0].token_ids), list(row[0].logprobs), row[0].finish_reason)
                    for _ in range(n)
                ]
                if greedy
                else row
            )
        return result

    def _completion(self, sample) -> Completion:
        """A vLLM sample as a Completion."""
        ids = list(sample.token_ids)
        logprobs = [step[tok].logprob for tok, step in zip(ids, sample.logprobs)]
        stopped = bool(ids) and ids[-1] in self.stop_ids
        return Completion(
            text=self.tokenizer.decode(ids, skip_special_tokens=True),
            token_ids=ids,
            logprobs=logprobs,
            finish_reason="stop" if stopped else "length",
        )

    def lora_capacity(self) -> tuple[int, int] | None:
        lora = self.llm.llm_engine.vllm_config.lora_config
        return None if lora is None else (lora.max_loras, lora.max_lora_rank)

    def generate_with_adapters(
        self,
        prompts: list[str],
        adapter_dirs: list[str],
        *,
        n: int,
        temperature: float,
        max_new_tokens: int,
        seed: int | list[int],
        top_p: float = 1.0,
    ) -> list[list[list[Completion]]]:
        """[adapter][prompt][sample]: every prompt under every PEFT LoRA directory, all in one generate call
        (adapter k in slot k + 1, reloaded in place); adapter k's requests carry the seeds generate(seed_k)
        uses (seed: one for every adapter, or one per adapter)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.lora.request import LoRARequest

        check_generate_args(prompts, n, temperature, max_new_tokens, top_p)
        seeds = [seed] * len(adapter_dirs) if isinstance(seed, int) else list(seed)
        if len(seeds) != len(adapter_dirs):
            raise ValueError(f"seed must be one int or one per adapter ({len(adapter_dirs)}), got {len(seeds)}")
        adapters = [
            LoRARequest(f"adapter-slot-{k}", k + 1, str(path), load_inplace=True) for k, path in enumerate(adapter_dirs)
        ]
        token_ids = [self.prompt_token_ids(p) for p in prompts]
        requests, params, loras = [], [], []
        for adapter, adapter_seed in zip(adapters, seeds):
            for i, ids in enumerate(token_ids):
                requests.append(TokensPrompt(prompt_token_ids=ids))
                params.append(
                    SamplingParams(
                        n=n,
                        temperature=float(temperature),
                        top_p=float(top_p),
                        max_tokens=max_new_tokens,
                        logprobs=0,
                        seed=prompt_seed(adapter_seed, i),
                        stop_token_ids=self.stop_ids,
                        detokenize=False,
                    )
                )
                loras.append(adapter)
        outputs = self.llm.generate(requests, params, lora_request=loras, use_tqdm=False)
        rows = [[self._completion(s) for s in sorted(out.outputs, key=lambda s: s.index)] for out in outputs]
        return [rows[k * len(prompts) : (k + 1) * len(prompts)] for k in range(len(adapters))]

    def track_center(self, live: dict[str, torch.Tensor]) -> None:
        """The workers now hold these tensors' values (written in place there: llm/es/vllm_inplace.py);
        the host copy reads them before the next reload, so no sibling is re-sent stale."""
        self.tracked = live

    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> None:
        if self.tracked:
            for name, tensor in self.tracked.items():
                self.weights[name] = tensor.detach().to("cpu", self.weights[name].dtype, copy=True)
            self.tracked = {}
        groups = set()
        for name, tensor in named_tensors:
            if name not in self.weights:
                raise ValueError(f"load_weights: the checkpoint has no tensor named {name!r}")
            if tuple(tensor.shape) != tuple(self.weights[name].shape):
                raise ValueError(
                    f"load_weights: {name} has shape {tuple(self.weights[name].shape)}, "
                    f"got a tensor of shape {tuple(tensor.shape)}"
                )
            self.weights[name] = tensor.detach().to("cpu", self.weights[name].dtype, copy=True)
            groups.add(module_group(name))
        if not groups:
            return
        batch = [(n, t) for n, t in self.weights.items() if module_group(n) in groups]
        with quiet_partial_reload_warnings():
            self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": batch, "is_checkpoint_format": True})
        if self.cpu:
            self.llm.apply_model(refresh_kept_weight_kernels)
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        """Drop the engine (vLLM frees its memory when the LLM object is collected)."""
        self.llm = None
        _LIVE_ENGINES.discard(self)
