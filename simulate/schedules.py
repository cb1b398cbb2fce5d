"""Sequential schedules (GRPO->ES, ES->GRPO) and the three ways to give two methods the same budget.

Costs of one update on a batch of B prompts:
- "responses": sampled responses, G B for GRPO, N B m for ES (m rollouts per member and prompt);
- "updates":   1 for either method;
- "flops":     the paper's count per response token and parameter (theory/budget.py, as for real
               training): GRPO (2 + 6 mu) G B (generate + forward/backward per surrogate pass; 8 G B at
               mu = 1), ES 2 N B m (forward only); with mu = m = 1 they are equal exactly when N = 4 G.
A budget is a total in one of these units; a schedule gives the first method `switch` of it and
the second the rest, each converted to a whole number of updates.
"""

from __future__ import annotations

from .bandit import _check_range
from .es import ESConfig
from .grpo import GRPOConfig

BUDGETS = ("responses", "updates", "flops")


def step_cost(cfg: GRPOConfig | ESConfig, n_batch: int, budget: str) -> float:
    """Cost of one update of cfg on n_batch prompts, in the units of `budget`."""
    if budget not in BUDGETS:
        raise ValueError(f"budget must be one of {BUDGETS}, got {budget!r}")
    _check_range("n_batch", n_batch, 1, integer=True)
    if budget == "updates":
        return 1.0
    if budget == "responses":
        return float(cfg.responses_per_step(n_batch))
    return cfg.flops_per_step(n_batch)


def steps_for(cfg: GRPOConfig | ESConfig, total: float, n_batch: int, budget: str) -> int:
    """Whole number of updates of cfg that spend `total` (rounded to nearest)."""
    _check_range("total", total, 0)
    return int(round(total / step_cost(cfg, n_batch, budget)))


def schedule(
    first: GRPOConfig | ESConfig,
    second: GRPOConfig | ESConfig | None,
    total: float,
    n_batch: int,
    budget: str = "flops",
    switch: float = 1.0,
) -> list[tuple]:
    """Phases [(first, steps1), (second, steps2)] spending `switch` of the budget on first, the rest on second."""
    _check_range("switch", switch, 0, 1)
    phases = [(first, steps_for(first, switch * total, n_batch, budget))]
    if second is not None:
        phases.append((second, steps_for(second, (1 - switch) * total, n_batch, budget)))
    elif switch != 1.0:
        raise ValueError("switch must be 1 when there is no second method")
    return phases


def grpo_budget(grpo: GRPOConfig, grpo_steps: int, n_batch: int, budget: str) -> float:
    """The budget that `grpo_steps` GRPO updates spend: the common yardstick of a comparison."""
    _check_range("grpo_steps", grpo_steps, 0, integer=True)
    return grpo_steps * step_cost(grpo, n_batch, budget)
