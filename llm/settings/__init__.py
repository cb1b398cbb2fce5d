"""Every setting of a training run: dataclasses filled from defaults < a TOML file < command-line flags.

Its modules (every name is importable from escov.llm.settings, and from escov.llm.config, the
name it had as one module):

    train_config.py       TrainConfig: the top-level keys, the tables inside; from_dict reads TOML tables or config.json
    es_config.py          ESConfig, the [es] table (llm/es/algorithm.py); the noise table's sizes
    grpo_config.py        GRPOConfig, the [grpo] table (llm/grpo.py): TRL's variants, LoRA
    population_config.py  PopulationConfig, the [population] table (llm/es/options.py)
    user_data.py          reward_function / reward_weights checked; the paper's measurements off on task "prompts"
    values.py             a table read: unknown keys refused, values checked against their annotated types, renamed keys
    sources.py            defaults < --config TOML < flags (config_from_args); a run's config.json (load_config)

Top-level keys (`TrainConfig`) are shared by every algorithm; the `[es]` table (`ESConfig`) holds the
settings of ES (llm/es/algorithm.py), `[grpo]` (`GRPOConfig`) those of GRPO (llm/grpo.py), and
`[population]` (`PopulationConfig`) how ES evaluates its members (llm/es/options.py: one
population-batched generate, low-rank noise; which strategy evaluates them and its rules on the
settings: llm/member_options.py). A flag has the key's name: `--steps 40`,
`--es.sigma 1e-3`, `--grpo.beta 0.0`, `--population.batched true`, `--workers 2`. A key or flag that
does not exist is an error; so is a value of the wrong type or outside its range.

Each field's description is the comment on its line (`name: type = default  # description`, the
convention tyro reads too); `--help` (llm/settings_help.py) shows it with the default, so every field
needs one. This package imports no torch: `llm train --help` answers without it.
"""
from escov.llm.settings.es_config import NOISE_CHUNK, NOISE_TABLE_SIZE, ESConfig, check_noise_chunk, check_noise_rank
from escov.llm.settings.grpo_config import LR_SCHEDULERS, SCALE_REWARDS, SCALE_REWARDS_BOOL, GRPOConfig
from escov.llm.settings.population_config import LOWRANK_LAYOUTS, STACK_AUTO_BYTES, PopulationConfig
from escov.llm.settings.sources import (
    ES_ONLY,
    ES_ONLY_TABLES,
    GRPO_ONLY_TABLES,
    GRPO_READ_BY_ES,
    REPEATED_FLAGS,
    check_flags_apply,
    config_from_args,
    flag_applies,
    load_config,
    saved_config,
    setting_flags,
)
from escov.llm.settings.train_config import ALGOS, BUDGETS, DTYPES, ENGINES, SECTIONS, TrainConfig
from escov.llm.settings.user_data import (
    USER_DATA_DEFAULTS,
    check_reward_settings,
    normalize_reward_settings,
)
from escov.llm.settings.values import RENAMED

__all__ = ["ALGOS", "BUDGETS", "DTYPES", "ENGINES", "ESConfig", "ES_ONLY", "ES_ONLY_TABLES", "GRPOConfig",
           "GRPO_ONLY_TABLES", "GRPO_READ_BY_ES", "LOWRANK_LAYOUTS", "LR_SCHEDULERS", "NOISE_CHUNK", "NOISE_TABLE_SIZE",
           "PopulationConfig", "RENAMED", "REPEATED_FLAGS", "SCALE_REWARDS", "SCALE_REWARDS_BOOL", "SECTIONS",
           "STACK_AUTO_BYTES", "TrainConfig", "USER_DATA_DEFAULTS", "check_flags_apply", "check_noise_chunk",
           "check_noise_rank", "check_reward_settings", "config_from_args", "flag_applies", "load_config",
           "normalize_reward_settings", "saved_config", "setting_flags"]
