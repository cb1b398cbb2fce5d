"""How a report groups runs (paper_checks/evidence.py): each config's variant name written out by hand from the
module's rules, one setting at a time and in combination, and the Pass@k budgets runs of different eval_ks share."""

from __future__ import annotations

import json
import math
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
        ({"algo": "es", "population": {"batched": True}}, "es"),  # no noise_rank recorded: full rank
        ({"model": "m"}, "unknown"),  # a config without its algorithm
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
    assert untagged_settings({"algo": "es"}) == ()  # a config without its [es] table: ES's defaults, none untagged


def test_a_runs_held_out_evaluation_is_read_from_its_eval_json():
    from escov.paper_checks.evidence import heldout_of

    final, base = {"pass_at_k": {"1": 0.4}}, {"pass_at_k": {"1": 0.5}}
    run = SimpleNamespace(eval={"final": {"pass_at_k": {"1": 0.9}}, "heldout": {"final": final, "base": base}})
    assert heldout_of(run, "final") is final and heldout_of(run, "base") is base
    assert heldout_of(SimpleNamespace(eval={"final": {}}), "final") is None  # a run without a held-out task
    assert heldout_of(SimpleNamespace(eval=None), "final") is None  # a run without eval.json


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
    # ks in numeric order, not the strings' (2 before 16)
    assert Evidence().common_ks([_run("a", [16, 2, 1]), _run("b", [2, 16, 1])]) == ["1", "2", "16"]
    short = Evidence()
    short.common_ks([_run("a", [1]), _run("b", [1, 2, 16])])
    assert short.problems[0].startswith("run a lacks Pass@k for k = 2, 16 in its final evaluation")
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


def test_a_row_keeps_the_main_population_of_the_main_model_and_sorts_by_seed_then_name():
    """On the main model alone, an ES run of another population size (or none recorded) is out of the main row (a
    sweep keeps the other size; the run without ES settings differs in them too); GRPO has no population; a row is
    sorted by seed, then by name (seed 0 first)."""
    runs = [
        _trained("z-es-0", "A", "es", 0, 8),
        _trained("a-es-1", "A", "es", 1, 8),
        _trained("b-es-1", "A", "es", 1, 8),
        _trained("es-16", "A", "es", 2, 16),
        _trained("es-none", "A", "es", 3),
        _trained("grpo-0", "A", "grpo", 0),
    ]
    del runs[4].config["es"]  # config.json without its [es] table
    evidence = Evidence(runs=runs)
    assert [r.name for r in evidence.by_variant("es")] == ["z-es-0", "a-es-1", "b-es-1"]
    assert [r.name for r in evidence.by_variant("es", sweep=True)] == ["z-es-0", "a-es-1", "b-es-1", "es-16"]
    assert [r.name for r in evidence.by_variant("grpo")] == ["grpo-0"]


def test_a_row_keeps_the_most_common_untagged_es_settings_and_names_the_runs_left_out():
    def es(name, seed, **settings):
        run = _trained(name, "A", "es", seed, 8)
        run.config["es"] |= settings
        return run

    row = dict(alpha=5e-4, momentum=0.9, noise_chunk=2)
    runs = [es("a0", 0, **row), es("a1", 1, **row), es("a2", 2, **row), es("b0", 0, alpha=1e-3, momentum=0.5)]
    evidence = Evidence(runs=runs)
    assert [r.name for r in evidence.by_variant("es")] == ["a0", "a1", "a2"]
    assert evidence.problems == [
        "es: runs b0 left out of the row: untagged ES settings differ: alpha 0.001 (row: 0.0005), momentum 0.5 "
        "(row: 0.9), noise_chunk unset (row: 2)"
    ]
    lacking = Evidence(runs=[es("a0", 0, **row), es("a1", 1, **row), es("c0", 0)])
    lacking.by_variant("es")
    assert lacking.problems == [
        "es: runs c0 left out of the row: untagged ES settings differ: , alpha unset (row: 0.0005), momentum unset "
        "(row: 0.9), noise_chunk unset (row: 2)"
    ]
    # two settings of two runs each: the larger settings tuple is kept (sigma alone sorts after alpha's), the other
    # runs named with the setting the row lacks
    tied = Evidence(runs=[es("a0", 0, alpha=5e-4), es("a1", 1, alpha=5e-4), es("c0", 0), es("c1", 1)])
    assert [r.name for r in tied.by_variant("es")] == ["c0", "c1"]
    assert tied.problems == [
        "es: runs a0, a1 left out of the row: untagged ES settings differ: alpha 0.0005 (row: unset)"
    ]


def _written(tmp_path, text: str):
    path = tmp_path / "in.json"
    path.write_text(text)
    return path


def test_the_theory_file_is_a_list_of_named_checks_with_a_boolean_verdict_and_nan_is_read(tmp_path):
    from escov.paper_checks.evidence import load_theory_json

    good = '[{"name": "lemma1/a", "holds": true, "measured": NaN}, {"name": "b", "holds": false}]'
    got = load_theory_json(_written(tmp_path, good))
    assert [d["name"] for d in got] == ["lemma1/a", "b"] and math.isnan(got[0]["measured"])
    for text, message in (
        ('{"name": "a"}', "expected the JSON list printed by `python -m escov.theory --json`"),
        ('[{"name": "a", "holds": true}, 3]', "item 1 is not a theory check"),
        ('[{"name": "a", "holds": 1}]', "item 0 is not a theory check"),
        ('[{"holds": true}]', "item 0 is not a theory check"),
    ):
        with pytest.raises(ValueError) as err:
            load_theory_json(_written(tmp_path, text))
        assert str(err.value).startswith(f"{tmp_path / 'in.json'}: {message}")


def test_the_simulate_summary_is_read_by_experiment_name_from_any_of_its_layouts(tmp_path):
    from escov.paper_checks.evidence import load_simulate_summary

    claim = {"claim": "c", "verdict": "holds", "why": "w"}
    by_name = {"e1": {"claims": [claim]}, "e2": {"claims": []}}
    as_list = [{"name": "e1", "claims": [claim]}, {"name": "e2", "claims": []}]
    assert load_simulate_summary(_written(tmp_path, json.dumps(by_name))) == by_name
    assert load_simulate_summary(_written(tmp_path, json.dumps({"experiments": as_list}))) == {
        "e1": as_list[0],
        "e2": as_list[1],
    }
    assert load_simulate_summary(_written(tmp_path, json.dumps({"e": {"note": "no claims"}}))) == {
        "e": {"note": "no claims"}
    }
    path = tmp_path / "in.json"
    for data, message in (
        ([{"claims": []}], f"{path}: expected a list of experiment summaries, each with a 'name'"),
        ("text", f"{path}: expected the summary.json written by `python -m escov.simulate all`"),
        ({"e": {"claims": [{"claim": "c", "verdict": "holds"}]}}, f"{path}: experiment 'e' is not a summary"),
        ({"e": 3}, f"{path}: experiment 'e' is not a summary"),
        (
            {"e": {"claims": [claim | {"verdict": "maybe"}]}},
            f"{path}: experiment 'e' has verdicts ['maybe'], not the words every level uses "
            "(holds, does not hold, inconclusive, identity (not evidence), finding); "
            "rerun `python -m escov.simulate all`",
        ),
    ):
        with pytest.raises(ValueError) as err:
            load_simulate_summary(_written(tmp_path, json.dumps(data)))
        assert str(err.value).startswith(message)
    finding = {"e": {"claims": [claim | {"verdict": "finding"}]}}
    assert load_simulate_summary(_written(tmp_path, json.dumps(finding))) == finding
    # an undefined statistic of that level is NaN there, and read
    undefined = load_simulate_summary(_written(tmp_path, '{"e": {"claims": [], "ratio": NaN}}'))
    assert math.isnan(undefined["e"]["ratio"])


def test_a_lemma_grid_row_needs_every_field_of_its_type_and_a_two_sided_interval(tmp_path):
    from escov.paper_checks.evidence import LEMMA_GRID_FIELDS, load_lemma_grid

    row = {
        "sigma": 0.01,
        "members": 8,
        "measured": 1.0,
        "predicted": 1.1,
        "ratio": 0.9,
        "ratio_ci": [0.8, 1.0],
        "ratios": [0.9],
        "s_measured": 2,
    }
    assert load_lemma_grid(_written(tmp_path, json.dumps([row]))) == [row]
    (undefined,) = load_lemma_grid(_written(tmp_path, json.dumps([row | {"ratio": math.nan}])))
    assert math.isnan(undefined["ratio"])  # an undefined ratio is read, as for the theory file
    path = tmp_path / "in.json"
    with pytest.raises(ValueError) as err:
        load_lemma_grid(_written(tmp_path, json.dumps(row)))
    assert str(err.value) == f"{path}: expected the JSON list of grid rows written by `paper_checks reproduce`"
    for change, bad in (
        ({"members": 8.0}, ["members"]),
        ({"sigma": True}, ["sigma"]),  # a boolean is no number here
        ({"ratio_ci": [0.8]}, ["ratio_ci"]),
        ({"ratios": None, "ratio": "x"}, ["ratio", "ratios"]),
    ):
        with pytest.raises(ValueError) as err:
            load_lemma_grid(_written(tmp_path, json.dumps([row, row | change])))
        assert str(err.value) == f"{path}: row 1 is not a grid row (fields {bad} missing or of the wrong type)"
    assert set(LEMMA_GRID_FIELDS) == set(row)
