"""What `llm train --help` says about each setting, TRL's names for our settings, and the flags of
`llm train` built from both (`add_train_arguments`).

A setting's description is the comment on its field's line in llm/settings/
(`sigma: float = PAPER_SIGMA  # perturbation scale`); its default is the field's default. Both are
read from the dataclasses themselves, so the help, the settings table (`settings_table`) and the
code cannot disagree. Nothing here imports torch.

TRL's GRPOTrainer names some of the same settings differently. `TRL_ALIASES` are accepted as they
are (`--learning_rate` sets `--grpo.learning_rate`); `TRL_POINTERS` name a TRL setting that has no
exact counterpart here and stop with a one-line error saying what to use instead.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import io
import textwrap
import tokenize

from escov.llm.settings import REPEATED_FLAGS, SECTIONS, ESConfig, GRPOConfig, PopulationConfig, TrainConfig
from escov.llm.settings.sources import _parse_flag

# (flag prefix, dataclass, heading of its group in --help)
TABLES = (
    ("", TrainConfig, "run settings (top-level keys of a --config TOML file)"),
    ("es.", ESConfig, "ES settings (table [es])"),
    ("grpo.", GRPOConfig, "GRPO settings (table [grpo])"),
    ("population.", PopulationConfig, "ES member evaluation (table [population])"),
)

# TRL name -> our setting, where the two mean the same thing
TRL_ALIASES = {
    "learning_rate": "grpo.learning_rate",
    "num_generations": "grpo.num_generations",
    "beta": "grpo.beta",
    "epsilon": "grpo.epsilon",
    "num_iterations": "grpo.num_iterations",
    "loss_type": "grpo.loss_type",
    "max_grad_norm": "grpo.max_grad_norm",
    "weight_decay": "grpo.weight_decay",
    "scale_rewards": "grpo.scale_rewards",
    "epsilon_high": "grpo.epsilon_high",
    "mask_truncated_completions": "grpo.mask_truncated_completions",
    "top_p": "grpo.top_p",
    "top_k": "grpo.top_k",
    "min_p": "grpo.min_p",
    "lr_scheduler_type": "grpo.lr_scheduler_type",
    "warmup_ratio": "grpo.warmup_ratio",
    "warmup_steps": "grpo.warmup_steps",
    "use_peft": "grpo.use_peft",
    "lora_r": "grpo.lora_r",
    "lora_alpha": "grpo.lora_alpha",
    "lora_dropout": "grpo.lora_dropout",
    "lora_target_modules": "grpo.lora_target_modules",
    "gradient_checkpointing": "grpo.gradient_checkpointing",
    "entropy_coef": "grpo.entropy_coef",
    "use_adaptive_entropy": "grpo.use_adaptive_entropy",
    "entropy_coef_min": "grpo.entropy_coef_min",
    "entropy_coef_max": "grpo.entropy_coef_max",
    "entropy_coef_delta": "grpo.entropy_coef_delta",
    "entropy_target": "grpo.entropy_target",
    "top_entropy_quantile": "grpo.top_entropy_quantile",
    "importance_sampling_level": "grpo.importance_sampling_level",
    "sapo_temperature_pos": "grpo.sapo_temperature_pos",
    "sapo_temperature_neg": "grpo.sapo_temperature_neg",
    "max_steps": "steps",
    "output_dir": "out",
    "save_steps": "checkpoint_every",
    "vllm_gpu_memory_utilization": "gpu_memory_utilization",
    "model_name_or_path": "model",
}

# verl's names (core_algos, algorithm.adv_estimator and actor.policy_loss), taken as flags alone too
VERL_ALIASES = {
    name: f"grpo.{name}"
    for name in ("adv_estimator", "clip_cov_ratio", "clip_cov_lb", "clip_cov_ub", "kl_cov_ratio", "ppo_kl_coef")
}
# the other variants' settings by their own names (docs/training.md)
VARIANT_ALIASES = {name: f"grpo.{name}" for name in ("pass_k", "zero_success_gating", "outcome_bonus_coef")}

VARIANTS_HELP = (
    "GRPO's coverage-keeping variants (docs/training.md), combinable: entropy bonus, fixed (--entropy_coef) or "
    "adaptive (--use_adaptive_entropy, --entropy_coef_min/max/delta, --entropy_target; TRL, Skywork-OR1); "
    "high-entropy-token updates (--top_entropy_quantile; TRL, the 80/20 forking-token rule); sequence-level "
    "importance sampling (--importance_sampling_level sequence; TRL, GSPO); --loss_type cispo (TRL, MiniMax-M1) and "
    "sapo (TRL, --sapo_temperature_pos/neg); Pass@k advantages (--adv_estimator grpo_passk, verl; passk_analytic "
    "with --pass_k, Chen et al. 2025; pkpo, PKPO's unbiased Pass@k gradient, Walder & Karkhanis 2025); "
    "covariance-based entropy control (--loss_type clip_cov with "
    "--clip_cov_ratio/lb/ub, kl_cov with --kl_cov_ratio, --ppo_kl_coef; verl, Cui et al. 2025); zero-success gating "
    "(--zero_success_gating true); outcome-based exploration (--outcome_bonus_coef; Song, Kempe, Munos 2025)."
)

# TRL name -> what to use here, where there is no exact counterpart
TRL_POINTERS = {
    "per_device_train_batch_size": "TRL counts completions per device; here --batch_size counts prompts per step "
    "(each with --grpo.num_generations completions)",
    "gradient_accumulation_steps": "there is one update per batch of --batch_size prompts; raise --batch_size instead",
    "num_train_epochs": "training length is --steps, a budget in GRPO steps (TRL's --max_steps is accepted too)",
    "logging_steps": "every step is logged, to metrics.jsonl in the run directory",
    "use_vllm": "use --engine vllm",
    "bf16": "use --dtype bfloat16 (trainers keep fp32 master weights)",
    "resume_from_checkpoint": "use --resume RUN_DIR (the run continues from its newest checkpoint)",
    "dataset_name": "use --data FILE (a local .json/.jsonl/.parquet file) and --test_data FILE",
    "log_completions": "completions.jsonl keeps the first completion of --completions_kept prompts at every "
    "evaluation, and of the training batch every --completions_every steps",
    "lr": "use --learning_rate (TRL's name, and ours: --grpo.learning_rate)",
    "repetition_penalty": "not offered: completions are sampled from the model's own distribution at --temperature "
    "(--top_p, --top_k, --min_p restrict it), as GRPO's log-probabilities assume",
}
# our integer settings with a share of the same name elsewhere: a fraction given to them points there
FRACTION_POINTERS = {"grpo.warmup_steps": "--warmup_ratio"}


def field_descriptions(cls) -> dict[str, str]:
    """{field name: the comment on its line} for a dataclass whose fields are written one per line
    (a field without a comment is left out). A comment continues on the comment-only lines right below it that
    start in its column (a description too long for one line of 120 characters)."""
    return dict(_descriptions(cls))


@functools.cache  # inspect.getsource parses the class's whole module: once per class, not at every parser built
def _descriptions(cls) -> tuple[tuple[str, str], ...]:
    source = textwrap.dedent(inspect.getsource(cls))
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    comments = {
        tok.start[0]: (tok.start[1], tok.string.lstrip("#").strip()) for tok in tokens if tok.type == tokenize.COMMENT
    }
    code_lines = {
        tok.start[0]
        for tok in tokens
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    }
    body = ast.parse(source).body[0].body
    found = {}
    for node in body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            line = node.end_lineno if node.end_lineno in comments else node.lineno
            if line not in comments:
                continue
            column, text = comments[line]
            following = line + 1
            while following in comments and following not in code_lines and comments[following][0] == column:
                text += " " + comments[following][1]
                following += 1
            if text:
                found[node.target.id] = text
    return tuple(found.items())


def settings() -> list[tuple[str, dataclasses.Field, str, str]]:
    """(flag name, field, description, group heading) of every setting, in the order of the dataclasses."""
    rows = []
    for prefix, cls, heading in TABLES:
        described = field_descriptions(cls)
        for f in dataclasses.fields(cls):
            if f.name not in SECTIONS:
                rows.append((prefix + f.name, f, described.get(f.name, ""), heading))
    return rows


def default_text(f: dataclasses.Field) -> str:
    """A field's default as one would type it on the command line."""
    value = f.default_factory() if f.default is dataclasses.MISSING else f.default
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(map(str, value)) if value else "none"
    if value == "":
        return '""'
    return str(value)


def help_line(f: dataclasses.Field, description: str) -> str:
    return f"{description} (default: {default_text(f)})"


def settings_table() -> str:
    """A Markdown table of every setting: flag, default, description (for the README or docs)."""
    lines = ["| setting | default | description |", "| --- | --- | --- |"]
    for name, f, description, _ in settings():
        lines.append(f"| `{name}` | `{default_text(f)}` | {description.replace('|', '&#124;')} |")
    return "\n".join(lines) + "\n"


def trl_epilog() -> str:
    """The closing part of `llm train --help`: TRL's names and what --steps means."""
    aliases = ", ".join(f"--{trl} (--{ours})" for trl, ours in TRL_ALIASES.items())
    short = ", ".join(f"--{name}" for name in {**VERL_ALIASES, **VARIANT_ALIASES})
    return (
        "--steps is a budget counted in GRPO steps: an ES phase runs steps x cost(GRPO step) / cost(ES step) "
        "iterations (llm/schedules.py; under the default FLOP budget one ES iteration per GRPO step when "
        "es.population_size = 4 x grpo.num_generations, 4 per step with 8 members against 8 generations). "
        "The run's first line says how many iterations it will run.\n\n"
        f"TRL's names are accepted for: {aliases}.\n\n"
        f"{VARIANTS_HELP} verl's and the variants' own names are accepted alone too: {short}."
    )


class _Alias(argparse.Action):
    """A TRL name for a setting of ours: sets it, and refuses it beside our own flag with another value
    (`--steps 1 --max_steps 2` would otherwise run whichever came last)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, self.dest, None)
        if given is not None and given != values:
            parser.error(f"{option_string} is TRL's name for --{self.dest}, given {given} already; give one of them")
        setattr(namespace, self.dest, values)
        setattr(namespace, f"_alias_{self.dest}", (option_string, values))


def check_aliases(args: argparse.Namespace) -> None:
    """ValueError when our flag, given after its TRL alias, changed the alias's value."""
    for name, (option, value) in [(k[len("_alias_") :], v) for k, v in vars(args).items() if k.startswith("_alias_")]:
        if getattr(args, name) != value:
            raise ValueError(f"{option} is TRL's name for --{name}, given {getattr(args, name)} too; give one of them")


class _PointToOurs(argparse.Action):
    """A TRL flag with no exact counterpart: a usage error saying what to use instead."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} is TRL's name; {TRL_POINTERS[option_string.lstrip('-')]}")


def add_trl_names(parser: argparse.ArgumentParser) -> None:
    """TRL's names on a parser that has one flag per setting: aliases set our setting, pointers stop
    with a message; the --help epilog lists them and says what --steps counts. None of these names is one of our
    settings (argparse refuses a flag given twice)."""
    ours = {a.dest: a for a in parser._actions}
    for trl, name in {**TRL_ALIASES, **VERL_ALIASES, **VARIANT_ALIASES}.items():
        parser.add_argument(
            f"--{trl}",
            dest=name,
            default=None,
            type=ours[name].type,
            metavar=ours[name].metavar,
            action=_Alias,
            help=argparse.SUPPRESS,
        )
    for trl in TRL_POINTERS:
        parser.add_argument(f"--{trl}", nargs="?", action=_PointToOurs, help=argparse.SUPPRESS)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "\n\n".join(textwrap.fill(p, 100) for p in trl_epilog().split("\n\n"))


def _flag_value(text: str, typ: str, name: str):
    """_parse_flag, with a pointer where a share was given to a count (--warmup_steps 0.1: --warmup_ratio)."""
    try:
        return _parse_flag(text, typ)
    except argparse.ArgumentTypeError:
        if name in FRACTION_POINTERS:
            raise argparse.ArgumentTypeError(
                f"expected a number of steps, got {text!r}; for a share of the steps "
                f"use {FRACTION_POINTERS[name]} {text}"
            ) from None
        raise


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per setting (`--steps`, `--es.sigma`, `--grpo.beta`, ...) with its description and default,
    TRL's names for them, plus --config and --resume (llm/settings/sources.py config_from_args reads them)."""
    parser.add_argument("--config", help="TOML file of settings (flags override it)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted run from its last checkpoint")
    groups: dict[str, argparse._ArgumentGroup] = {}
    for name, f, description, heading in settings():
        group = groups.get(heading) or groups.setdefault(heading, parser.add_argument_group(heading))
        metavar = (
            ("INTS" if "int" in f.type else "STRS" if "str" in f.type else "FLOATS")
            if f.type.startswith("tuple")
            else f.type.upper()
        )
        group.add_argument(
            f"--{name}",
            dest=name,
            default=None,
            metavar=REPEATED_FLAGS.get(name, metavar),
            action="append" if name in REPEATED_FLAGS else "store",
            type=lambda text, t=f.type, n=name: _flag_value(text, t, n),
            help=help_line(f, description).replace("%", "%%"),
        )
    add_trl_names(parser)
