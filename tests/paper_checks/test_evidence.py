"""How a report groups runs (paper_checks/evidence.py): each config's variant name written out by hand from the
module's rules, one setting at a time and in combination, and the Pass@k budgets runs of different eval_ks share."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from escov.paper_checks.evidence import Evidence, untagged_settings, variant


@pytest.mark.parametrize(
    "config, name",
    [
        ({"algo": "es", "es": {"center_scale": 1.0}}, "es"),
        ({"algo": "es", "es": {"center_scale": 0.5}}, "es[rescaled]"),
        ({"algo": "es", "es": {"center_scale": 2.0}}, "es[rescaled]"),
        ({"algo": "es", "es": {"member_temperature": 0.0}}, "es"),
        ({"algo": "es", "es": {"member_temperature": 0.7}}, "es[sampled]"),
        ({"algo": "es", "es": {"zscore": False, "antithetic": True}}, "es[no-zscore,two-point]"),
        ({"algo": "es", "es": {"zscore": True, "antithetic": False, "null_control": False}}, "es"),
        ({"algo": "es", "es": {"null_control": True, "inplace_bf16": True}}, "es[null,bf16]"),
        ({"algo": "es", "population": {"noise_rank": 4}}, "es[rank-4]"),
        ({"algo": "es", "es": {"tag": "small-sigma"}, "population": {"noise_rank": 2}}, "es[rank-2,small-sigma]"),
        ({"algo": "grpo", "population": {"noise_rank": 4}, "es": {"zscore": False, "tag": "x"}}, "grpo"),
        ({"algo": "grpo", "grpo": {"scale_rewards": True}}, "grpo"),
        ({"algo": "grpo", "grpo": {"scale_rewards": "group"}}, "grpo"),
        ({"algo": "grpo", "grpo": {"scale_rewards": "batch"}}, "grpo[scale-batch]"),
        ({"algo": "grpo", "grpo": {"scale_rewards": "none"}}, "grpo[scale-none]"),
        ({"algo": "grpo", "grpo": {"loss_type": "grpo", "epsilon_high": 0.0}}, "grpo"),
        (
            {"algo": "grpo", "grpo": {"loss_type": "dapo", "epsilon": 0.2, "epsilon_high": 0.28}},
            "grpo[dapo,clip-high-0.28]",
        ),
        ({"algo": "grpo", "grpo": {"epsilon": 0.3}}, "grpo"),
        ({"algo": "grpo", "grpo": {"mask_truncated_completions": True}}, "grpo[mask-truncated]"),
        ({"algo": "grpo", "grpo": {"lr_scheduler_type": "cosine"}}, "grpo[cosine]"),
        ({"algo": "grpo", "grpo": {"use_peft": True}}, "grpo[lora-r16]"),
        ({"algo": "grpo", "grpo": {"use_peft": True, "lora_r": 4}}, "grpo[lora-r4]"),
        ({"algo": "es-grpo", "es": {"zscore": False}, "grpo": {"loss_type": "dr_grpo"}}, "es-grpo[no-zscore,dr_grpo]"),
        ({"algo": "grpo-es", "population": {"noise_rank": 8}}, "grpo-es[rank-8]"),
    ],
)
def test_a_configs_variant_names_each_setting_that_changes_the_method(config, name):
    assert variant(config) == name


def test_the_untagged_settings_leave_out_the_tags_and_the_population_size_and_only_es_runs_have_them():
    config = {
        "algo": "es",
        "es": {"sigma": 0.001, "alpha": 0.0005, "population_size": 16, "zscore": False, "center_scale": 2.0},
    }
    assert untagged_settings(config) == (("alpha", "0.0005"), ("sigma", "0.001"))
    assert untagged_settings(config | {"algo": "grpo"}) == ()


def _run(name: str, ks: list[int] | None):
    return SimpleNamespace(name=name, eval=None if ks is None else {"final": {"pass_at_k": {str(k): 0.5 for k in ks}}})


def test_runs_of_other_eval_ks_are_compared_on_the_ks_they_share_and_each_run_lacking_one_is_named():
    evidence = Evidence()
    runs = [_run("a", [1, 16, 32]), _run("b", [1, 32, 64]), _run("c", None)]
    assert evidence.common_ks(runs) == ["1", "32"]
    assert evidence.problems == [
        "run a lacks Pass@k for k = 64 in its final evaluation (its eval_ks differ): Pass@k across runs uses the ks "
        "they share",
        "run b lacks Pass@k for k = 16 in its final evaluation (its eval_ks differ): Pass@k across runs uses the ks "
        "they share",
    ]
    same = Evidence()
    assert same.common_ks([_run("a", [32, 1, 16]), _run("b", [1, 16, 32])]) == ["1", "16", "32"]
    assert same.problems == [] and same.common_ks([_run("c", None)]) == []


def _trained(name: str, model: str, algo: str, seed: int, population: int | None = None):
    es = {"population_size": population, "sigma": 0.001} if population else {}
    return SimpleNamespace(name=name, seed=seed, config={"algo": algo, "model": model, "es": es}, eval=None)


def test_a_rows_runs_are_those_of_the_main_model_and_for_es_the_main_population_of_that_model():
    """Model A has the most runs (4 of 7), so it is the main model; model B has more ES runs (N = 16) than A
    (N = 8), but the main population is A's; rows are sorted by seed."""
    runs = [
        _trained("a-grpo-2", "A", "grpo", 2),
        _trained("a-grpo-0", "A", "grpo", 0),
        _trained("a-grpo-1", "A", "grpo", 1),
        _trained("a-es-0", "A", "es", 0, 8),
        _trained("b-es-0", "B", "es", 0, 16),
        _trained("b-es-1", "B", "es", 1, 16),
        _trained("b-grpo-0", "B", "grpo", 0),
    ]
    evidence = Evidence(runs=runs)
    assert (evidence.main_model(), evidence.main_population()) == ("A", 8)
    assert [r.name for r in evidence.by_variant("grpo")] == ["a-grpo-0", "a-grpo-1", "a-grpo-2"]
    assert [r.name for r in evidence.by_variant("es")] == ["a-es-0"]
    assert [r.name for r in evidence.by_variant("es", sweep=True)] == ["a-es-0", "b-es-0", "b-es-1"]
    assert Evidence().main_model() is None and Evidence().main_population() is None
