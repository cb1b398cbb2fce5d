"""Which settings each algorithm reads (llm/settings/sources.py flag_applies), written out here from what the trainers
read: ES's population and Ray settings are not GRPO's; GRPO's table is not ES's but for the group size and the
iterations that price a GRPO step (ES's budget, llm/schedules.py); the probe's sigma and pattern, the update
analysis's alpha and the run's own settings are every algorithm's; a schedule of both reads everything."""

import argparse
import json

import pytest

from escov.llm.settings.sources import (
    _parse_flag,
    config_from_args,
    flag_applies,
    load_config,
    saved_config,
    setting_flags,
)
from escov.llm.settings.train_config import TrainConfig

ES_ONLY = (
    "workers",
    "ray_address",
    "step_samples",
    "es.population_size",
    "es.member_temperature",
    "es.member_samples",
    "es.antithetic",
    "es.zscore",
    "es.center_scale",
    "es.null_control",
    "es.inplace_bf16",
    "es.noise_chunk",
    "population.batched",
    "population.noise_rank",
    "population.members",
)
GRPO_ONLY = ("grpo.learning_rate", "grpo.beta", "grpo.epsilon", "grpo.loss_type", "grpo.use_peft")
EVERY_ALGORITHM = ("es.sigma", "es.param_pattern", "es.alpha", "seed", "eval_samples", "steps", "task")


@pytest.mark.parametrize("name", ES_ONLY)
def test_es_settings_are_not_grpos(name):
    assert not flag_applies(name, "grpo") and flag_applies(name, "es")


@pytest.mark.parametrize("name", GRPO_ONLY)
def test_grpo_settings_are_not_es(name):
    assert not flag_applies(name, "es") and flag_applies(name, "grpo")


@pytest.mark.parametrize("name", ("grpo.num_generations", "grpo.num_iterations"))
def test_the_settings_that_price_a_grpo_step_are_read_by_es_too(name):
    assert flag_applies(name, "es") and flag_applies(name, "grpo")


@pytest.mark.parametrize("name", EVERY_ALGORITHM + ES_ONLY + GRPO_ONLY)
def test_every_setting_is_read_by_a_schedule_of_both_and_the_common_ones_by_each(name):
    assert flag_applies(name, "es-grpo") and flag_applies(name, "grpo-es")
    if name in EVERY_ALGORITHM:
        assert flag_applies(name, "es") and flag_applies(name, "grpo")


@pytest.mark.parametrize(
    "text, typ, value",
    [
        ("a.py:f, b:g,,", "tuple[str, ...]", ("a.py:f", "b:g")),  # comma separated, blanks dropped
        ("1, 16,32", "tuple[int, ...]", (1, 16, 32)),
        ("5,22.5", "tuple[float, ...]", (5.0, 22.5)),
        ("", "tuple[int, ...]", ()),
        ("true", "bool", True),
        ("FALSE", "bool", False),
        ("False", "bool", False),
        ("-3", "int", -3),
        ("1e-5", "float", 1e-05),
        ("7", "float", 7.0),
        ("q_proj,v_proj", "str", "q_proj,v_proj"),
        ("0.5,", "tuple[str, ...]", ("0.5",)),  # a list of strings takes any text
    ],
)
def test_a_flags_text_reads_as_its_fields_type(text, typ, value):
    read = _parse_flag(text, typ)
    assert read == value and type(read) is type(value)
    if isinstance(value, tuple):  # each entry of its own type: 5 read as 5.0 for a float list
        assert [type(v) for v in read] == [type(v) for v in value]


@pytest.mark.parametrize(
    "text, typ, message",
    [
        ("yes", "bool", "expected true or false, got 'yes'"),
        ("3.5", "int", "expected an integer, got '3.5'"),
        ("x", "float", "expected a number, got 'x'"),
        ("1,two", "tuple[int, ...]", "expected an integer, got 'two'"),
    ],
)
def test_a_flags_text_that_is_not_of_its_type_is_refused_by_what_it_expected(text, typ, message):
    with pytest.raises(argparse.ArgumentTypeError) as err:
        _parse_flag(text, typ)
    assert str(err.value) == message


def test_a_runs_config_json_reads_back_its_settings_beside_the_schedule_and_names_its_file(tmp_path):
    cfg = TrainConfig(model="m", out=str(tmp_path), algo="es-grpo", steps=12, switch_step=4, eval_ks=(1, 4))
    written = json.loads(json.dumps(cfg.to_dict()))  # as config.json holds it: tuples as lists
    (tmp_path / "config.json").write_text(json.dumps({**written, "schedule": {"phases": ["es", "grpo"]}}))
    assert load_config(tmp_path) == cfg and load_config(str(tmp_path)) == cfg
    assert saved_config({**written, "schedule": {}}) == cfg
    (tmp_path / "config.json").write_text(json.dumps({**written, "steps": 0}))
    with pytest.raises(ValueError) as err:
        load_config(tmp_path)
    assert str(err.value) == f"{tmp_path / 'config.json'}: steps must be an integer >= 1, got 0"
    with pytest.raises(ValueError) as err:
        saved_config({**written, "steps": 0})
    assert str(err.value) == "config.json: steps must be an integer >= 1, got 0"


def test_the_flags_given_are_those_set_on_the_namespace_even_a_partial_one():
    """setting_flags reads the settings a namespace holds and not None: a namespace of some settings only (another
    command's parser) gives those; a repeated flag's lists are joined."""
    args = argparse.Namespace(steps=5, seed=None, **{"es.sigma": 0.01}, reward_function=[["a:f"], ["b:g", "c:h"]])
    assert setting_flags(args) == {"steps": 5, "es.sigma": 0.01, "reward_function": ("a:f", "b:g", "c:h")}


def test_a_config_file_that_is_missing_or_not_toml_is_named(tmp_path):
    with pytest.raises(ValueError) as err:
        config_from_args(argparse.Namespace(config=str(tmp_path / "run.toml")))
    assert str(err.value) == f"--config: no such file {tmp_path / 'run.toml'}"
    (tmp_path / "bad.toml").write_text("steps = = 3\n")
    with pytest.raises(ValueError, match=r"bad.toml: not valid TOML \(") as err:
        config_from_args(argparse.Namespace(config=str(tmp_path / "bad.toml")))
    assert str(err.value).startswith(f"{tmp_path / 'bad.toml'}: not valid TOML (")


def test_settings_from_a_file_and_flags_name_their_source_and_flags_win(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('model = "m"\nout = "o"\nalgo = "grpo"\nsteps = 7\n[grpo]\nbeta = 0.1\n')
    cfg = config_from_args(argparse.Namespace(config=str(toml), steps=9, **{"grpo.epsilon": 0.3}))
    assert (cfg.algo, cfg.steps, cfg.grpo.beta, cfg.grpo.epsilon) == ("grpo", 9, 0.1, 0.3)
    with pytest.raises(ValueError) as err:
        config_from_args(argparse.Namespace(config=None, steps=0))
    assert str(err.value) == "flags: steps must be an integer >= 1, got 0"
    for given, missing in (({"out": "o"}, "model"), ({"model": "m"}, "out")):
        with pytest.raises(ValueError) as err:
            config_from_args(argparse.Namespace(config=None, **given))
        assert str(err.value) == f"{missing} is required (flag --{missing} or key '{missing}' in the config file)"
    with pytest.raises(ValueError) as err:
        config_from_args(argparse.Namespace(config=str(toml), **{"grpo.epsilon": 0.0}))
    assert str(err.value) == f"{toml}: grpo.epsilon must be a finite number > 0, got 0.0"


@pytest.mark.parametrize(
    "table, unread",
    [
        ("beta = 0.1\n", "beta does nothing"),
        ("epsilon = 0.3\nbeta = 0.1\nnum_generations = 4\n", "beta, epsilon do nothing"),
    ],
)
def test_a_grpo_table_in_an_es_runs_file_is_refused_naming_what_es_never_reads(tmp_path, table, unread):
    """ES reads [grpo]'s group size (its budget's price of a GRPO step) and nothing else of the table."""
    toml = tmp_path / "run.toml"
    toml.write_text(f'model = "m"\nout = "o"\nalgo = "es"\n[grpo]\n{table}')
    with pytest.raises(ValueError) as err:
        config_from_args(argparse.Namespace(config=str(toml)))
    drop = "it" if unread.startswith("beta does") else "them"
    assert str(err.value) == (
        f"{toml}: [grpo] {unread} with algo = 'es' (read by algo grpo, es-grpo, grpo-es); drop {drop}"
    )
    toml.write_text(
        'model = "m"\nout = "o"\nalgo = "es-grpo"\nsteps = 4\nswitch_step = 2\n[grpo]\nbeta = 0.1\n'
    )  # a schedule reads it
    assert config_from_args(argparse.Namespace(config=str(toml))).grpo.beta == 0.1
