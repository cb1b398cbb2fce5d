"""A planted base's first look on the tiny test model: the rare-only and both-solve prompt counts against a count
made here from brute-force subsets, and every rate a probability."""

import itertools

from escov.llm.planted_base import measure_base
from escov.llm.tasks import get_task


def _brute_force_counts(prompts: int) -> tuple[int, int]:
    """(rare-only, both-solve) prompts among the first validation prompts: every subset summing to the target, and
    whether it holds the largest number (the dominant strategy)."""
    rare_only = both = 0
    for p in get_task("subset_sum").problems("validation", prompts, seed=0):
        numbers, target = p.meta["numbers"], p.meta["target"]
        hits = [c for r in range(1, len(numbers) + 1) for c in itertools.combinations(numbers, r) if sum(c) == target]
        uses_top = {max(numbers) in c for c in hits}
        rare_only += uses_top == {False}
        both += uses_top == {True, False}
    return rare_only, both


def test_measure_base_counts_rare_only_prompts_and_gives_rates(tiny_model_dir):
    record = measure_base(tiny_model_dir, "subset_sum", prompts=6, n=2)
    assert (record["rare_only_prompts"], record["both_prompts"]) == _brute_force_counts(6)
    assert set(record["pass_at_k"]) == {"1", "2"}
    assert all(
        0 <= v <= 1
        for v in (*record["pass_at_k"].values(), record["solution_share_found"], record["class_share_found"])
    )


def test_a_measure_over_no_prompt_is_none_so_the_record_can_be_written(tiny_model_dir, tmp_path):
    """2 validation prompts: when neither is rare-only, their Pass@k is undefined (None, not NaN, which JSON files
    refuse); likewise the rare share when no both-solve prompt has a correct sample."""
    from escov.llm.rundir import read_json, write_json

    assert _brute_force_counts(2)[0] == 0
    record = measure_base(tiny_model_dir, "subset_sum", prompts=2, n=2)
    assert record["rare_only_prompts"] == 0 and record["rare_only_pass_at_k"] == {"1": None, "2": None}
    assert record["rare_share_on_both"] is None or 0 <= record["rare_share_on_both"] <= 1
    write_json(tmp_path / "m.json", record)
    assert read_json(tmp_path / "m.json") == record
