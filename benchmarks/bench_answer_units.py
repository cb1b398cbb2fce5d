"""The answer's unit costs in CPU seconds on one thread (docs/answer-budget.md, "What the answer costs"): a GRPO step,
an ES update at the answer's settings (and at N = 64, alpha 0.02), a curve point and a 1024-sample endpoint
evaluation, each on the answer's base with the answer budget's settings.

    PYTHONPATH=. python benchmarks/bench_answer_units.py [--steps 8] [--eval-prompts 8] [--temperatures 0.6,1.0]

CPU seconds, not wall seconds: on a shared machine a process's wall time depends on the load, its CPU time much
less. A training step's CPU is read per step (the trainer's step, timed with the process clock); the evaluation is
measured on --eval-prompts of the 128 test prompts and scaled to 128 (its cost is linear in prompts: each prompt's
1024 samples are one generate call).
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
import types
from pathlib import Path


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def step_cpu(cfg: dict, out: Path) -> float:
    """Mean CPU seconds of a training step (the trainer's `step`, timed with the process clock)."""
    import escov.llm.train as train_module
    from escov.llm.config import TrainConfig
    from escov.llm.rundir import read_steps

    clock = types.SimpleNamespace(**{k: getattr(time, k) for k in dir(time) if not k.startswith("_")})
    clock.perf_counter = time.process_time
    train_module.time = clock
    try:
        train_module.train(TrainConfig.from_dict(cfg | {"out": str(out)}), show_progress=False)
    finally:
        train_module.time = time
    rows = read_steps(out)
    return sum(r["step_seconds"] for r in rows) / len(rows)


def main(argv=None) -> int:
    import torch

    from escov.llm.config import TrainConfig
    from escov.llm.engines import make_engine
    from escov.llm.evaluate import evaluate
    from escov.llm.problem_sets import eval_set
    from escov.paper_checks.reproduce.bases import shipped_base_dir
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.plan import plan

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--eval-prompts", type=int, default=8)
    parser.add_argument("--temperatures", default="0.6,1.0")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    budget = BUDGETS["answer"]
    base = shipped_base_dir(budget.base_preset, budget.base_settings)
    runs = plan(budget, base, None)
    light = {"eval_problems": 2, "heldout_task": "", "threshold_keep": (), "probe": False, "probe_every": 0}
    light |= {"checkpoint_every": 1000, "checkpoint_dense": 0}
    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cfg, per in (
            ("grpo_step", runs["grpo-s0"], 1),
            ("es_update", runs["es-s0"], runs["es-s0"]["steps"] / budget.es_updates),
            ("es_update_n64_a0.02", runs["es-s0"] | {"es": budget.es | {"population_size": 64, "alpha": 0.02}}, 2),
        ):
            found[name] = step_cpu(cfg | light | {"steps": round(args.steps * per)}, Path(tmp) / name)
            print(json.dumps({name: round(found[name], 3)}), flush=True)
    cfg = TrainConfig.from_dict(runs["grpo-s0"])
    measured = eval_set(cfg)
    engine = make_engine("hf", base, dtype=torch.float32, seed=0)
    common = {"max_new_tokens": cfg.max_completion_length, "seed": 1, "progress": False}
    curve = budget.curve
    start = cpu()
    evaluate(engine, measured.task, measured.problems, n=curve["samples"], ks=[1], temperature=0.6, **common)
    evaluate(engine, measured.task, measured.problems, n=1, ks=[1], temperature=0.0, **common)
    found["curve_point"] = cpu() - start
    print(json.dumps({"curve_point": round(found["curve_point"], 2)}), flush=True)
    part = measured.problems[: args.eval_prompts]
    arms = budget.arms
    for t in (float(x) for x in args.temperatures.split(",")):
        start = cpu()
        evaluate(engine, measured.task, part, n=arms.endpoint_samples, ks=[1], temperature=t, **common)
        scaled = (cpu() - start) * len(measured.problems) / len(part)
        found[f"endpoint_eval_T{t:g}"] = scaled
        print(json.dumps({f"endpoint_eval_T{t:g} ({len(measured.problems)} prompts)": round(scaled, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
