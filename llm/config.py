"""Every setting of a training run, under the name it had as one module: the settings live in llm/settings/
(one file per table; its __init__ maps them), and this module re-exports them so that `escov.llm.config`
keeps working. Imports no torch."""

from escov.llm.grpo_losses import LOSSES  # noqa: F401 (the values of grpo.loss_type)
from escov.llm.settings import *  # noqa: F403 (every name of escov.llm.settings.__all__)
from escov.llm.settings import __all__  # noqa: F401
from escov.llm.settings.sources import _parse_flag, tomllib  # noqa: F401 (the flags' parser; TOML on 3.10 too)
