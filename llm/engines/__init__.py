"""Generation engines with one interface (`llm.engines.base.Engine`): HFEngine and VLLMEngine.

base.py         the Engine interface both share, and the helpers both use (tokenizer, model checks)
hf.py           HFEngine: batched sampling on a transformers causal LM with a KV cache and left padding
vllm_engine.py  VLLMEngine: vLLM's offline `LLM` in-process, with in-place weight updates
"""

from __future__ import annotations

import torch

from escov.llm.engines.base import Completion, Engine
from escov.llm.settings.train_config import ENGINES  # the values of the engine setting, defined with it


def make_engine(
    kind: str, model_dir, *, dtype: torch.dtype = torch.float32, seed: int = 0, device: str = "cpu", **kwargs
) -> Engine:
    """An engine of the given kind ("hf" or "vllm") on a local model directory.

    seed is vLLM's engine seed (each generate call takes its own sampling seed on both engines);
    device (resolved, llm/device.py) is where the HF engine's module lives; vLLM places its model on its
    own platform's device (CUDA_VISIBLE_DEVICES chooses the GPU). kwargs go to the engine's constructor.
    """
    if kind == "hf":
        from escov.llm.engines.hf import HFEngine

        return HFEngine(model_dir, dtype=dtype, device=device, **kwargs)
    if kind == "vllm":
        from escov.llm.engines.vllm_engine import VLLMEngine

        return VLLMEngine(model_dir, dtype=dtype, seed=seed, **kwargs)
    raise ValueError(f"engine must be one of {ENGINES}, got {kind!r}")


__all__ = ["Completion", "Engine", "ENGINES", "make_engine"]
