"""`python -m escov.paper_checks premise-control`: can GRPO narrow coverage on this base? The positive control
the paper's premise needs before ES and GRPO are compared on it, read on validation prompts only.

    python -m escov.paper_checks premise-control --model BASE_DIR --out runs/premise-control [--jobs 2]

The paper's premise: GRPO sharpens onto a few solution paths and loses the prompts only rarer paths solve, so
its Pass@k at large k falls below the base's while its Pass@1 rises; ES's population would keep those prompts.
A comparison of ES with GRPO can speak to that only on a base where GRPO is seen to narrow. This command trains
GRPO from the base (the answer budget's settings with CONTROL_GRPO's step, CONTROL_STEPS steps, on CONTROL_SEEDS,
none of the answer's, the sweep's or the pilot's seeds) and measures each run's base and plateau on the task's
validation prompts (llm/problem_sets.py SELECTION_SPLIT: never a test prompt) with CONTROL_SAMPLES samples per
prompt, more than the largest k, so that the no-correct share is measured rather than read off Pass@32.

Endpoints, fixed before the control first ran; each the plateau minus the base per (seed, prompt), with the
seeds x prompts interval of paper_checks/design.py (95%):

    pass@32       the unbiased Pass@32 of a prompt from c correct of n samples, 1 - C(n - c, 32) / C(n, 32)
    no_correct    1 when none of the n samples is correct, else 0
    distinct      distinct correct solutions of a solved prompt (canonical forms, llm/tasks/countdown.py:
                  a+b and b+a are one path), over the prompts both points solve: coverage without a ceiling

Plateau: the run's last checkpoint, and the run is said to have reached its plateau when its Pass@1 there is
within PLATEAU_RISE of the highest Pass@1 measured along the run and rose by less than PLATEAU_RISE from the
checkpoint at two thirds of the run. GRPO narrowed on this base when the Pass@32 interval lies wholly below 0
(`narrowed`); an interval wholly above 0 is `widened`, one containing 0 is `no_change_detected` (not "no change":
the record gives the interval's width). Lost prompts (some correct sample at the base, none at the plateau, on
one seed) are counted by family: `rare-only`, the prompts whose every solution (countdown.distinct_solutions)
lies in the base corpus' rare family (llm/tinymodel.py in_rare_family: an operator of rare_ops, a target above
rare_above), and `other`; the base's success rate is given per family too.

Outputs: out/runs/NAME/ (run directories and their validation curves), out/control.json, out/control.md and
out/control.png (each prompt's success rate at the base and the plateau by family; Pass@1 and Pass@32 along training).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from escov.paper_checks.base_info import base_preset, base_record
from escov.theory.matched import RESOLUTION

CONTROL_SEEDS = (300, 301, 302)  # not the answer's (0-7), the sweep's (100) or the pilot's (200-203)
CONTROL_STEPS = 300              # the estimate of GRPO's plateau: 150-300 steps
CONTROL_CHECKPOINT_EVERY = 50
# the strongest push toward a plateau among the step sizes swept for the answer (results/step-sweep/: lr 1e-4
# climbed highest); a positive control gives the effect its best chance
CONTROL_GRPO = {"learning_rate": 1e-4}
CONTROL_SAMPLES = 128            # samples per prompt: more than 4 x 32, the no-correct share is its own measurement
CONTROL_PROMPTS = 128            # validation prompts (countdown3's validation split holds about 170)
# curve: the base and every checkpoint (max_points leaves no room for refinement; the control reads the base and
# the plateau, the points between show the climb)
CONTROL_CURVE = {"points": CONTROL_STEPS // CONTROL_CHECKPOINT_EVERY, "samples": CONTROL_SAMPLES, "temperature": 0.6,
                 "resolution": RESOLUTION, "max_points": CONTROL_STEPS // CONTROL_CHECKPOINT_EVERY + 1}
PLATEAU_RISE = 0.01              # Pass@1 within 1 point of its highest, and rising less than 1 point over the last third
ENDPOINT_K = 32
FAMILIES = ("rare-only", "other")


def control_runs(model: Path, budget, seeds: tuple[int, ...] = CONTROL_SEEDS, steps: int = CONTROL_STEPS,
                 grpo: dict | None = None, checkpoint_every: int = CONTROL_CHECKPOINT_EVERY) -> dict[str, dict]:
    """The control's GRPO runs: the budget's settings (reproduce.Budget: the answer's), grpo's step, `steps` steps, a
    checkpoint every `checkpoint_every`; the trainer's own final evaluation on a few test prompts is never read."""
    b = budget
    common = b.common | {"steps": steps, "checkpoint_every": checkpoint_every, "checkpoint_dense": 0, "probe_every": 0,
                         "heldout_task": "", "eval_problems": 8, "threshold_keep": ()}
    return {f"grpo-s{seed}": common | {"algo": "grpo", "model": str(model), "seed": seed, "task": b.task,
                                       "grpo": b.grpo | (CONTROL_GRPO if grpo is None else grpo)}
            for seed in seeds}


def family_of(numbers: list[int], target: int, preset) -> str:
    """"rare-only" when every distinct solution of the instance lies in the preset's rare family, else "other"."""
    from escov.llm.tasks.countdown import distinct_solutions
    from escov.llm.tinymodel import in_rare_family

    if preset is None:
        return "other"
    solutions = distinct_solutions(numbers, int(target))
    return "rare-only" if solutions and all(in_rare_family(int(target), s, preset) for s in solutions) else "other"


def plateau(steps: list[int], pass1: list[float]) -> dict:
    """Whether the run reached its plateau at its last measured point (module docstring: PLATEAU_RISE)."""
    last = pass1[-1]
    third = next(i for i, s in enumerate(steps) if s >= 2 * steps[-1] / 3)
    rise = last - pass1[third]
    return {"step": steps[-1], "pass1": last, "highest": max(pass1), "rise_last_third": rise,
            "reached": bool(max(pass1) - last < PLATEAU_RISE and rise < PLATEAU_RISE)}


def _per_prompt(point: dict) -> tuple[np.ndarray, np.ndarray]:
    rows = point["sampled"]["per_problem"]
    return (np.array([r["correct"] for r in rows]), np.array([r["distinct_correct_answers"] for r in rows], dtype=float))


def endpoints(pairs: list[tuple[dict, dict]], families: list[str]) -> dict:
    """The three endpoints (plateau - base per seed and prompt) from (base point, plateau point) per seed, on the
    same prompts, with the lost prompts and the base's success per family."""
    from escov.paper_checks.design import seeds_by_prompts
    from escov.theory.metrics import pass_at_k_counts

    n = pairs[0][0]["sampled"]["n"]
    base_c = np.stack([_per_prompt(b)[0] for b, _ in pairs])
    top_c = np.stack([_per_prompt(t)[0] for _, t in pairs])
    base_d = np.stack([_per_prompt(b)[1] for b, _ in pairs])
    top_d = np.stack([_per_prompt(t)[1] for _, t in pairs])
    both = (base_c > 0) & (top_c > 0)
    values = {f"pass@{ENDPOINT_K}": pass_at_k_counts(n, top_c, ENDPOINT_K) - pass_at_k_counts(n, base_c, ENDPOINT_K),
              "no_correct": (top_c == 0).astype(float) - (base_c == 0).astype(float)}
    out = {name: seeds_by_prompts(v, n).to_json() for name, v in values.items()}
    solved = both.all(axis=0)  # prompts every seed's base and plateau solve: one design for the distinct count
    out["distinct"] = (seeds_by_prompts((top_d - base_d)[:, solved], n).to_json() | {"prompts": int(solved.sum()),
                       "base": float(base_d[:, solved].mean()), "plateau": float(top_d[:, solved].mean())}
                       if solved.sum() >= 2 else {"prompts": int(solved.sum()), "reason": "fewer than 2 prompts solved"})
    fam = np.array(families)
    lost = (base_c > 0) & (top_c == 0)
    out["families"] = {f: {"prompts": int((fam == f).sum()),
                           "base_pass1": float((base_c[:, fam == f] / n).mean()) if (fam == f).any() else None,
                           "base_pass32": float(pass_at_k_counts(n, base_c[:, fam == f], ENDPOINT_K).mean())
                           if (fam == f).any() else None,
                           "lost": int(lost[:, fam == f].sum()), "gained": int(((base_c == 0) & (top_c > 0))[:, fam == f].sum())}
                       for f in FAMILIES}
    out["lost_prompts"] = sorted({pid for s in range(len(pairs)) for pid, gone in
                                  zip((r["id"] for r in pairs[s][0]["sampled"]["per_problem"]), lost[s]) if gone})
    return out


def verdict(interval: dict) -> str:
    """narrowed / widened / no_change_detected from the Pass@32 interval (module docstring)."""
    if interval["hi"] < 0:
        return "narrowed"
    if interval["lo"] > 0:
        return "widened"
    return "no_change_detected"


def run_control(model: Path, out: Path, budget, *, jobs: int = 2, seeds: tuple[int, ...] = CONTROL_SEEDS,
                steps: int = CONTROL_STEPS, problems: int = CONTROL_PROMPTS, curve: dict | None = None,
                checkpoint_every: int = CONTROL_CHECKPOINT_EVERY, log=print) -> dict:
    """Train and measure the control's runs (resumable: finished runs and curve points are kept), then read it."""
    from escov.llm import rundir
    from escov.llm.problem_sets import SELECTION_SPLIT
    from escov.paper_checks.plots import premise_control_plot
    from escov.paper_checks.finite import without_non_finite
    from escov.paper_checks.training_runs import run_all

    if not (Path(model) / "config.json").is_file():
        raise ValueError(f"--model {model}: not a model directory (no config.json)")
    if len(seeds) < 2:
        raise ValueError(f"the control needs at least 2 seeds (a seed component), got {len(seeds)}")
    curve = (CONTROL_CURVE if curve is None else curve) | {"n_problems": problems, "split": SELECTION_SPLIT}
    runs = control_runs(model, budget, seeds, steps, checkpoint_every=checkpoint_every)
    start = time.perf_counter()
    run_all(runs, out / "runs", curve, jobs, lambda msg: log(f"[{time.perf_counter() - start:6.0f} s] {msg}"))
    curves = {name: sorted(rundir.read_curve(out / "runs" / name), key=lambda p: p["step"]) for name in runs}
    pairs = [(c[0], c[-1]) for c in curves.values()]
    preset = base_preset(model)
    families = _families(runs, [r["id"] for r in pairs[0][0]["sampled"]["per_problem"]], preset)
    result = endpoints(pairs, families)
    record = {"base": base_record(model), "split": SELECTION_SPLIT, "prompts": problems, "samples": curve["samples"],
              "temperature": curve["temperature"], "seeds": list(seeds), "steps": steps,
              "grpo": next(iter(runs.values()))["grpo"],
              "plateau": {name: plateau([p["step"] for p in c], [p["sampled"]["pass_at_k"]["1"] for p in c])
                          for name, c in curves.items()},
              "curves": {name: [{"step": p["step"], "pass1": p["sampled"]["pass_at_k"]["1"],
                                 "pass32": p["sampled"]["pass_at_k"]["32"],
                                 "no_correct": float(np.mean([r["correct"] == 0 for r in p["sampled"]["per_problem"]])),
                                 "entropy": p["sampled"].get("mean_token_entropy")} for p in c]
                         for name, c in curves.items()},
              "endpoints": result, "verdict": verdict(result[f"pass@{ENDPOINT_K}"])}
    record, non_finite = without_non_finite(record)  # an interval of too few seeds: null, its path listed
    record["non_finite"] = non_finite
    rundir.write_json(out / "control.json", record)
    (out / "control.md").write_text(render(record), encoding="utf-8")
    premise_control_plot(pairs, families, record["curves"], out)
    return record


def _families(runs: dict[str, dict], ids: list[str], preset) -> list[str]:
    """The family of each measured prompt, in the curve's order (the problems of the control's split)."""
    from escov.llm.config import TrainConfig
    from escov.llm.problem_sets import SELECTION_SPLIT, split_set

    cfg = TrainConfig.from_dict(next(iter(runs.values())))
    by_id = {p.id: p for p in split_set(cfg, SELECTION_SPLIT, len(ids)).problems}
    return [family_of(by_id[i].meta["numbers"], by_id[i].meta["target"], preset) for i in ids]


def _pm(e: dict, scale: float = 100.0) -> str:
    if e["lo"] is None or e["hi"] is None:
        return f"{scale * e['mean']:+.2f} [no interval: {e['design']}]"
    return f"{scale * e['mean']:+.2f} [{scale * e['lo']:+.2f}, {scale * e['hi']:+.2f}]"


def render(record: dict) -> str:
    """The control's table: each run's curve, the endpoints, the families."""
    e = record["endpoints"]
    lines = [f"# Premise control: GRPO from {record['base']['name']} to its plateau",
             "",
             f"{len(record['seeds'])} seeds x {record['prompts']} {record['split']} prompts x {record['samples']} samples "
             f"at T = {record['temperature']}; GRPO {record['grpo']}, {record['steps']} steps.",
             "",
             "| run | step | Pass@1 | Pass@32 | no correct | entropy |", "| --- | --- | --- | --- | --- | --- |"]
    for name, points in record["curves"].items():
        for p in points:
            ent = "" if p["entropy"] is None else f"{p['entropy']:.3f}"
            lines.append(f"| {name} | {p['step']} | {p['pass1']:.3f} | {p['pass32']:.3f} | {p['no_correct']:.3f} | {ent} |")
    reached = sum(p["reached"] for p in record["plateau"].values())
    lines += ["", f"Plateau reached (Pass@1 within {100 * PLATEAU_RISE:.0f} point of its highest and rising less over the "
                  f"last third) on {reached} of {len(record['plateau'])} runs.", "",
              "| endpoint (plateau - base, points) | mean [95% interval] |", "| --- | --- |",
              f"| Pass@{ENDPOINT_K} | {_pm(e[f'pass@{ENDPOINT_K}'])} |",
              f"| no-correct share | {_pm(e['no_correct'])} |"]
    d = e["distinct"]
    if "mean" in d:
        lines.append(f"| distinct correct solutions per solved prompt ({d['base']:.2f} -> {d['plateau']:.2f}, "
                     f"{d['prompts']} prompts) | {_pm(d, 1.0)} |")
    lines += ["", f"Verdict: **{record['verdict']}**.", "",
              "| family | prompts | base Pass@1 | base Pass@32 | lost (seed x prompt) | gained |",
              "| --- | --- | --- | --- | --- | --- |"]
    for name, f in e["families"].items():
        if f["prompts"]:
            lines.append(f"| {name} | {f['prompts']} | {f['base_pass1']:.3f} | {f['base_pass32']:.3f} | {f['lost']} | {f['gained']} |")
    return "\n".join(lines) + "\n"


def main_args(args, budget) -> int:
    """`premise-control`: the control with the budget's settings (the CLI passes the answer's)."""
    seeds = tuple(range(CONTROL_SEEDS[0], CONTROL_SEEDS[0] + args.seeds))
    run_control(args.model, args.out, budget, jobs=args.jobs, seeds=seeds, steps=CONTROL_STEPS if args.steps is None else args.steps)
    print((args.out / "control.md").read_text(encoding="utf-8"))
    print(f"wrote {args.out / 'control.json'} and {args.out / 'control.md'}")
    return 0
