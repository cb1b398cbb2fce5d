"""The small budget's shipped bases (paper_checks/bases): one per preset for the current code and torch,
taken by a reproduction instead of pretraining, and (slow) equal to what the stated command builds."""
import json
import os

import pytest
import torch
from safetensors.torch import load_file

from escov.paper_checks import reproduce
from escov.paper_checks.reproduce import SHIPPED_BASES, SHIPPED_PRESETS, SHIPPED_RECORD, base_cache_key


def shipped_record(preset: str) -> dict:
    folders = sorted(SHIPPED_BASES.glob(f"{preset}-*"))
    assert len(folders) == 1, f"expected one shipped {preset} base, found {[f.name for f in folders]}"
    return json.loads((folders[0] / SHIPPED_RECORD).read_text()) | {"folder": folders[0]}


@pytest.mark.parametrize("preset", SHIPPED_PRESETS)
def test_each_shipped_base_is_keyed_by_the_current_code(preset):
    record = shipped_record(preset)
    assert record["preset"] == preset and record["folder"].name == record["key"]
    assert record["command"] == f"python -m escov.llm pretrain --preset {preset} --seed 0 --threads 1 --out DIR"
    if record["torch"] != torch.__version__:
        pytest.skip(f"the shipped bases were built with torch {record['torch']}, this is {torch.__version__}")
    # fails when the code that builds a base changed without `python -m escov.paper_checks bases`
    assert record["key"] == f"{preset}-{base_cache_key(preset)}", "stale shipped base: run python -m escov.paper_checks bases"
    pretrain = json.loads((record["folder"] / "pretrain.json").read_text())
    assert pretrain["preset"] == preset and pretrain["seed"] == 0
    weights = load_file(record["folder"] / "model.safetensors")
    assert sum(t.numel() for t in weights.values()) == pretrain["parameters"]
    assert all(torch.isfinite(t).all() for t in weights.values())


def test_a_reproduction_copies_the_shipped_base_instead_of_pretraining(tmp_path, monkeypatch, capsys):
    record = shipped_record("small")
    if record["key"] != f"small-{base_cache_key('small')}":
        pytest.skip("no shipped base for this torch and code")
    monkeypatch.setenv(reproduce.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(reproduce, "_build_base", lambda *a: pytest.fail("pretrained although a base is shipped"))
    out = reproduce._pretrain(tmp_path / "base", "small", progress=False)
    assert (out / "model.safetensors").read_bytes() == (record["folder"] / "model.safetensors").read_bytes()
    assert not (out / SHIPPED_RECORD).exists() and not (tmp_path / "cache").exists()
    assert "the shipped" in capsys.readouterr().out


@pytest.mark.slow
def test_the_stated_command_builds_the_shipped_narrow_base(tmp_path):
    # pretraining is deterministic on one machine; another CPU may round differently, so this holds
    # where the bases were built (about a minute)
    from escov.llm.tinymodel import pretrain
    record = shipped_record("narrow")
    torch.set_num_threads(1)
    pretrain(tmp_path / "narrow", preset="narrow", seed=0, progress=False)
    built, shipped = load_file(tmp_path / "narrow" / "model.safetensors"), load_file(record["folder"] / "model.safetensors")
    assert built.keys() == shipped.keys()
    assert all(torch.equal(built[k], shipped[k]) for k in built), f"differs from the shipped base (CPU: {os.cpu_count()} cores)"
