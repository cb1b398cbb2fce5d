"""llm/settings_help.py as a specification: descriptions read from the comments of a dataclass written here,
each default written as one types it (and typed back, the same value), the settings table's columns, and every
TRL, verl and variant name meaning the setting it names (TRL's own field names, from TRL's classes where TRL is
installed)."""

import argparse
import dataclasses
import importlib.util

import pytest

from escov.llm.config import TrainConfig, config_from_args
from escov.llm.settings import ESConfig, GRPOConfig, PopulationConfig
from escov.llm.settings_help import (
    TRL_ALIASES,
    TRL_POINTERS,
    VARIANT_ALIASES,
    VERL_ALIASES,
    add_train_arguments,
    check_aliases,
    default_text,
    field_descriptions,
    settings,
    settings_table,
)

# TRL's names that are not our setting's own name, and what they mean here (written from TRL's documentation)
RENAMED = {
    "max_steps": "steps",
    "output_dir": "out",
    "save_steps": "checkpoint_every",
    "vllm_gpu_memory_utilization": "gpu_memory_utilization",
    "model_name_or_path": "model",
}


# fmt: off
@dataclasses.dataclass
class _Documented:  # (the formatter would move the continuation's comment to the class body's column)
    plain: int = 1  # one line
    continued: str = "x"  # a first line
                          # and its continuation
    not_continued: float = 0.5  # its own line
    # a comment in another column, not part of it
    multiline: tuple[int, ...] = (
        1,
        2,
    )  # written after the default's last line
    undocumented: bool = False
# fmt: on


def test_a_description_is_its_lines_comment_continued_in_its_column():
    assert field_descriptions(_Documented) == {
        "plain": "one line",
        "continued": "a first line and its continuation",
        "not_continued": "its own line",
        "multiline": "written after the default's last line",
    }


def test_a_long_real_description_is_read_whole():
    # llm/settings/train_config.py writes the task's list on two lines
    assert dict((name, d) for name, _, d, _ in settings())["task"].endswith("| deepscaler | prompts (your data)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_train_arguments(parser)
    return parser


def _parse(argv):
    """As `llm train` reads its flags (llm/train_cli.py): parsed, TRL's names checked against ours, settings made."""
    args = _parser().parse_args(["--model", "m", "--out", "o", *argv])
    check_aliases(args)
    return config_from_args(args)


def _value(cfg: TrainConfig, name: str):
    table, _, field = name.rpartition(".")
    return getattr(getattr(cfg, table) if table else cfg, field)


def test_each_default_is_written_as_typed_and_typed_back_gives_the_default():
    rows = {name: f for name, f, _, _ in settings()}
    texts = {name: default_text(f) for name, f in rows.items()}
    # the empty values, written so that the help shows them
    assert texts["reward_function"] == "none" and texts["data"] == '""'
    assert texts["es.antithetic"] == "false" and texts["es.zscore"] == "true"
    assert texts["eval_ks"] == "1,16,32" and texts["es.sigma"] == "0.0015"
    parser = _parser()
    typed = [n for n in rows if texts[n] not in ("none", '""')]
    assert len(typed) > 50
    for name in typed:
        f = rows[name]
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        assert getattr(parser.parse_args([f"--{name}", texts[name]]), name) == default, name


def test_the_settings_table_has_three_cells_on_every_row():
    rows = settings_table().splitlines()[2:]
    assert any("es &#124; grpo" in row for row in rows)  # a description holding the column separator
    assert all(row.count("|") == 4 for row in rows), [row for row in rows if row.count("|") != 4][:2]


def _alias_destinations() -> dict[str, str]:
    return {s.lstrip("-"): a.dest for a in _parser()._actions for s in a.option_strings}


def test_each_trl_verl_and_variant_name_sets_our_setting_of_that_name():
    dest = _alias_destinations()
    ours = {name for name, *_ in settings()}
    for name in [*TRL_ALIASES, *VERL_ALIASES, *VARIANT_ALIASES]:
        expected = RENAMED.get(name) or next(s for s in ours if s.rpartition(".")[2] == name)
        assert dest[name] == expected, name
    # a value given by the other name reaches the setting (each kind of value once)
    for flag, value, setting, read, beside in (
        ("epsilon_high", "0.28", "grpo.epsilon_high", 0.28, []),
        ("entropy_coef_min", "0.001", "grpo.entropy_coef_min", 0.001, ["--use_adaptive_entropy", "true"]),
        ("ppo_kl_coef", "0.5", "grpo.ppo_kl_coef", 0.5, ["--loss_type", "kl_cov"]),
        ("zero_success_gating", "true", "grpo.zero_success_gating", True, []),
    ):
        assert _value(_parse(["--algo", "grpo", f"--{flag}", value, *beside]), setting) == read, flag


def test_the_names_we_take_from_trl_are_trls():
    """TRL's GRPOConfig (transformers' TrainingArguments within it), ModelConfig and ScriptArguments, where TRL is
    installed; warmup_ratio is transformers' name before version 5, and --lr a name people type by habit."""
    if importlib.util.find_spec("trl") is None:
        pytest.skip("trl is not installed")
    from trl import GRPOConfig as TRLGRPOConfig
    from trl import ModelConfig, ScriptArguments

    trl_names = {f.name for cls in (TRLGRPOConfig, ModelConfig, ScriptArguments) for f in dataclasses.fields(cls)}
    assert sorted(set(TRL_ALIASES) - trl_names) == ["warmup_ratio"]
    assert sorted(set(TRL_POINTERS) - trl_names) == ["lr"]


def test_no_other_name_is_one_of_our_settings():
    """A TRL, verl or variant name that is also ours would be a flag given twice, which argparse refuses: none is."""
    ours = {name for name, *_ in settings()}
    assert ours & {*TRL_ALIASES, *VERL_ALIASES, *VARIANT_ALIASES, *TRL_POINTERS} == set()


def test_a_trl_name_beside_ours_with_another_value_is_refused_and_with_the_same_accepted(capsys):
    assert _parse(["--steps", "4", "--max_steps", "4"]).steps == 4
    assert _parse(["--max_steps", "4", "--steps", "4"]).steps == 4
    with pytest.raises(SystemExit):  # the alias after ours: argparse's usage error
        _parse(["--steps", "3", "--max_steps", "4"])
    assert "--max_steps is TRL's name for --steps, given 3 already" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--max_steps is TRL's name for --steps, given 3 too"):  # ours after it
        _parse(["--max_steps", "4", "--steps", "3"])


def test_a_share_given_to_a_count_points_to_the_share():
    with pytest.raises(argparse.ArgumentError, match="for a share of the steps use --warmup_ratio 0.1"):
        _parse(["--algo", "grpo", "--grpo.warmup_steps", "0.1"])
    with pytest.raises(argparse.ArgumentError, match="expected an integer, got '0.1'$"):
        _parse(["--steps", "0.1"])  # a count without a share of the same name: the plain message


def test_metavars_name_each_settings_type():
    metavar = {a.dest: a.metavar for a in _parser()._actions}
    assert (metavar["eval_ks"], metavar["threshold_keep"], metavar["es.sigma"], metavar["steps"]) == (
        "INTS",
        "FLOATS",
        "FLOAT",
        "INT",
    )
    assert (metavar["reward_function"], metavar["reward_weights"]) == ("MODULE:FUNCTION", "FLOAT")


def test_the_tables_are_the_four_dataclasses_without_their_sections():
    names = [name for name, *_ in settings()]
    tables = (("", TrainConfig), ("es.", ESConfig), ("grpo.", GRPOConfig), ("population.", PopulationConfig))
    expected = [
        prefix + f.name
        for prefix, cls in tables
        for f in dataclasses.fields(cls)
        if f.name not in ("es", "grpo", "population")
    ]
    assert names == expected
