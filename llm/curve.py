"""Checkpoints evaluated along training: the data of the Pass@1-Pass@K frontier.

    python -m llm curve RUN_DIR [--points 8] [--samples 32] [--temperature 0.6] [--problems 64]

For a finished (or partial) run directory, the base model (step 0) and up to `points` of its
checkpoints, spread evenly over the steps that have one (the last always kept), are each evaluated
on the same test prompts as the run's final evaluation (llm/train.py EVAL_PROBLEM_SEED), twice:

    sampled   `samples` completions per prompt at `temperature` (the paper: 32 at T = 0.6):
              Pass@1, Pass@16, Pass@32, the share of prompts with no correct sample, token entropy
    greedy    one completion at temperature 0: greedy accuracy, the quantity ES with greedy member
              rollouts optimizes (the paper reports the sampled one)

Each point is a CurvePoint record in curve.json (llm/rundir.py), written as soon as it is measured
(and sent to the run's tracker, `report_to`, as curve/sampled/... and curve/greedy/... at its step);
points already there with the same settings are kept, so an interrupted curve continues where it
stopped. The sampling seed depends on (run seed, step), not on the method, so two methods' step-0
points on the same seed are the same measurement of the same base.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from llm import rundir
from llm.rollout import derive_seed

POINTS, SAMPLES, TEMPERATURE = 8, 32, 0.6   # the paper's Pass@32 at T = 0.6
KS = (1, 16, 32)


def curve_steps(checkpoints: list[int], points: int) -> list[int]:
    """0 (the base) and at most `points` of the checkpoint steps, evenly spread, the last kept."""
    if points < 1:
        raise ValueError(f"points must be >= 1, got {points}")
    steps = sorted(set(checkpoints) - {0})
    if len(steps) > points:
        picks = np.linspace(0, len(steps) - 1, points).round().astype(int)
        steps = [steps[i] for i in sorted(set(picks.tolist()))]
    return [0] + steps


def _same_settings(point: dict, n_problems: int, samples: int, temperature: float) -> bool:
    s = point["sampled"]
    return s["num_problems"] == n_problems and s["n"] == samples and s["temperature"] == temperature


def evaluate_curve(run_dir, *, points: int = POINTS, samples: int = SAMPLES, temperature: float = TEMPERATURE,
                   n_problems: int | None = None, progress: bool = False) -> list[dict]:
    """Measure the curve points of run_dir that are not in its curve.json yet; returns all points."""
    from llm.config import load_config
    from llm.engines import make_engine
    from llm.evaluate import evaluate
    from llm.tracking import open_tracker
    from llm.train import EVAL_PROBLEM_SEED

    run_dir = Path(run_dir)
    cfg = load_config(run_dir)
    torch.set_num_threads(cfg.threads)
    if samples < max(KS):
        raise ValueError(f"samples must be >= {max(KS)} (Pass@{max(KS)}), got {samples}")
    task = cfg.make_task()  # the run's own data, split, prompt style and reward
    n_problems = cfg.eval_problems if n_problems is None else n_problems
    problems = task.problems("test", n_problems, seed=EVAL_PROBLEM_SEED)
    done = {p["step"]: p for p in rundir.read_curve(run_dir) or [] if _same_settings(p, n_problems, samples, temperature)}
    checkpoints, _ = rundir.checkpoint_steps(run_dir)
    todo = [step for step in curve_steps(checkpoints, points) if step not in done]
    tracker = open_tracker(cfg.report_to, run_dir, cfg.to_dict()) if todo else None
    for step in todo:
        model_dir = cfg.model if step == 0 else rundir.checkpoint_dir(run_dir, step)
        engine = make_engine("hf", model_dir, dtype=torch.float32, seed=cfg.seed)
        seed = derive_seed(cfg.seed, step, "curve") % 2**31
        common = {"max_new_tokens": cfg.max_completion_length, "seed": seed, "progress": progress}
        point = {"step": step,
                 "sampled": evaluate(engine, task, problems, n=samples, ks=list(KS), temperature=temperature, **common),
                 "greedy": evaluate(engine, task, problems, n=1, ks=[1], temperature=0.0, **common)}
        rundir.record_curve_point(run_dir, point)
        tracker.log_record("curve", point, step)
        done[step] = point
    if tracker is not None:
        tracker.close()
    return [done[s] for s in sorted(done)]


def add_arguments(parser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory of `python -m llm train`")
    parser.add_argument("--points", type=int, default=POINTS, help="checkpoints evaluated besides the base")
    parser.add_argument("--eval_samples", "--samples", dest="samples", type=int, default=SAMPLES, metavar="N",
                        help=f"samples per prompt (default: {SAMPLES})")
    parser.add_argument("--eval_temperature", "--temperature", dest="temperature", type=float, default=TEMPERATURE,
                        metavar="T", help=f"sampling temperature (default: {TEMPERATURE})")
    parser.add_argument("--eval_problems", "--problems", dest="problems", type=int, default=None, metavar="N",
                        help="test prompts (default: the run's eval_problems)")
    parser.add_argument("--no-progress", "--no_progress", dest="no_progress", action="store_true",
                        help="no progress bars (TQDM_DISABLE=1 does the same)")


def run_command(args) -> int:
    from llm.cli import progress_enabled

    pts = evaluate_curve(args.run_dir, points=args.points, samples=args.samples, temperature=args.temperature,
                         n_problems=args.problems, progress=progress_enabled(args.no_progress))
    for p in pts:
        s = p["sampled"]
        print(f"step {p['step']:5d}  Pass@1 {s['pass_at_k']['1']:.3f}  Pass@32 {s['pass_at_k']['32']:.3f}  "
              f"greedy {p['greedy']['pass_at_k']['1']:.3f}  no-correct {1 - s['solved_fraction']:.3f}")
    plot_curve(pts, args.run_dir / CURVE_PLOT)
    print(f"wrote {args.run_dir / rundir.CURVE} and {args.run_dir / CURVE_PLOT}")
    return 0


CURVE_PLOT = "curve.png"


def plot_curve(points: list[dict], path: Path) -> None:
    """Sampled Pass@k and greedy accuracy against step, and the Pass@1-Pass@32 path the run takes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [p["step"] for p in points]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for k in points[0]["sampled"]["pass_at_k"]:
        a.plot(steps, [p["sampled"]["pass_at_k"][k] for p in points], "o-", label=f"Pass@{k}")
    a.plot(steps, [p["greedy"]["pass_at_k"]["1"] for p in points], "s--", label="greedy accuracy")
    t = points[0]["sampled"]["temperature"]
    a.set(xlabel="step", ylabel="rate", ylim=(0, 1), title=f"along training (sampled at T={t})")
    a.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    p1 = [p["sampled"]["pass_at_k"]["1"] for p in points]
    p32 = [p["sampled"]["pass_at_k"]["32"] for p in points]
    b.plot(p1, p32, "o-")
    for i in sorted({0, len(points) - 1}):  # the path's two ends, named
        b.annotate(f"step {steps[i]}", (p1[i], p32[i]), textcoords="offset points", xytext=(5, -12), fontsize=8)
    b.set(xlabel="Pass@1", ylabel="Pass@32", xlim=(0, 1), ylim=(0, 1.05), title="Pass@1-Pass@32 path")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
