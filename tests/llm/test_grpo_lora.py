"""llm/grpo_lora.py in process on the tiny model: the adapter's config names the phase's starting model, its tensors
carry peft's saved names, the merged weights are W0 + (alpha / r) B A, and adapters of another shape are refused."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from escov.llm.config import GRPOConfig
from escov.llm.grpo_lora import adapter_config, adapter_state, load_adapter_state, lora_model, merged_weights

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _model(tiny_model_dir, **lora):
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    cfg = GRPOConfig(use_peft=True, **({"lora_r": 2, "lora_alpha": 4, "lora_target_modules": "q_proj,v_proj"} | lora))
    return lora_model(base, cfg)


def test_the_adapter_config_and_tensors_are_peft_s_for_the_given_base(tiny_model_dir):
    model = _model(tiny_model_dir)
    config = adapter_config(model, "/models/phase-start")
    assert config["base_model_name_or_path"] == "/models/phase-start"
    assert (config["r"], config["lora_alpha"], config["target_modules"]) == (2, 4, ["q_proj", "v_proj"])
    state = adapter_state(model)
    assert state and all(".default." not in n and (".lora_A.weight" in n or ".lora_B.weight" in n) for n in state)


def test_merged_weights_are_w0_plus_alpha_over_r_b_a(tiny_model_dir):
    model = _model(tiny_model_dir)
    torch.manual_seed(0)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.requires_grad:
                p.copy_(torch.randn_like(p))  # B away from 0, so the delta is not zero
    base = dict(AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).named_parameters())
    adapters = adapter_state(model)
    merged = merged_weights(model)
    assert merged and all(n.endswith(("q_proj.weight", "v_proj.weight")) for n in merged)
    for name, weight in merged.items():
        prefix = "base_model.model." + name.removesuffix(".weight")
        a, b = adapters[prefix + ".lora_A.weight"], adapters[prefix + ".lora_B.weight"]
        torch.testing.assert_close(weight, base[name] + (4 / 2) * b @ a, rtol=1e-5, atol=1e-6)


def test_adapters_of_another_shape_or_names_are_refused_naming_the_checkpoint(tiny_model_dir):
    model = _model(tiny_model_dir)
    state = adapter_state(model)
    load_adapter_state(model, {n: t + 1.0 for n, t in state.items()}, "step-4")
    assert all(torch.equal(adapter_state(model)[n], t + 1.0) for n, t in state.items())
    name = next(n for n in state if ".lora_A." in n)
    transposed = dict(state) | {name: state[name].T.contiguous()}  # same entries, another shape
    with pytest.raises(ValueError, match=rf"step-4: adapter {name} has shape"):
        load_adapter_state(model, transposed, "step-4")
    with pytest.raises(ValueError, match="step-4: adapters .* differ from the run's LoRA settings"):
        load_adapter_state(model, {n: t for n, t in state.items() if n != name}, "step-4")
