"""LoRA adapters (peft) for GRPO: the trained module, its merged weights, and its adapter state.

With grpo.use_peft, GRPO trains low-rank adapters on a copy of the phase's starting weights W0 (frozen):
a target module's weight is W0 + (alpha / r) B A, with A [r, in] drawn by peft and B [out, r] = 0 at the
start, so the phase starts from W0 exactly. After each optimizer step the merged weights W0 + (alpha / r) B A
go to the run's model (and engine): checkpoints, evaluation and ES phases see plain weights under their
own names, and `llm eval` loads a checkpoint like any other. A checkpoint inside a LoRA phase also keeps
the adapters as a PEFT adapter folder, checkpoints/step-N/adapter/ (adapter_config.json and
adapter_model.safetensors under peft's saved names, without the adapter's name `.default.`; its
base_model_name_or_path is the phase's starting model): `PeftModel.from_pretrained(base,
"checkpoints/step-N/adapter")` gives the merged weights' model, and a resumed phase continues from it. The
folder is not the checkpoint's root: transformers' `from_pretrained(checkpoint)` applies an adapter_config.json
it finds there on top of the weights beside it, which are already merged (the delta would count twice).
"""

from __future__ import annotations

import torch

from escov.llm.config import GRPOConfig


def lora_model(base: torch.nn.Module, cfg: GRPOConfig) -> torch.nn.Module:
    """A peft LoRA model wrapping base (its modules are replaced in place), every base weight frozen."""
    from peft import LoraConfig, get_peft_model

    targets = [t for t in cfg.lora_target_modules.split(",") if t] or None  # None: peft's default for the architecture
    config = LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=targets,
        bias="none",
        task_type="CAUSAL_LM",
    )
    try:
        return get_peft_model(base, config)
    except ValueError as err:  # peft names a target module that the model does not have
        raise ValueError(f"grpo.lora_target_modules: {str(err).splitlines()[0]}") from None


def lora_layers(model: torch.nn.Module) -> dict[str, torch.nn.Module]:
    """{name of the wrapped module in the base model's naming: its peft LoRA layer}."""
    from peft.tuners.lora import LoraLayer

    inner = model.get_base_model()
    return {name: m for name, m in inner.named_modules() if isinstance(m, LoraLayer)}


def merged_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The weights W0 + (alpha / r) B A of every LoRA-wrapped module, by the base model's parameter names
    (the other weights are W0, unchanged)."""
    with torch.no_grad():
        return {
            f"{name}.weight": layer.get_base_layer().weight + layer.get_delta_weight("default")
            for name, layer in lora_layers(model).items()
        }


ADAPTER_NAME = "default"  # peft's name of the one adapter; its saved files leave it out of the tensors' names


def saved_name(name: str) -> str:
    """A LoRA parameter's name as peft saves it: `...q_proj.lora_A.default.weight` -> `...q_proj.lora_A.weight`."""
    return name.replace(f".{ADAPTER_NAME}.", ".")


def adapter_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The trained adapter tensors (A and B of every layer) by peft's saved names, as CPU copies."""
    return {saved_name(n): p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def adapter_config(model: torch.nn.Module, base: str) -> dict:
    """adapter_config.json of the model's adapter (peft's LoraConfig as peft writes it), for base model `base`."""
    config = model.peft_config[ADAPTER_NAME].to_dict() | {"base_model_name_or_path": str(base)}
    return {k: sorted(v) if isinstance(v, set) else v for k, v in config.items()}


def load_adapter_state(model: torch.nn.Module, state: dict[str, torch.Tensor], where: str) -> None:
    """Copy adapter tensors (by peft's saved names, or by the live names of checkpoints written before the
    adapter folder) into the model; ValueError naming `where` when names or shapes differ."""
    live = {saved_name(n): p for n, p in model.named_parameters() if p.requires_grad}
    state = {saved_name(n): t for n, t in state.items()}
    if set(live) != set(state):
        raise ValueError(f"{where}: adapters {sorted(set(live) ^ set(state))[:3]} differ from the run's LoRA settings")
    with torch.no_grad():
        for n, p in live.items():
            if p.shape != state[n].shape:
                raise ValueError(f"{where}: adapter {n} has shape {tuple(state[n].shape)}, expected {tuple(p.shape)}")
            p.copy_(state[n])
