"""A planted base's first look: on completions written here, every number of the record against a count made here
from brute-force subsets; on the tiny test model, the rare-only and both-solve prompt counts and every rate a
probability."""

import itertools

import pytest

from escov.llm.planted_base import base_record, measure_base
from escov.llm.tasks import get_task


def _subsets(numbers, target) -> list[tuple[int, ...]]:
    """Every distinct sub-multiset summing to target, each sorted (brute force over positions)."""
    hits = {
        tuple(sorted(c))
        for r in range(1, len(numbers) + 1)
        for c in itertools.combinations(numbers, r)
        if sum(c) == target
    }
    return sorted(hits)


def _brute_force_counts(prompts: int) -> tuple[int, int]:
    """(rare-only, both-solve) prompts among the first validation prompts: every subset summing to the target, and
    whether it holds the largest number (the dominant strategy)."""
    rare_only = both = 0
    for p in get_task("subset_sum").problems("validation", prompts, seed=0):
        numbers, target = p.meta["numbers"], p.meta["target"]
        uses_top = {max(numbers) in c for c in _subsets(numbers, target)}
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


def test_the_record_of_written_completions_against_brute_force():
    """n = 4 completions per validation prompt, prompt i with i % 5 of them correct (solutions taken in turn from the
    i-th, written largest first, so some repeat), the rest wrong: the Pass@1 and Pass@4 over all and over the
    rare-only prompts, the shares of solutions and of (strategy, size) classes found, and the rare strategy's share of
    the correct samples on both-solve prompts, each counted here."""
    n, problems = 4, get_task("subset_sum").problems("validation", 40, seed=0)
    texts, correct = [], []
    pass1, pass_n, rare1, rare_n, solution_share, class_share = [], [], [], [], [], []
    rare_on_both = correct_on_both = both = 0
    for i, p in enumerate(problems):
        numbers, target = p.meta["numbers"], p.meta["target"]
        hits = _subsets(numbers, target)
        chosen = [hits[(i + j) % len(hits)] for j in range(i % 5)]
        texts.append([",".join(map(str, sorted(c, reverse=True))) for c in chosen] + ["0"] * (n - len(chosen)))
        correct.append([True] * len(chosen) + [False] * (n - len(chosen)))
        uses_top = {max(numbers) in h for h in hits}
        pass1.append(len(chosen) / n)
        pass_n.append(float(bool(chosen)))
        if uses_top == {False}:
            rare1.append(len(chosen) / n)
            rare_n.append(float(bool(chosen)))
        solution_share.append(len(set(chosen)) / len(hits))
        classes = {(max(numbers) in h, len(h)) for h in hits}
        class_share.append(len({(max(numbers) in c, len(c)) for c in chosen}) / len(classes))
        if uses_top == {True, False}:
            both += 1
            correct_on_both += len(chosen)
            rare_on_both += sum(max(numbers) not in c for c in chosen)
    assert rare1 and both and len(rare1) + both < len(problems)  # rare-only, both-solve and dominant-only prompts
    record = base_record("subset_sum", problems, texts, correct)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    assert record["prompts"] == 40 and record["n"] == n
    assert record["pass_at_k"] == pytest.approx({"1": mean(pass1), "4": mean(pass_n)})
    assert record["rare_only_prompts"] == len(rare1) and record["both_prompts"] == both
    assert record["rare_only_pass_at_k"] == pytest.approx({"1": mean(rare1), "4": mean(rare_n)})
    assert record["solution_share_found"] == pytest.approx(mean(solution_share))
    assert record["class_share_found"] == pytest.approx(mean(class_share))
    assert 0 < rare_on_both < correct_on_both
    assert record["rare_share_on_both"] == pytest.approx(rare_on_both / correct_on_both)


def test_measure_base_reads_the_samples_it_drew_of_each_prompt():
    """The shipped subset sum base solves some validation prompts: the record is base_record of the completions a
    rollout draws here with the same seed, temperature and length, each row beside its own prompt."""
    from escov.llm.engines import make_engine
    from escov.llm.rollout import rollout
    from escov.paper_checks.reproduce.bases import shipped_base_dir

    model, task = shipped_base_dir("subset_sum"), get_task("subset_sum")
    record = measure_base(model, "subset_sum", prompts=8, n=4, temperature=0.7, seed=3, max_new_tokens=16)
    problems = task.problems("validation", 8, seed=0)
    out = rollout(make_engine("hf", model), task, problems, n=4, temperature=0.7, max_new_tokens=16, seed=3, step=0)
    assert 0 < out.correct.sum() < out.correct.size  # the rows' order matters below
    texts = [[c.text for c in row] for row in out.completions]
    assert record == base_record("subset_sum", problems, texts, out.correct) | {"temperature": 0.7}
