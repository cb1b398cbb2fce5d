"""Command line of the `llm` level: `python -m escov.llm SUBCOMMAND ...` (or `escov llm SUBCOMMAND ...`).

    python -m escov.llm pretrain --out DIR [--preset default|test]           # build and train the tiny base model
    python -m escov.llm pretrain-planted --out DIR --preset grid_paths      # a base with planted strategies
    python -m escov.llm eval --model DIR --task countdown --n 32 --k 1,16,32  # Pass@k, Maj@k, entropy -> eval.json
    python -m escov.llm curve RUN_DIR --points 8                              # checkpoints along training -> curve.json
    python -m escov.llm replay RUN_DIR --step 20 --out DIR                    # an ES checkpoint from replay.jsonl

A subcommand is a module with `add_arguments(parser)` and `run_command(args) -> int` (exit code),
imported only when it runs. Bad input (including a damaged file, named in the message) raises
ValueError, reported as a usage error (exit code 2); a non-finite value that would have been written
raises NonFiniteError (exit code 1).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys

# name -> (module, one-line help). Register new subcommands here, and only here.
SUBCOMMANDS = {
    "pretrain": ("escov.llm.tinymodel", "build and train the project's tiny base model (save_pretrained format)"),
    "pretrain-planted": (
        "escov.llm.tinymodel_planted",
        "train a tiny base on grid_paths or subset_sum with one strategy dominant, one rare",
    ),
    "eval": ("escov.llm.evaluate", "Pass@k / Maj@k / entropy evaluation of a model on a task; writes eval.json"),
    # ---- trainers (ES / GRPO) ----
    "train": ("escov.llm.train_cli", "ES or GRPO post-training run (run directory with metrics, checkpoints, eval)"),
    "curve": (
        "escov.llm.curve",
        "evaluate a run's checkpoints along training (sampled Pass@k and greedy) -> curve.json",
    ),
    "replay": ("escov.llm.replay", "rebuild an ES run's weights at a step from its base model and replay.jsonl"),
}


class Parser(argparse.ArgumentParser):
    """argparse with errors in the project's voice: one line naming the command and what is wrong (no usage block of
    every flag before it: `--help` lists them)."""

    def error(self, message: str):
        message = message.replace("invalid <lambda> value", "invalid value")
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = Parser(prog="python -m escov.llm", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="{" + ",".join(SUBCOMMANDS) + "}", parser_class=Parser
    )
    chosen = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    for name, (module, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text, allow_abbrev=False)  # a flag is spelt out
        if name == chosen:  # import only the module that runs
            module = importlib.import_module(module)
            module.add_arguments(p)
            p.set_defaults(run=module.run_command)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        target = sub.choices[chosen] if chosen else parser
        target.error(unrecognized(unknown, target))
    from escov.llm.rollout import NonFiniteError

    try:
        return args.run(args)
    except NonFiniteError as err:  # a NaN or infinity that would have been written: nothing is
        print(f"error: {err}", file=sys.stderr)
        return 1
    except ValueError as err:
        (sub.choices[chosen] if chosen else parser).error(str(err))  # exits with code 2


def progress_enabled(no_progress: bool) -> bool:
    """Progress bars unless --no-progress, or the TQDM_DISABLE environment variable (tqdm's own), says otherwise."""
    return not no_progress and os.environ.get("TQDM_DISABLE", "").strip().lower() in ("", "0", "false", "no")


def unrecognized(unknown: list[str], parser: argparse.ArgumentParser) -> str:
    """argparse's message for flags it does not know, with the nearest known flag where one is close:
    a flag under another table (--sigma: --es.sigma), or a misspelling (--es.sgma: --es.sigma)."""
    known = [s for a in parser._actions if a.help != argparse.SUPPRESS for s in a.option_strings if s.startswith("--")]
    hints = []
    for flag in (u.split("=", 1)[0] for u in unknown if u.startswith("--")):
        tail = [k for k in known if k.split(".")[-1] == flag.lstrip("-")]
        close = tail or difflib.get_close_matches(flag, known, n=1, cutoff=0.75)
        if close:
            hints.append(f"{flag}: did you mean {' or '.join(close)}?")
    return f"unrecognized arguments: {' '.join(unknown)}" + (f" ({'; '.join(hints)})" if hints else "")


if __name__ == "__main__":
    raise SystemExit(main())
