"""Where a run's settings come from: defaults < a TOML file (--config) < command-line flags
(`config_from_args`), or a run directory's config.json (`load_config`); and which flags an algorithm reads."""
from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

from escov.llm.settings.es_config import ESConfig
from escov.llm.settings.grpo_config import GRPOConfig
from escov.llm.settings.population_config import PopulationConfig
from escov.llm.settings.train_config import SECTIONS, TrainConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, packaged as tomli (a dependency there)
    import tomli as tomllib

REPEATED_FLAGS = {"reward_function": "MODULE:FUNCTION", "reward_weights": "FLOAT"}  # flag -> metavar; each use adds one
# settings that only one algorithm reads. Every run reads es.sigma and es.param_pattern (the Lemma 1
# probe's) and es.alpha (the update analysis's unit); grpo.num_generations and grpo.num_iterations
# price a GRPO step, which sets an ES run's iterations under the budget (llm/schedules.py)
ES_ONLY = ("workers", "ray_address", "step_samples", "es.population_size", "es.member_temperature", "es.member_samples",
           "es.antithetic", "es.zscore", "es.center_scale", "es.null_control", "es.inplace_bf16", "es.noise_chunk")
ES_ONLY_TABLES = ("population.",)
GRPO_ONLY_TABLES = ("grpo.",)
GRPO_READ_BY_ES = ("grpo.num_generations", "grpo.num_iterations")


def flag_applies(name: str, algo: str) -> bool:
    """Whether a run of `algo` reads the setting `name` ("workers", "es.sigma", ...); schedules read every one."""
    if algo == "grpo":
        return name not in ES_ONLY and not name.startswith(ES_ONLY_TABLES)
    if algo == "es":
        return not name.startswith(GRPO_ONLY_TABLES) or name in GRPO_READ_BY_ES
    return True


def check_flags_apply(cfg: "TrainConfig", given: set[str]) -> None:
    """ValueError (one line) for a flag the run's algorithm never reads: ES's with algo grpo, GRPO's with algo es."""
    unused = sorted(name for name in given if not flag_applies(name, cfg.algo))
    if unused:
        other = "es" if cfg.algo == "grpo" else "grpo"
        raise ValueError(f"{', '.join('--' + n for n in unused)} {'does' if len(unused) == 1 else 'do'} nothing with "
                         f"--algo {cfg.algo}: {'it is' if len(unused) == 1 else 'they are'} read only by "
                         f"--algo {other} "
                         f"(and es-grpo, grpo-es); drop {'it' if len(unused) == 1 else 'them'}")


def _parse_flag(text: str, typ: str) -> Any:
    """Turn a flag's text into the field's type (lists are comma separated; bools are true/false)."""
    if typ.startswith("tuple"):
        inner = "int" if "int" in typ else "str" if "str" in typ else "float"
        return tuple(_parse_flag(t.strip(), inner) for t in text.split(",") if t.strip())
    if typ == "bool":
        if text.lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
        return text.lower() == "true"
    try:
        if typ == "int":
            return int(text)
        if typ == "float":
            return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {'an integer' if typ == 'int' else 'a number'}, "
                                         f"got {text!r}") from None
    return text


def _setting_fields() -> list[tuple[str, Any]]:
    """(flag name, field) of every setting: `steps`, ..., `es.sigma`, ..., `grpo.beta`, ..., `population.batched`"""
    tables = (("", TrainConfig), ("es.", ESConfig), ("grpo.", GRPOConfig), ("population.", PopulationConfig))
    return [(prefix + f.name, f) for prefix, cls in tables for f in fields(cls) if f.name not in SECTIONS]


def setting_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags (those not left at None); a repeated flag (REPEATED_FLAGS) gives all its values."""
    given = {name: getattr(args, name) for name, _ in _setting_fields() if getattr(args, name, None) is not None}
    for name in REPEATED_FLAGS:
        if name in given:
            given[name] = tuple(v for values in given[name] for v in values)
    return given


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """defaults < --config TOML < flags."""
    data: dict[str, Any] = {}
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            raise ValueError(f"--config: no such file {path}")
        from escov.llm.rundir import read_text

        try:
            data = tomllib.loads(read_text(path))
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"{path}: not valid TOML ({err})") from None
    for key, value in setting_flags(args).items():
        if "." in key:
            section, name = key.split(".", 1)
            data.setdefault(section, {})[name] = value
        else:
            data[key] = value
    cfg = TrainConfig.from_dict(data, source=str(args.config or "flags"))
    check_flags_apply(cfg, set(setting_flags(args)))
    unread = sorted(k for k in data.get("grpo", {}) if not flag_applies(f"grpo.{k}", cfg.algo)) if args.config else []
    if unread:  # a [grpo] table in a TOML file of an ES run (flags set from the command line were checked above)
        raise ValueError(f"{args.config}: [grpo] {', '.join(unread)} {'does' if len(unread) == 1 else 'do'} nothing "
                         f"with algo = {cfg.algo!r} (read by algo grpo, es-grpo, grpo-es); drop "
                         f"{'it' if len(unread) == 1 else 'them'}")
    for name in ("model", "out"):
        if not getattr(cfg, name):
            raise ValueError(f"{name} is required (flag --{name} or key {name!r} in the config file)")
    return cfg


def load_config(run_dir: str | Path) -> TrainConfig:
    """The resolved config saved in a run directory."""
    from escov.llm.rundir import CONFIG, read_config

    return saved_config(read_config(run_dir), source=str(Path(run_dir) / CONFIG))


def saved_config(data: dict, source: str = "config.json") -> TrainConfig:
    """The TrainConfig of a run's config.json as read (its settings and the schedule the run wrote beside them,
    llm/schedules.py describe, which is not a setting)."""
    return TrainConfig.from_dict({k: v for k, v in data.items() if k != "schedule"}, source=source)
