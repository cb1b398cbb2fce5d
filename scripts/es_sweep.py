"""The short ES step-size sweep behind the answer budget's ES settings (docs/answer-budget.md).

    PYTHONPATH=. .venv/bin/python scripts/es_sweep.py --model BASE_DIR --out runs/es-sweep [--steps 24] [--jobs 2]

Question: which ES step makes ES's sampled Pass@1 (T = 0.6, the curve's) rise as far as GRPO's does
in the same number of steps (FLOP-matched: N = 32 members = 4 G), so that the two can be compared at
matched Pass@1 over a real range? Each setting is chosen for a stated reason, and the sweep is read
only on Pass@1 movement (never on Pass@32 or a claim):

    grpo             the reference movement (the budget's GRPO settings)
    es a=0.005       the small budget's ES (sigma 0.01, alpha = sigma / 2, the paper's ratio): moved
                     Pass@1 about +0.02 in 20 steps against GRPO's +0.11 to +0.16
    es a=0.02        4x the step: the z-scored update is linear in alpha, and the gap was 5-8x
    es a=0.04        8x the step: the upper end of that gap
    es s=0.02 a=0.04 a larger sigma at the 8x step: the update direction from a wider population
                     (reward spread among members grows with sigma)

Prints, per setting, the Pass@1 change from the base to the best and to the last curve point.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from llm import rundir
from paper_checks.reproduce import BUDGETS, run_all

SETTINGS = {"grpo": None, "es-a0.005": {"sigma": 0.01, "alpha": 0.005}, "es-a0.02": {"sigma": 0.01, "alpha": 0.02},
            "es-a0.04": {"sigma": 0.01, "alpha": 0.04}, "es-s0.02-a0.04": {"sigma": 0.02, "alpha": 0.04}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--problems", type=int, default=64)
    args = parser.parse_args()
    b = BUDGETS["answer"]
    common = b.common | {"steps": args.steps, "checkpoint_every": args.steps // 4, "probe_every": 0,
                         "eval_problems": args.problems, "heldout_task": "", "threshold_keep": (50.0,)}
    runs = {}
    for name, es in SETTINGS.items():
        algo = "grpo" if es is None else "es"
        runs[name] = common | {"algo": algo, "model": str(args.model), "seed": args.seed, "task": b.task,
                               "es": b.es | (es or {}), "grpo": b.grpo}
    start = time.perf_counter()
    run_all(runs, args.out, b.curve | {"n_problems": args.problems}, args.jobs,
            lambda msg: print(f"[{time.perf_counter() - start:6.0f} s] {msg}", flush=True))
    print(f"{'setting':16s} {'Pass@1 base':>11s} {'best':>7s} {'last':>7s} {'Pass@32 base':>12s} {'last':>7s}  run s")
    for name in runs:
        pts = rundir.read_curve(args.out / name)
        p1 = [p["sampled"]["pass_at_k"]["1"] for p in pts]
        p32 = [p["sampled"]["pass_at_k"]["32"] for p in pts]
        secs = rundir.read_steps(args.out / name)[-1]["wall_seconds"]
        print(f"{name:16s} {p1[0]:11.3f} {max(p1) - p1[0]:+7.3f} {p1[-1] - p1[0]:+7.3f} {p32[0]:12.3f} "
              f"{p32[-1] - p32[0]:+7.3f}  {secs:5.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
