"""The `python -m escov.llm train` command: settings from flags, a start line, the run, a summary.

    python -m escov.llm train --algo es --model DIR --task countdown --out RUN_DIR [--steps 40 --es.sigma 1e-3 ...]
    python -m escov.llm train --resume RUN_DIR [--re_evaluate]

The run itself is llm/train.py; this module only talks to the user, and imports torch only once a
run starts (so `--help` answers at once). It prints one line saying what starts (algorithm, task,
model, the budget in GRPO steps and the iterations it gives each phase, device, output), and at the
end the final metrics and the files the run directory holds. Ctrl-C or SIGTERM stop the run at its
next safe point (llm/interrupts.py) and end with one line saying how to resume; the exit code is
128 + the signal number. Resuming a finished run says so and does nothing unless --re_evaluate.
Progress bars go to stderr; --no-progress or TQDM_DISABLE=1 turn them off.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per setting (llm/settings/), plus --config, --resume and the flags of the command itself."""
    from escov.llm.settings.sources import _parse_flag
    from escov.llm.settings_help import add_train_arguments

    add_train_arguments(parser)
    bool_flag = {
        "nargs": "?",
        "const": True,
        "default": False,
        "metavar": "BOOL",
        "type": lambda t: _parse_flag(t, "bool"),
    }
    parser.add_argument(
        "--allow_device_change",
        **bool_flag,
        help="with --resume: continue on another kind of device (CPU <-> CUDA) than the run started on",
    )
    parser.add_argument(
        "--allow_config_change",
        **bool_flag,
        help="with --resume: continue with settings edited in config.json since the run started "
        "(each change recorded in config_history.jsonl)",
    )
    parser.add_argument(
        "--re_evaluate",
        **bool_flag,
        help="with --resume of a finished run: run the final measurements and evaluations again",
    )
    parser.add_argument(
        "--no-progress",
        "--no_progress",
        dest="no_progress",
        action="store_true",
        help="no progress bars (TQDM_DISABLE=1 does the same)",
    )


def run_command(args: argparse.Namespace) -> int:
    """0 when the run finished (or was finished already), 1 when a non-finite value stopped it,
    128 + signal number when a signal did."""
    from escov.llm.cli import progress_enabled
    from escov.llm.config import config_from_args, setting_flags
    from escov.llm.interrupts import Interrupted, InterruptedAtOnce, stop_on_signals
    from escov.llm.rollout import NonFiniteError

    if args.resume:
        given = sorted(set(setting_flags(args)) - {"device"}) + (["config"] if args.config else [])
        if given:
            raise ValueError(
                f"--resume continues a run with its saved config; do not combine it with {given} "
                "(only --device, --allow_device_change, --allow_config_change and --re_evaluate)"
            )
        out = Path(args.resume)
    else:
        for flag in ("allow_device_change", "allow_config_change", "re_evaluate"):
            if getattr(args, flag):
                raise ValueError(f"--{flag} only applies with --resume")
        from escov.llm.settings_help import check_aliases

        check_aliases(args)
        cfg = config_from_args(args)
        out = Path(cfg.out)
    show_progress = progress_enabled(args.no_progress)
    if not show_progress:
        from transformers.utils import logging as hf_logging  # its own bars (loading weights)

        hf_logging.disable_progress_bar()
    try:
        with stop_on_signals():
            if args.resume:
                if not _resume(out, args, show_progress):
                    return 0
            else:
                from escov.llm.train import check_out_dir, train

                check_out_dir(out)
                print(start_line(cfg, resolve=True), flush=True)
                train(cfg, show_progress=show_progress)
    except NonFiniteError as err:
        print(f"error: {err}", flush=True)
        return 1
    except OSError as err:  # a write outside llm/rundir/ (a plot): a full disk is one line naming the file
        raise ValueError(f"{err.filename or out}: cannot be written ({err.strerror or err})") from None
    except (Interrupted, InterruptedAtOnce) as err:
        print(resume_hint(out, str(err)), file=sys.stderr, flush=True)
        return err.exit_code
    print(summary(out), flush=True)
    return 0


def _resume(out: Path, args: argparse.Namespace, show_progress: bool) -> bool:
    """Resume the run in out (False: it is finished and nothing was asked of it)."""
    from escov.llm import rundir
    from escov.llm.config import load_config
    from escov.llm.device import resume_device
    from escov.llm.train import resume

    if (out / rundir.CONFIG).is_file() and "algo" not in (rundir.read_config(out)):
        raise ValueError(
            f"--resume {out}: not a run directory of `llm train` (its config.json is a model's; "
            f"give it as --model to start a run)"
        )
    cfg = load_config(out)
    cfg.out = str(out)  # where the run is now (config.json names where it began)
    resume_device(
        cfg.device, args.device, args.allow_device_change, f"--resume {out}"
    )  # a refused device: an error first
    if is_finished(out) and not args.re_evaluate:
        print(
            f"{out} is finished ({total_steps(cfg)} steps, final evaluation in {out / rundir.EVAL}); nothing to do. "
            f"To run its final measurements again: --resume {out} --re_evaluate"
        )
        return False
    steps, _ = rundir.checkpoint_steps(out)
    print(
        f"resuming {out} from {f'checkpoint step-{steps[0]}' if steps else 'the start (no checkpoint yet)'}: "
        + start_line(cfg, resolve=False),
        flush=True,
    )
    resume(
        out,
        show_progress=show_progress,
        device=args.device,
        allow_device_change=args.allow_device_change,
        allow_config_change=args.allow_config_change,
    )
    return True


# ----------------------------------------------------------------------------- what the user reads


def total_steps(cfg) -> int:
    from escov.llm import schedules

    phases = schedules.plan(cfg)
    return phases[-1].start + phases[-1].steps


def start_line(cfg, resolve: bool) -> str:
    """What runs: algorithm, task, model, the budget and the iterations it gives each phase, device, output."""
    from escov.llm import schedules

    device = cfg.device
    if resolve:
        from escov.llm.device import resolve_device

        device = resolve_device(cfg.device)
    phases = schedules.plan(cfg)
    parts = [
        f"{p.algo.upper()} {p.steps} {'iterations' if p.algo == 'es' else 'steps'} ({p.start + 1}-{p.start + p.steps})"
        for p in phases
    ]
    return (
        f"llm train: {cfg.algo} on {cfg.task}, model {cfg.model}; budget {cfg.steps} GRPO steps ({cfg.budget}) = "
        f"{' then '.join(parts)}; device {device}; output {cfg.out}"
    )


def is_finished(run_dir: Path) -> bool:
    """The run's last checkpoint and its final stage (final evaluation, update analysis, plots) are written."""
    from escov.llm import rundir
    from escov.llm.config import load_config

    steps, _ = rundir.checkpoint_steps(run_dir)
    ev = rundir.read_eval(run_dir) or {}
    return (
        bool(steps)
        and steps[0] == total_steps(load_config(run_dir))
        and "thresholded" in ev
        and rundir.rows_missing_through(run_dir, steps[0]) is None  # a lost metrics row is rebuilt by a resume
        and (run_dir / "curves.png").exists()
        and (run_dir / "drift_hist.png").exists()
    )


def resume_hint(out: Path, what: str) -> str:
    """One line: what stopped, what is kept, the command that continues."""
    from escov.llm import rundir

    if not out.is_dir():
        return f"{what}, before the first step; nothing was kept (run the same command again)"
    steps, _ = rundir.checkpoint_steps(out)
    kept = (
        f"last checkpoint {rundir.checkpoint_dir(out, steps[0])}" if steps else "no checkpoint yet (resume starts over)"
    )
    return f"{what}; {kept}; resume with: python -m escov.llm train --resume {shlex.quote(str(out))}"


def summary(out: Path) -> str:
    """The final metrics (base -> final) and every file of the run directory."""
    from escov.llm import rundir
    from escov.llm.reward_stats import change_line, summary_line

    ev = rundir.read_eval(out) or {}
    lines = [f"finished: {out}"]
    if "final" in ev:
        passes = "  ".join(
            f"Pass@{k} {ev['base']['pass_at_k'][k]:.3f} -> {v:.3f}" for k, v in ev["final"]["pass_at_k"].items()
        )
        threshold = (
            f"; correct: {ev['final']['correct']}"
            if "correct" in ev["final"]
            else f"; correct: reward >= {ev['final']['correct_threshold']:g}"
            if "correct_threshold" in ev["final"]
            else ""
        )
        lines.append(f"  {ev['final']['task']} (base -> final, T={ev['final']['temperature']}{threshold}): {passes}")
        lines.append(
            f"  greedy accuracy {ev['base_greedy']['pass_at_k']['1']:.3f} -> {ev['final_greedy']['pass_at_k']['1']:.3f}"
            f"  token entropy {ev['base']['mean_token_entropy']:.3f} -> {ev['final']['mean_token_entropy']:.3f}"
        )
        if "reward_mean" in ev["final"]:
            lines.append(f"  base -> final: {change_line(ev['base'], ev['final'])}")
            lines.append(f"  final: {summary_line(ev['final'])}")
        held = ev.get("heldout", {})
        if "final" in held:
            lines.append(
                f"  held-out {held['final']['task']} Pass@1 {held['base']['pass_at_k']['1']:.3f} -> "
                f"{held['final']['pass_at_k']['1']:.3f}"
            )
    es_rows = [r for r in rundir.read_steps(out) if r["phase"] == "es"] if (out / rundir.METRICS).exists() else []
    zero = sum(bool(r.get("es_zero_update")) for r in es_rows)
    if zero:
        lines.append(f"  ES: {zero} of {len(es_rows)} iterations had all members' rewards equal: a zero update")
    timeouts = rundir.grading_timeouts(rundir.read_steps(out) if (out / rundir.METRICS).exists() else [], ev)
    if timeouts:
        lines.append(
            f"  warning: {timeouts} answer{'s' * (timeouts > 1)} graded wrong at the math grader's "
            "wall-clock safety net (grading_timeouts in metrics.jsonl and eval.json): the machine stalled, "
            "and those grades depend on its load"
        )
    steps, _ = rundir.checkpoint_steps(out)
    files = sorted(p.name for p in out.iterdir() if p.is_file() and not p.name.startswith("."))
    lines.append(f"  wrote {', '.join(files)}")
    if steps:
        names = [f"step-{s}" for s in sorted(steps)]
        shown = ", ".join(names) if len(names) <= 4 else f"{names[0]}, {names[1]}, ..., {names[-1]}"
        lines.append(f"  {len(names)} checkpoint{'s' * (len(names) > 1)} in {out / 'checkpoints'}: {shown}")
    return "\n".join(lines)
