"""Which algorithm runs at which step: single runs and the sequential schedules ES->GRPO, GRPO->ES.

A run's budget is `steps` counted in GRPO steps. One step of each algorithm costs (per prompt of
the batch, in units of P L, the model's parameters times tokens per completion; theory/budget.py,
the same model as the bandit's):

    flops:      GRPO (2 + 6 mu) G   (generation, then mu = num_iterations forward/backward passes;
                                     8 G at mu = 1, docs/paper.md: 8 T B G P L)
                ES   2 N m          (N members, m rollouts per prompt each: 2 T N D P L)
    responses:  GRPO G     ES N m   (sampled responses)

so an ES phase given b GRPO steps of budget runs round(b * cost_GRPO / cost_ES) steps. Under the
FLOP match with greedy members (m = 1), mu = 1 and N = 4G, one ES step costs exactly one GRPO step
(the paper's N = 32 against G = 8). Phases: es / grpo run alone for the whole budget; es-grpo
spends switch_step GRPO steps of budget in ES and the rest in GRPO; grpo-es the other way round.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from escov.theory.budget import es_flops, grpo_flops


@dataclass(frozen=True)
class Phase:
    algo: str  # "es" or "grpo"
    start: int  # first global step of the phase
    steps: int  # number of steps of this algorithm
    budget: int  # GRPO-step equivalents of budget given to the phase


def step_cost(algo: str, cfg) -> dict[str, float]:
    """Cost of one step per batch prompt: FLOPs in units of P L, and sampled responses."""
    if algo == "grpo":
        g = cfg.grpo.num_generations
        return {"flops": grpo_flops(g, cfg.grpo.num_iterations), "responses": float(g)}
    n, m = cfg.es.population_size, cfg.es.member_samples
    return {"flops": es_flops(n, m), "responses": float(n * m)}


def plan(cfg) -> list[Phase]:
    """The run's phases, each with its number of steps under the configured budget."""
    if cfg.algo in ("es", "grpo"):
        parts = [(cfg.algo, cfg.steps)]
    else:
        first, second = cfg.algo.split("-")
        parts = [(first, cfg.switch_step), (second, cfg.steps - cfg.switch_step)]
    grpo_cost = step_cost("grpo", cfg)[cfg.budget]
    phases, start = [], 0
    for algo, budget in parts:
        n = max(1, round(budget * grpo_cost / step_cost(algo, cfg)[cfg.budget]))
        phases.append(Phase(algo=algo, start=start, steps=n, budget=budget))
        start += n
    return phases


def phase_at(phases: list[Phase], step: int) -> Phase:
    for p in phases:
        if p.start <= step < p.start + p.steps:
            return p
    raise ValueError(f"step must lie in [0, {phases[-1].start + phases[-1].steps}), got {step}")


def describe(cfg, phases: list[Phase]) -> dict:
    """What config.json records about the budget: its kind and what each phase spends."""
    rows = []
    for p in phases:
        cost = step_cost(p.algo, cfg)
        rows.append(
            {
                **asdict(p),
                "flops_per_prompt_PL": cost["flops"] * p.steps,
                "responses": int(cost["responses"] * p.steps * cfg.batch_size),
            }
        )
    return {
        "budget": cfg.budget,
        "budget_grpo_steps": cfg.steps,
        "total_steps": sum(p.steps for p in phases),
        "flops_total_PL": cfg.batch_size * sum(r["flops_per_prompt_PL"] for r in rows),
        "responses_total": sum(r["responses"] for r in rows),
        "phases": rows,
    }
