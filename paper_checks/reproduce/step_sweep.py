"""`python -m escov.paper_checks sweep`: the step-size sweep that chooses the answer budget's GRPO learning rate and
ES sigma and alpha, on training data only.

    python -m escov.paper_checks sweep --model BASE_DIR --out runs/step-sweep [--jobs 2] [--steps 40]

The question it answers: which GRPO step and which ES step make both methods cross a common Pass@1 range with
enough measured curve points for a matched comparison, a range that reaches where GRPO's entropy falls (the
regime of the paper's mechanism)? Never which settings make a claim hold: the sweep reads Pass@1 and entropy
only, and only on prompts of the training split.

Every setting of SETTINGS trains one run of the answer budget's shape (its steps, batch, checkpoint layout) from
the given base, on seed SWEEP_SEED (none of the answer's seeds), and its curve is measured with the answer's
curve settings on `problems` prompts of the training split (`llm curve --split train`, never a test prompt).
The rule (`choose`), fixed before any run:

    common range   [lo, hi] = [max of the two runs' base Pass@1, min of the two runs' highest Pass@1]
    points         each run's measured curve points with Pass@1 in [lo, hi]; both need at least MIN_POINTS
    entropy falls  GRPO's curve has a point after its entropy maximum with entropy at most (1 - ENTROPY_DROP)
                   times that maximum; `fall` is the Pass@1 of the first such point, and hi >= fall
    choice         among the pairs meeting all three, the widest common range (then the most points in it,
                   then the smaller steps); none: the sweep says which condition each pair missed

The runs write their own final evaluation on a few test prompts (EVAL_PROBLEMS, the trainer always does); the
sweep never reads it. Outputs: out/runs/NAME/ (run directories), out/sweep.json (every setting's curve and
the choice), out/sweep.md (the table), out/sweep.png (Pass@1 by step and entropy against Pass@1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from escov.paper_checks.base_info import base_record
from escov.theory.matched import points_in_range

MIN_POINTS = 5  # measured curve points each method needs inside the common range (the floor)
ENTROPY_DROP = 0.10  # a fall: entropy at most 90% of the curve's maximum, after the maximum
SWEEP_SEED = 100  # not one of the answer's seeds (0-7): other training prompts and sampling streams
EVAL_PROBLEMS = 8  # the trainer's own final evaluation (test prompts), kept small and never read here
CURVE_SPLIT = "train"  # the prompts its curves read (llm/problem_sets.py split_set): never a test prompt


@dataclass(frozen=True)
class Setting:
    algo: str  # "grpo" or "es"
    params: dict  # GRPO: {"learning_rate"}; ES: {"sigma", "alpha"}
    reason: str  # why this value is in the sweep


# The paper trains Qwen2.5-1.5B with GRPO at lr 1e-6 and ES at sigma 1.5e-3, alpha 2.5e-4 (alpha = sigma / 6);
# a 1M-parameter character model moves little at those steps in 40 iterations, so the sweep brackets the steps
# the answer budget used before, from below.
SETTINGS = {
    "grpo-lr1e-4": Setting(
        "grpo",
        {"learning_rate": 1e-4},
        "the earlier answer budget's: Pass@1 +46 points in 40 steps on the diffuse base, the "
        "common range then covered only its first 5 steps",
    ),
    "grpo-lr3e-5": Setting("grpo", {"learning_rate": 3e-5}, "a third of it: Adam's step per parameter is about the lr"),
    "grpo-lr1e-5": Setting(
        "grpo",
        {"learning_rate": 1e-5},
        "a tenth: the slowest climb that may still reach the entropy fall in the budget's steps",
    ),
    "es-s0.01-a0.005": Setting(
        "es",
        {"sigma": 0.01, "alpha": 0.005},
        "the earlier answer budget's (alpha = sigma / 2, the ratio of the ES-at-scale code)",
    ),
    "es-s0.01-a0.02": Setting(
        "es", {"sigma": 0.01, "alpha": 0.02}, "4x the step: reached the earlier plateau as fast as GRPO's first 6 steps"
    ),
    "es-s0.02-a0.01": Setting(
        "es",
        {"sigma": 0.02, "alpha": 0.01},
        "a wider population at alpha = sigma / 2: more reward spread among members",
    ),
}


@dataclass(frozen=True)
class Trace:
    """One run's curve: steps, sampled Pass@1 and mean token entropy, in step order."""

    name: str
    steps: tuple[int, ...]
    pass1: tuple[float, ...]
    entropy: tuple[float, ...]

    @classmethod
    def of_curve(cls, name: str, points: list[dict]) -> "Trace":
        return cls(
            name,
            tuple(p["step"] for p in points),
            tuple(p["sampled"]["pass_at_k"]["1"] for p in points),
            tuple(p["sampled"]["mean_token_entropy"] for p in points),
        )


def entropy_fall(trace: Trace, drop: float = ENTROPY_DROP) -> float | None:
    """The Pass@1 of the first point after the entropy maximum whose entropy is at most (1 - drop) x the
    maximum; None when entropy never falls that far after its maximum."""
    top = max(range(len(trace.entropy)), key=lambda i: trace.entropy[i])
    for i in range(top + 1, len(trace.entropy)):
        if trace.entropy[i] <= (1 - drop) * trace.entropy[top]:
            return trace.pass1[i]
    return None


def common_range(a: Trace, b: Trace) -> tuple[float, float]:
    """[max of the two base Pass@1, min of the two highest Pass@1]: empty (lo > hi) when they do not overlap."""
    return max(a.pass1[0], b.pass1[0]), min(max(a.pass1), max(b.pass1))


def points_inside(trace: Trace, lo: float, hi: float) -> int:
    """The trace's measured points with Pass@1 in [lo, hi] (theory.matched.points_in_range)."""
    return points_in_range(trace.pass1, lo, hi)


@dataclass(frozen=True)
class Pair:
    grpo: str
    es: str
    lo: float
    hi: float
    grpo_points: int
    es_points: int
    fall: float | None  # Pass@1 where GRPO's entropy falls (None: it does not)
    missed: tuple[str, ...]  # the conditions not met (empty: a candidate)


def judge(grpo: Trace, es: Trace, min_points: int = MIN_POINTS) -> Pair:
    """The pair's common range, points inside it, GRPO's entropy fall, and the conditions it misses."""
    lo, hi = common_range(grpo, es)
    n_grpo, n_es = points_inside(grpo, lo, hi), points_inside(es, lo, hi)
    fall = entropy_fall(grpo)
    missed = []
    if n_grpo < min_points:
        missed.append(f"GRPO has {n_grpo} points in the range")
    if n_es < min_points:
        missed.append(f"ES has {n_es} points in the range")
    if fall is None:
        missed.append("GRPO's entropy does not fall")
    elif hi < fall:
        missed.append(f"the range ends at Pass@1 {hi:.3f}, before GRPO's entropy falls ({fall:.3f})")
    return Pair(grpo.name, es.name, lo, hi, n_grpo, n_es, fall, tuple(missed))


def choose(
    traces: dict[str, Trace], settings: dict[str, Setting], min_points: int = MIN_POINTS
) -> tuple[Pair | None, list[Pair]]:
    """(the chosen pair or None, every pair judged). Ties in range width go to more points, then to the
    smaller steps (GRPO's learning rate, then ES's alpha)."""
    grpo = [n for n in traces if settings[n].algo == "grpo"]
    es = [n for n in traces if settings[n].algo == "es"]
    pairs = [judge(traces[g], traces[e], min_points) for g in grpo for e in es]
    ok = [p for p in pairs if not p.missed]
    if not ok:
        return None, pairs

    def rank(p: Pair):
        return (
            # in 12 decimals: equal widths from different ends (0.7 - 0.3 and 0.5 - 0.1) differ in the last bit
            -round(p.hi - p.lo, 12),
            -min(p.grpo_points, p.es_points),
            settings[p.grpo].params["learning_rate"],
            settings[p.es].params["alpha"],
        )

    return min(ok, key=rank), pairs


def sweep_runs(model: Path, steps: int, settings: dict[str, Setting], budget=None) -> dict[str, dict]:
    """The run configurations: the budget's shape (budgets.Budget; default the answer's), on SWEEP_SEED, each
    with its setting."""
    from escov.paper_checks.reproduce.budgets import BUDGETS

    b = BUDGETS["answer"] if budget is None else budget
    common = b.common | {"steps": steps, "probe_every": 0, "heldout_task": "", "eval_problems": EVAL_PROBLEMS}
    return {
        name: common
        | {
            "algo": s.algo,
            "model": str(model),
            "seed": SWEEP_SEED,
            "task": b.task,
            "es": b.es | (s.params if s.algo == "es" else {}),
            "grpo": b.grpo | (s.params if s.algo == "grpo" else {}),
        }
        for name, s in settings.items()
    }


def run_sweep(
    model: Path,
    out: Path,
    *,
    jobs: int = 2,
    steps: int | None = None,
    problems: int = 64,
    settings: dict[str, Setting] = SETTINGS,
    curve: dict | None = None,
    budget=None,
    log=print,
) -> Pair | None:
    """Train and measure every setting (resumable: finished runs and curve points are kept), then choose; the runs
    have the shape of `budget` (default: the answer's, sweep_runs)."""
    from escov.llm import rundir
    from escov.paper_checks.reproduce.budgets import ANSWER_STEPS, BUDGETS
    from escov.paper_checks.reproduce.training_runs import run_all

    if not (Path(model) / "config.json").is_file():
        raise ValueError(f"--model {model}: not a model directory (no config.json)")
    steps = ANSWER_STEPS if steps is None else steps
    curve = (BUDGETS["answer"].curve if curve is None else curve) | {"n_problems": problems, "split": CURVE_SPLIT}
    runs = sweep_runs(model, steps, settings, budget)
    start = time.perf_counter()
    run_all(runs, out / "runs", curve, jobs, lambda msg: log(f"[{time.perf_counter() - start:6.0f} s] {msg}"))
    traces = {name: Trace.of_curve(name, rundir.read_curve(out / "runs" / name)) for name in runs}
    chosen, pairs = choose(traces, settings)
    record = {
        "base": base_record(model),
        "steps": steps,
        "problems": problems,
        "split": CURVE_SPLIT,
        "seed": SWEEP_SEED,
        "rule": {"min_points": MIN_POINTS, "entropy_drop": ENTROPY_DROP},
        "settings": {n: {"algo": s.algo, "params": s.params, "reason": s.reason} for n, s in settings.items()},
        "curves": {n: {"steps": t.steps, "pass1": t.pass1, "entropy": t.entropy} for n, t in traces.items()},
        "pairs": [vars(p) for p in pairs],
        "chosen": None if chosen is None else vars(chosen),
    }
    rundir.write_json(out / "sweep.json", record)
    (out / "sweep.md").write_text(render(traces, settings, pairs, chosen), encoding="utf-8")
    plot(traces, settings, chosen, out / "sweep.png")
    return chosen


def render(traces: dict[str, Trace], settings: dict[str, Setting], pairs: list[Pair], chosen: Pair | None) -> str:
    lines = [
        "| setting | reason | Pass@1 base | highest | last | entropy max | falls at Pass@1 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, t in traces.items():
        fall = entropy_fall(t)
        lines.append(
            f"| {name} | {settings[name].reason} | {t.pass1[0]:.3f} | {max(t.pass1):.3f} | {t.pass1[-1]:.3f} "
            f"| {max(t.entropy):.3f} | {'-' if fall is None else f'{fall:.3f}'} |"
        )
    lines += [
        "",
        "| GRPO | ES | common Pass@1 range | GRPO points | ES points | missed |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for p in pairs:
        lines.append(
            f"| {p.grpo} | {p.es} | {p.lo:.3f}-{p.hi:.3f} | {p.grpo_points} | {p.es_points} | "
            f"{'; '.join(p.missed) or 'none'} |"
        )
    lines += [
        "",
        f"Chosen: {chosen.grpo} and {chosen.es} (common range {chosen.lo:.3f}-{chosen.hi:.3f})"
        if chosen
        else "Chosen: none; no pair meets the rule (see 'missed').",
    ]
    return "\n".join(lines) + "\n"


def plot(traces: dict[str, Trace], settings: dict[str, Setting], chosen: Pair | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from escov.llm.plot_axes import legend_beside, step_axis

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, t in traces.items():
        style = "-" if settings[name].algo == "grpo" else "--"
        width = 2.5 if chosen and name in (chosen.grpo, chosen.es) else 1.0
        a.plot(t.steps, t.pass1, style, marker="o", ms=3, lw=width, label=name)
        b.plot(t.pass1, t.entropy, style, marker="o", ms=3, lw=width, label=name)
    if chosen:
        b.axvspan(chosen.lo, chosen.hi, color="grey", alpha=0.15, label="chosen common range")
    a.set(xlabel="step", ylabel="Pass@1 (T = 0.6, training-split prompts)", title="Pass@1 along training")
    step_axis(a)
    b.set(xlabel="Pass@1", ylabel="mean token entropy", title="entropy against Pass@1")
    legend_beside(b)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main_args(args) -> int:
    chosen = run_sweep(args.model, args.out, jobs=args.jobs, steps=args.steps, problems=args.problems)
    print((args.out / "sweep.md").read_text(encoding="utf-8"))
    print(f"wrote {args.out / 'sweep.json'}, {args.out / 'sweep.md'} and {args.out / 'sweep.png'}")
    return 0 if chosen is not None else 1
