"""The generation-engine interface shared by HFEngine and VLLMEngine, and the helpers both use.

An engine samples completions for raw task prompts (applying the tokenizer's chat template when
it has one) and lets a trainer overwrite weights in place between calls:

    engine.generate(prompts, n=32, temperature=1.0, max_new_tokens=24, seed=0)  # [prompt][sample]
    engine.load_weights((name, tensor) for name, tensor in ...)                 # HF parameter names

`Completion.logprobs[t]` is log pi_T(y_t | x, y_<t), the log-probability of the sampled token
under the distribution it was sampled from: the model's logits divided by the temperature T and,
restricted (top_k > 0: to the k most likely tokens; top_p < 1: to the top-p nucleus; min_p > 0: to the tokens
whose probability is at least min_p times the most likely one's) and renormalized. At temperature 0 (greedy) it is
the model's own (T = 1) log-probability of the argmax token. `token_ids` include the end-of-
sequence token when generation stopped on it (finish_reason "stop"); "length" means the
max_new_tokens limit was reached. `text` is the decoded completion without special tokens.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import torch


@dataclass
class Completion:
    text: str
    token_ids: list[int]
    logprobs: list[float]  # per generated token, at the sampling temperature (see module docstring)
    finish_reason: str  # "stop" (end-of-sequence token) or "length" (max_new_tokens reached)


class Engine(ABC):
    """Generates completions; `load_weights` changes the weights in place for the next `generate`."""

    tokenizer: "PreTrainedTokenizerBase"  # noqa: F821  (a transformers tokenizer)
    model_dir: str | None
    max_prompt_tokens: int | None = None  # prompts are cut to their last this many tokens (truncate_prompts)

    @abstractmethod
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
        """n completions for each prompt ([prompt][sample]); temperature 0 is greedy; deterministic given seed."""

    @abstractmethod
    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Overwrite the named weights (HF parameter names; any subset) for the next generate."""

    def live_module(self) -> "torch.nn.Module | None":
        """The HF module this engine generates with, when it holds one in this process (HFEngine): a trainer
        may then share it or change its parameters in place. None for engines that keep their own copy."""
        return None

    def lora_capacity(self) -> tuple[int, int] | None:
        """(max_loras, max_lora_rank) when the engine serves LoRA adapters (a VLLMEngine made with
        enable_lora=True); None otherwise."""
        return None

    def prompt_token_ids(self, prompt: str) -> list[int]:
        """Token ids the engine feeds for a raw task prompt (chat template applied when there is one), cut to
        their last max_prompt_tokens when that is set (llm/prompt_lengths.py)."""
        ids = encode_prompt(self.tokenizer, prompt)
        return ids[-self.max_prompt_tokens :] if self.max_prompt_tokens else ids

    def close(self) -> None:
        """Release the engine's resources (a no-op where there are none)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_generate_args(prompts, n, temperature, max_new_tokens, top_p, top_k: int = 0, min_p: float = 0.0) -> None:
    if not isinstance(prompts, (list, tuple)) or not prompts or not all(isinstance(p, str) for p in prompts):
        raise ValueError("prompts must be a non-empty list of strings")
    check_sampling_args(n, temperature, max_new_tokens, top_p)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be an integer >= 0 (0: off), got {top_k!r}")
    if not (isinstance(min_p, (int, float)) and 0 <= min_p <= 1):
        raise ValueError(f"min_p must lie in [0, 1] (0: off), got {min_p!r}")


def check_sampling_args(n, temperature, max_new_tokens, top_p) -> None:
    """ValueError naming the first sampling setting out of range (cheap: callers check before loading a model)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n (samples per prompt) must be an integer >= 1, got {n!r}")
    if not (isinstance(temperature, (int, float)) and temperature >= 0 and temperature < float("inf")):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    if not (isinstance(top_p, (int, float)) and 0 < top_p <= 1):
        raise ValueError(f"top_p must lie in (0, 1], got {top_p!r}")


MODEL_JSON_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "model.safetensors.index.json",
)


WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.gguf")  # files a model directory keeps its weights in


def check_model_dir(model_dir, flag: str = "--model", weights: bool = True) -> Path:
    """The path of a local model directory, or ValueError naming the flag and the file that is wrong: config.json
    missing or not a JSON object, a run directory of `llm train` (its config.json holds settings), no weight
    files (unless weights is False: a check before the prompts are, which need only the tokenizer), a JSON file of
    the model or tokenizer that is not UTF-8 JSON, a safetensors file whose header is damaged or that is truncated."""
    from safetensors import SafetensorError, safe_open

    from escov.llm.rundir import read_json

    path = Path(model_dir)
    if not path.exists():
        raise ValueError(f"model directory {str(model_dir)!r} does not exist")
    if not path.is_dir():
        raise ValueError(f"model path {str(model_dir)!r} is not a directory")
    if not (path / "config.json").is_file():
        raise ValueError(
            f"model directory {str(model_dir)!r} has no config.json "
            "(expected a save_pretrained / Hugging Face model directory)"
        )
    for name in MODEL_JSON_FILES:
        if (path / name).is_file() and not isinstance(read_json(path / name), dict):
            raise ValueError(f"{path / name}: expected a JSON object")
    settings = read_json(path / "config.json")
    if "algo" in settings and "model" in settings and (path / "checkpoints").is_dir():
        raise ValueError(
            f"{flag} {model_dir} is a run directory of `llm train`, not a model: give one of its "
            f"checkpoints ({path / 'checkpoints' / 'step-N'}), or `llm eval --run {model_dir}`"
        )
    if weights and not any(next(path.glob(pattern), None) for pattern in WEIGHT_PATTERNS):
        raise ValueError(
            f"{flag} {model_dir}: the model directory holds no weights (no {', '.join(WEIGHT_PATTERNS)} "
            "file beside its config.json)"
        )
    for weights in sorted(path.glob("*.safetensors")):
        try:
            with safe_open(weights, "pt") as fh:
                fh.keys()
        except SafetensorError as err:
            raise ValueError(f"{weights}: damaged or truncated safetensors file ({err})") from None
    return path


def load_tokenizer(model_dir):
    """AutoTokenizer of a model directory. Documented fallback: with no pad token, pad with EOS."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(check_model_dir(model_dir, weights=False)))
    return with_pad_token(tokenizer)


def with_pad_token(tokenizer):
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token_id is None:
            raise ValueError(
                "the tokenizer has neither a pad token nor an end-of-sequence token; "
                "set tokenizer.pad_token before making an engine"
            )
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def stop_token_ids(tokenizer, model_dir=None) -> set[int]:
    """End-of-sequence ids: the tokenizer's EOS plus any listed in generation_config.json."""
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    gen_config = Path(model_dir) / "generation_config.json" if model_dir is not None else None
    if gen_config is not None and gen_config.is_file():
        eos = json.loads(gen_config.read_text()).get("eos_token_id")
        ids |= set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if not ids:
        raise ValueError("the tokenizer has no end-of-sequence token; generation could never stop")
    return ids


def encode_prompt(tokenizer, prompt: str) -> list[int]:
    """Token ids of a task prompt: a plain str is one user turn of the chat template when the tokenizer
    has one, else raw; a llm.tasks.reasoning_format.Prompt says itself how it is fed (raw text, or its
    chat messages). ValueError when there are none (an empty prompt without a start token)."""
    chat = getattr(prompt, "chat", True)
    if chat and getattr(tokenizer, "chat_template", None):
        messages = list(getattr(prompt, "messages", None) or [{"role": "user", "content": str(prompt)}])
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    else:
        ids = list(tokenizer(str(prompt))["input_ids"])
    if not ids:
        raise ValueError(
            f"prompt {str(prompt)!r:.60} encodes to no tokens: a model cannot generate from an empty prompt"
        )
    return ids
