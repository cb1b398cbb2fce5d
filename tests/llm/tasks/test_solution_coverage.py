"""Exact coverage measures against brute force: every move string / every subset of small instances, samples drawn
from them, and the shares counted anew."""

import itertools
import math
import random

import numpy as np
import pytest

from escov.llm.tasks.grid_paths import Grid
from escov.llm.tasks.solution_coverage import classes_found_share, enumerated, rare_share_on_both, share_found
from tests.llm.tasks.test_grid_paths import brute_shortest, brute_walk, loop_winding, random_grid


def grid_samples(rng, grid: Grid, d: int, solutions: list[str], n: int) -> list[str]:
    """n samples: half drawn from the solutions, half random strings of length d (mostly wrong)."""
    return [
        rng.choice(solutions) if rng.random() < 0.5 else "".join(rng.choice("UDLR") for _ in range(d)) for _ in range(n)
    ]


def test_grid_shares_match_brute_force():
    """Solution share: distinct sampled strings that a brute-force walk takes to the goal in d moves, over the
    brute-force count. Class share: classes told apart by the angle-sum winding number about each block relative
    to one reference path (not by the ray count the task uses)."""
    rng = random.Random(0)
    tested = 0
    while tested < 20:
        grid = random_grid(rng, 4, 4, 3)
        brute = brute_shortest(grid, 7)
        if brute is None:
            continue
        d, solutions = brute
        table = enumerated("grid_paths", {"grid": grid.text()})
        assert set(table) == set(solutions)
        samples = grid_samples(rng, grid, d, solutions, 6)
        hits = {s for s in samples if (w := brute_walk(grid, s)) is not None and w[-1] == grid.goal and len(s) == d}
        assert share_found(samples, table) == len(hits) / len(solutions)
        reference = brute_walk(grid, solutions[0])

        def brute_class(path):
            loop = brute_walk(grid, path) + reference[::-1][1:-1]
            return tuple(loop_winding(loop, (r, c + 0.5)) for r, c in sorted(grid.blocked))

        all_classes = {brute_class(p) for p in solutions}
        assert len(all_classes) == len({cls for cls, _ in table.values()})
        found = {brute_class(p) for p in hits}
        assert classes_found_share(samples, {s: cls for s, (cls, _) in table.items()}) == len(found) / len(all_classes)
        tested += 1


def test_subset_shares_match_brute_force():
    rng = random.Random(1)
    for _ in range(200):
        numbers = [rng.randint(1, 8) for _ in range(rng.randint(2, 6))]
        picks = [c for r in range(1, len(numbers) + 1) for c in itertools.combinations(numbers, r)]
        target = sum(rng.choice(picks))
        brute = {tuple(sorted(c)) for c in picks if sum(c) == target}
        table = enumerated("subset_sum", {"numbers": numbers, "target": target})
        assert {tuple(map(int, s.split(","))) for s in table} == brute
        samples = [",".join(map(str, sorted(rng.choice(picks)))) for _ in range(5)]
        hit = {tuple(map(int, s.split(","))) for s in samples} & brute
        assert share_found(samples, table) == len(hit) / len(brute)
        top = max(numbers)
        brute_classes = {(top in c, len(c)) for c in brute}
        found_classes = {(top in c, len(c)) for c in hit}
        assert classes_found_share(samples, {s: cls for s, (cls, _) in table.items()}) == len(found_classes) / len(
            brute_classes
        )
        assert all(
            strategy == ("dominant" if top in tuple(map(int, s.split(","))) else "rare")
            for s, (_, strategy) in table.items()
        )


def test_rare_share_on_both_pools_counts_over_prompts_both_strategies_solve():
    strategies = [["rare", "dominant", "dominant"], ["rare"], [], ["dominant"] * 5]
    assert rare_share_on_both(strategies, [True, False, True, True]) == pytest.approx(1 / 8)
    assert math.isnan(rare_share_on_both(strategies, [False, False, True, False]))
    rng = np.random.default_rng(2)  # known truth: each correct sample rare with probability 0.2
    rows = [list(np.where(rng.random(rng.integers(0, 30)) < 0.2, "rare", "dominant")) for _ in range(400)]
    assert rare_share_on_both(rows, [True] * 400) == pytest.approx(0.2, abs=0.02)
    with pytest.raises(ValueError, match="one row per prompt"):
        rare_share_on_both(strategies, [True])


def test_empty_sets_and_unknown_tasks_are_errors():
    with pytest.raises(ValueError, match="empty"):
        share_found(["RR"], [])
    with pytest.raises(ValueError, match="exact coverage needs"):
        enumerated("countdown", {})


def test_the_refusals_word_for_word():
    from escov.llm.tasks.solution_coverage import classes_found_share, enumerated, share_found

    with pytest.raises(ValueError, match="^the enumerated solution set is empty: no share of it can be found$"):
        share_found(["a"], [])
    with pytest.raises(
        ValueError, match="^the enumerated solution set is empty: no share of its classes can be found$"
    ):
        classes_found_share(["a"], {})
    with pytest.raises(
        ValueError, match="^exact coverage needs one of the tasks grid_paths, subset_sum, got 'countdown'$"
    ):
        enumerated("countdown", {})
