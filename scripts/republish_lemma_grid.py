"""Measure a budget's Lemma 1 grid on its base and put it into a published report, leaving the rest as it was.

    python scripts/republish_lemma_grid.py [--budget answer] [--model DIR] [--results results]
                                           [--grid-json FILE] [--threads N] [--no-progress]
    python scripts/republish_lemma_grid.py --pilot [--budget answer] [--model DIR]   # size the grid, change nothing

The full reproduction that wrote results/ takes hours; the grid alone takes minutes. This script measures the
budget's grid (paper_checks/reproduce/budgets.py: BUDGETS[budget].grid, on grid_settings(budget): the runs' own task,
evaluation temperature and completion length) on the budget's base and replaces, in the results folder:

- report.json: `lemma_grid` and the lemma1 claim's real-run verdict (paper_checks/lemma_grid_publish.py);
- REPORT.md: the lemma1 row of the claims table, the grid's section and the lemma1 real-run bullet;
- js_measured_vs_predicted.png, redrawn from the new rows.

The base: --model DIR, else the one the reproduction cached for the budget's preset ($ESCOV_CACHE/bases/PRESET-KEY,
default ~/.cache/escov/bases; see paper_checks/reproduce/bases.py, base_cache_key). It is read, never pretrained here:
without it the script stops and says how to build it. --grid-json FILE keeps the measured rows there and, when
FILE exists already, splices those rows without measuring again. The wall time is printed at the end.

--pilot measures a small grid (pilot_design below) on the same base and task instead and prints, per row, one
population's relative sd of JSpol - R Q (measured against predicted JSpol of the same members) and the draws a row
needs for a ratio interval 0.1 wide (paper_checks.lemma_grid.draws_needed): how the budget's GridDesign is sized
(docs/answer-budget.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def pilot_design(budget_grid):
    """The pilot: the budget's probe prompts, samples and center samples, two sigmas inside the regime at every N,
    three draws each."""
    from escov.paper_checks.reproduce.lemma_grid_measurement import GridDesign

    return GridDesign(
        sigmas=(1e-3, 4e-3),
        members=budget_grid.members,
        draws={n: 3 for n in budget_grid.members},
        prompts=budget_grid.prompts,
        samples=budget_grid.samples,
        center_samples=budget_grid.center_samples,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--budget", default="answer", help="a budget of paper_checks/reproduce/budgets.py (default: answer)"
    )
    parser.add_argument("--model", type=Path, help="the base model directory (default: the reproduction's cached base)")
    parser.add_argument("--results", type=Path, default=Path("results"), help="the published report's folder")
    parser.add_argument("--grid-json", type=Path, help="where to keep the measured rows (reused when it exists)")
    parser.add_argument("--threads", type=int, help="torch threads (default: the budget's)")
    parser.add_argument(
        "--pilot", action="store_true", help="measure a small pilot grid and print the draws each row needs"
    )
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    import torch

    from escov.llm.config import TrainConfig
    from escov.llm.rundir import dumps
    from escov.paper_checks.evidence import load_lemma_grid
    from escov.paper_checks.lemma_grid import draws_needed
    from escov.paper_checks.lemma_grid_publish import splice_markdown, splice_report
    from escov.paper_checks.plots import lemma1_grid_plot
    from escov.paper_checks.report import lemma1_training
    from escov.paper_checks.reproduce.bases import base_cache_dir, base_cache_key, pretrain_command
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.lemma_grid_measurement import measure_grid
    from escov.paper_checks.reproduce.reproduction import grid_settings

    if args.budget not in BUDGETS:
        parser.error(f"--budget must be one of {sorted(BUDGETS)}, got {args.budget!r}")
    budget = BUDGETS[args.budget]
    report_json, report_md = args.results / "report.json", args.results / "REPORT.md"
    for f in (report_json, report_md):
        if not f.is_file():
            parser.error(f"--results {args.results}: {f.name} missing (publish a report there first)")
    start = time.perf_counter()
    model = (
        args.model
        or base_cache_dir()
        / f"{budget.base_preset}-{base_cache_key(budget.base_preset, settings=budget.base_settings)}"
    )
    if args.pilot:
        if not (model / "config.json").is_file():
            parser.error(f"no base model at {model}: give --model DIR")
        torch.set_num_threads(args.threads or budget.common["threads"])
        rows = measure_grid(model, pilot_design(budget.grid), progress=not args.no_progress, **grid_settings(budget))
        print(
            f"pilot: {(time.perf_counter() - start) / 60:.1f} min (CPU {time.process_time() / 60:.1f} min); "
            "draws for a "
            f"ratio interval 0.1 wide:"
        )
        for r in draws_needed(rows):
            print(
                f"  sigma {r['sigma']:g} N {r['members']}: s {r['s_measured']:.3g}, one population's relative sd of "
                f"JSpol - R Q {r['population_cv']:.3f} -> draws {r['draws']}"
            )
        return 0
    if args.grid_json is not None and args.grid_json.is_file():
        rows = load_lemma_grid(args.grid_json)
        print(f"rows from {args.grid_json} (not measured again)", flush=True)
    else:
        if not (model / "config.json").is_file():
            parser.error(
                f"no base model at {model}: give --model DIR, or build it with "
                f"`{pretrain_command(budget.base_preset, budget.base_settings, out=str(model))}`"
            )
        torch.set_num_threads(args.threads or budget.common["threads"])
        rows = measure_grid(model, budget.grid, progress=not args.no_progress, **grid_settings(budget))
        if args.grid_json is not None:
            args.grid_json.write_text(json.dumps(rows))
    seconds = time.perf_counter() - start

    old = json.loads(report_json.read_text(encoding="utf-8"))
    new = splice_report(old, rows, budget.es.get("sigma"), budget.common.get("temperature", TrainConfig.temperature))
    report_json.write_text(dumps(new, str(report_json), indent=1) + "\n", encoding="utf-8")
    report_md.write_text(splice_markdown(report_md.read_text(encoding="utf-8"), new), encoding="utf-8")
    lemma1_grid_plot(rows, lemma1_training(new), args.results)
    verdict = next(c for c in new["claims"] if c["id"] == "lemma1")["levels"]["real"]
    print(f"lemma1 (real): {verdict['status']}: {verdict['ours']}")
    print(
        f"grid measured in {seconds / 60:.1f} min; {report_json}, {report_md} and "
        f"{args.results / 'js_measured_vs_predicted.png'} rewritten"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
