"""`python -m escov.paper_checks premise-control`: can GRPO narrow coverage on this base? The positive control
the paper's premise needs before ES and GRPO are compared on it, read on validation prompts only.

    python -m escov.paper_checks premise-control --model BASE_DIR --out runs/premise-control [--jobs 2]

The paper's premise: GRPO sharpens onto a few solution paths and loses the prompts only rarer paths solve, so
its Pass@k at large k falls below the base's while its Pass@1 rises; ES's population would keep those prompts.
A comparison of ES with GRPO can speak to that only on a base where GRPO is seen to narrow. This command trains
GRPO from the base (the answer budget's settings with CONTROL_GRPO's step, CONTROL_STEPS steps, on CONTROL_SEEDS,
none of the answer's, the sweep's or the pilot's seeds) and measures each run's base and plateau on the task's
validation prompts (llm/problem_sets.py SELECTION_SPLIT: never a test prompt) with CONTROL_SAMPLES samples per
prompt, more than the largest k, so that the no-correct share is measured rather than read off Pass@32. Its endpoints,
plateau rule, verdict and prompt families are paper_checks/premise.py's.

Outputs: out/runs/NAME/ (run directories and their validation curves), out/control.json, out/control.md and
out/control.png (each prompt's success rate at the base and the plateau by family; Pass@1 and Pass@32 along training).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from escov.paper_checks.base_info import base_record
from escov.paper_checks.premise import ENDPOINT_K, endpoints, plateau, prompt_family, render, verdict
from escov.theory.matched import RESOLUTION

CONTROL_SEEDS = (300, 301, 302)  # not the answer's (0-7), the sweep's (100) or the pilot's (200-203)
CONTROL_STEPS = 300  # the estimate of GRPO's plateau: 150-300 steps
CONTROL_CHECKPOINT_EVERY = 50
# the strongest push toward a plateau among the step sizes swept for the answer (results/step-sweep/: lr 1e-4
# climbed highest); a positive control gives the effect its best chance
CONTROL_GRPO = {"learning_rate": 1e-4}
CONTROL_SAMPLES = 128  # samples per prompt: more than 4 x 32, the no-correct share is its own measurement
CONTROL_PROMPTS = 128  # validation prompts (countdown3's validation split holds about 170)
# the trainer's own final evaluation in a run that chooses a setting (the control, the ES pilot, the GRPO variants'
# selection): the first 8 test prompts of the run's draw, never read by the choice; the answer skips them
# (budgets.py `eval_skip`), so its test prompts are prompts no selection run evaluated
SELECTION_EVAL = {"eval_problems": 8, "eval_skip": 0}
# curve: the base and every checkpoint (max_points leaves no room for refinement; the control reads the base and
# the plateau, the points between show the climb)
CONTROL_CURVE = {
    "points": CONTROL_STEPS // CONTROL_CHECKPOINT_EVERY,
    "samples": CONTROL_SAMPLES,
    "temperature": 0.6,
    "resolution": RESOLUTION,
    "max_points": CONTROL_STEPS // CONTROL_CHECKPOINT_EVERY + 1,
}


def control_runs(
    model: Path,
    budget,
    seeds: tuple[int, ...] = CONTROL_SEEDS,
    steps: int = CONTROL_STEPS,
    grpo: dict | None = None,
    checkpoint_every: int = CONTROL_CHECKPOINT_EVERY,
) -> dict[str, dict]:
    """The control's GRPO runs: the budget's settings (budgets.Budget: the answer's), grpo's step, `steps` steps, a
    checkpoint every `checkpoint_every`; the trainer's own final evaluation on a few test prompts is never read."""
    b = budget
    common = (
        b.common
        | {
            "steps": steps,
            "checkpoint_every": checkpoint_every,
            "checkpoint_dense": 0,
            "probe_every": 0,
            "heldout_task": "",
            "threshold_keep": (),
        }
        | SELECTION_EVAL
    )
    return {
        f"grpo-s{seed}": common
        | {
            "algo": "grpo",
            "model": str(model),
            "seed": seed,
            "task": b.task,
            "grpo": b.grpo | (CONTROL_GRPO if grpo is None else grpo),
        }
        for seed in seeds
    }


def run_control(
    model: Path,
    out: Path,
    budget,
    *,
    jobs: int = 2,
    seeds: tuple[int, ...] = CONTROL_SEEDS,
    steps: int = CONTROL_STEPS,
    problems: int = CONTROL_PROMPTS,
    curve: dict | None = None,
    checkpoint_every: int = CONTROL_CHECKPOINT_EVERY,
    grpo: dict | None = None,
    log=print,
) -> dict:
    """Train and measure the control's runs (resumable: finished runs and curve points are kept), then read it.
    grpo: GRPO settings replacing CONTROL_GRPO's step (the answer's step-size control: another learning rate)."""
    from escov.llm import rundir
    from escov.llm.problem_sets import SELECTION_SPLIT
    from escov.paper_checks.finite import without_non_finite
    from escov.paper_checks.plots import premise_control_plot
    from escov.paper_checks.reproduce.training_runs import run_all

    if not (Path(model) / "config.json").is_file():
        raise ValueError(f"--model {model}: not a model directory (no config.json)")
    if len(seeds) < 2:
        raise ValueError(f"the control needs at least 2 seeds (a seed component), got {len(seeds)}")
    curve = (CONTROL_CURVE if curve is None else curve) | {"n_problems": problems, "split": SELECTION_SPLIT}
    runs = control_runs(model, budget, seeds, steps, grpo=grpo, checkpoint_every=checkpoint_every)
    start = time.perf_counter()
    run_all(runs, out / "runs", curve, jobs, lambda msg: log(f"[{time.perf_counter() - start:6.0f} s] {msg}"))
    curves = {name: sorted(rundir.read_curve(out / "runs" / name), key=lambda p: p["step"]) for name in runs}
    pairs = [(c[0], c[-1]) for c in curves.values()]
    families = _families(runs, [r["id"] for r in pairs[0][0]["sampled"]["per_problem"]], model)
    result = endpoints(pairs, families)
    record = {
        "base": base_record(model),
        "split": SELECTION_SPLIT,
        "prompts": problems,
        "samples": curve["samples"],
        "temperature": curve["temperature"],
        "seeds": list(seeds),
        "steps": steps,
        "grpo": next(iter(runs.values()))["grpo"],
        "plateau": {
            name: plateau([p["step"] for p in c], [p["sampled"]["pass_at_k"]["1"] for p in c])
            for name, c in curves.items()
        },
        "curves": {
            name: [
                {
                    "step": p["step"],
                    "pass1": p["sampled"]["pass_at_k"]["1"],
                    "pass32": p["sampled"]["pass_at_k"]["32"],
                    "no_correct": float(np.mean([r["correct"] == 0 for r in p["sampled"]["per_problem"]])),
                    "entropy": p["sampled"].get("mean_token_entropy"),
                }
                for p in c
            ]
            for name, c in curves.items()
        },
        "endpoints": result,
        "verdict": verdict(result[f"pass@{ENDPOINT_K}"]),
    }
    record, non_finite = without_non_finite(record)  # an interval of too few seeds: null, its path listed
    record["non_finite"] = non_finite
    rundir.write_json(out / "control.json", record)
    (out / "control.md").write_text(render(record), encoding="utf-8")
    premise_control_plot(pairs, families, record["curves"], out)
    return record


def _families(runs: dict[str, dict], ids: list[str], model: Path) -> list[str]:
    """The family of each measured prompt (premise.prompt_family), in the curve's order (the control's split)."""
    from escov.llm.config import TrainConfig
    from escov.llm.problem_sets import SELECTION_SPLIT, split_set

    cfg = TrainConfig.from_dict(next(iter(runs.values())))
    by_id = {p.id: p for p in split_set(cfg, SELECTION_SPLIT, len(ids)).problems}
    return [prompt_family(cfg.task, by_id[i].meta, model) for i in ids]


def main_args(args, budget) -> int:
    """`premise-control`: the control with the budget's settings (the CLI passes the answer's)."""
    seeds = tuple(range(CONTROL_SEEDS[0], CONTROL_SEEDS[0] + args.seeds))
    run_control(
        args.model,
        args.out,
        budget,
        jobs=args.jobs,
        seeds=seeds,
        steps=CONTROL_STEPS if args.steps is None else args.steps,
    )
    print((args.out / "control.md").read_text(encoding="utf-8"))
    print(f"wrote {args.out / 'control.json'} and {args.out / 'control.md'}")
    return 0
