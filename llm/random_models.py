"""Randomly initialized Qwen2 / Llama models built in code: the paper's architectures without downloads.

On a CPU the paper's configs (configs/paper-*.toml) run end to end on a small model of the same
architecture family, so that every code path (GQA attention, Qwen2's q/k/v biases, tied embeddings,
a chat template, long prompts) is exercised; on a GPU `save_random_model(dir, "qwen2",
"qwen2.5-1.5b")` gives the real shapes for memory and throughput checks (a real checkpoint directory
replaces it for training that means something).

    from escov.llm.random_models import save_random_model
    save_random_model("runs/random-qwen2-tiny", "qwen2", "tiny")   # a save_pretrained directory

Tokenizers, each with a chat template so that instruct and paper prompts run through
`apply_chat_template`: Qwen2 gets a byte-level `Qwen2Tokenizer` with no merges (every byte one
token, Qwen's pre-tokenizer and ChatML template, `<|im_end|>` ends a turn); Llama gets the project's
character-level tokenizer (llm/tinymodel.py) with `CHAR_CHAT_TEMPLATE`. Models with a real
vocabulary (the Qwen2.5 shapes) keep it: ids past the tokenizer's are never produced but exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

ARCHITECTURES = ("qwen2", "llama")
CHAR_CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWEN_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


@dataclass(frozen=True)
class Shape:
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    vocab_size: int | None  # None: the tokenizer's size
    max_position_embeddings: int
    rope_theta: float
    tie_word_embeddings: bool


SIZES = {
    # seconds on a CPU; head size 32 (what vLLM's CPU attention needs), grouped-query attention (2 heads, 1 kv head)
    "tiny": Shape(64, 128, 2, 2, 1, None, 4096, 1e6, True),
    "small": Shape(128, 384, 4, 4, 2, None, 4096, 1e6, True),
    # the real shapes (Qwen2.5-0.5B/1.5B config.json): for the GPU, built and tested only at tiny scale here
    "qwen2.5-0.5b": Shape(896, 4864, 24, 14, 2, 151936, 32768, 1e6, True),
    "qwen2.5-1.5b": Shape(1536, 8960, 28, 12, 2, 151936, 32768, 1e6, True),
}


def model_config(architecture: str, size: str, vocab_size: int, pad_id: int, eos_id: int):
    """The transformers config of an architecture (ARCHITECTURES) at a size preset (SIZES)."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture must be one of {list(ARCHITECTURES)}, got {architecture!r}")
    if size not in SIZES:
        raise ValueError(f"size must be one of {list(SIZES)}, got {size!r}")
    from transformers import LlamaConfig, Qwen2Config

    shape = SIZES[size]
    common = dict(
        vocab_size=shape.vocab_size or vocab_size,
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.num_layers,
        num_attention_heads=shape.num_heads,
        num_key_value_heads=shape.num_kv_heads,
        max_position_embeddings=shape.max_position_embeddings,
        rope_theta=shape.rope_theta,
        tie_word_embeddings=shape.tie_word_embeddings,
        rms_norm_eps=1e-6,
        pad_token_id=pad_id,
        eos_token_id=eos_id,
        bos_token_id=None,
    )
    return Qwen2Config(**common) if architecture == "qwen2" else LlamaConfig(**common)


def build_tokenizer(architecture: str):
    """The architecture's tokenizer (module docstring), with its chat template."""
    if architecture == "qwen2":
        from transformers import Qwen2Tokenizer
        from transformers.convert_slow_tokenizer import bytes_to_unicode

        vocab = {ch: i for i, ch in enumerate(bytes_to_unicode().values())}
        vocab |= {tok: len(vocab) + i for i, tok in enumerate(QWEN_SPECIAL_TOKENS)}
        tokenizer = Qwen2Tokenizer(
            vocab=vocab, merges=[], unk_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>"
        )
        tokenizer.chat_template = CHATML_TEMPLATE
        return tokenizer
    from escov.llm.tinymodel import build_tokenizer as character_tokenizer

    tokenizer = character_tokenizer()
    tokenizer.chat_template = CHAR_CHAT_TEMPLATE
    return tokenizer


def build_random_model(architecture: str, size: str, seed: int = 0):
    """(model, tokenizer): a randomly initialized causal LM (fp32) and its tokenizer (build_tokenizer)."""
    from transformers import AutoModelForCausalLM

    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture must be one of {list(ARCHITECTURES)}, got {architecture!r}")
    tokenizer = build_tokenizer(architecture)
    config = model_config(architecture, size, len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model, tokenizer


def save_random_model(out_dir, architecture: str, size: str, seed: int = 0) -> Path:
    """Build a random model (build_random_model) and save it with its tokenizer to out_dir."""
    model, tokenizer = build_random_model(architecture, size, seed)
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m escov.llm.random_models", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--architecture", default="qwen2", choices=ARCHITECTURES)
    parser.add_argument("--size", default="tiny", choices=list(SIZES))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(save_random_model(args.out, args.architecture, args.size, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
