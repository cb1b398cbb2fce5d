"""`python -m escov.paper_checks reproduce|report` (also `escov paper_checks ...`).

reproduce --budget small|full|answer|answer-paper-regime|answer-diffuse --out DIR [--model DIR] [--jobs N]
                                                                 train what the checks need (cached), then report
report RUN_DIRS... --out DIR [--theory FILE] [--simulate FILE]   rebuild the report from existing runs
bases                                                            rebuild the shipped bases (answer, paper regime)
planted-bases --out DIR [--task T]                               choose each counted task's base (validation)
rare-only --answer DIR --into REPORT_DIR [--budget B]            the rare-only prompts at an answer's endpoints
sweep --model DIR --out DIR [--jobs N] [--steps N]               choose the answer's step sizes on training data
pilot --model DIR --out DIR [--seeds N] [--jobs N]                size the answer's seeds on training data
premise-control --model DIR --out DIR [--seeds N] [--jobs N]      does GRPO narrow coverage on this base? (validation)
es-pilot --model DIR --control FILE --out DIR [--jobs N]     can ES reach GRPO's plateau? (validation)
grpo-variants --answer DIR [--candidates A,B] [--jobs N]          ES against the best coverage-keeping GRPO variant
coverage SOURCE... --reference NAME [--json OUT] [--plots DIR]     Pass@k to n, k*, solvability of any completions
                                                                 (also `escov coverage`; docs/coverage.md)
pool-tasks TASK=REPORT_JSON... --out DIR [--into REPORT_JSON]    the premise's endpoints per task and pooled
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from escov.paper_checks.reproduce.cli import COMMANDS, add_commands, run
from escov.paper_checks.rundir import RunDirError


def _print_summary(report: dict, out: Path) -> None:
    """The report's files, then its summary (paper_checks/summary.py): the console ends on one screen."""
    print(f"wrote {out / 'REPORT.md'} and {out / 'report.json'}")
    print("\n".join(report["summary"]))


def main(argv: list[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["coverage"]:  # its own parser (paper_checks/coverage/cli.py)
        from escov.paper_checks.coverage.cli import main as coverage_main

        return coverage_main(given[1:])
    parser = argparse.ArgumentParser(
        prog="python -m escov.paper_checks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="build REPORT.md and report.json from existing run directories")
    rep.add_argument("runs", nargs="+", type=Path, help="run directories written by `python -m escov.llm train`")
    rep.add_argument("--out", type=Path, required=True)
    rep.add_argument("--theory", type=Path, help="JSON of `python -m escov.theory --json`")
    rep.add_argument("--simulate", type=Path, help="summary.json of `python -m escov.simulate all`")
    rep.add_argument("--lemma-grid", type=Path, help="lemma_grid.json written by reproduce")
    rep.add_argument(
        "--claims",
        action="store_true",
        help="also check the paper's claims on runs of your own data or rewards (by default their "
        "report compares the runs' groups: paper_checks/own_runs.py)",
    )
    pool = sub.add_parser(
        "pool-tasks", help="the premise's registered endpoints per task and pooled across tasks (premise_pooled.py)"
    )
    pool.add_argument("tasks", nargs="+", metavar="TASK=REPORT_JSON", help="each task's published report.json")
    pool.add_argument("--out", type=Path, required=True, help="folder for pooled.json and POOLED.md")
    pool.add_argument("--into", type=Path, help="a report.json to add premise_by_task and pooled to")
    add_commands(sub)  # the experiment commands (paper_checks/reproduce/cli.py COMMANDS)
    sub.add_parser("coverage", help="Pass@k to n, k*, solvability sets of any trainer's completions (docs/coverage.md)")
    args = parser.parse_args(argv)
    try:
        if args.command in COMMANDS:
            done = run(args, argv)
            if isinstance(done, int):
                return done
            report, out = done
        elif args.command == "pool-tasks":
            from escov.paper_checks.premise_pooled import POOLED_MD, pool_tasks_command, render

            result = pool_tasks_command(args.tasks, args.out, args.into)
            print(
                f"wrote {args.out / POOLED_MD}"
                + (f"; added premise_by_task and pooled to {args.into}" if args.into else "")
            )
            print("\n".join(render(result)))
            return 0
        else:
            from escov.paper_checks.evidence import load_lemma_grid
            from escov.paper_checks.report import build_report
            from escov.paper_checks.summary import load_published

            grid = load_lemma_grid(args.lemma_grid) if args.lemma_grid else None
            report = build_report(
                args.runs,
                args.out,
                args.theory,
                args.simulate,
                grid,
                published=load_published(),
                claims=True if args.claims else None,
            )
            out = args.out
    except (RunDirError, ValueError, OSError) as err:  # damaged or missing inputs: one line naming the file
        print(f"error: {err}", file=sys.stderr)
        return 2
    _print_summary(report, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
