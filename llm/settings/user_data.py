"""Reward functions and the user's own data as settings: reward_function / reward_weights normalized and
checked (llm/tasks/reward_function.py), and the paper's measurements off by default on task "prompts"."""
from __future__ import annotations

from typing import TYPE_CHECKING

from escov.llm.tasks.correctness import check_correct_settings
from escov.llm.tasks.reward_function import check_alone, check_path, check_weights

if TYPE_CHECKING:
    from escov.llm.settings.train_config import TrainConfig

# the paper's measurements, off by default on the user's own data (task "prompts"): the Lemma 1 probe,
# the held-out arithmetic task and the thresholded-checkpoint evaluations; give the keys to have them
# (TrainConfig.__post_init__ sets those its call does not name)
USER_DATA_DEFAULTS = {"probe": False, "heldout_task": "", "threshold_keep": ()}


def normalize_reward_settings(cfg: "TrainConfig") -> None:
    """reward_function and reward_weights as tuples: one entry may be given alone, and a function given as a
    callable is recorded by its import path (config.json keeps paths; resume imports them again)."""
    from escov.llm.tasks.reward_function import as_list, import_path

    cfg.reward_function = tuple(f if isinstance(f, str) else import_path(f) for f in as_list(cfg.reward_function))
    weights = cfg.reward_weights
    cfg.reward_weights = tuple(weights) if isinstance(weights, (list, tuple)) else (weights,)


def check_reward_settings(cfg: "TrainConfig") -> bool:
    """ValueError for a bad reward_function / reward_weights, or a prompts task without a function;
    True when reward functions replace the reward convention."""
    for path in cfg.reward_function:
        check_path(path)
    check_weights(list(cfg.reward_function), list(cfg.reward_weights))
    uses_functions = bool(cfg.reward_function) or cfg.task == "prompts"
    check_correct_settings(cfg.correct_reward, cfg.correct_threshold, uses_functions)
    if cfg.reward_function or cfg.task == "prompts":
        check_alone(list(cfg.reward_function), cfg.reward, cfg.format_reward)
        if not cfg.reward_function:
            raise ValueError("task 'prompts' needs reward_function = 'module:function' "
                             "(--reward_function my_rewards:accuracy)")
        return True
    return False
