"""Planted corpora: every worked solution is correct, the rare strategy's share is the set share (a binomial check
with known truth), rare-only instances follow rare_keep, only train instances are drawn; a few pretraining steps."""

import json
import math
import random

import pytest

from escov.llm.tasks import arithmetic, grid_paths, subset_sum
from escov.llm.tasks.base import Problem, split_of
from escov.llm.tinymodel_planted import (
    PlantedCorpus,
    planted_settings,
    planted_task,
    pretrain_planted,
    sample_planted_example,
)


def _instance(task_name: str, prompt: str):
    """(problem, split key, its solution texts, strategy of a text) from a corpus prompt, read back here."""
    if task_name == "grid_paths":
        key = prompt.removesuffix(":")
        solutions = grid_paths.shortest_paths(grid_paths.parse_grid(key))
        return (
            Problem("x", prompt, {"grid": key}),
            key,
            solutions,
            lambda text: "rare" if text[0] in "UD" else "dominant",
        )
    numbers, target = _numbers_target(prompt)
    problem = Problem("x", prompt, {"numbers": numbers, "target": target})
    solutions = [",".join(map(str, sorted(c, reverse=True))) for c in subset_sum.solutions(numbers, target)]
    return (
        problem,
        subset_sum.key_of(numbers, target),
        solutions,
        lambda text: "dominant" if str(max(numbers)) == text.split(",")[0] else "rare",
    )


@pytest.mark.parametrize("task_name", ["grid_paths", "subset_sum"])
def test_worked_solutions_are_correct_and_the_rare_share_is_the_set_share(task_name):
    corpus = PlantedCorpus(task_name, rare_share=0.3, rare_keep=0.0, arithmetic_frac=0.0)
    task, rng, ar = planted_task(task_name), random.Random(0), arithmetic.Arithmetic()
    rare_on_both = both = 0
    for _ in range(1500):
        prompt, text = sample_planted_example(rng, corpus, task, ar)
        problem, key, solutions, strategy_of = _instance(task_name, prompt)
        assert split_of(key) == "train" and task.score(problem, text) == 1.0 and text in solutions
        kinds = {strategy_of(s) for s in solutions}
        assert "dominant" in kinds  # rare_keep 0: no rare-only instance is ever kept
        if kinds == {"dominant", "rare"}:
            both += 1
            rare_on_both += strategy_of(text) == "rare"
    assert both > 100
    assert abs(rare_on_both / both - 0.3) < 4 * math.sqrt(0.3 * 0.7 / both)  # four standard errors


def test_rare_only_instances_enter_with_probability_rare_keep():
    """With rare_share 0 a rare answer comes only from a rare-only instance: none at rare_keep 0; at rare_keep 1
    their share is the split's share of rare-only instances, and at 0.5 about half of that relative to the rest."""
    task, ar = planted_task("subset_sum"), arithmetic.Arithmetic()
    rare = {}
    for keep in (0.0, 0.5, 1.0):
        corpus, rng = PlantedCorpus("subset_sum", rare_share=0.0, rare_keep=keep, arithmetic_frac=0.0), random.Random(1)
        draws = [sample_planted_example(rng, corpus, task, ar) for _ in range(2000)]
        rare[keep] = sum(subset_sum.strategy(_numbers_target(p)[0], _chosen(t)) == "rare" for p, t in draws) / 2000
    assert rare[0.0] == 0 and rare[1.0] > 0.15
    odds = lambda q: q / (1 - q)  # noqa: E731  kept rare-only : others = keep x (rare-only : others at keep 1)
    assert odds(rare[0.5]) == pytest.approx(0.5 * odds(rare[1.0]), rel=0.25)


def _numbers_target(prompt):
    numbers_text, target = prompt.removesuffix(":").split("=")
    return [int(x) for x in numbers_text.strip("{}").split(",")], int(target)


def _chosen(text):
    return tuple(int(x) for x in text.split(","))


def test_settings_and_a_few_pretraining_steps(tmp_path):
    shape, corpus = planted_settings(
        "grid_paths", {"rare_share": "0.05", "steps": "3", "hidden_size": "32", "num_heads": "1"}
    )
    assert corpus.rare_share == 0.05 and shape.steps == 3 and shape.batch_size == 64
    with pytest.raises(ValueError, match="expected float"):
        planted_settings("subset_sum", {"rare_keep": "often"})
    with pytest.raises(ValueError, match="must be in"):
        PlantedCorpus("grid_paths", rare_share=1.5)
    stats = pretrain_planted(
        tmp_path / "base",
        "subset_sum",
        progress=False,
        overrides={"steps": "2", "batch_size": "8", "hidden_size": "32", "num_heads": "1"},
    )
    record = json.loads((tmp_path / "base" / "pretrain.json").read_text())
    assert record["corpus"]["corpus_task"] == "subset_sum" and len(record["loss"]) == 2 == len(stats["loss"])
    assert (tmp_path / "base" / "model.safetensors").is_file()
