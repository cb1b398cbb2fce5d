"""A GRPO LoRA checkpoint is a PEFT adapter as well as merged weights: `PeftModel.from_pretrained(base,
checkpoint/adapter)` reproduces the merged model's logits; loading the checkpoint itself with transformers gives the
merged weights once (no adapter applied on top of them); the adapter's tensors carry peft's saved names."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _train(model_dir, out):
    args = [
        sys.executable,
        "-m",
        "escov.llm",
        "train",
        "--algo",
        "grpo",
        "--model",
        str(model_dir),
        "--out",
        str(out),
        "--steps",
        "2",
        "--batch_size",
        "2",
        "--train_pool",
        "8",
        "--threads",
        "1",
        "--max_completion_length",
        "6",
        "--checkpoint_every",
        "2",
        "--probe",
        "false",
        "--eval_problems",
        "2",
        "--eval_samples",
        "2",
        "--eval_ks",
        "1",
        "--heldout_task",
        "",
        "--threshold_keep",
        "50",
        "--no-progress",
        "--format_reward",
        "0.1",
        "--grpo.num_generations",
        "4",
        "--grpo.learning_rate",
        "0.05",
        "--grpo.use_peft",
        "true",
        "--grpo.lora_r",
        "2",
        "--grpo.lora_alpha",
        "4",
        "--grpo.lora_target_modules",
        "q_proj,v_proj",
    ]
    return subprocess.run(args, env=os.environ | {"OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=600)


def test_a_lora_checkpoint_loads_with_peft_and_gives_the_merged_models_logits(tiny_model_dir, tmp_path):
    from peft import PeftModel

    done = _train(tiny_model_dir, tmp_path / "run")
    assert done.returncode == 0, done.stderr[-2000:]
    checkpoint = tmp_path / "run" / "checkpoints" / "step-2"
    adapter = checkpoint / "adapter"
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA" and config["r"] == 2 and config["lora_alpha"] == 4
    assert sorted(config["target_modules"]) == ["q_proj", "v_proj"]
    assert config["base_model_name_or_path"] == str(tiny_model_dir)
    tensors = load_file(str(adapter / "adapter_model.safetensors"))
    assert tensors and all(".lora_A.weight" in n or ".lora_B.weight" in n for n in tensors), sorted(tensors)[:3]
    assert not (checkpoint / "adapter_config.json").exists()  # transformers would apply it on the merged weights
    ids = torch.tensor([[1, 5, 9, 12, 3, 7]])
    merged = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    with torch.no_grad():
        want, before = merged(ids).logits, base(ids).logits
        peft = PeftModel.from_pretrained(base, adapter)
        peft.eval()
        got = peft(ids).logits
    assert not torch.allclose(want, before, atol=1e-4)  # the adapter moved the model: the comparison can fail
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # the merged weights, read directly, are what transformers loaded: W0 + (alpha / r) B A once
    stored = load_file(str(checkpoint / "model.safetensors"))
    live = dict(merged.named_parameters())
    assert all(torch.equal(live[n].detach(), stored[n]) for n in stored if n in live)
