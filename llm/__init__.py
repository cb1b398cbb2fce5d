"""Real ES and GRPO training of causal LMs: tasks, verifiers, tiny base model, engines, trainers.

    tasks/                tasks with verifiable rewards, data files, reward conventions (tasks/__init__.py maps them)
    tinymodel.py          the project's own tiny pretrained base model: tokenizer, corpus, presets, training
    tinymodel_planted.py  tiny bases on grid_paths / subset_sum with one strategy dominant, one rare (pretrain-planted)
    planted_base.py       a planted base's first look: Pass@k overall and on rare-only prompts, exact coverage
    random_models.py      randomly initialized Qwen2 / Llama models built in code (the paper's shapes, no download)
    engines/              generation behind one interface: HF and vLLM (engines/__init__.py maps them)
    rollout.py            roll a policy out on problems, score the completions, token entropy, log-probs
    seeds.py              derive_seed: the one rule turning labels into a seed (no torch)
    reward_stats.py       what the reward does on a batch: mean, spread, each reward function, by data source
    evaluate.py           Pass@k / Maj@k evaluation, and `python -m escov.llm eval`
eval_run.py           `llm eval --run`: a run's checkpoint evaluated as the run did, compared with eval.json
    problem_sets.py       the problems a run is measured on (test, held-out, probe), defined once from its settings
    prompt_lengths.py     prompts checked against the model's context before any model loads
    es/                   Evolution Strategies: the algorithm and its member-evaluation strategies (es/__init__.py)
    member_options.py     how ES evaluates its members, as settings: Ray workers, the strategy rule, option rules
    grpo.py               GRPO on an engine, settings and variants named as in TRL
    grpo_losses.py        GRPO's loss types (grpo.loss_type): how per-token terms are averaged
    grpo_objectives.py    GRPO's per-token policy terms per loss type (TRL's; cispo, sapo; GSPO's sequence level)
    grpo_covariance.py    covariance-based entropy control: loss types clip_cov and kl_cov (verl)
    grpo_entropy.py       high-entropy token selection and the entropy bonus, fixed or adaptive (TRL)
    grpo_advantages.py    GRPO's advantage estimators: grpo, grpo_passk, passk_analytic, pkpo
    grpo_exploration.py   zero-success gating and the outcome bonus, with the state they keep across steps
    grpo_variant_settings.py  the variants' settings, ranges and refused combinations (no torch)
    grpo_lora.py          LoRA adapters (peft) for GRPO: the trained module, merged weights, adapter state
    trl_reference.py      our GRPO loss against TRL's GRPOTrainer on one identical batch
    schedules.py          which algorithm runs at which step: single runs, ES->GRPO, GRPO->ES; the budgets
    settings/             every setting of a run, one file per table (settings/__init__.py maps them)
    config.py             the settings under their first name (re-exports llm/settings/)
    settings_help.py      what `llm train --help` says about each setting; TRL's names for ours
    device.py             the device a run computes on: parsed, resolved and checked in one place
    train.py              the training loop (TrainingRun) writing a run directory; `resume`
    run_stages.py         the base evaluation before the steps, the final stage after them
    shared_measurements.py  the base evaluation and step-0 probe shared by runs from the same base
    resume.py             where a run continues from: the newest checkpoint that loads
    stop_points.py        named points where a test kills a run (ESCOV_TEST_STOP_AT)
    interrupts.py         Ctrl-C and SIGTERM: stop at the next safe point
    rundir/               the run directory: its one writer and reader (rundir/__init__.py maps it)
    fingerprints.py       what a run was made from (inputs.json): a resume refuses what changed
    reward_imports.py     the modules a reward file brings in from outside the installation, found and hashed
    witnesses.py          a run's records checked against each other: checkpoints' settings, eval.json's base
    drift.py              how far training moved the weights: drift, update magnitudes, thresholded checkpoints
    lemma_measurements.py  the paper's population measurements (Lemmas 1 and 2) on a real model: probe.json
    curve.py              checkpoints evaluated along training (curve.json), `python -m escov.llm curve`
    replay_log.py         ES's replay log (replay.jsonl): each phase's start and each step's update
    replay.py             `python -m escov.llm replay`: the weights of any ES step rebuilt from the base and the log
    tracking.py           TensorBoard / W&B / trackio views of a run's measurements (report_to)
    plot_axes.py          axes every plot shares: Pass@k and step axes ticked where the data are
    gpu_standin.py        the CPU stand-in for the GPU checks (ESCOV_GPU_STANDIN=cpu)
    cli.py                `python -m escov.llm SUBCOMMAND` (pretrain, eval, train, curve, replay)
    train_cli.py          the `llm train` command: flags, a start line, the run, a summary
"""
