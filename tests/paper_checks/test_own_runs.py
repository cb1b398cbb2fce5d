"""Users' own runs grouped and compared (paper_checks/own_runs.py) on runs built in memory: the flattened settings,
the groups and their names, each group's reward and Pass@k changes with their intervals, every value by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from escov.paper_checks.own_runs import _short, compare_group, flat_settings, group_runs, is_own_run
from escov.paper_checks.rundir import Run
from escov.theory.decisions import over_seeds


def test_the_settings_are_flattened_without_those_that_only_change_where_or_how_fast_a_run_computes():
    config = {
        "algo": "es",
        "seed": 3,
        "out": "runs/x",
        "reward_function": ["m:f", "m:g"],
        "es": {"sigma": 0.01, "population_size": 8},
        "population": {"batched": True, "noise_rank": 0},
        "grpo": {"micro_batch_size": 4, "beta": 0.0},
        "schedule": {"phases": [1, 2]},
    }
    assert flat_settings(config) == {
        "algo": "es",
        "reward_function": ("m:f", "m:g"),
        "es.sigma": 0.01,
        "es.population_size": 8,
        "population.noise_rank": 0,
        "grpo.beta": 0.0,
    }


def _run(name: str, seed: int, eval: dict | None = None, **config) -> Run:
    return Run(path=Path(name), config={"seed": seed, "task": "prompts"} | config, eval=eval)


def test_groups_of_one_method_are_named_by_the_settings_that_differ_beyond_the_methods_name():
    runs = [
        _run("a0", 0, algo="grpo", grpo={"learning_rate": 1e-5, "scale_rewards": "group"}),
        _run("a1", 1, algo="grpo", grpo={"learning_rate": 1e-5, "scale_rewards": "group"}, threads=8),
        _run("b0", 0, algo="grpo", grpo={"learning_rate": 3e-5, "scale_rewards": True}),
        _run("c0", 0, algo="es", es={"sigma": 0.001}),
    ]
    groups = group_runs(runs)
    assert [(g.name, [r.name for r in g.runs], g.seeds) for g in groups] == [
        ("es", ["c0"], [0]),
        ("grpo (grpo.learning_rate=1e-05)", ["a0", "a1"], [0, 1]),  # threads only change how fast: one group
        ("grpo (grpo.learning_rate=3e-05)", ["b0"], [0]),  # scale_rewards True is "group": in the method's name
    ]


def test_a_groups_seeds_are_listed_in_order_whatever_the_order_of_its_runs():
    runs = [_run(f"r{seed}", seed, algo="es") for seed in (3, 0, 2)]
    assert [g.seeds for g in group_runs(runs)] == [[0, 2, 3]]


def test_the_sections_groups_name_method_settings_seeds_and_runs_as_shown():
    from escov.paper_checks.own_runs import own_runs_section

    runs = [
        _run("a0", 0, algo="grpo", grpo={"learning_rate": 1e-5}, reward_function=["m:" + "f" * 45]),
        _run("a1", 1, algo="grpo", grpo={"learning_rate": 1e-5}, reward_function=["m:" + "f" * 45]),
        _run("b0", 0, algo="grpo", grpo={"learning_rate": 3e-5}, reward_function=["m:" + "f" * 45]),
    ]
    section = own_runs_section(runs, show=lambda path: f"runs/{path}")
    assert section["groups"] == [
        {
            "name": "grpo (grpo.learning_rate=1e-05)",
            "method": "grpo",
            "settings": {"grpo.learning_rate": "1e-05"},
            "seeds": [0, 1],
            "runs": ["runs/a0", "runs/a1"],
        },
        {
            "name": "grpo (grpo.learning_rate=3e-05)",
            "method": "grpo",
            "settings": {"grpo.learning_rate": "3e-05"},
            "seeds": [0],
            "runs": ["runs/b0"],
        },
    ]
    assert section["comparison"] == []  # no run holds base and final evaluations


def test_a_long_value_is_cut_to_40_characters_and_own_runs_are_told_by_data_or_rewards():
    assert _short("x" * 40) == "x" * 40 and _short("x" * 41) == "x" * 37 + "..." and _short((1, 2)) == "1,2"
    assert is_own_run({"test_data": "t.jsonl"}) and is_own_run({"data": "d.jsonl"})
    assert is_own_run({"reward_function": ["m:f"]}) and is_own_run({"task": "prompts"})
    assert not is_own_run({"task": "countdown", "reward_function": [], "data": ""})


def _evaluation(per_prompt: list[int], rewards: dict, ks=("1", "2")) -> dict:
    n = 4
    return {
        "n": n,
        "correct": "total >= 1",
        "per_problem": [{"id": f"p{i}", "correct": c} for i, c in enumerate(per_prompt)],
        "pass_at_k": {k: float(np.mean(per_prompt)) / n * int(k) for k in ks},
        "rewards": {name: {"mean": v} for name, v in rewards.items()},
    }


def test_a_groups_changes_are_final_minus_base_over_the_runs_with_both_evaluations():
    runs = [
        _run("s0", 0, eval={"base": _evaluation([1, 0], {"acc": 0.2}), "final": _evaluation([3, 2], {"acc": 0.5})}),
        _run("s1", 1, eval={"base": _evaluation([0, 1], {}), "final": _evaluation([4, 1], {"acc": 0.9})}),
        _run("s2", 2, eval={"base": _evaluation([2, 2], {"acc": 0.4}), "final": _evaluation([2, 4], {"acc": 0.6})}),
        _run("s3", 3, eval={"base": _evaluation([1, 1], {"acc": 0.1})}),  # no final: left out
    ]
    (group,) = group_runs(runs)
    got = compare_group(group)
    assert got["seeds"] == [0, 1, 2] and got["correct"] == "total >= 1"
    # the reward: seeds whose base and final both hold it (s1's base lacks it)
    assert got["rewards"]["acc"]["base"] == pytest.approx(0.3) and got["rewards"]["acc"]["final"] == pytest.approx(0.55)
    assert got["rewards"]["acc"]["change"] == pytest.approx(over_seeds(np.array([0.3, 0.2])))
    assert list(got["pass_at_k"]) == ["1", "2"]
    assert got["pass_at_k"]["1"]["base"] == pytest.approx(np.mean([0.5, 0.5, 2.0]) / 4)
    # shared prompts: the seeds x prompts interval of the per-prompt Pass@1 change
    change = got["pass_at_k"]["1"]["change"]
    diffs = np.array([[3 - 1, 2 - 0], [4 - 0, 1 - 1], [2 - 2, 4 - 2]]) / 4
    assert change["mean"] == pytest.approx(diffs.mean()) and change["seeds"] == 3 and change["prompts"] == 2
    assert change["samples"] == 4  # each evaluation's samples per prompt
    # an evaluation written before it recorded its correctness rule: the rule it used, reward >= 1
    older = {k: e for k, e in runs[0].eval.items()}
    older["final"] = {k: v for k, v in older["final"].items() if k != "correct"}
    (group,) = group_runs([_run("s0", 0, eval=older)])
    assert compare_group(group)["correct"] == "reward >= 1"


def test_a_reward_missing_from_a_base_or_a_later_final_evaluation_leaves_that_run_out_of_its_mean():
    no_rewards = {k: v for k, v in _evaluation([1, 0], {}).items() if k != "rewards"}  # older code: no rewards key
    runs = [
        _run("s0", 0, eval={"base": _evaluation([1, 0], {"acc": 0.2}), "final": _evaluation([3, 2], {"acc": 0.5})}),
        _run("s1", 1, eval={"base": no_rewards, "final": _evaluation([4, 1], {"acc": 0.9})}),
        _run("s2", 2, eval={"base": _evaluation([2, 2], {"acc": 0.4}), "final": _evaluation([2, 4], {"other": 0.6})}),
    ]
    (group,) = group_runs(runs)
    got = compare_group(group)
    assert got["rewards"]["acc"]["base"] == pytest.approx(0.2) and got["rewards"]["acc"]["final"] == pytest.approx(0.5)


def test_a_setting_only_one_group_has_names_it():
    """Configs written by other code may lack a setting: both groups are named by it, the one without it as None."""
    runs = [
        _run("a0", 0, algo="grpo", grpo={"learning_rate": 1e-5}),
        _run("b0", 0, algo="grpo", grpo={"learning_rate": 1e-5}, eval_temperature=0.6),
    ]
    assert [g.name for g in group_runs(runs)] == ["grpo (eval_temperature=0.6)", "grpo (eval_temperature=None)"]


def test_pass_at_k_is_compared_at_the_ks_every_evaluation_holds_and_one_prompt_falls_back_to_seeds():
    runs = [
        _run("s0", 0, eval={"base": _evaluation([1], {}), "final": _evaluation([3], {}, ks=("1", "2", "4"))}),
        _run("s1", 1, eval={"base": _evaluation([2], {}, ks=("1", "4")), "final": _evaluation([2], {}, ks=("1", "4"))}),
    ]
    got = compare_group(group_runs(runs)[0])
    assert list(got["pass_at_k"]) == ["1"]  # "2" and "4" are missing somewhere
    change = got["pass_at_k"]["1"]["change"]
    assert change == pytest.approx(over_seeds(np.array([(3 - 1) / 4, 0.0])))  # one prompt: over seeds


def test_the_your_runs_section_line_by_line():
    from escov.paper_checks.own_runs import render

    section = {
        "groups": [{"name": "grpo", "seeds": [0, 2], "runs": ["a", "b"]}, {"name": "es", "seeds": [1], "runs": ["c"]}],
        "comparison": [
            {
                "group": "grpo",
                "seeds": [0, 2],
                "correct": "total >= 1",
                "rewards": {"acc": {"base": 0.25, "final": 0.5, "change": {"mean": 0.25, "lo": 0.1, "hi": 0.4}}},
                "pass_at_k": {"1": {"base": 0.1, "final": 0.2, "change": {"mean": 0.1, "lo": None, "hi": None}}},
            },
            {"group": "es", "seeds": [1], "correct": "reward >= 1", "rewards": {}, "pass_at_k": {}},
        ],
    }
    assert render(section) == [
        "## Your runs",
        "",
        "Runs are grouped by their settings: the runs of a group differ only by seed (and by where or how fast they "
        "ran); runs of different groups are never pooled.",
        "",
        "| group | seeds | runs |",
        "| --- | --- | --- |",
        "| `grpo` | 0, 2 | 2 |",
        "| `es` | 1 | 1 |",
        "",
        "### `grpo`: base -> final (2 seeds; correct: total >= 1)",
        "",
        "| measure | base | final | change [95%] |",
        "| --- | --- | --- | --- |",
        "| reward `acc` (mean) | 0.250 | 0.500 | +0.250 [+0.100, +0.400] |",
        "| Pass@1 | 0.100 | 0.200 | +0.100 n/a (one seed) |",
        "",
        "### `es`: base -> final (1 seed; correct: reward >= 1)",
        "",
        "| measure | base | final | change [95%] |",
        "| --- | --- | --- | --- |",
        "",
    ]


@pytest.mark.parametrize("lo, hi", [(None, 0.1), (0.1, None), (float("-inf"), 0.1), (0.1, float("inf"))])
def test_an_interval_with_a_missing_or_infinite_end_is_written_as_one_seeds(lo, hi):
    from escov.paper_checks.own_runs import _interval

    assert _interval({"lo": lo, "hi": hi}) == "n/a (one seed)"
    assert _interval({"lo": -0.0125, "hi": 0.5}) == "[-0.013, +0.500]"
