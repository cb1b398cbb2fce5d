"""escov.llm.random_models: random Qwen2 / Llama models built in code, loadable, with chat templates that keep
whitespace; the real Qwen2.5 shapes match the published parameter counts (built on the meta device)."""

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from escov.llm.engines.base import encode_prompt
from escov.llm.random_models import model_config, save_random_model
from escov.llm.tasks.countdown import format_prompt
from escov.llm.tasks.math_data import format_prompt as math_prompt

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("architecture, model_class", [("qwen2", "Qwen2ForCausalLM"), ("llama", "LlamaForCausalLM")])
def test_tiny_models_load_and_feed_every_prompt_style(tmp_path, random_qwen2_dir, architecture, model_class):
    out = (
        random_qwen2_dir
        if architecture == "qwen2"
        else save_random_model(tmp_path / architecture, architecture, "tiny")
    )
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(out)
    assert type(model).__name__ == model_class
    cfg = model.config
    assert cfg.hidden_size // cfg.num_attention_heads == 32 and cfg.num_key_value_heads < cfg.num_attention_heads
    if architecture == "qwen2":  # Qwen2's attention has q/k/v biases
        assert any(name.endswith("q_proj.bias") for name, _ in model.named_parameters())
    paper = format_prompt([44, 19, 35], "98", "paper")
    assert tok.decode(encode_prompt(tok, paper)) == paper  # raw, whitespace kept, no chat template
    chat = tok.decode(encode_prompt(tok, math_prompt("What is 2 + 2?", "paper")))
    assert (
        "Please reason step by step" in chat and "What is 2 + 2?" in chat and chat.index("Please") < chat.index("What")
    )
    with torch.no_grad():
        logits = model(torch.tensor([encode_prompt(tok, paper)])).logits
    assert logits.shape[-1] >= len(tok) and torch.isfinite(logits).all()


@pytest.mark.parametrize("size, parameters", [("qwen2.5-0.5b", 494_032_768), ("qwen2.5-1.5b", 1_543_714_304)])
def test_real_shapes_have_the_published_parameter_counts(size, parameters):
    cfg = model_config("qwen2", size, vocab_size=100, pad_id=0, eos_id=1)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    assert sum(p.numel() for p in model.parameters()) == parameters


def test_unknown_architecture_or_size():
    with pytest.raises(ValueError, match="architecture must be one of"):
        model_config("gpt2", "tiny", 100, 0, 1)
    with pytest.raises(ValueError, match="size must be one of"):
        model_config("qwen2", "7b", 100, 0, 1)
