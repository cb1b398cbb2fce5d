"""Every run of a reproduction, from its budget (paper_checks/reproduce/budgets.py): run name -> TrainConfig as a dict
(plan), with the population sweep's equal update budgets, the rescaled variant's reward spread from the main ES
runs, and what the planned runs give the checks (planned_needs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from escov.llm.rundir import read_steps
from escov.paper_checks.reproduce.budgets import ES_VARIANTS, PROBED, SWEEP_EVAL, THRESHOLDED, Budget
from escov.theory.budget import es_flops, grpo_flops


def equal_update_budget(budget: Budget, population_size: int) -> int:
    """The `steps` (GRPO-step budget, FLOP-matched) at which ES with this population makes as many
    updates as the main ES runs: the paper's Table 6 compares N = 8 ... 64 after equal updates.
    One step of each costs what theory/budget.py says (the cost llm/schedules.py plans runs with)."""
    m = budget.es.get("member_samples", 1)
    grpo = grpo_flops(budget.grpo["num_generations"], budget.grpo.get("num_iterations", 1))
    main = es_flops(budget.es["population_size"], m)
    updates = budget.common["steps"] * grpo / main
    steps = updates * es_flops(population_size, m) / grpo
    if updates != int(updates) or steps != int(steps) or steps < 1:
        raise ValueError(f"population {population_size}: {updates:g} updates are not a whole GRPO-step budget")
    return int(steps)


def es_steps(budget: Budget, es: dict, updates: int | None = None) -> int:
    """The `steps` (a budget in GRPO steps of equal FLOPs, llm/schedules.py step_cost) at which an ES run with these
    ES settings makes `updates` (default budget.es_updates) updates: the answer's ES runs run to their cap while
    GRPO runs its steps."""
    updates = budget.es_updates if updates is None else updates
    from escov.llm.config import TrainConfig
    from escov.llm.schedules import plan as phases
    from escov.llm.schedules import step_cost

    probe = TrainConfig.from_dict(
        budget.common | {"algo": "es", "steps": 1, "task": budget.task, "es": es, "grpo": budget.grpo},
        source="budget ES settings",
    )
    steps = round(updates * step_cost("es", probe)["flops"] / step_cost("grpo", probe)["flops"])
    made = phases(TrainConfig.from_dict(probe.to_dict() | {"steps": steps}))[0].steps
    if made != updates:
        raise ValueError(f"ES settings {es}: {updates} updates are no whole budget of GRPO steps ({made})")
    return steps


def mean_reward_std(run_dir: Path) -> float:
    """Mean over the updating steps of a finished ES run of std(R) across members (es_reward_std)."""
    stds = [r["es_reward_std"] for r in read_steps(run_dir) if r.get("es_reward_std", 0) > 0]
    if not stds:
        raise ValueError(f"{run_dir}/metrics.jsonl: no ES step with reward spread (es_reward_std > 0)")
    return float(np.mean(stds))


def plan(
    budget: Budget, model: Path, sweep_model: Path | None, reward_std: dict[int, float] | None = None
) -> dict[str, dict]:
    """Every run of a reproduction: run name -> TrainConfig as a dict (without `out`).

    reward_std: seed -> mean std(R) of that seed's main ES run; with it the plan also holds the
    rescaled centered variant of the seeds it names (center_scale = 1 / std, so its update has the z-scored norm on
    average)."""
    runs: dict[str, dict] = {}

    def add(name: str, algo: str, seed: int, model_dir: Path, es: dict | None = None, **extra) -> None:
        variant = name.rsplit("-s", 1)[0]
        skip = ({} if variant in THRESHOLDED else {"threshold_keep": ()}) | (
            {} if variant in PROBED else {"probe": False, "probe_every": 0}
        )
        settings = budget.es | (es or {})
        long_es = {}  # the answer's ES runs: their length in updates (per variant where named), checkpoints, probe
        if algo == "es" and budget.es_updates is not None and "steps" not in extra:
            updates = dict(budget.es_variant_updates).get(variant)
            long_es = (budget.es_common or {}) | {"steps": es_steps(budget, settings, updates)}
        runs[name] = (
            budget.common
            | long_es
            | {
                "algo": algo,
                "model": str(model_dir),
                "seed": seed,
                "task": budget.task,
                "es": settings,
                "grpo": budget.grpo,
            }
            | skip
            | extra
        )

    switch = max(1, int(budget.common["steps"] * budget.switch_fraction))
    for seed in budget.seeds:
        add(f"es-s{seed}", "es", seed, model)
        add(f"grpo-s{seed}", "grpo", seed, model)
    for seed in budget.seeds:
        if budget.schedules:
            add(f"es-grpo-s{seed}", "es-grpo", seed, model, switch_step=switch)
            add(f"grpo-es-s{seed}", "grpo-es", seed, model, switch_step=switch)
        for name, overrides in ES_VARIANTS.items():
            if budget.es_variants is not None and name not in budget.es_variants:
                continue
            extra = {"dtype": "bfloat16", "population": {"batched": False}} if name == "es-bf16" else {}
            add(f"{name}-s{seed}", "es", seed, model, overrides, **extra)
        if budget.arms is not None and seed in budget.arms.null_seeds and "es-null" not in (budget.es_variants or ()):
            add(f"es-null-s{seed}", "es", seed, model, ES_VARIANTS["es-null"])  # the answer's null arm
        if (
            reward_std is not None
            and seed in reward_std
            and (budget.es_variants is None or "es-rescaled" in budget.es_variants)
        ):
            add(f"es-rescaled-s{seed}", "es", seed, model, {"zscore": False, "center_scale": 1.0 / reward_std[seed]})
    for n in budget.sweep_populations:
        for label, model_dir in (("base", model), ("other", sweep_model)):
            if model_dir is None:
                continue
            for seed in budget.seeds:
                if not (label == "base" and n == budget.es["population_size"]):  # those are the main ES runs
                    add(
                        f"sweep-{label}-N{n}-s{seed}",
                        "es",
                        seed,
                        model_dir,
                        {"population_size": n},
                        **SWEEP_EVAL | {"steps": equal_update_budget(budget, n)},
                    )
    return runs


def planned_needs(budget: Budget) -> set[tuple[str, str]]:
    """What the budget's planned runs give the checks (real_checks.provided over every run of `plan`, with the
    rescaled variant the plan adds once the main ES runs exist, and TrainConfig's defaults for what the budget
    leaves unset): the report says "not run in this budget" for a claim that needs anything else."""
    from escov.llm.config import TrainConfig
    from escov.paper_checks.real_checks import provided

    other = Path("base-sweep") if budget.sweep_populations else None
    # any reward spread other than 1 gives center_scale != 1, the tag of the rescaled variant (evidence.ES_TAGS)
    runs = plan(budget, Path("base"), other, {seed: 0.5 for seed in budget.seeds})
    needs: set[tuple[str, str]] = set()
    for name, cfg in runs.items():
        full = TrainConfig.from_dict(cfg | {"out": name}, source=f"budget run {name}").to_dict()
        needs |= provided(full, curve=budget.curve is not None, sweep=name.startswith("sweep-"))
    return needs
