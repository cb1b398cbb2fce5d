"""save_untrained_llama: an untrained, loadable Llama with head size 32 and weights scaled for sharp logits."""

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def test_saved_model_loads_with_head_size_32_and_scaled_matrices(tmp_path):
    from escov.llm.tinymodel import save_untrained_llama

    sharp = save_untrained_llama(tmp_path / "sharp", hidden_size=64, num_layers=2, intermediate_size=96)
    plain = save_untrained_llama(
        tmp_path / "plain", hidden_size=64, num_layers=2, intermediate_size=96, weight_scale=1.0
    )
    model = AutoModelForCausalLM.from_pretrained(sharp, dtype=torch.float32)
    cfg = model.config
    assert (cfg.hidden_size // cfg.num_attention_heads, cfg.num_hidden_layers, cfg.intermediate_size) == (32, 2, 96)
    tok = AutoTokenizer.from_pretrained(sharp)
    assert tok.decode(tok("3,7,25->46:", add_special_tokens=False)["input_ids"]) == "3,7,25->46:"
    reference = dict(AutoModelForCausalLM.from_pretrained(plain, dtype=torch.float32).named_parameters())
    for name, p in model.named_parameters():  # same seed: matrices 10x the unscaled draw, vectors unchanged
        assert torch.equal(p, reference[name] * 10 if p.dim() == 2 else reference[name]), name


def test_hidden_size_must_be_a_multiple_of_32(tmp_path):
    from escov.llm.tinymodel import save_untrained_llama

    with pytest.raises(ValueError, match="hidden_size must be a positive multiple of 32"):
        save_untrained_llama(tmp_path, hidden_size=48, num_layers=1, intermediate_size=64)
    assert not any(tmp_path.iterdir())
