"""`python -m escov.paper_checks pilot`: size the answer's design before it runs, on training data only.

    python -m escov.paper_checks pilot --model BASE_DIR --out runs/pilot [--seeds 4] [--jobs 2] [--budget answer]

Trains the budget's ES and GRPO runs on PILOT_SEEDS (none of the answer's seeds), measures their curves on
training-split prompts (the answer's curve settings and prompt count; `llm curve --split train`), and reads
the matched Pass@32 difference per (seed, prompt) the way the answer will (paper_checks/matched.py). From it:
the variance components of the mean (seeds, prompts, residual) and the seeds a 2-point difference needs at 80%
power with the answer's prompts and with four times as many (paper_checks/design.py `plan`).

It prints no difference, only its variance: a pilot sizes the design, it does not preview the answer (and it
never reads a test prompt). Outputs: out/runs/NAME/ (run directories) and out/pilot.json.
"""

from __future__ import annotations

import time
from pathlib import Path

PILOT_SEEDS = (200, 201, 202, 203)  # not among the answer's seeds (0-...) nor the sweep's (100)
CURVE_SPLIT = "train"  # the prompts its curves read (llm/problem_sets.py split_set): never a test prompt


def pilot_runs(budget_name: str, model: Path, seeds: tuple[int, ...]) -> dict[str, dict]:
    """The budget's main ES and GRPO runs on the pilot seeds (no probe, no held-out task)."""
    from escov.paper_checks.reproduce.budgets import BUDGETS

    b = BUDGETS[budget_name]
    common = b.common | {"probe_every": 0, "heldout_task": ""}
    return {
        f"{algo}-s{seed}": common
        | {"algo": algo, "model": str(model), "seed": seed, "task": b.task, "es": b.es, "grpo": b.grpo}
        for seed in seeds
        for algo in ("es", "grpo")
    }


def run_pilot(
    model: Path,
    out: Path,
    *,
    budget_name: str = "answer",
    seeds: tuple[int, ...] = PILOT_SEEDS,
    jobs: int = 2,
    log=print,
) -> dict:
    from escov.llm import rundir
    from escov.paper_checks.matched import curve_of, matched_difference
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.training_runs import run_all

    if not (Path(model) / "config.json").is_file():
        raise ValueError(f"--model {model}: not a model directory (no config.json)")
    if len(seeds) < 2:
        raise ValueError(f"a pilot needs at least 2 seeds (a seed component), got {len(seeds)}")
    b = BUDGETS[budget_name]
    curve = b.curve | {"n_problems": b.common["eval_problems"], "split": CURVE_SPLIT}
    runs = pilot_runs(budget_name, model, seeds)
    start = time.perf_counter()
    run_all(runs, out / "runs", curve, jobs, lambda msg: log(f"[{time.perf_counter() - start:6.0f} s] {msg}"))
    curves = {name: curve_of(rundir.read_curve(out / "runs" / name), cfg["seed"]) for name, cfg in runs.items()}
    es = [c for name, c in curves.items() if name.startswith("es-")]
    grpo = [c for name, c in curves.items() if name.startswith("grpo-")]
    estimate, info = matched_difference(es, grpo, "pass@32", names=("ES", "GRPO"))
    if estimate is None:
        raise ValueError(f"the pilot's curves give no matched comparison: {info.get('reason', 'no common range')}")
    record = {
        "budget": budget_name,
        "seeds": list(seeds),
        "prompts": b.common["eval_problems"],
        "split": CURVE_SPLIT,
        "samples": b.curve["samples"],
        "plan": info["plan"],
        "detectable": estimate.detectable,
        "range": info["range"],
        "points_in_range": {"ES": info["points_in_range_a"], "GRPO": info["points_in_range_b"]},
    }
    rundir.write_json(out / "pilot.json", record)
    return record


def main_args(args) -> int:
    from escov.paper_checks.design import plan_text

    record = run_pilot(
        args.model, args.out, budget_name=args.budget, seeds=tuple(range(200, 200 + args.seeds)), jobs=args.jobs
    )
    print(
        f"pilot: {len(record['seeds'])} seeds x {record['prompts']} training-split prompts x "
        f"{record['samples']} samples; "
        f"Pass@32 at matched Pass@1 over {record['range'][0]:.3f}-{record['range'][1]:.3f}: detectable at 80% power "
        f"{100 * record['detectable']:.2f} pts"
    )
    print(plan_text(record["plan"]))
    print(f"wrote {args.out / 'pilot.json'}")
    return 0
