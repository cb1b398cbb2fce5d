"""llm/schedules.py's plan of a run's phases, worked by hand from its docstring's costs: per batch prompt one GRPO
step costs (2 + 6 mu) G FLOPs (in units of P L) and G responses, one ES step 2 N m FLOPs and N m responses; a phase
given b GRPO steps of budget runs round(b cost_GRPO / cost_ES) steps (at least 1)."""

import pytest

from escov.llm.config import TrainConfig
from escov.llm.schedules import Phase, describe, phase_at, plan, step_cost


def _cfg(**settings) -> TrainConfig:
    return TrainConfig.from_dict({"model": "m", "out": "o", "steps": 10, "batch_size": 4} | settings)


def test_each_steps_cost_per_batch_prompt():
    cfg = _cfg(
        grpo={"num_generations": 8, "num_iterations": 2},
        es={"population_size": 6, "member_temperature": 1.0, "member_samples": 3},
    )
    assert step_cost("grpo", cfg) == {"flops": (2 + 6 * 2) * 8, "responses": 8.0}
    assert step_cost("es", cfg) == {"flops": 2 * 6 * 3, "responses": 18.0}


@pytest.mark.parametrize(
    "settings, phases",
    [
        # the paper's match: N = 32 = 4 G with greedy members and mu = 1, one ES step costs one GRPO step
        (dict(algo="es", es={"population_size": 32}, grpo={"num_generations": 8}), [("es", 0, 10, 10)]),
        (dict(algo="grpo"), [("grpo", 0, 10, 10)]),
        # N = 16 = 2 G: an ES step costs half a GRPO step, so twice the steps
        (dict(algo="es", es={"population_size": 16}, grpo={"num_generations": 8}), [("es", 0, 20, 10)]),
        # responses: G = 8 per GRPO step, N = 32 per ES step: a quarter of the steps (10 / 4 = 2.5 rounds to 2)
        (dict(algo="es", budget="responses", es={"population_size": 32}), [("es", 0, 2, 10)]),
        # N = 12: 10 * 8 / 12 = 6.67 rounds to 7 (not truncated to 6)
        (dict(algo="es", budget="responses", es={"population_size": 12}), [("es", 0, 7, 10)]),
        # ES then GRPO: 4 GRPO steps of budget in ES (N = 64: 2 GRPO steps each, so 2 steps), then 6 GRPO steps
        (
            dict(algo="es-grpo", switch_step=4, es={"population_size": 64}, grpo={"num_generations": 8}),
            [("es", 0, 2, 4), ("grpo", 2, 6, 6)],
        ),
        (
            dict(algo="grpo-es", switch_step=3, es={"population_size": 16}, grpo={"num_generations": 8}),
            [("grpo", 0, 3, 3), ("es", 3, 14, 7)],
        ),
        # a phase's steps never round to 0: 1 GRPO step of budget with N = 256 (8 GRPO steps each) is 1 ES step
        (dict(algo="es-grpo", switch_step=1, es={"population_size": 256}), [("es", 0, 1, 1), ("grpo", 1, 9, 9)]),
    ],
)
def test_the_phases_by_hand(settings, phases):
    got = plan(_cfg(**settings))
    assert got == [Phase(algo=a, start=s, steps=n, budget=b) for a, s, n, b in phases]


def test_phase_at_each_step_and_past_the_end():
    phases = plan(_cfg(algo="es-grpo", switch_step=4, es={"population_size": 64}))  # es 0-1, grpo 2-7
    assert [phase_at(phases, t).algo for t in range(8)] == ["es"] * 2 + ["grpo"] * 6
    with pytest.raises(ValueError, match=r"^step must lie in \[0, 8\), got 8$"):
        phase_at(phases, 8)
    with pytest.raises(ValueError, match=r"^step must lie in \[0, 8\), got -1$"):
        phase_at(phases, -1)


def test_what_config_json_records_of_the_budget():
    cfg = _cfg(algo="es-grpo", switch_step=4, es={"population_size": 64}, grpo={"num_generations": 8})
    record = describe(cfg, plan(cfg))
    es_flops, grpo_flops = 2 * 64 * 2, 8 * 8 * 6  # per batch prompt over each phase: 2 ES steps, 6 GRPO steps
    assert record["budget"] == "flops" and record["budget_grpo_steps"] == 10 and record["total_steps"] == 8
    assert [r["flops_per_prompt_PL"] for r in record["phases"]] == [es_flops, grpo_flops]
    assert [r["responses"] for r in record["phases"]] == [64 * 2 * 4, 8 * 6 * 4]
    assert record["flops_total_PL"] == 4 * (es_flops + grpo_flops)
    assert record["responses_total"] == 64 * 2 * 4 + 8 * 6 * 4
    assert record["phases"][1] == {"algo": "grpo", "start": 2, "steps": 6, "budget": 6} | {
        "flops_per_prompt_PL": grpo_flops,
        "responses": 8 * 6 * 4,
    }
