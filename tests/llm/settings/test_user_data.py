"""llm/settings/user_data.py: the paper's measurements off on task "prompts" only, reward weights given alone, every
reward function's path checked, reward functions alone (no reward convention beside them), and task "prompts"
without a function refused by that name."""

import dataclasses

import pytest

from escov.llm.config import TrainConfig
from escov.llm.settings.user_data import USER_DATA_DEFAULTS


def _cfg(**settings) -> TrainConfig:
    return TrainConfig.from_dict({"model": "m", "out": "o", **settings})


def test_the_papers_measurements_are_off_on_task_prompts_only():
    defaults = TrainConfig()
    prompts = _cfg(task="prompts", data="d.jsonl", reward_function="m:f")
    assert {k: getattr(prompts, k) for k in USER_DATA_DEFAULTS} == {
        "probe": False,
        "heldout_task": "",
        "threshold_keep": (),
    }
    for task in ("gsm8k", "countdown"):  # a built-in task on the user's data file keeps them
        built_in = _cfg(task=task, data="d.jsonl")
        assert {k: getattr(built_in, k) for k in USER_DATA_DEFAULTS} == {
            k: getattr(defaults, k) for k in USER_DATA_DEFAULTS
        }
    asked = _cfg(task="prompts", data="d.jsonl", reward_function="m:f", probe=True, heldout_task="arithmetic")
    assert (asked.probe, asked.heldout_task) == (True, "arithmetic")


def test_in_python_the_measurements_named_in_the_call_are_kept_even_at_their_defaults():
    """TrainConfig(...) on task "prompts": each measurement the call names stays as named (probe=True equals
    TrainConfig's default and still runs the probe), keyword or positional; the others are off."""
    mine = {"model": "m", "out": "o", "task": "prompts", "data": "d.jsonl", "reward_function": "m:f"}
    assert (TrainConfig(**mine).probe, TrainConfig(**mine).heldout_task) == (False, "")
    named = TrainConfig(**mine, probe=True, threshold_keep=(5.0, 22.0, 50.0))
    assert (named.probe, named.heldout_task, named.threshold_keep) == (True, "", (5.0, 22.0, 50.0))
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    upto_probe = names[: names.index("probe") + 1]  # every field up to probe, given by position
    positional = [mine.get(n, TrainConfig.__dataclass_fields__[n].default) for n in upto_probe[:-1]] + [True]
    by_position = TrainConfig(*positional)
    assert (by_position.task, by_position.probe, by_position.heldout_task) == ("prompts", True, "")
    # a later call names nothing: the earlier call's names are not carried over
    assert TrainConfig(**mine).probe is False


def test_a_settings_table_on_task_prompts_keeps_what_it_names_and_turns_off_the_rest():
    cfg = _cfg(task="prompts", data="d.jsonl", reward_function="m:f", threshold_keep=[50.0])
    assert (cfg.probe, cfg.heldout_task, cfg.threshold_keep) == (False, "", (50.0,))


def test_one_function_and_one_weight_given_alone_in_python_are_tuples_of_one():
    """The Python API takes a single function and weight as they are (config.json and TOML take lists)."""
    cfg = TrainConfig(model="m", out="o", task="prompts", data="d.jsonl", reward_function="m:f", reward_weights=0.5)
    assert (cfg.reward_function, cfg.reward_weights) == (("m:f",), (0.5,))


def test_every_reward_functions_path_is_checked():
    with pytest.raises(ValueError, match="must look like 'module:function' or 'file.py:function', got 'second'"):
        _cfg(task="prompts", data="d.jsonl", reward_function=["m:f", "second"])


@pytest.mark.parametrize("convention", [{"format_reward": 0.1}, {"reward": "es-at-scale-countdown"}])
def test_reward_functions_replace_the_reward_convention(convention):
    with pytest.raises(ValueError, match="replaces the reward convention; leave reward and format_reward unset"):
        _cfg(task="countdown", reward_function="m:f", **convention)


def test_task_prompts_without_a_function_is_refused_by_that_name_even_with_a_correctness_rule():
    with pytest.raises(ValueError) as err:
        _cfg(task="prompts", data="d.jsonl", correct_threshold=0.5)
    assert str(err.value) == (
        "config: task 'prompts' needs reward_function = 'module:function' (--reward_function my_rewards:accuracy)"
    )


def test_a_built_in_task_with_reward_functions_takes_a_correctness_rule():
    cfg = _cfg(task="countdown", reward_function="m:f", correct_reward="total", correct_threshold=0.5)
    assert (cfg.correct_reward, cfg.correct_threshold) == ("total", 0.5)
    with pytest.raises(ValueError, match="correct_reward / correct_threshold choose among reward functions"):
        _cfg(task="countdown", correct_reward="total")


def test_without_reward_functions_the_reward_convention_must_fit_the_task():
    with pytest.raises(
        ValueError, match=r"reward 'paper-gsm8k' is for the tasks \['gsm8k', 'deepscaler'\], not 'countdown'"
    ):
        _cfg(task="countdown", reward="paper-gsm8k")
    with pytest.raises(ValueError, match=r"format_reward must lie in \[0, 1\), got 2.0"):
        _cfg(task="countdown", format_reward=2.0)
    assert _cfg(task="gsm8k", reward="paper-gsm8k").reward == "paper-gsm8k"
