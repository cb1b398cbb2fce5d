"""Measure Lemma 1 as stated on a budget's base and print the record's REPORT.md lines.

    python scripts/measure_lemma_as_stated.py [--budget answer] [--model DIR] [--out FILE] [--threads N]
                                              [--design answer|smoke] [--no-progress]

E[JSpol_N] over independent populations against (sigma^2/2)(1 - 1/N) tr I_x with tr I_x from separate center
completions (paper_checks/reproduce/lemma_as_stated_measurement.py), on grid_settings(budget): the runs' own task,
evaluation temperature and completion length. The base: --model DIR (default: the shipped base of the answer,
paper_checks/reproduce/bases/paper-ccb11f3a9c7af1b0). The measurement's JSON goes to --out (default
runs/lemma_as_stated.json); when it exists already it is read, not measured again. Prints the CPU time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HALF_WIDTH = 0.08  # the row interval's half-width each row's population count is sized for (printed per row)
ANSWER_BASE = Path("paper_checks/reproduce/bases/paper-ccb11f3a9c7af1b0")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", default="answer", help="a budget of paper_checks/reproduce/budgets.py")
    parser.add_argument("--model", type=Path, default=ANSWER_BASE, help="the base model directory")
    parser.add_argument("--out", type=Path, default=Path("runs/lemma_as_stated.json"), help="the measurement's JSON")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument(
        "--design",
        choices=("answer", "smoke"),
        default="answer",
        help="answer: ANSWER_LEMMA_AS_STATED; smoke: two cells, to check the pipeline",
    )
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    from escov.paper_checks.lemma_as_stated import draws_for_half_width, lemma_as_stated_record, report_lines
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.lemma_as_stated_measurement import (
        ANSWER_LEMMA_AS_STATED,
        SMOKE_LEMMA_AS_STATED,
        measure_lemma_as_stated,
        relative_sd_summary,
    )

    if args.budget not in BUDGETS:
        parser.error(f"--budget must be one of {sorted(BUDGETS)}, got {args.budget!r}")
    if args.out.exists():
        measurement = json.loads(args.out.read_text())
    else:
        if not (args.model / "config.json").is_file():
            print(f"--model {args.model}: no model there (expected a directory with config.json)", file=sys.stderr)
            return 2
        import torch

        from escov.paper_checks.reproduce.reproduction import grid_settings

        torch.set_num_threads(args.threads)
        design = ANSWER_LEMMA_AS_STATED if args.design == "answer" else SMOKE_LEMMA_AS_STATED
        measurement = measure_lemma_as_stated(
            args.model, grid_settings(BUDGETS[args.budget]), design, args.out, progress=not args.no_progress
        )
    record = lemma_as_stated_record(measurement, str(args.out))
    trace_se = record["trace"]["se"] / record["trace"]["trace"]
    for r in relative_sd_summary(measurement):
        need = draws_for_half_width(r["relative_sd"], trace_se, HALF_WIDTH)
        print(
            f"sigma {r['sigma']:g} N {r['members']}: {r['populations']} populations, one population's relative "
            f"sd {r['relative_sd']:.3f}, s {r['s']:.4g}; populations for a ratio interval +-{HALF_WIDTH:g}: "
            f"{need if need else 'more than the trace allows'}"
        )
    print("\n".join(report_lines(record)))
    print(f"CPU time of the measurement: {measurement['cpu_seconds'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
