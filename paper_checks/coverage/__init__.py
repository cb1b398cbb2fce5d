"""`escov coverage`: coverage measured the way the RL-narrowing literature measures it, for any trainer's completions
(docs/coverage.md describes the measures and the formats read). The data flow: reader -> sources -> table -> measure
-> render, plots; cli is the command.

    cli.py              the command line: `escov coverage SOURCE... --reference NAME [--json OUT] [--plots DIR]`
    reader.py           the formats read: plain tables, TRL's completions log, verl's dumps, es-at-scale, escov runs
    sources.py          the defaults of a source and how its completions are scored (scoring.py)
    scoring.py          completions scored by a task's verifier or a user's reward function (TRL's batch contract)
    table.py            the checked table: per model, seed and prompt, correct counts of n (and answers)
    measure.py          theory/coverage.py's estimators with problem-bootstrap intervals: the report as a dict
    render.py           the short text table for people
    plots.py            Pass@k curves on a log-k axis with bands and k*; the solvability sets as bars
"""
