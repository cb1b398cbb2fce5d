"""The shipped bases (paper_checks/reproduce/bases): the answer's (also the quick look's), the paper-regime
answer's and the counted tasks' planted bases, one per recipe (a preset and the fields it replaces) for the current
code and torch, nothing else in the
folder, taken by a reproduction instead of pretraining, and (slow) equal to what the stated command builds."""

import json
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from escov.llm.tinymodel_planted import PLANTED_TASKS
from escov.paper_checks.reproduce import bases
from escov.paper_checks.reproduce.bases import SHIPPED_BASES, SHIPPED_RECIPES, SHIPPED_RECORD, base_cache_key
from escov.paper_checks.reproduce.budgets import BUDGETS

QUICK = (BUDGETS["small"].base_preset, BUDGETS["small"].base_settings)
ANSWER = (BUDGETS["answer"].base_preset, BUDGETS["answer"].base_settings)
REGIME = BUDGETS["answer-paper-regime"].base_preset  # the paper-regime answer's: the preset as it is
PLANTED = tuple((BUDGETS[f"answer-{t}"].base_preset, BUDGETS[f"answer-{t}"].base_settings) for t in PLANTED_TASKS)


def shipped_record(preset: str, settings: tuple = ()) -> dict:
    folders = [
        f
        for f in sorted(SHIPPED_BASES.iterdir())
        if json.loads((f / SHIPPED_RECORD).read_text())["settings"] == dict(settings)
        and json.loads((f / SHIPPED_RECORD).read_text())["preset"] == preset
    ]
    assert len(folders) == 1, f"expected one shipped {preset} {dict(settings)} base, found {[f.name for f in folders]}"
    return json.loads((folders[0] / SHIPPED_RECORD).read_text()) | {"folder": folders[0]}


@pytest.mark.parametrize("preset,settings", SHIPPED_RECIPES)
def test_each_shipped_base_is_keyed_by_the_current_code(preset, settings):
    record = shipped_record(preset, settings)
    assert record["preset"] == preset and record["folder"].name == record["key"]
    sets = "".join(f" --set {k}={v}" for k, v in settings)
    command = "pretrain-planted" if preset in PLANTED_TASKS else "pretrain"
    assert record["command"] == f"python -m escov.llm {command} --preset {preset}{sets} --seed 0 --threads 1 --out DIR"
    if record["torch"] != torch.__version__:
        pytest.skip(f"the shipped bases were built with torch {record['torch']}, this is {torch.__version__}")
    # fails when the code that builds a base changed without `python -m escov.paper_checks bases`
    assert record["key"] == f"{preset}-{base_cache_key(preset, settings=settings)}", (
        "stale shipped base: run python -m escov.paper_checks bases"
    )
    pretrain = json.loads((record["folder"] / "pretrain.json").read_text())
    assert pretrain["preset"] == preset and pretrain["seed"] == 0 and pretrain["overrides"] == dict(settings)
    assert all(pretrain["config"][k] == type(pretrain["config"][k])(v) for k, v in settings)
    weights = load_file(record["folder"] / "model.safetensors")
    assert sum(t.numel() for t in weights.values()) == pretrain["parameters"]
    assert all(torch.isfinite(t).all() for t in weights.values())


def test_only_the_answers_bases_ship():
    # the repository stays small: a base no budget takes from paper_checks/reproduce/bases is not kept there; the
    # quick look runs on the answer's base
    assert QUICK == ANSWER and SHIPPED_RECIPES == (ANSWER, (REGIME, ())) + PLANTED and ANSWER[1]
    assert PLANTED == (("grid_paths", ()), ("subset_sum", ()))  # planted_bases.py chose the recipe as shipped
    assert not BUDGETS["small"].sweep_populations and not BUDGETS["answer"].sweep_populations
    assert len(list(SHIPPED_BASES.iterdir())) == len(SHIPPED_RECIPES)
    keys = {base_cache_key(p, settings=s) for p, s in SHIPPED_RECIPES}
    assert len(keys) == len(SHIPPED_RECIPES)
    assert sum(f.stat().st_size for f in SHIPPED_BASES.rglob("*") if f.is_file()) < 5e6


def test_a_reproduction_copies_the_shipped_base_instead_of_pretraining(tmp_path, monkeypatch, capsys):
    record = shipped_record(*QUICK)
    if record["key"] != f"{QUICK[0]}-{base_cache_key(QUICK[0], settings=QUICK[1])}":
        pytest.skip("no shipped base for this torch and code")
    monkeypatch.setenv(bases.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(bases, "_build_base", lambda *a: pytest.fail("pretrained although a base is shipped"))
    (tmp_path / "base").mkdir()  # a folder without a model (an interrupted copy) is filled, not taken as the base
    out = bases.obtain_base(tmp_path / "base", QUICK[0], False, QUICK[1])
    assert (out / "model.safetensors").read_bytes() == (record["folder"] / "model.safetensors").read_bytes()
    assert not (out / SHIPPED_RECORD).exists() and not (tmp_path / "cache").exists()
    assert "the shipped" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("preset,settings", SHIPPED_RECIPES)
def test_the_stated_command_builds_the_shipped_base(tmp_path, preset, settings):
    # pretraining is deterministic on one machine; another CPU may round differently, so this holds
    # where the bases were built (about 9 minutes each on one thread)
    from escov.llm.tinymodel import pretrain
    from escov.llm.tinymodel_planted import pretrain_planted

    record = shipped_record(preset, settings)
    torch.set_num_threads(1)
    build = pretrain_planted if preset in PLANTED_TASKS else pretrain
    build(tmp_path / preset, preset=preset, seed=0, progress=False, overrides=dict(settings))
    built, shipped = (
        load_file(tmp_path / preset / "model.safetensors"),
        load_file(record["folder"] / "model.safetensors"),
    )
    assert built.keys() == shipped.keys()
    assert all(torch.equal(built[k], shipped[k]) for k in built), (
        f"differs from the shipped base (CPU: {os.cpu_count()} cores)"
    )


def test_shipping_copies_a_cached_base_and_removes_every_other_folder(tmp_path, monkeypatch):
    import shutil

    from escov.llm import tinymodel, tinymodel_planted

    record = shipped_record(REGIME)
    shipped, cache = tmp_path / "bases", tmp_path / "cache"
    monkeypatch.setattr(bases, "SHIPPED_BASES", shipped)
    monkeypatch.setenv(bases.CACHE_ENV, str(cache))
    for module, name in ((tinymodel, "pretrain"), (tinymodel_planted, "pretrain_planted")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("pretrained although the cache holds the base"))
    keys = [bases.shipped_base_dir(preset, settings).name for preset, settings in SHIPPED_RECIPES]
    for (preset, settings), key in zip(SHIPPED_RECIPES, keys):
        shutil.copytree(
            shipped_record(preset, settings)["folder"],
            cache / "bases" / key,
            ignore=shutil.ignore_patterns(SHIPPED_RECORD),
        )
    key = bases.shipped_base_dir(REGIME).name
    (shipped / "small-0123456789abcdef").mkdir(parents=True)  # a preset no budget ships any more
    (shipped / f"{REGIME}-0000000000000000").mkdir()  # the same preset at a stale key
    assert bases.ship_bases(progress=False) == [shipped / k for k in keys]
    assert sorted(p.name for p in shipped.iterdir()) == sorted(keys)
    assert (shipped / key / "model.safetensors").read_bytes() == (record["folder"] / "model.safetensors").read_bytes()
    assert json.loads((shipped / key / SHIPPED_RECORD).read_text())["key"] == key


def test_a_planted_base_is_keyed_by_its_corpus_and_its_tasks_code(tmp_path, monkeypatch):
    # a planted base depends on its corpus (rare_share, rare_keep), its shape and its own task's code, not the other
    # task's or Countdown's
    from escov.llm.tasks import countdown, grid_paths, subset_sum

    key = base_cache_key("grid_paths")
    assert base_cache_key("grid_paths", settings=(("rare_share", "0.2"),)) != key
    assert base_cache_key("grid_paths", settings=(("steps", "10"),)) != key
    assert base_cache_key("grid_paths", seed=1) != key and base_cache_key("subset_sum") != key
    source = {m: Path(m.__file__).read_text() for m in (grid_paths, subset_sum, countdown)}
    changed = "\n\ndef _planted_marker():\n    return 1\n"
    for module, text in source.items():
        monkeypatch.setattr(Path, "read_text", _reads(module.__file__, text + changed))
        assert (base_cache_key("grid_paths") != key) == (module is grid_paths), module.__name__
        monkeypatch.undo()
    assert bases.pretrain_command("subset_sum", (("rare_keep", "0.6"),)) == (
        "python -m escov.llm pretrain-planted --preset subset_sum --set rare_keep=0.6 --seed 0 --threads 1 --out DIR"
    )


def _reads(path: str, text: str):
    """Path.read_text with one file's text replaced."""
    original = Path.read_text

    def read_text(self, *args, **kwargs):
        return text if str(self) == str(path) else original(self, *args, **kwargs)

    return read_text


def test_obtain_base_pretrains_a_planted_base_with_its_settings_and_caches_it(tmp_path, monkeypatch):
    monkeypatch.setenv(bases.CACHE_ENV, str(tmp_path / "cache"))
    settings = (("steps", "3"), ("batch_size", "4"), ("warmup_steps", "1"), ("rare_share", "0.5"))
    out = bases.obtain_base(tmp_path / "base", "subset_sum", False, settings)
    pretrain = json.loads((out / "pretrain.json").read_text())
    assert pretrain["planted"] and pretrain["preset"] == "subset_sum" and pretrain["overrides"] == dict(settings)
    assert pretrain["corpus"]["rare_share"] == 0.5 and pretrain["config"]["steps"] == 3
    cached = tmp_path / "cache" / "bases" / f"subset_sum-{base_cache_key('subset_sum', settings=settings)}"
    assert (cached / "model.safetensors").read_bytes() == (out / "model.safetensors").read_bytes()
