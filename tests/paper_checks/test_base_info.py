"""paper_checks/base_info.py: what a base model's folder says it is (pretrain.json), without where it lies."""

import json

from escov.llm.tinymodel import preset_with
from escov.paper_checks.base_info import base_preset, base_record


def test_a_pretrained_bases_record_and_preset_come_from_its_pretrain_json(tmp_path):
    base = tmp_path / "base-a"
    base.mkdir()
    info = {"preset": "test", "overrides": {"steps": "7", "rare_above": "50"}, "seed": 3, "parameters": 1234, "x": 1}
    (base / "pretrain.json").write_text(json.dumps(info))
    kept = ("preset", "overrides", "seed", "parameters")
    assert base_record(base) == {"name": "base-a", **{k: info[k] for k in kept}}
    preset = base_preset(base)
    assert (preset.steps, preset.rare_above) == (7, 50) and preset == preset_with("test", info["overrides"])
    assert preset != preset_with("test")


def test_a_planted_base_or_a_model_without_pretrain_json_has_no_preset(tmp_path):
    planted, other = tmp_path / "planted", tmp_path / "other"
    planted.mkdir()
    other.mkdir()
    (planted / "pretrain.json").write_text(json.dumps({"preset": "test", "planted": True, "seed": 0}))
    assert base_preset(planted) is None and base_record(planted) == {"name": "planted", "preset": "test", "seed": 0}
    assert base_preset(other) is None and base_record(other) == {"name": "other"}
