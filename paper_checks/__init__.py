"""Verdicts on the paper's claims from theory, simulation and real runs: decided from run directories in seconds,
without torch. The experiments that write those directories are the subpackage reproduce/, which this side never
imports (tests/test_layout.py).

    cli.py              `python -m escov.paper_checks`: `report` here, the experiment commands from reproduce/cli.py
    __main__.py         runs cli.main
    console.py          the `escov` console script: `escov LEVEL ARGS...` runs that level's command line
    rundir.py           reading the run directories `llm train` writes (the interface between llm and paper_checks)
    evidence.py         everything a report is built from: runs grouped by variant, theory checks, simulate summaries
    trust.py            what a report refuses to count: runs given twice, evaluations that contradict their run
    design.py           the statistical design of every real-run comparison: seeds x prompts x samples
    verdict.py          a claim's status at one level, with what was tested; the formatting of intervals
    registry.py         the real-run checks registered on their claims: one per claim with real=True
    real_checks/        the real-run checks, each deciding its claim from the runs (its __init__ names its modules)
    level_checks.py     the verdicts of the two cheap levels: the theory checks and the simulate experiments
    matched.py          two methods compared at matched Pass@1 along their curves
    lemma_grid.py       the Lemma 1 grid's rows read (an implementation check and regime boundary): ratios, summary
    lemma_as_stated.py  Lemma 1 as stated read: E[JSpol_N] against (sigma^2/2)(1 - 1/N) tr I, tr I from separate noise
    lemma_grid_publish.py  a newly measured grid put into a published report, nothing else changed
    premise.py          the premise's positive control read: endpoints, plateau, verdict, prompt families, table
    premise_record.py   the report's premise record: the control, GRPO's plateau, ES against GRPO there
    premise_plateau.py  the premise's endpoints at GRPO's plateau: (b') and its validity condition, (d'), (f), residual
    registered.py       the premise's registered family, its p-values and Holm's adjustment; the exploratory rest
    open_questions.py   the questions the paper leaves open, answered from the runs
    summary.py          the lines REPORT.md opens with and a reproduction's console ends on
    provenance.py       the code each run trained with (inputs.json's commit), runs at other code flagged
    es_null.py          ES beside its random-z null: held-out Pass@1 change and drift against the random walk
    pooled.py           one endpoint pooled across tasks: a random-effects mean, its interval and the tasks' spread
    premise_pooled.py   the premise's registered endpoints per task and pooled across tasks (`pool-tasks`)
    premise_attachments.py  the premise's coverage to k = n at the endpoints and its base draws, in REPORT.md
    step_plot.py        Pass@1 by step of every run, a colour per method
    plots.py            the report's plots, each drawn from run directories
    report.py           the report: every claim at every level, the open questions, plots; REPORT.md + report.json
    own_runs.py         the report of runs on your own data or rewards: the runs' groups compared, no claims
    base_info.py        what a base model is, from its folder (pretrain.json)
    finite.py           JSON records without NaN or infinity (null there, the paths listed beside)
    coverage/           `escov coverage`: Pass@k to n, k*, solvability sets of any trainer's completions
    reproduce/          the experiments: budgets, bases, jobs, training runs, sweep, pilot, control, grid measurement
"""
