"""The experiments behind the verdicts and their command lines, on the floor above the verdicts (paper_checks/), which
never import it: a report is built from the run directories these write.

    cli.py              the experiment commands (COMMANDS): reproduce, bases, sweep, pilot, ...
    reproduction.py     `reproduce`: each stage a job (bases, theory, simulate, runs, grid, control), then the report
    run_info.py         run_info.json: every invocation of a reproduction (command, commit, start, finish, stages)
    budgets.py          the budgets (small, full, answer, ...): sizes, settings, ES variants, their published report
    plan.py             the runs a budget plans, the sweep's equal update budgets, what those runs give the checks
    bases.py            the base models: shipped in bases/, cached, or pretrained; `bases` rebuilds the shipped ones
    bases/              the shipped base models (PRESET-KEY/), so a fresh clone does not pretrain them
    jobs.py             a pool of jobs with dependencies, each timed, `jobs` at a time in separate processes
    training_runs.py    training runs trained (or resumed) to their end, then their curves evaluated
    step_sweep.py       `sweep`: the step sizes of the answer budget, chosen on training prompts
    pilot.py            `pilot`: the answer's design sized from variance components on training prompts
    premise_control.py  `premise-control`: GRPO trained to its plateau on validation prompts, read by premise.py
    es_pilot.py         `es-pilot`: ES settings toward GRPO's plateau Pass@1 on validation, the answer's ES length
    lemma_grid_measurement.py  the Lemma 1 grid measured on a base model, read by lemma_grid.py
    lemma_as_stated_measurement.py  Lemma 1 as stated measured on a base, read by lemma_as_stated.py
    grpo_variants.py    `grpo-variants`: the coverage-keeping GRPO variant chosen on validation, then ES against it
    fresh_split.py      the answer's fresh test prompts checked against every earlier reader's, recomputed
    answer_arms.py      the sizes of the answer's arms: endpoints to k = 1024, the ES null arm, base draws
    answer_stages.py    those arms as jobs of the reproduction's pool, and their attachments to the report
    endpoints.py        the answer's endpoints (base, GRPO's plateau, ES's end): Pass@k to k = n, stored per evaluation
    base_draws.py       the answer's base pretrained with other seeds and a GRPO step-size control, each a control
    planted_bases.py    `planted-bases`: each counted task's planted base, chosen on validation prompts by a fixed rule
    rare_only.py        `rare-only`: the rare-only test prompts at the endpoints, kept and lost by GRPO and ES
"""
