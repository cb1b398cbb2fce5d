"""`python -m escov.paper_checks es-pilot`: can ES reach GRPO's plateau Pass@1 on the premise's base, and in how
many updates? Read on validation prompts only, before the answer's ES runs are sized.

    python -m escov.paper_checks es-pilot --model BASE_DIR --control CONTROL_JSON --out runs/es-pilot [--jobs 2]
        [--settings es,es-sampled [--only]]

The answer compares ES with GRPO where GRPO narrows: at GRPO's plateau. ES climbs more slowly than GRPO (on the
premise's base about 0.18 Pass@1 points a step), so the answer's ES runs must be long enough to get there, and
how long is a setting to choose on prompts the answer never reads. This command trains ES from the base with each
setting of SETTINGS (the answer's step sizes and one alternative) on PILOT_SEEDS for at least PILOT_UPDATES updates,
checkpoints every CHECKPOINT_EVERY updates and measures every checkpoint on the premise control's validation prompts
(llm/problem_sets.py SELECTION_SPLIT; CURVE). GRPO's plateau Pass@1 L is read from the premise control's record
(control.json of the same base, validation prompts): the mean over its seeds of the last checkpoint's Pass@1.

Rule, fixed before the pilot ran:

    reached(setting)   every seed's curve crosses L (the first crossing, linear interpolation between checkpoints)
    chosen             among the settings reached, the one whose slowest seed crosses L in the fewest updates
                       (ties: SETTINGS' order); with none reached, the one with the highest mean Pass@1 at its last
                       checkpoint, and the record says that ES does not reach L within PILOT_UPDATES
    cap                the answer's ES length in updates: CAP_MARGIN x the chosen setting's slowest crossing,
                       rounded up to a multiple of CAP_ROUND (8 answer seeds may be slower than the pilot's 3); with
                       none reached, PILOT_UPDATES (the answer then reports ES's plateau: outcome (f))

Beside the choice, per setting and seed: Pass@1 and Pass@32 by update, the plateau rule of the premise control
(paper_checks/premise.py `plateau`: still rising over the last third or not) and Pass@32 at the crossing minus the
base's. Outputs: out/runs/NAME/, out/es_pilot.json, out/es_pilot.md and out/es_pilot.png (Pass@1 and Pass@32 by
update for every run, L drawn).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from escov.paper_checks.reproduce.premise_control import SELECTION_EVAL

PILOT_SEEDS = (310, 311, 312)  # none of the answer's (0-7), the sweep's (100), the pilot's (200-203), the control's
PILOT_UPDATES = 450  # ES updates per run: three times the published answer's 150, where ES stood near Pass@1 0.55
CHECKPOINT_EVERY = 10
PILOT_PROMPTS = 128  # the premise control's validation prompts (its CONTROL_PROMPTS)
# 64 samples per prompt: Pass@1 and Pass@32 unbiased (64 >= 32), half the control's 128 (the curve is a third of a
# run's cost here); T = 0.6 as every curve of the answer
CURVE = {"samples": 64, "temperature": 0.6}
# name -> ES settings. `es`: the answer's step sizes (the paper-regime sweep's choice, FLOP-matched to GRPO's G = 8).
# `es-n64-a0.02`: a larger step estimated from twice the members (the gradient estimate's noise halved in variance,
# the step doubled), the alternative the issue proposed; an update costs two GRPO steps of FLOPs.
# `es-sampled`: the answer's step sizes with each member's reward from one completion sampled at T = 1.0 (the
# es-sampled variant of budgets.ES_VARIANTS), added after the first setting's curves were read (seed 310 to update
# 140): its greedy accuracy on the validation prompts stood at 0.60-0.63 from update 20 on while sampled Pass@1 rose
# slowly to about 0.55, and its training reward (greedy members) was flat from update 100: greedy-member ES optimizes
# greedy accuracy, which had saturated; sampled members optimize the sampled reward GRPO climbs.
SETTINGS = {
    "es": {"population_size": 32, "sigma": 0.02, "alpha": 0.01},
    "es-n64-a0.02": {"population_size": 64, "sigma": 0.02, "alpha": 0.02},
    "es-sampled": {"population_size": 32, "sigma": 0.02, "alpha": 0.01, "member_temperature": 1.0, "member_samples": 1},
}
# the run settings that decide which prompts a run trains and is measured on: the control's must be the budget's
PROMPT_SETTINGS = ("eval_solutions", "train_solutions")
CAP_MARGIN = 1.25
CAP_ROUND = 50


def control_prompts(control_json: Path) -> dict:
    """The settings that chose the control's prompts (PROMPT_SETTINGS), from its first run's config.json (its runs lie
    in runs/NAME/ beside control.json); ValueError naming the file when there is none."""
    runs = sorted((control_json.parent / "runs").glob("*/config.json"))
    if not runs:
        raise ValueError(f"--control {control_json}: no run directory beside it (runs/NAME/config.json)")
    config = json.loads(runs[0].read_text(encoding="utf-8"))
    return {k: config.get(k, 0) for k in PROMPT_SETTINGS}


def pilot_runs(
    model: Path, budget, seeds: tuple[int, ...] = PILOT_SEEDS, updates: int = PILOT_UPDATES, settings=tuple(SETTINGS)
) -> dict:
    """Every (setting of `settings`, seed) run: the budget's settings (the answer's), `updates` ES updates (the budget
    counted in GRPO steps of equal FLOPs, llm/schedules.py), a checkpoint every CHECKPOINT_EVERY, no probe or held-out
    task."""
    from escov.llm.config import TrainConfig
    from escov.llm.schedules import step_cost

    common = (
        budget.common
        | {
            "checkpoint_every": CHECKPOINT_EVERY,
            "checkpoint_dense": 0,
            "probe_every": 0,
            "probe": False,
            "heldout_task": "",
            "threshold_keep": (),
        }
        | SELECTION_EVAL
    )
    runs = {}
    for name in settings:
        es = SETTINGS[name]
        cfg = common | {"algo": "es", "model": str(model), "task": budget.task, "es": budget.es | es}
        probe = TrainConfig.from_dict(cfg | {"steps": 1})
        per_update = step_cost("es", probe)["flops"] / step_cost("grpo", probe)["flops"]
        for seed in seeds:
            runs[f"{name}-s{seed}"] = cfg | {"seed": seed, "steps": round(updates * per_update)}
    return runs


def crossing_update(steps, pass1, level: float) -> float | None:
    """The update at which a curve first reaches `level` (linear interpolation between checkpoints); None if never."""
    from escov.theory.matched import crossing

    found = crossing(pass1, level)
    if found is None:
        return None
    t, w = found
    return float(steps[t]) if w == 0.0 else float((1 - w) * steps[t] + w * steps[t + 1])


def plateau_level(control: dict) -> float:
    """GRPO's plateau Pass@1 on the control's prompts: the mean over its seeds of the last checkpoint's Pass@1."""
    return float(np.mean([curve[-1]["pass1"] for curve in control["curves"].values()]))


def choose(curves: dict[str, dict[str, list[dict]]], level: float, updates: int = PILOT_UPDATES) -> dict:
    """The pilot's record from its curves (setting -> run name -> [{step, pass1, pass32}, ...] in step order) and
    GRPO's plateau Pass@1 `level`: each setting's crossings and plateau, the chosen setting and the answer's cap."""
    from escov.paper_checks.premise import plateau
    from escov.theory.matched import read_at

    settings = {}
    for name, runs in curves.items():
        rows = {}
        for run, points in runs.items():
            steps = [p["step"] for p in points]
            pass1 = [p["pass1"] for p in points]
            pass32 = [p["pass32"] for p in points]
            at = read_at(pass1, pass32, level)
            rows[run] = {
                "crossing_update": crossing_update(steps, pass1, level),
                "pass32_at_level_minus_base": None if at is None else float(at - pass32[0]),
                "last_pass1": pass1[-1],
                "last_pass32_minus_base": pass32[-1] - pass32[0],
                "plateau": plateau(steps, pass1),
            }
        crossings = [r["crossing_update"] for r in rows.values()]
        settings[name] = {
            "es": SETTINGS.get(name),
            "runs": rows,
            "reached": all(c is not None for c in crossings),
            "slowest_crossing": None if any(c is None for c in crossings) else max(crossings),
            "mean_last_pass1": float(np.mean([r["last_pass1"] for r in rows.values()])),
        }
    reached = [n for n, s in settings.items() if s["reached"]]
    if reached:
        chosen = min(reached, key=lambda n: settings[n]["slowest_crossing"])  # min keeps the first of a tie
        cap = CAP_ROUND * math.ceil(CAP_MARGIN * settings[chosen]["slowest_crossing"] / CAP_ROUND)
    else:
        chosen = max(settings, key=lambda n: settings[n]["mean_last_pass1"])
        cap = updates
    return {"level": level, "settings": settings, "chosen": chosen, "reached": bool(reached), "cap_updates": cap}


def read_curves(runs_dir: Path, runs, settings: list[str]) -> dict[str, dict[str, list[dict]]]:
    """setting -> run -> its curve's points in step order ({step, pass1, pass32}: the sampled Pass@1 and Pass@32),
    each run (SETTING-sSEED) under its own setting, read from runs_dir/RUN/curve.json."""
    from escov.llm import rundir

    curves: dict[str, dict[str, list[dict]]] = {name: {} for name in settings}
    for run in runs:
        points = sorted(rundir.read_curve(Path(runs_dir) / run), key=lambda p: p["step"])
        curves[run.rsplit("-s", 1)[0]][run] = [
            {"step": p["step"], "pass1": p["sampled"]["pass_at_k"]["1"], "pass32": p["sampled"]["pass_at_k"]["32"]}
            for p in points
        ]
    return curves


def run_es_pilot(model: Path, control_json: Path, out: Path, budget, *, jobs: int = 2, log=print, **sizes) -> dict:
    """Train and measure the pilot's runs (resumable: finished runs and curve points are kept), then read it.
    sizes: `seeds`, `updates`, `prompts` (tests shrink them); `settings`, names of SETTINGS (default: all; a subset
    trains only those, so two processes can share the work; the record is written from every setting's runs);
    `only` True: the record is decided from `settings` alone, the others listed in it as `not_run`."""
    from escov.llm import rundir
    from escov.llm.problem_sets import SELECTION_SPLIT
    from escov.paper_checks.base_info import base_record
    from escov.paper_checks.plots import es_pilot_plot
    from escov.paper_checks.reproduce.training_runs import complete, run_all
    from escov.theory.matched import RESOLUTION

    if not (Path(model) / "config.json").is_file():
        raise ValueError(f"--model {model}: not a model directory (no config.json)")
    if not Path(control_json).is_file():
        raise ValueError(f"--control {control_json}: no such file (the premise control's control.json)")
    control = json.loads(Path(control_json).read_text(encoding="utf-8"))
    same = ("preset", "overrides", "seed", "parameters")  # what the base is; its folder's name may differ
    if {k: (control.get("base") or {}).get(k) for k in same} != {k: base_record(model).get(k) for k in same}:
        raise ValueError(f"--control {control_json}: measured from base {control.get('base')}, not --model {model}")
    if control.get("split") != SELECTION_SPLIT:
        raise ValueError(f"--control {control_json}: read on {control.get('split')!r} prompts, not {SELECTION_SPLIT}")
    ran, wanted = control_prompts(Path(control_json)), {k: budget.common.get(k, 0) for k in PROMPT_SETTINGS}
    if ran != wanted:
        raise ValueError(f"--control {control_json}: its runs drew their prompts with {ran}, the budget's {wanted}")
    seeds, updates = sizes.get("seeds", PILOT_SEEDS), sizes.get("updates", PILOT_UPDATES)
    prompts = sizes.get("prompts", PILOT_PROMPTS)
    chosen = tuple(sizes.get("settings") or SETTINGS)
    only = bool(sizes.get("only"))
    if only and not sizes.get("settings"):
        raise ValueError("--only decides from the settings named in --settings; name them")
    unknown = sorted(set(chosen) - set(SETTINGS))
    if unknown:
        raise ValueError(f"--settings: unknown {', '.join(unknown)}; known: {', '.join(SETTINGS)}")
    checkpoints = updates // CHECKPOINT_EVERY
    curve = CURVE | {
        "points": checkpoints,
        "max_points": checkpoints + 1,  # the base and every checkpoint, no refinement
        "resolution": RESOLUTION,
        "n_problems": prompts,
        "split": SELECTION_SPLIT,
    }
    start = time.perf_counter()
    stamp = lambda msg: log(f"[{time.perf_counter() - start:6.0f} s] {msg}")  # noqa: E731
    run_all(pilot_runs(model, budget, seeds, updates, chosen), out / "runs", curve, jobs, stamp)
    runs = pilot_runs(model, budget, seeds, updates, chosen if only else tuple(SETTINGS))
    missing = [name for name in runs if not complete(out / "runs" / name, curve)]
    if missing:
        raise ValueError(f"{out}: runs not finished yet ({', '.join(missing)}): run es-pilot for their settings")
    curves = read_curves(out / "runs", runs, [name for name in SETTINGS if name in chosen or not only])
    record = choose(curves, plateau_level(control), updates) | {
        "base": base_record(model),
        "control": {"seeds": control["seeds"], "steps": control["steps"], "grpo": control["grpo"]},
        "split": SELECTION_SPLIT,
        "prompts": prompts,
        "samples": CURVE["samples"],
        "temperature": CURVE["temperature"],
        "seeds": list(seeds),
        "updates": updates,
        "curves": curves,
        "not_run": [name for name in SETTINGS if name not in curves],
    }
    rundir.write_json(out / "es_pilot.json", record)
    (out / "es_pilot.md").write_text(render(record), encoding="utf-8")
    es_pilot_plot(record, out / "es_pilot.png")
    return record


def _num(value, fmt: str = "{:.3f}") -> str:
    return "-" if value is None else fmt.format(value)


def render(record: dict) -> str:
    """The pilot's table: per setting and seed, the crossing of L, Pass@32 there and at the end against the base."""
    lines = [
        f"# ES pilot: GRPO's plateau Pass@1 L = {record['level']:.3f} (premise control, validation prompts)",
        "",
        f"{len(record['seeds'])} seeds x {record['prompts']} {record['split']} prompts x {record['samples']} samples "
        f"at T = {record['temperature']}, {record['updates']} ES updates.",
        "",
        "| setting | run | update crossing L | Pass@32 there - base | last Pass@1 | last Pass@32 - base | "
        "rise over the last third | plateau |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, setting in record["settings"].items():
        for run, row in setting["runs"].items():
            lines.append(
                f"| {name} | {run} | {_num(row['crossing_update'], '{:.0f}')} | "
                f"{_num(row['pass32_at_level_minus_base'], '{:+.3f}')} | {row['last_pass1']:.3f} | "
                f"{row['last_pass32_minus_base']:+.3f} | {row['plateau']['rise_last_third']:+.3f} | "
                f"{'yes' if row['plateau']['reached'] else 'no'} |"
            )
    outcome = (
        f"every seed of `{record['chosen']}` reaches L; the answer's ES runs {record['cap_updates']} updates"
        if record["reached"]
        else f"no setting brings every seed to L within {record['updates']} updates; the answer runs "
        f"`{record['chosen']}` (highest mean last Pass@1) for {record['cap_updates']} updates and reports (f)"
    )
    not_run = record.get("not_run") or []
    skipped = [f"Not run, so not among the choices: {', '.join(f'`{n}`' for n in not_run)}.", ""] if not_run else []
    return "\n".join(lines + ["", f"Chosen: {outcome}.", ""] + skipped)


def main_args(args, budget) -> int:
    """`es-pilot`: the pilot with the budget's settings (the CLI passes the answer's)."""
    settings = tuple(s for s in args.settings.split(",") if s)
    record = run_es_pilot(args.model, args.control, args.out, budget, jobs=args.jobs, settings=settings, only=args.only)
    print(render(record))
    print(f"wrote {args.out / 'es_pilot.json'}, es_pilot.md and es_pilot.png")
    return 0
