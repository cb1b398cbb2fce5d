"""The device a run computes on: one place that parses, resolves and checks it.

    device = "auto" | "cpu" | "cuda" | "cuda:N"

"auto" is the first CUDA device when CUDA is available, else the CPU; "cuda" is "cuda:0". The resolved
name ("cpu" or "cuda:N") is what a run records in config.json. Everything a run computes with lives on
it: the HF engine, the training model, the GRPO reference, the ES master weights and the ES noise
(its generators are made on the device: `llm.es.noise`).

CPU and CUDA generators give different random streams for the same seed, so a run started on one kind
of device and resumed on the other would not continue the same run: `check_resume_device` refuses it
unless the user allows it (`--allow_device_change true`).
"""

from __future__ import annotations

import re

DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")


def check_device_spec(spec: object, flag: str = "device") -> str:
    """The spec when it is one of "auto", "cpu", "cuda", "cuda:N"; ValueError naming the flag otherwise
    (syntax only: whether this machine has the device is `resolve_device`'s check)."""
    if not isinstance(spec, str) or not DEVICE_PATTERN.fullmatch(spec):
        raise ValueError(f"{flag} must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {spec!r}")
    return spec


def resolve_device(spec: str, flag: str = "device") -> str:
    """ "cpu" or "cuda:N" for a spec; ValueError when it asks for CUDA this machine does not have."""
    import torch  # here, not at the top: the settings (llm/settings/) import this module without torch

    check_device_spec(spec, flag)
    if spec == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if spec == "cpu":
        return "cpu"
    if not torch.cuda.is_available():
        raise ValueError(
            f"{flag} {spec!r}: CUDA is not available on this machine "
            f"(torch {torch.__version__}, torch.cuda.is_available() is False); use 'cpu' or 'auto'"
        )
    index = int(spec.partition(":")[2] or 0)
    count = torch.cuda.device_count()
    if index >= count:
        raise ValueError(f"{flag} {spec!r}: this machine has {count} CUDA device(s) (cuda:0 .. cuda:{count - 1})")
    return f"cuda:{index}"


def device_kind(device: str) -> str:
    """ "cpu" or "cuda": the kind of generator the device's random streams come from."""
    return "cpu" if device == "cpu" else "cuda"


def check_resume_device(saved: str, now: str, allow_change: bool, where: str) -> None:
    """ValueError when a run recorded on one kind of device (saved) resumes on the other (now), unless allowed."""
    if device_kind(saved) != device_kind(now) and not allow_change:
        raise ValueError(
            f"{where}: the run was started on {saved!r} and would resume on {now!r}; CPU and CUDA "
            "generators give different noise and sampling streams for the same seed, so it would not "
            "continue the same run. Resume on a device of the same kind, or pass "
            "--allow_device_change true to continue anyway"
        )


def resume_device(saved: str, requested: str | None, allow_change: bool, where: str) -> str:
    """The resolved device a resumed run continues on: the requested one, or the one config.json recorded
    (saved; "auto" in a config written before runs recorded their device, all of which ran on the CPU).
    A recorded CUDA device on a machine without CUDA, or any change of device kind, needs allow_change."""
    import torch

    recorded = "cpu" if saved == "auto" else saved
    if requested is None and device_kind(recorded) == "cuda" and not torch.cuda.is_available():
        now = "cpu"
    else:
        now = resolve_device(requested if requested is not None else recorded)
    check_resume_device(recorded, now, allow_change, where)
    return now
