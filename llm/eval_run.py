"""What `python -m escov.llm eval` evaluates: a model with the flags' task and sampling, or a run's own evaluation
(`--run RUN`), planned before any model loads.

    llm eval --run RUN                  the run's last checkpoint, evaluated as the run evaluated it: its task and
                                        test problems (config.json), eval_samples, eval_ks, eval_temperature,
                                        max_completion_length, engine, dtype, threads, and the sampling seed of its
                                        evaluations (llm/rollout.py evaluation_seed); the result is compared with
                                        eval.json's "final"
    llm eval --run RUN --checkpoint 0   the base model, compared with eval.json's "base"
    llm eval --run RUN --checkpoint N   checkpoint step-N, compared with metrics.jsonl's eval_steps validation of
                                        step N when the run has one

Without --run, the flags give the task (as `llm train`'s) and the sampling; on a data file the whole test split is
evaluated unless --eval_problems says otherwise (a single --data file without --test_data is read as the test file).
When --model is a checkpoint of a run, the line before the results names the seed that reproduces its run's own
evaluation.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

# the flags that --run takes from the run (TASK_SETTINGS besides): given with --run they are refused
RUN_OWNED = ("n", "k", "temperature", "top_p", "max_new_tokens", "dtype", "seed", "engine")
FLAG_NAMES = {
    "n": "eval_samples",
    "k": "eval_ks",
    "temperature": "eval_temperature",
    "max_new_tokens": "max_completion_length",
}  # the flags' names where their dest differs


@dataclass
class EvalPlan:
    cfg: object  # TrainConfig: the task settings and the test problems' count
    model: str
    n: int
    ks: list[int]
    temperature: float
    max_new_tokens: int
    seed: int
    top_p: float
    engine: str
    dtype: str
    step: int = 0  # the training step the reward functions are told
    threads: int | None = None  # torch threads (the run's)
    recorded: dict | None = None  # the run's own record of this evaluation
    recorded_name: str = ""
    note: str = ""  # said on the first line


def flag_defaults(add_arguments) -> dict:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return vars(parser.parse_args([]))


def run_plan(args: argparse.Namespace, defaults: dict, task_settings: tuple[str, ...]) -> EvalPlan:
    """The plan of `llm eval --run RUN [--checkpoint N]`; ValueError naming the flag or the run's file otherwise."""
    from escov.llm import rundir
    from escov.llm.config import load_config
    from escov.llm.rollout import evaluation_seed

    run = Path(args.run_dir)
    if not (run / rundir.CONFIG).is_file():
        raise ValueError(f"--run {args.run_dir}: not a run directory of `llm train` (no {rundir.CONFIG})")
    given = [
        FLAG_NAMES.get(name, name)
        for name in (*task_settings, *RUN_OWNED, "model")
        if getattr(args, name) != defaults[name]
    ]
    if given:
        flags = ", ".join("--" + g for g in given)
        raise ValueError(f"--run evaluates as the run did, with its own settings; drop {flags}")
    cfg = load_config(run)
    steps, _ = rundir.checkpoint_steps(run)
    step = steps[0] if steps and args.checkpoint is None else args.checkpoint
    if step is None:
        raise ValueError(f"--run {args.run_dir}: the run has no checkpoint yet; give --checkpoint 0 for its base model")
    if step != 0 and step not in steps:
        raise ValueError(f"--checkpoint {step}: {run} has checkpoints {sorted(steps)} (0: the base model)")
    model = cfg.model if step == 0 else str(rundir.checkpoint_dir(run, step))
    ev = rundir.read_eval(run) or {}
    recorded, name = None, ""
    if step == 0:
        recorded, name = ev.get("base"), "eval.json's base"
    elif steps and step == steps[0] and "final" in ev:
        recorded, name = ev["final"], "eval.json's final"
    elif (run / rundir.METRICS).exists():
        row = next((r for r in rundir.read_steps(run) if r["step"] == step and "validation" in r), None)
        recorded, name = (row["validation"], f"metrics.jsonl's validation at step {step}") if row else (None, "")
    seed = evaluation_seed(cfg.seed)
    return EvalPlan(
        cfg=cfg,
        model=model,
        n=cfg.eval_samples,
        ks=sorted(cfg.eval_ks),
        temperature=cfg.eval_temperature,
        max_new_tokens=cfg.max_completion_length,
        seed=seed,
        top_p=1.0,
        engine=cfg.engine,
        dtype=cfg.dtype,
        step=step,
        threads=cfg.threads,
        recorded=recorded,
        recorded_name=name,
        note=f"run {run}, {'base model' if step == 0 else f'checkpoint step-{step}'}, the run's evaluation seed {seed}",
    )


def run_of_checkpoint(model: str) -> tuple[Path, int] | None:
    """(run directory, step) when `model` is a run's checkpoints/step-N folder, else None."""
    from escov.llm import rundir

    path = Path(model).resolve()
    match = rundir.CHECKPOINT_NAME.fullmatch(path.name)
    if match and path.parent.name == rundir.CHECKPOINTS and (path.parent.parent / rundir.CONFIG).is_file():
        return path.parent.parent, int(match.group(1))
    return None


def seed_hint(model: str, seed: int) -> str:
    """For a run's checkpoint evaluated with another seed: the seed and command that reproduce the run's own
    evaluation ("" otherwise)."""
    from escov.llm import rundir
    from escov.llm.rollout import evaluation_seed

    found = run_of_checkpoint(model)
    if found is None:
        return ""
    run, step = found
    try:
        own = evaluation_seed(int(rundir.read_config(run)["seed"]))
    except (rundir.RunDirError, KeyError, TypeError, ValueError):
        return ""
    if own == seed:
        return ""
    return (
        f"note: {model} is checkpoint step-{step} of the run {run}, whose evaluations sample with seed {own} "
        f"(this one: {seed}); `llm eval --run {run} --checkpoint {step}` evaluates it as the run did"
    )


def comparison(result: dict, recorded: dict | None, name: str) -> str:
    """One line: whether the evaluation reproduces the run's record (every Pass@k and Maj@k, the mean reward and
    the token entropy equal, where the record holds them)."""
    if recorded is None:
        return ""
    pairs = [
        (f"{kind}@{k}", result[key][k], recorded.get(key, {}).get(k))
        for key, kind in (("pass_at_k", "pass"), ("maj_at_k", "maj"))
        for k in result[key]
    ]
    pairs += [
        (label, result[key], recorded[key])
        for key, label in (("reward_mean", "reward"), ("mean_token_entropy", "entropy"))
        if key in recorded and key in result
    ]
    shown = "  ".join(
        f"{label} {ours:.3f} {'=' if ours == theirs else 'vs'} {'n/a' if theirs is None else format(theirs, '.3f')}"
        for label, ours, theirs in pairs
    )
    if all(ours == theirs for _, ours, theirs in pairs):
        return f"reproduces {name}: {shown}"
    return (
        f"differs from {name}: {shown} (same problems, samples and seed: other threads, device or library "
        "versions change the sampled tokens)"
    )
