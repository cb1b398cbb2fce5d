"""What a base model is, read from its folder (pretrain.json, written by `llm pretrain`), for the records of the
sweep, the pilot and the premise's control."""

from __future__ import annotations

import json
from pathlib import Path


def base_record(model: Path) -> dict:
    """What the base is, without where it lies on this machine: its folder's name and, for a tiny model of
    `llm pretrain`, the preset, overrides and seed it was pretrained with."""
    out = {"name": Path(model).name}
    pretrain = Path(model) / "pretrain.json"
    if pretrain.is_file():
        info = json.loads(pretrain.read_text(encoding="utf-8"))
        out |= {k: info[k] for k in ("preset", "overrides", "seed", "parameters") if k in info}
    return out


def base_preset(model: Path):
    """The tinymodel Preset the base was pretrained with (pretrain.json), or None for another model (a planted
    base, llm/tinymodel_planted.py, included: its corpus has no Countdown rare family)."""
    from escov.llm.tinymodel import preset_with

    path = Path(model) / "pretrain.json"
    if not path.is_file():
        return None
    info = json.loads(path.read_text(encoding="utf-8"))
    if info.get("planted"):
        return None
    return preset_with(info["preset"], info.get("overrides") or {})
