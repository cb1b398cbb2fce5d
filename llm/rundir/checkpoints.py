"""checkpoints/step-N/: written atomically with the space they need checked first, read back with every
part checked, and a damaged one set aside."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from escov.llm.rundir.disk import writing
from escov.llm.rundir.jsonio import read_json, write_json
from escov.llm.rundir.records import (
    ADAPTER,
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    CHECKPOINT_NAME,
    CHECKPOINTS,
    LEGACY_ADAPTER,
    OPTIMIZER,
    TRAINER_STATE,
    WEIGHTS,
    RunDirError,
    TrainerState,
    check_record,
)


def checkpoint_dir(run: Path, step: int) -> Path:
    return Path(run) / CHECKPOINTS / f"step-{step}"


def checkpoint_steps(run: Path) -> tuple[list[int], list[Path]]:
    """(steps of the complete checkpoints, newest first; folders under checkpoints/ that are not
    step-N checkpoints: stray or set aside). A checkpoint is complete once its trainer_state.json exists
    (it is written last, and the folder is renamed into place)."""
    steps, other = [], []
    root = Path(run) / CHECKPOINTS
    for p in sorted(root.iterdir()) if root.is_dir() else []:
        m = CHECKPOINT_NAME.fullmatch(p.name)
        if m and p.is_dir():
            if (p / TRAINER_STATE).exists():
                steps.append(int(m.group(1)))
        elif not p.name.startswith(".tmp-"):
            other.append(p)
    return sorted(steps, reverse=True), other


def save_checkpoint(
    run: Path,
    model_dir: Path,
    step: int,
    weights: dict,
    state: TrainerState,
    optimizer_state: dict | None,
    adapter: dict | None = None,
) -> Path:
    """checkpoints/step-N/: fp32 weights in save_pretrained layout with the base model's config and
    tokenizer files, the trainer state (+ optimizer state, + LoRA adapters); atomic (a temporary folder,
    then a rename). An existing complete checkpoint of that step is kept (it holds the same weights). A disk
    with less free space than the checkpoint needs is a RunDirError naming it and both sizes, before anything
    is written; a write that fails leaves no temporary folder behind."""
    final = checkpoint_dir(run, step)
    if (final / TRAINER_STATE).exists():
        return final
    tmp = Path(run) / CHECKPOINTS / f".tmp-step-{step}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _write_checkpoint(tmp, final, model_dir, step, weights, state, optimizer_state, adapter)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # a full disk is not left full of half a checkpoint
        raise
    return final


def _write_checkpoint(
    tmp: Path,
    final: Path,
    model_dir: Path,
    step: int,
    weights: dict,
    state: TrainerState,
    optimizer_state: dict | None,
    adapter: dict | None = None,
) -> None:
    import torch
    from safetensors.torch import save_file

    adapter_tensors = adapter[1] if adapter is not None else {}
    needed = checkpoint_bytes(model_dir, weights, optimizer_state) + sum(
        t.numel() * 4 for t in adapter_tensors.values()
    )
    with writing(tmp, needed=needed):
        tmp.mkdir(parents=True)
        for f in Path(model_dir).iterdir():  # config, generation config, tokenizer files of the base model
            if f.is_file() and not f.name.startswith("model") and f.suffix != ".bin":
                shutil.copy2(f, tmp / f.name)
        model_cfg = read_json(tmp / "config.json")
        model_cfg["torch_dtype" if "torch_dtype" in model_cfg else "dtype"] = "float32"
        write_json(tmp / "config.json", model_cfg)
        save_file(
            {n: w.detach().float().contiguous() for n, w in weights.items()},
            str(tmp / WEIGHTS),
            metadata={"format": "pt"},
        )
        if optimizer_state is not None:
            torch.save(optimizer_state, tmp / OPTIMIZER)
        if adapter is not None:  # (adapter_config.json's content, tensors by peft's saved names)
            config, tensors = adapter
            (tmp / ADAPTER).mkdir()
            write_json(tmp / ADAPTER / ADAPTER_CONFIG, config)
            save_file(
                {n: t.detach().float().contiguous() for n, t in tensors.items()},
                str(tmp / ADAPTER / ADAPTER_WEIGHTS),
                metadata={"format": "pt"},
            )
        write_json(tmp / TRAINER_STATE, check_record(TrainerState, state | {"step": step}, str(tmp / TRAINER_STATE)))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)


def load_checkpoint(path: Path, shapes: dict, with_optimizer: bool) -> tuple[dict, TrainerState, dict | None]:
    """(fp32 weights by name, trainer state, optimizer state or None) of checkpoints/step-N, every
    part checked: the state is a TrainerState of step N, the weights hold every name in `shapes`
    with that shape and finite values, optimizer.pt (when asked for) is a torch optimizer state
    dict loaded with weights_only=True. RunDirError naming the file otherwise."""
    import torch
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    state = check_record(TrainerState, read_json(path / TRAINER_STATE), str(path / TRAINER_STATE))
    if state["step"] != int(CHECKPOINT_NAME.fullmatch(path.name).group(1)):
        raise RunDirError(f"{path / TRAINER_STATE}: step {state['step']} does not match the folder name")
    weights_file = path / WEIGHTS
    try:
        with safe_open(weights_file, "pt") as fh:
            stored = set(fh.keys())
            weights = {}
            for name, shape in shapes.items():
                key = name if name in stored else "model.embed_tokens.weight" if name == "lm_head.weight" else name
                if key not in stored:
                    raise RunDirError(f"{weights_file}: lacks the weight {name}")
                tensor = fh.get_tensor(key).float()
                if tuple(tensor.shape) != tuple(shape):
                    raise RunDirError(
                        f"{weights_file}: weight {name} has shape {tuple(tensor.shape)}, expected {tuple(shape)}"
                    )
                if not torch.isfinite(tensor).all():
                    raise RunDirError(f"{weights_file}: weight {name} holds non-finite values")
                weights[name] = tensor
    except (SafetensorError, OSError) as err:
        raise RunDirError(f"{weights_file}: not a readable safetensors file ({err})") from None
    optimizer_state = None
    if with_optimizer:
        opt_file = path / OPTIMIZER
        if not opt_file.is_file():
            raise RunDirError(f"{opt_file}: missing (the checkpoint lies inside a GRPO phase)")
        try:
            optimizer_state = torch.load(opt_file, weights_only=True)
        except Exception as err:  # torch.load raises many kinds (UnpicklingError, RuntimeError, EOFError, ...)
            raise RunDirError(
                f"{opt_file}: not a torch optimizer state ({type(err).__name__}: {str(err).splitlines()[0][:120]})"
            ) from None
        if not isinstance(optimizer_state, dict) or set(optimizer_state) != {"state", "param_groups"}:
            raise RunDirError(
                f"{opt_file}: not a torch optimizer state dict (expected keys 'state' and 'param_groups')"
            )
    return weights, state, optimizer_state


def load_adapter(path: Path) -> dict:
    """The LoRA adapters of checkpoints/step-N (adapter/adapter_model.safetensors; adapter.safetensors in older
    checkpoints), finite; RunDirError naming the file otherwise."""
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    file = Path(path) / ADAPTER / ADAPTER_WEIGHTS
    if not file.exists() and (Path(path) / LEGACY_ADAPTER).exists():
        file = Path(path) / LEGACY_ADAPTER
    try:
        adapter = load_file(str(file))
    except (SafetensorError, OSError) as err:
        raise RunDirError(f"{file}: not a readable safetensors file ({err})") from None
    bad = next((n for n, t in adapter.items() if not torch.isfinite(t).all()), None)
    if bad is not None:
        raise RunDirError(f"{file}: adapter {bad} holds non-finite values")
    return adapter


def set_aside(path: Path) -> Path:
    """Rename a damaged checkpoint folder step-N to step-N.damaged (replacing an older one), so that
    it is neither resumed from nor mistaken for a complete checkpoint when step N is written again."""
    target = path.with_name(path.name + ".damaged")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(path, target)
    return target


def checkpoint_bytes(model_dir: Path, weights: dict, optimizer_state: dict | None) -> int:
    """The bytes a checkpoint takes (about): fp32 weights, the optimizer's tensors, the base model's
    config and tokenizer files, and 64 KB for the rest (headers, trainer_state.json)."""
    import torch

    tensors = sum(w.numel() * 4 for w in weights.values())
    if optimizer_state is not None:
        tensors += sum(
            v.numel() * v.element_size()
            for state in optimizer_state.get("state", {}).values()
            for v in state.values()
            if isinstance(v, torch.Tensor)
        )
    files = sum(
        f.stat().st_size
        for f in Path(model_dir).iterdir()
        if f.is_file() and not f.name.startswith("model") and f.suffix != ".bin"
    )
    return tensors + files + 2**16
