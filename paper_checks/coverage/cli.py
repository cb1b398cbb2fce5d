"""`escov coverage SOURCE... --reference NAME [--json OUT.json] [--plots DIR]` (also `python -m escov.paper_checks
coverage ...`): Pass@k to n with problem-bootstrap intervals, the crossing k*, Cover@tau, the solvability sets
(preserved/gained/lost, SRR, NDR, NSCR) and, where answers are known, Maj@k, distinct solutions and answer entropy
of each model against a reference, from completions written by any trainer (docs/coverage.md).

SOURCE is [NAME=]PATH: a JSONL/CSV/parquet table (prompt_id, correct or reward or completion; optional model, seed,
step, sample, solution_id), TRL's completions log, verl's validation dumps, es-at-scale's eval_detailed_results.json
or an escov run directory (paper_checks/coverage/reader.py).

Definitions, as written to OUT.json["models"][MODEL] (and, for each model but the reference, OUT.json[MODEL]):
  pass_at_k     {"1": {mean, lo, hi}, "2": ..., "4": ..., str(n): ...}: keys are the budgets as strings of integers,
                the powers of two up to n and n itself; mean is the unbiased estimator 1 - C(n-c, k)/C(n, k)
                averaged over prompts; lo, hi the 95% percentile problem-bootstrap interval (prompts resampled).
  crossing      {k_star, lo, hi, no_crossing_share, k_star_interpolated}: where the reference's Pass@k curve
                overtakes the model's (Yue et al. 2025). With d(k) = reference - model on that grid, k_star is
                the first grid budget with d > 0 (an integer of the grid); null when d > 0 nowhere up to n.
                lo, hi: the percentile problem-bootstrap interval of k_star. k_star_interpolated: the same
                crossing read between that budget and the previous one, linearly in log2 k (1 when the
                reference leads at k = 1).
  solvability   {preserved, gained, lost, neither, srr, ndr, nscr}: prompts solved (at least one correct of n)
                by both / the model only / the reference only / neither at k = n; SRR = P/(P+S),
                NDR = E/(P+E), NSCR = (E-S)/(P+E+S) with P preserved, E gained, S lost.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from escov.paper_checks.coverage.measure import CONFIDENCE, REPLICATES, TAUS, MeasureOptions, measure
from escov.paper_checks.coverage.reader import FORMATS
from escov.paper_checks.coverage.sources import DEFAULT_THRESHOLD, ReadOptions, load
from escov.paper_checks.coverage.table import InputError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="escov coverage", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("sources", nargs="+", metavar="[NAME=]PATH", help="completions tables, logs or run directories")
    p.add_argument("--reference", default="base", help="the model the others are compared with (default: base)")
    p.add_argument("--json", type=Path, help="write the report here (written whole or not at all)")
    p.add_argument("--plots", type=Path, help="write coverage_passk.png and coverage_solvability.png into this folder")
    p.add_argument("--format", choices=FORMATS, default="auto", help="the sources' format (default: detected)")
    p.add_argument("--k", type=int, nargs="+", help="budgets to report (default: 1, 2, 4, ..., n; each <= n)")
    p.add_argument("--tau", type=float, nargs="+", default=list(TAUS), help=f"Cover@tau thresholds (default {TAUS})")
    p.add_argument("--replicates", type=int, default=REPLICATES, help=f"bootstrap replicates (default {REPLICATES})")
    p.add_argument("--confidence", type=float, default=CONFIDENCE, help=f"interval level (default {CONFIDENCE})")
    p.add_argument("--bootstrap-seed", type=int, default=0)
    p.add_argument(
        "--reward-column",
        action="append",
        default=[],
        help="the reward column, in place of a `reward` column (repeat: summed; TRL logs name one per reward function)",
    )
    p.add_argument(
        "--reward-threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        help=f"a reward >= this is correct (default {DEFAULT_THRESHOLD})",
    )
    p.add_argument("--task", help="score completions with this escov task's verifier (countdown, gsm8k, ...)")
    p.add_argument("--prompt-style", default="plain", help="--task: the prompt style the completions answer")
    p.add_argument("--reward", default="escov", help="--task: the reward convention (llm/tasks/rewards.py)")
    p.add_argument(
        "--reward-function",
        action="append",
        default=[],
        help="score completions with module:function (TRL's batch contract, as `llm train` takes it)",
    )
    p.add_argument("--reward-weights", type=float, action="append", default=[])
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    options = ReadOptions(
        format=args.format,
        reward_columns=args.reward_column,
        threshold=args.reward_threshold,
        task=args.task,
        task_kwargs={"prompt_style": args.prompt_style, "reward": args.reward},
        reward_functions=args.reward_function,
        reward_weights=args.reward_weights,
    )
    try:
        if args.replicates < 1 or not 0 < args.confidence < 1:
            raise InputError("--replicates must be >= 1 and --confidence in (0, 1)")
        coverage = load(args.sources, options)
        report = measure(
            coverage,
            MeasureOptions(
                args.reference,
                tuple(args.k) if args.k else None,
                tuple(args.tau),
                args.replicates,
                args.confidence,
                args.bootstrap_seed,
            ),
        )
        if args.plots:
            from escov.paper_checks.coverage.plots import passk_curves, solvability_bars

            args.plots.mkdir(parents=True, exist_ok=True)
            passk_curves(report, args.plots)
            solvability_bars(report, args.plots)
        if args.json:  # last, and whole or not at all (a temporary file renamed into place)
            from escov.llm.rundir import write_json

            args.json.parent.mkdir(parents=True, exist_ok=True)
            write_json(args.json, report)
    except (ValueError, OSError) as err:  # InputError, a reward function's error, an unreadable file: one line
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    from escov.paper_checks.coverage.render import text_table

    print("\n".join(text_table(report)))
    if args.json:
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
