"""A planted base's first look on the tiny test model: the rare-only and both-solve prompt counts against a count
made here from brute-force subsets, and every rate a probability."""

import itertools

from escov.llm.planted_base import measure_base
from escov.llm.tasks import get_task


def test_measure_base_counts_rare_only_prompts_and_gives_rates(tiny_model_dir):
    record = measure_base(tiny_model_dir, "subset_sum", prompts=6, n=2)
    rare_only = both = 0
    for p in get_task("subset_sum").problems("validation", 6, seed=0):
        numbers, target = p.meta["numbers"], p.meta["target"]
        hits = [c for r in range(1, len(numbers) + 1) for c in itertools.combinations(numbers, r) if sum(c) == target]
        uses_top = {max(numbers) in c for c in hits}
        rare_only += uses_top == {False}
        both += uses_top == {True, False}
    assert (record["rare_only_prompts"], record["both_prompts"]) == (rare_only, both)
    assert set(record["pass_at_k"]) == {"1", "2"}
    assert all(
        0 <= v <= 1
        for v in (*record["pass_at_k"].values(), record["solution_share_found"], record["class_share_found"])
    )
