"""Checkpoints evaluated along training: the data of the Pass@1-Pass@K frontier.

    python -m escov.llm curve RUN_DIR [--points 8] [--samples 32] [--temperature T] [--problems 64]
                                [--resolution 0.06] [--max_points 40] [--split test|validation|train]

For a finished (or partial) run directory, the base model (step 0) and checkpoints are each
evaluated on the same test prompts as the run's final evaluation (llm/problem_sets.py eval_set),
or with `--split validation` on the task's validation prompts, or with `--split train` on prompts of the
training split (llm/problem_sets.py split_set; never a test prompt: what a sweep or a positive control that
chooses settings reads), twice:

    sampled   `samples` (>= 32) completions per prompt at `temperature` (default: the run's
              eval_temperature; the paper: 32 at T = 0.6):
              Pass@1, Pass@16, Pass@32, the share of prompts with no correct sample, token entropy
    greedy    one completion at temperature 0: greedy accuracy, the quantity ES with greedy member
              rollouts optimizes (the paper reports the sampled one)

Which checkpoints: the points are placed by Pass@1, not by steps (layout). First the base and up to
`points` checkpoints spread evenly over the steps that have one (the last always kept); then, while
two neighbouring measured points differ in Pass@1 by more than `resolution` and a checkpoint lies
between them, the checkpoint nearest the middle of the widest such segment is measured too, up to
`max_points` points in all. A matched comparison (theory.matched) reads a level only across a gap of
at most the same resolution, so a run trained with dense early checkpoints (TrainConfig
checkpoint_dense) gets measured points wherever its Pass@1 moves fast.

Each point is a CurvePoint record in curve.json (llm/rundir/), written as soon as it is measured
(and sent to the run's tracker, `report_to`, as curve/sampled/... and curve/greedy/... at its step);
The base (step 0) and the final checkpoint are the run's own evaluations (eval.json's base and final, with their
greedy twins) whenever those were measured with the curve's settings (prompts, samples, temperature, Pass@k and
completion length): the same measurement of the same model, not measured twice; such a point says so in `source`.
Each point records its `fingerprint`: the run's settings hash and the sha256 of the weight files it measured
(the base model's, or the checkpoint's; llm/fingerprints.py weights_sha256). Before measuring, the run is checked
as `--resume` checks it (llm/fingerprints.py, llm/witnesses.py): edited settings, a changed data file, reward or
base model are refused in one line. Other points already there with the same settings and the fingerprint of the
weights there now are reused, so an interrupted curve continues where it stopped, and points outside the current
layout (left by an earlier layout, e.g. before the run was resumed) are dropped; a resumed run drops the points
after the step it continues from (it trains those checkpoints again). The sampling seed depends on (run seed,
step), not on the method, so two methods' step-0 points on the same seed are the same measurement of the same base.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from escov.llm import fingerprints, rundir, witnesses
from escov.llm.problem_sets import CURVE_SPLITS
from escov.theory.matched import RESOLUTION

POINTS, SAMPLES = 8, 32  # the paper's Pass@32 (at the run's eval_temperature; the paper's 0.6)
MAX_POINTS = 40  # curve points at most, the base and refinements included
KS = (1, 16, 32)


def curve_steps(checkpoints: list[int], points: int) -> list[int]:
    """0 (the base) and at most `points` of the checkpoint steps, evenly spread, the last kept."""
    if points < 1:
        raise ValueError(f"points must be >= 1, got {points}")
    steps = sorted(set(checkpoints) - {0})
    if len(steps) > points:
        # one point: the last (linspace's single point would be the first)
        picks = np.linspace(0, len(steps) - 1, points).round().astype(int) if points > 1 else np.array([len(steps) - 1])
        steps = [steps[i] for i in sorted(set(picks.tolist()))]
    return [0] + steps


def refinement(measured: dict[int, float], checkpoints: list[int], resolution: float) -> int | None:
    """The next checkpoint to measure: in the segment between neighbouring measured steps with the
    largest Pass@1 jump above `resolution` that holds an unmeasured checkpoint, the one nearest its
    middle step; None when no segment can be refined."""
    steps = sorted(measured)
    free = sorted(set(checkpoints) - set(measured) - {0})
    best, best_jump = None, resolution
    for s0, s1 in zip(steps, steps[1:]):
        jump = abs(measured[s1] - measured[s0])
        inside = [c for c in free if s0 < c < s1]
        if inside and jump > best_jump:
            best, best_jump = min(inside, key=lambda c: (abs(2 * c - s0 - s1), c)), jump
    return best


def layout(
    checkpoints: list[int],
    pass1_at: Callable[[int], float],
    *,
    points: int = POINTS,
    resolution: float = RESOLUTION,
    max_points: int = MAX_POINTS,
) -> list[int]:
    """The steps a curve measures: curve_steps(checkpoints, points), then refinements (see refinement)
    while fewer than max_points are measured. pass1_at(step) measures (or recalls) a point's Pass@1."""
    if not 0 < resolution < 1:
        raise ValueError(f"resolution must be a Pass@1 gap in (0, 1), got {resolution}")
    if max_points < 2:
        raise ValueError(f"max_points must be >= 2, got {max_points}")
    measured = {s: pass1_at(s) for s in curve_steps(checkpoints, points)[:max_points]}
    while len(measured) < max_points and (step := refinement(measured, checkpoints, resolution)) is not None:
        measured[step] = pass1_at(step)
    return sorted(measured)


def evaluations_as_points(
    run_dir: Path, cfg, checkpoints: list[int], n_problems: int, samples: int, temperature: float
) -> list[dict]:
    """The run's own evaluations that are curve points of its test curve: eval.json's base (step 0) and final
    (the last checkpoint, when it is the run's last step), each with its greedy evaluation, where the sampled one
    was measured on the curve's prompts with its samples, temperature, Pass@k and completion length."""
    from escov.llm import schedules

    evals = rundir.read_eval(run_dir) or {}
    last = sum(phase.steps for phase in schedules.plan(cfg))
    steps = {"base": 0} | ({"final": last} if checkpoints and max(checkpoints) == last else {})
    points = []
    for label, step in steps.items():
        sampled, greedy = evals.get(label), evals.get(f"{label}_greedy")
        if (
            sampled is None
            or greedy is None
            or sampled["num_problems"] != n_problems
            or sampled["n"] != samples
            or sampled["temperature"] != temperature
            or not set(KS) <= set(sampled["ks"])
            or sampled["max_new_tokens"] != cfg.max_completion_length
            or greedy["num_problems"] != n_problems
        ):
            continue
        points.append(
            {
                "step": step,
                "sampled": _without_kept(sampled),
                "greedy": _without_kept(greedy),
                "source": f"eval.json {label}",
                "fingerprint": point_fingerprint(run_dir, cfg, step),
            }
        )
    return points


def point_fingerprint(run_dir: Path, cfg, step: int) -> dict:
    """What a curve point measured: the run's settings hash and the sha256 of the weight files of its step (the
    base model at step 0, else the checkpoint)."""
    model_dir = cfg.model if step == 0 else rundir.checkpoint_dir(run_dir, step)
    return {
        "settings_sha256": fingerprints.settings_sha256(rundir.read_config(run_dir)),
        "weights_sha256": fingerprints.weights_sha256(model_dir),
    }


def check_run(run_dir: Path, cfg) -> None:
    """What `--resume` refuses, refused before a curve measures anything (RunDirError, one line): settings edited
    in config.json, records that contradict their witnesses, an input whose content changed (cfg's paths are
    pointed at where each input is now)."""
    rundir.check_settings_fixed(run_dir, allow_change=False)
    recorded = fingerprints.check_settings_hash(run_dir, allow_change=False)
    witnesses.check(run_dir)
    if recorded is not None:
        fingerprints.check_inputs(run_dir, cfg, recorded["inputs"])


def _without_kept(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "kept"}


def same_settings(point: dict, n_problems: int, samples: int, temperature: float, split: str) -> bool:
    """Whether a stored point was measured as asked: on as many prompts of the same split, with as many samples at
    the same temperature (what evaluate_curve reuses and a reproduction counts as done)."""
    s = point["sampled"]
    return (
        s["num_problems"] == n_problems
        and s["n"] == samples
        and s["temperature"] == temperature
        and point.get("split", "test") == split
    )


def settings_of(cfg, temperature: float | None, n_problems: int | None) -> tuple[float, int]:
    """A curve's temperature and prompt count, the run's own (eval_temperature, eval_problems) where not given."""
    return (
        cfg.eval_temperature if temperature is None else temperature,
        cfg.eval_problems if n_problems is None else n_problems,
    )


def evaluate_curve(
    run_dir,
    *,
    points: int = POINTS,
    samples: int = SAMPLES,
    temperature: float | None = None,
    n_problems: int | None = None,
    resolution: float = RESOLUTION,
    max_points: int = MAX_POINTS,
    split: str = "test",
    progress: bool = False,
) -> list[dict]:
    """Measure the curve points of run_dir's layout that are not in its curve.json yet, drop the points
    outside the layout; returns the layout's points in step order. split: "test" (the run's test prompts),
    "validation" or "train" (llm/problem_sets.py split_set); temperature None: the run's eval_temperature."""
    import torch

    from escov.llm.config import load_config
    from escov.llm.engines import make_engine
    from escov.llm.evaluate import evaluate
    from escov.llm.problem_sets import split_set
    from escov.llm.rollout import derive_seed
    from escov.llm.tracking import open_tracker

    run_dir = Path(run_dir)
    cfg = load_config(run_dir)
    check_run(run_dir, cfg)
    torch.set_num_threads(cfg.threads)
    temperature, n_problems = settings_of(cfg, temperature, n_problems)
    if samples < max(KS):
        raise ValueError(f"samples must be >= {max(KS)} (Pass@{max(KS)}), got {samples}")
    measured = split_set(cfg, split, n_problems)  # the run's own task (data, split, prompt style, reward)
    task, problems = measured.task, measured.problems
    done = {
        p["step"]: p
        for p in rundir.read_curve(run_dir) or []
        if same_settings(p, n_problems, samples, temperature, split)
        and p.get("fingerprint") == point_fingerprint(run_dir, cfg, p["step"])
    }  # the same weights, measured alike
    checkpoints, _ = rundir.checkpoint_steps(run_dir)
    if split == "test":
        for point in evaluations_as_points(run_dir, cfg, checkpoints, n_problems, samples, temperature):
            if point["step"] not in done:
                rundir.record_curve_point(run_dir, point)
                done[point["step"]] = point
    trackers = []  # the run's tracker, opened at the first point measured

    def pass1_at(step: int) -> float:
        if step not in done:
            model_dir = cfg.model if step == 0 else rundir.checkpoint_dir(run_dir, step)
            engine = make_engine("hf", model_dir, dtype=torch.float32, seed=cfg.seed)
            seed = derive_seed(cfg.seed, step, "curve") % 2**31
            common = {"max_new_tokens": cfg.max_completion_length, "seed": seed, "progress": progress}
            point = {
                "step": step,
                "sampled": evaluate(engine, task, problems, n=samples, ks=list(KS), temperature=temperature, **common),
                "greedy": evaluate(engine, task, problems, n=1, ks=[1], temperature=0.0, **common),
                "fingerprint": point_fingerprint(run_dir, cfg, step),
            }
            if split != "test":  # a test curve's record stays as it was
                point["split"] = split
            rundir.record_curve_point(run_dir, point)
            if not trackers:
                trackers.append(open_tracker(cfg.report_to, run_dir, cfg.to_dict()))
            trackers[0].log_record("curve", point, step)
            done[step] = point
        return done[step]["sampled"]["pass_at_k"]["1"]

    try:
        steps = layout(checkpoints, pass1_at, points=points, resolution=resolution, max_points=max_points)
    finally:
        for tracker in trackers:
            tracker.close()
    rundir.keep_curve(run_dir, steps)
    return [done[s] for s in steps]


def add_arguments(parser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory of `python -m escov.llm train`")
    parser.add_argument("--points", type=int, default=POINTS, help="checkpoints evaluated besides the base")
    parser.add_argument(
        "--eval_samples",
        "--samples",
        dest="samples",
        type=int,
        default=SAMPLES,
        metavar="N",
        help=f"samples per prompt, at least {max(KS)} for Pass@{max(KS)} (default: {SAMPLES})",
    )
    parser.add_argument(
        "--eval_temperature",
        "--temperature",
        dest="temperature",
        type=float,
        default=None,
        metavar="T",
        help="sampling temperature (default: the run's eval_temperature, as its final evaluation)",
    )
    parser.add_argument(
        "--eval_problems",
        "--problems",
        dest="problems",
        type=int,
        default=None,
        metavar="N",
        help="test prompts (default: the run's eval_problems)",
    )
    parser.add_argument(
        "--no-progress",
        "--no_progress",
        dest="no_progress",
        action="store_true",
        help="no progress bars (TQDM_DISABLE=1 does the same)",
    )
    parser.add_argument(
        "--resolution",
        type=float,
        default=RESOLUTION,
        metavar="GAP",
        help=f"measure a checkpoint inside any segment whose Pass@1 jump exceeds GAP, a fraction "
        f"(default: {RESOLUTION})",
    )
    parser.add_argument(
        "--max_points",
        "--max-points",
        dest="max_points",
        type=int,
        default=MAX_POINTS,
        metavar="N",
        help=f"curve points at most, the base included (default: {MAX_POINTS})",
    )
    parser.add_argument(
        "--split",
        choices=CURVE_SPLITS,
        default="test",
        help="the run's test prompts (default), or prompts of the validation or the training split "
        "(for a sweep or a control that chooses settings without looking at the test prompts)",
    )


def run_command(args) -> int:
    from escov.llm.cli import progress_enabled

    pts = evaluate_curve(
        args.run_dir,
        points=args.points,
        samples=args.samples,
        temperature=args.temperature,
        n_problems=args.problems,
        resolution=args.resolution,
        max_points=args.max_points,
        split=args.split,
        progress=progress_enabled(args.no_progress),
    )
    for p in pts:
        s = p["sampled"]
        print(
            f"step {p['step']:5d}  Pass@1 {s['pass_at_k']['1']:.3f}  Pass@32 {s['pass_at_k']['32']:.3f}  "
            f"greedy {p['greedy']['pass_at_k']['1']:.3f}  no-correct {1 - s['solved_fraction']:.3f}"
        )
    plot_curve(pts, args.run_dir / CURVE_PLOT)
    print(f"wrote {args.run_dir / rundir.CURVE} and {args.run_dir / CURVE_PLOT}")
    return 0


CURVE_PLOT = "curve.png"


def plot_curve(points: list[dict], path: Path) -> None:
    """Sampled Pass@k and greedy accuracy against step, and the Pass@1-Pass@32 path the run takes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from escov.llm.plot_axes import legend_beside, step_axis

    steps = [p["step"] for p in points]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for k in points[0]["sampled"]["pass_at_k"]:
        a.plot(steps, [p["sampled"]["pass_at_k"][k] for p in points], "o-", label=f"Pass@{k}")
    a.plot(steps, [p["greedy"]["pass_at_k"]["1"] for p in points], "s--", label="greedy accuracy")
    t = points[0]["sampled"]["temperature"]
    a.set(xlabel="step", ylabel="rate", ylim=(0, 1), title=f"along training (sampled at T={t})")
    step_axis(a)
    legend_beside(a)
    p1 = [p["sampled"]["pass_at_k"]["1"] for p in points]
    p32 = [p["sampled"]["pass_at_k"]["32"] for p in points]
    b.plot(p1, p32, "o-")
    for i in sorted({0, len(points) - 1}):  # the path's two ends, named
        b.annotate(f"step {steps[i]}", (p1[i], p32[i]), textcoords="offset points", xytext=(5, -12))
    b.set(xlabel="Pass@1", ylabel="Pass@32", xlim=(0, 1), ylim=(0, 1.05), title="Pass@1-Pass@32 path")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
