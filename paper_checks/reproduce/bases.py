"""The base models of a reproduction, built once: shipped with the repository, cached, or pretrained.

The pretrained bases are keyed by their preset's settings, the seed, the torch version and the source
of the code that builds them (base_cache_key; a planted base, llm/tinymodel_planted.py, by its shape, corpus and
its task's code). A base is taken from the first of: the repository's
shipped bases (paper_checks/reproduce/bases/PRESET-KEY: the `paper` preset's with the answer's fields replaced, the
base of the answer and of the quick look, the `paper` preset's, the paper-regime answer's, and the planted bases of
the counted tasks' answers, `grid_paths` and `subset_sum`; 1.1 MB each or less, so a fresh clone does not pretrain
for 9 minutes; `python -m escov.paper_checks bases` rebuilds them after that code
changes), the cache outside the output folder ($ESCOV_CACHE/bases, default
~/.cache/escov/bases), or pretraining (then stored in the cache). `python -m escov.llm pretrain --preset paper
--seed 0 --threads 1 --out DIR` makes the same model on a machine like the one that built it (pretraining is
deterministic; another CPU may round differently).
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import torch

from escov.paper_checks.reproduce.budgets import BUDGETS

CACHE_ENV = "ESCOV_CACHE"  # folder of built base models (default ~/.cache/escov); see base_cache_key
SHIPPED_BASES = Path(__file__).resolve().parent / "bases"  # the shipped bases, built once: PRESET-KEY/
# the bases a fresh clone takes from SHIPPED_BASES: the answer's (also the quick look's), the paper-regime
# answer's (results/paper-regime/) and the counted tasks' planted bases (docs/answer-tasks.md); none has a sweep base
SHIPPED_BUDGETS = ("small", "answer", "answer-paper-regime", "answer-grid_paths", "answer-subset_sum")
SHIPPED_RECIPES = tuple(
    dict.fromkeys((BUDGETS[name].base_preset, BUDGETS[name].base_settings) for name in SHIPPED_BUDGETS)
)


def code_shape(source: str) -> str:
    """A module's code as its syntax tree, without docstrings, comments, layout or import statements: what
    a base depends on in that file. Reformatting, rewording a docstring or renaming the package an import
    comes from leaves it unchanged; any change to what the code does changes it."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            body[:] = [
                s
                for s in body
                if not isinstance(s, (ast.Import, ast.ImportFrom))
                and not (
                    isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
                )
            ]
    return ast.dump(tree)


def base_cache_key(preset: str, seed: int = 0, settings: tuple[tuple[str, str], ...] = ()) -> str:
    """What a pretrained base depends on: its preset's settings (with `settings`, the `--set FIELD=VALUE` pairs
    of `llm pretrain`, applied), the seed, the code that builds it (tokenizer, corpus, training loop; as
    `code_shape`) and the torch version; sha256, first 16 hex digits."""
    import hashlib
    from dataclasses import asdict

    from escov.llm import tinymodel, tinymodel_planted
    from escov.llm.tasks import arithmetic, countdown, grid_paths, subset_sum

    if preset in tinymodel_planted.PLANTED_PRESETS:  # a planted base: its shape and corpus, its task's code
        shape, corpus = tinymodel_planted.planted_settings(preset, dict(settings))
        described = {"shape": asdict(shape), "corpus": asdict(corpus)}
        task_module = {"grid_paths": grid_paths, "subset_sum": subset_sum}[corpus.corpus_task]
        modules = (tinymodel, tinymodel_planted, task_module, arithmetic)
    else:
        described, modules = asdict(tinymodel.preset_with(preset, dict(settings))), (tinymodel, countdown, arithmetic)
    parts = [json.dumps(described, sort_keys=True), str(seed), torch.__version__]
    parts += [code_shape(Path(m.__file__).read_text(encoding="utf-8")) for m in modules]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def pretrain_command(preset: str, settings: tuple[tuple[str, str], ...] = (), out: str = "DIR", seed: int = 0) -> str:
    """The command line that pretrains this base (one thread; seed 0: the shipped and cached bases' recipe)."""
    from escov.llm.tinymodel_planted import PLANTED_PRESETS

    sets = "".join(f" --set {name}={value}" for name, value in settings)
    command = "pretrain-planted" if preset in PLANTED_PRESETS else "pretrain"
    return f"python -m escov.llm {command} --preset {preset}{sets} --seed {seed} --threads 1 --out {out}"


def shipped_base_dir(preset: str, settings: tuple[tuple[str, str], ...] = (), seed: int = 0) -> Path:
    """Where the base for the current code and torch ships (SHIPPED_BASES/PRESET-KEY), if it does."""
    return SHIPPED_BASES / f"{preset}-{base_cache_key(preset, seed, settings)}"


def base_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "escov") / "bases"


def obtain_base(
    out_dir: Path, preset: str, progress: bool, settings: tuple[tuple[str, str], ...] = (), seed: int = 0
) -> Path:
    """out_dir <- the base of the preset with `settings` applied, pretrained with `seed` (0: the shipped and cached
    bases' recipe; another seed: another draw of the same recipe): copied from the shipped bases or the cache when
    built before with the same settings and seed (base_cache_key), else pretrained (`pretrain_command` makes the
    same model) and stored in the cache."""
    import shutil

    if (out_dir / "config.json").exists():
        return out_dir
    shipped = shipped_base_dir(preset, settings, seed)
    cached = base_cache_dir() / shipped.name
    if (shipped / "config.json").exists():
        source = shipped
    else:
        _build_base(cached, preset, progress, settings, seed)
        source = cached
    shutil.copytree(source, out_dir, dirs_exist_ok=True, ignore=shutil.ignore_patterns(SHIPPED_RECORD))
    print(f"base {preset}: {'the shipped' if source == shipped else 'the cached'} {source}", flush=True)
    return out_dir


def _build_base(
    target: Path, preset: str, progress: bool, settings: tuple[tuple[str, str], ...] = (), seed: int = 0
) -> None:
    """Pretrain the base (one thread) into target, unless it is there; built in a side folder and renamed, so a
    half-built base is never taken for a built one."""
    import shutil

    from escov.llm.tinymodel import pretrain
    from escov.llm.tinymodel_planted import PLANTED_PRESETS, pretrain_planted

    if (target / "config.json").exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    building = target.with_name(f"{target.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    torch.set_num_threads(1)
    build = pretrain_planted if preset in PLANTED_PRESETS else pretrain
    build(building, preset=preset, seed=seed, progress=progress, overrides=dict(settings))
    try:
        building.rename(target)
    except OSError:  # another reproduction stored it first: the same model
        shutil.rmtree(building, ignore_errors=True)


SHIPPED_RECORD = "shipped.json"  # beside a shipped base: its preset, settings, key, torch version and command


def ship_bases(progress: bool = True) -> list[Path]:
    """Build the shipped bases (SHIPPED_RECIPES) for the current code and torch, copied from the cache when built
    there before with the same key, and remove every other folder of SHIPPED_BASES (stale keys, bases no longer
    shipped): what `python -m escov.paper_checks bases` runs after the code that builds a base has changed."""
    import shutil

    kept = []
    for preset, settings in SHIPPED_RECIPES:
        target = shipped_base_dir(preset, settings)
        cached = base_cache_dir() / target.name
        if not (target / "config.json").exists() and (cached / "config.json").exists():
            shutil.copytree(cached, target, dirs_exist_ok=True)
        _build_base(target, preset, progress, settings)
        (target / "loss.png").unlink(missing_ok=True)  # kept small: pretrain.json holds the loss curve
        (target / SHIPPED_RECORD).write_text(
            json.dumps(
                {
                    "preset": preset,
                    "settings": dict(settings),
                    "key": target.name,
                    "torch": torch.__version__,
                    "command": pretrain_command(preset, settings),
                },
                indent=1,
            )
            + "\n"
        )
        kept.append(target)
    for stale in SHIPPED_BASES.iterdir():
        if stale.is_dir() and stale not in kept:
            shutil.rmtree(stale)
    return kept
