"""`python -m escov.paper_checks reproduce|report` (also `escov paper_checks ...`).

    reproduce --budget small|full|answer|answer-paper-regime|answer-diffuse --out DIR [--model DIR] [--jobs N]
                                                                     train what the checks need (cached), then report
    report RUN_DIRS... --out DIR [--theory FILE] [--simulate FILE]   rebuild the report from existing runs
    bases                                                            rebuild the shipped bases (quick look, answer)
    sweep --model DIR --out DIR [--jobs N] [--steps N]               choose the answer's step sizes on training data
    pilot --model DIR --out DIR [--seeds N] [--jobs N]                size the answer's seeds on training data
    premise-control --model DIR --out DIR [--seeds N] [--jobs N]      does GRPO narrow coverage on this base? (validation)
    grpo-variants --answer DIR [--candidates A,B] [--jobs N]          ES against the best coverage-keeping GRPO variant
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from escov.paper_checks.rundir import RunDirError


def _print_summary(report: dict, out: Path) -> None:
    """The report's files, then its summary (paper_checks/summary.py): the console ends on one screen."""
    print(f"wrote {out / 'REPORT.md'} and {out / 'report.json'}")
    print("\n".join(report["summary"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m escov.paper_checks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="build REPORT.md and report.json from existing run directories")
    rep.add_argument("runs", nargs="+", type=Path, help="run directories written by `python -m escov.llm train`")
    rep.add_argument("--out", type=Path, required=True)
    rep.add_argument("--theory", type=Path, help="JSON of `python -m escov.theory --json`")
    rep.add_argument("--simulate", type=Path, help="summary.json of `python -m escov.simulate all`")
    rep.add_argument("--lemma-grid", type=Path, help="lemma_grid.json written by reproduce")
    pro = sub.add_parser("reproduce", help="run the paper's experiments in miniature (cached), then report")
    pro.add_argument("--budget", choices=("small", "full", "answer", "answer-paper-regime", "answer-diffuse"), default="small",
                     help="small: the quick look, the paper-regime answer at a smaller design; full: 4 seeds, longer; answer: "
                          "ES vs GRPO on a base where GRPO narrows coverage, its positive control first; answer-paper-regime: "
                          "ES vs GRPO at matched Pass@1 from the base in the paper's Pass@1/Pass@32 regime; answer-diffuse: "
                          "the same from the diffuse base")
    pro.add_argument("--jobs", type=int, default=None, help="training runs at a time, one thread each (default: cores)")
    pro.add_argument("--out", type=Path, required=True)
    pro.add_argument("--model", type=Path, help="start from this local model instead of pretraining the tiny one")
    pro.add_argument("--no-progress", action="store_true")
    sub.add_parser("bases", help="pretrain the shipped bases (the quick look's and the answer's) for the current code (paper_checks/bases)")
    swp = sub.add_parser("sweep", help="the step-size sweep that chooses the answer budget's GRPO lr and ES sigma, "
                                       "alpha on training-split prompts (paper_checks/step_sweep.py)")
    swp.add_argument("--model", type=Path, required=True, help="the base model the answer budget trains from")
    swp.add_argument("--out", type=Path, required=True)
    swp.add_argument("--jobs", type=int, default=2, help="runs at a time, one thread each (default 2)")
    swp.add_argument("--steps", type=int, default=None, help="training steps per run (default: the answer budget's)")
    swp.add_argument("--problems", type=int, default=64, help="training-split prompts of each curve (default 64)")
    pil = sub.add_parser("pilot", help="the variance components of the answer's matched difference on training-split "
                                       "prompts, and the seeds a 2-point effect needs (paper_checks/pilot.py)")
    pil.add_argument("--model", type=Path, required=True, help="the base model the answer budget trains from")
    pil.add_argument("--out", type=Path, required=True)
    pil.add_argument("--seeds", type=int, default=4, help="pilot seeds (200, 201, ...; default 4)")
    pil.add_argument("--jobs", type=int, default=2, help="runs at a time, one thread each (default 2)")
    pil.add_argument("--budget", choices=("answer", "answer-diffuse"), default="answer")
    pre = sub.add_parser("premise-control", help="the premise's positive control: GRPO trained to its plateau, its "
                                                 "Pass@32, no-correct share and distinct solutions against the base's on "
                                                 "validation prompts (paper_checks/premise.py)")
    pre.add_argument("--model", type=Path, required=True, help="the base model to test")
    pre.add_argument("--out", type=Path, required=True)
    pre.add_argument("--seeds", type=int, default=3, help="control seeds (300, 301, ...; default 3)")
    pre.add_argument("--steps", type=int, default=None, help="GRPO steps (default: premise.CONTROL_STEPS)")
    pre.add_argument("--jobs", type=int, default=2, help="runs at a time, one thread each (default 2)")
    gv = sub.add_parser("grpo-variants", help="ES against the best coverage-keeping GRPO variant, chosen on validation "
                                              "prompts, after the answer (paper_checks/grpo_variants.py)")
    gv.add_argument("--answer", type=Path, required=True, help="the answer's out directory (reproduce --budget answer)")
    gv.add_argument("--candidates", default="", help="comma-separated names of grpo_variants.CANDIDATES (default: all)")
    gv.add_argument("--jobs", type=int, default=2, help="runs at a time, one thread each (default 2)")
    args = parser.parse_args(argv)
    if args.command == "bases":
        from escov.paper_checks.reproduce import ship_bases
        for path in ship_bases():
            print(f"shipped base: {path}")
        return 0
    try:
        if args.command == "sweep":
            from escov.paper_checks.step_sweep import main_args
            return main_args(args)
        if args.command == "pilot":
            from escov.paper_checks.pilot import main_args as pilot_main
            return pilot_main(args)
        if args.command == "premise-control":
            from escov.paper_checks.premise import main_args as premise_main
            from escov.paper_checks.reproduce import BUDGETS
            return premise_main(args, BUDGETS["answer"])
        if args.command == "grpo-variants":
            from escov.paper_checks.grpo_variants import main_args as variants_main
            from escov.paper_checks.reproduce import BUDGETS, PREMISE_DIR, REPORT_DIR
            return variants_main(args, BUDGETS["answer"], PREMISE_DIR, REPORT_DIR)
        if args.command == "report":
            from escov.paper_checks.evidence import load_lemma_grid
            from escov.paper_checks.report import build_report
            from escov.paper_checks.summary import load_published
            grid = load_lemma_grid(args.lemma_grid) if args.lemma_grid else None
            report = build_report(args.runs, args.out, args.theory, args.simulate, grid, published=load_published())
        else:
            from escov.paper_checks.reproduce import reproduce
            report = reproduce(args.budget, args.out, model=args.model, progress=not args.no_progress, jobs=args.jobs,
                                command="python -m escov.paper_checks " + " ".join(sys.argv[1:] if argv is None else argv))
    except (RunDirError, ValueError, OSError) as err:  # damaged or missing inputs: one line naming the file
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.command == "reproduce":
        from escov.paper_checks.reproduce import REPORT_DIR
        _print_summary(report, args.out / REPORT_DIR)
    else:
        _print_summary(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
