"""The experiment commands of `python -m escov.paper_checks` (paper_checks/cli.py adds them beside `report`):
reproduce, bases, planted-bases, rare-only, sweep, pilot, premise-control, es-pilot and grpo-variants. Their modules are
imported when a command runs, so that `report` and `--help` load no torch."""

from __future__ import annotations

import sys
from pathlib import Path

from escov.llm.tinymodel_planted import PLANTED_TASKS  # the counted tasks (no torch: --help stays light)

COMMANDS = (
    "reproduce",
    "bases",
    "planted-bases",
    "rare-only",
    "sweep",
    "pilot",
    "premise-control",
    "es-pilot",
    "grpo-variants",
)


def add_commands(sub) -> None:
    """The experiment commands' parsers, on the subparsers `sub` of paper_checks/cli.py."""
    pro = sub.add_parser("reproduce", help="run the paper's experiments in miniature (cached), then report")
    pro.add_argument(
        "--budget",
        choices=(
            "small",
            "full",
            "answer",
            "answer-paper-regime",
            "answer-diffuse",
            "answer-grid_paths",
            "answer-subset_sum",
        ),
        default="small",
        help="small: the quick look, the answer at a smaller design; full: 4 seeds, longer; answer: "
        "ES vs GRPO on a base where GRPO narrows coverage, its positive control first; answer-paper-regime: "
        "ES vs GRPO at matched Pass@1 from the base in the paper's Pass@1/Pass@32 regime; answer-diffuse: "
        "the same from the diffuse base; answer-grid_paths, answer-subset_sum: the answer on a counted task "
        "(also `--budget answer --task TASK`)",
    )
    pro.add_argument(
        "--task",
        choices=("countdown3",) + PLANTED_TASKS,
        help="with --budget answer: the task whose answer to run (countdown3: the answer itself)",
    )
    pro.add_argument("--jobs", type=int, default=None, help="training runs at a time, one thread each (default: cores)")
    pro.add_argument("--out", type=Path, required=True)
    pro.add_argument("--model", type=Path, help="start from this local model instead of pretraining the tiny one")
    pro.add_argument("--no-progress", action="store_true")
    sub.add_parser(
        "bases",
        help="pretrain the shipped bases (the answer's, also the quick look's, and the paper-regime answer's) for "
        "the current code (paper_checks/reproduce/bases)",
    )
    pb = sub.add_parser(
        "planted-bases",
        help="choose the base of each counted task's answer (grid_paths, subset_sum) on validation prompts "
        "(paper_checks/reproduce/planted_bases.py)",
    )
    pb.add_argument("--out", type=Path, required=True, help="folder for the candidates and planted_bases.json")
    pb.add_argument("--task", choices=PLANTED_TASKS, help="one task (default: both)")
    pb.add_argument("--no-progress", action="store_true")
    ro = sub.add_parser(
        "rare-only",
        help="the rare-only test prompts at an answer's endpoints, into its published report "
        "(paper_checks/reproduce/rare_only.py)",
    )
    ro.add_argument("--answer", type=Path, required=True, help="the answer's out directory (reproduce --budget answer)")
    ro.add_argument("--budget", default="answer", help="the budget it was run with (default: answer)")
    ro.add_argument("--into", type=Path, required=True, help="the report folder (report.json, REPORT.md) to add it to")
    swp = sub.add_parser(
        "sweep",
        help="the step-size sweep that chooses the answer budget's GRPO lr and ES sigma, "
        "alpha on training-split prompts (paper_checks/reproduce/step_sweep.py)",
    )
    swp.add_argument("--model", type=Path, required=True, help="the base model the answer budget trains from")
    swp.add_argument("--out", type=Path, required=True)
    swp.add_argument("--jobs", type=int, default=2, help="runs at a time, one thread each (default 2)")
    swp.add_argument("--steps", type=int, default=None, help="training steps per run (default: the answer budget's)")
    swp.add_argument("--problems", type=int, default=64, help="training-split prompts of each curve (default 64)")
    pil = sub.add_parser(
        "pilot",
        help="the variance components of the answer's matched difference on training-split "
        "prompts, and the seeds a 2-point effect needs (paper_checks/reproduce/pilot.py)",
    )
    pil.add_argument("--model", type=Path, required=True, help="the base model the answer budget trains from")
    pil.add_argument("--out", type=Path, required=True)
    pil.add_argument("--seeds", type=int, default=4, help="pilot seeds (200, 201, ...; default 4)")
    pil.add_argument("--jobs", type=int, default=2, help="runs at a time, one thread each (default 2)")
    pil.add_argument("--budget", choices=("answer", "answer-diffuse"), default="answer")
    pre = sub.add_parser(
        "premise-control",
        help="the premise's positive control: GRPO trained to its plateau, its "
        "Pass@32, no-correct share and distinct solutions against the base's on "
        "validation prompts (paper_checks/reproduce/premise_control.py)",
    )
    pre.add_argument("--model", type=Path, required=True, help="the base model to test")
    pre.add_argument("--out", type=Path, required=True)
    pre.add_argument("--seeds", type=int, default=3, help="control seeds (300, 301, ...; default 3)")
    pre.add_argument("--steps", type=int, default=None, help="GRPO steps (default: premise_control.CONTROL_STEPS)")
    pre.add_argument("--jobs", type=int, default=2, help="runs at a time, one thread each (default 2)")
    esp = sub.add_parser(
        "es-pilot",
        help="can ES reach GRPO's plateau Pass@1 on the premise's base, in how many updates: ES settings on "
        "validation prompts, before the answer (paper_checks/reproduce/es_pilot.py)",
    )
    esp.add_argument("--model", type=Path, required=True, help="the base model (the premise control's)")
    esp.add_argument(
        "--control", type=Path, required=True, help="the premise control's control.json on that base (its plateau)"
    )
    esp.add_argument("--out", type=Path, required=True)
    esp.add_argument("--jobs", type=int, default=2, help="runs at a time, one thread each (default 2)")
    esp.add_argument(
        "--settings", default="", help="comma-separated names of es_pilot.SETTINGS to train (default: all)"
    )
    esp.add_argument(
        "--only",
        action="store_true",
        help="decide from the --settings alone (the others recorded as not run); default: from every setting",
    )
    gv = sub.add_parser(
        "grpo-variants",
        help="ES against the best coverage-keeping GRPO variant, chosen on validation "
        "prompts, after the answer (paper_checks/reproduce/grpo_variants.py)",
    )
    gv.add_argument("--answer", type=Path, required=True, help="the answer's out directory (reproduce --budget answer)")
    gv.add_argument("--candidates", default="", help="comma-separated names of grpo_variants.CANDIDATES (default: all)")
    gv.add_argument(
        "--selection-only",
        action="store_true",
        help="choose the variant on validation prompts and stop (the test runs need the answer finished)",
    )
    gv.add_argument("--jobs", type=int, default=2, help="runs at a time, one thread each (default 2)")


def run(args, argv: list[str] | None) -> int | tuple[dict, Path]:
    """Run the experiment command `args.command`: its exit status, or for `reproduce` its report and the folder
    the report is in (paper_checks/cli.py prints its summary)."""
    if args.command == "bases":
        from escov.paper_checks.reproduce.bases import ship_bases

        for path in ship_bases():
            print(f"shipped base: {path}")
        return 0
    if args.command == "planted-bases":
        from escov.paper_checks.reproduce.planted_bases import main_args as planted_main

        return planted_main(args)
    if args.command == "rare-only":
        from escov.paper_checks.reproduce import rare_only
        from escov.paper_checks.reproduce.budgets import BUDGETS

        if args.budget not in BUDGETS:
            raise ValueError(f"--budget must be one of {sorted(BUDGETS)}, got {args.budget!r}")
        budget = BUDGETS[args.budget]
        record = rare_only.rare_only_record(args.answer, budget.seeds, budget.arms.endpoint_temperatures, budget.task)
        rare_only.attach(args.into, record)
        print(
            f"rare-only prompts: {record['rare_only_prompts']} of {record['prompts']}; the base's Pass@n on them "
            f"{record['rare_only_base_pass_at_k']:.3f}; added to {args.into / 'report.json'} and REPORT.md"
        )
        return 0
    if args.command == "sweep":
        from escov.paper_checks.reproduce.step_sweep import main_args

        return main_args(args)
    if args.command == "pilot":
        from escov.paper_checks.reproduce.pilot import main_args as pilot_main

        return pilot_main(args)
    if args.command == "premise-control":
        from escov.paper_checks.reproduce.budgets import BUDGETS
        from escov.paper_checks.reproduce.premise_control import main_args as premise_main

        return premise_main(args, BUDGETS["answer"])
    if args.command == "es-pilot":
        from escov.paper_checks.reproduce.budgets import BUDGETS
        from escov.paper_checks.reproduce.es_pilot import main_args as es_pilot_main

        return es_pilot_main(args, BUDGETS["answer"])
    if args.command == "grpo-variants":
        from escov.paper_checks.reproduce.budgets import BUDGETS
        from escov.paper_checks.reproduce.grpo_variants import main_args as variants_main
        from escov.paper_checks.reproduce.reproduction import PREMISE_DIR, REPORT_DIR

        return variants_main(args, BUDGETS["answer"], PREMISE_DIR, REPORT_DIR)
    from escov.paper_checks.reproduce.reproduction import REPORT_DIR, reproduce

    budget = args.budget
    if args.task is not None:
        if budget != "answer":
            print(f"error: --task {args.task} goes with --budget answer, not {budget}", file=sys.stderr)
            return 2
        budget = budget if args.task == "countdown3" else f"answer-{args.task}"
    report = reproduce(
        budget,
        args.out,
        model=args.model,
        progress=not args.no_progress,
        jobs=args.jobs,
        command="python -m escov.paper_checks " + " ".join(sys.argv[1:] if argv is None else argv),
    )
    return report, args.out / REPORT_DIR
