"""The generated tasks' draws (countdown, subset_sum, grid_paths `_generated`, kept in an lru_cache that mutation
runs skip), replayed here from each documented stream, random.Random("TASK/SPLIT/SEED"): the problems are the
stream's first new instances of the split (Countdown: with at least min_solutions distinct solutions), and a draw is
refused only after MAX_DRAWS_WITHOUT_NEW repeats in a row, not after as many repeats in all."""

import random

import pytest

from escov.llm.tasks import base, countdown, grid_paths, subset_sum
from escov.llm.tasks.countdown import Countdown, distinct_solutions
from escov.llm.tasks.grid_paths import GridPaths
from escov.llm.tasks.subset_sum import SubsetSum, key_of


def _countdown(task, rng, split):
    numbers, _, target = task.sample_expression(rng, split)
    key = (tuple(sorted(numbers)), target)
    return key, len(distinct_solutions(numbers, target)) >= task.min_solutions


def _subset_sum(task, rng, split):
    return key_of(*task.sample_instance(rng, split)), True


def _grid_paths(task, rng, split):
    return task.sample_grid(rng, split).text(), True


def replay(task, draw, name, split, n, seed):
    """(the keys taken, repeats in all, the longest run of repeats) of the stream until n are taken."""
    rng = random.Random(f"{name}/{split}/{seed}")
    seen, taken, repeats, in_a_row, longest = set(), [], 0, 0, 0
    for _ in range(20_000):  # the cases below take a few hundred draws
        if len(taken) == n:
            return taken, repeats, longest
        key, wanted = draw(task, rng, split)
        if key in seen:
            repeats, in_a_row, longest = repeats + 1, in_a_row + 1, max(longest, in_a_row + 1)
            continue
        seen.add(key)
        in_a_row = 0
        if wanted:
            taken.append(key)
    raise AssertionError(f"the stream gave {len(taken)} of {n} instances in 20,000 draws")


def key_of_problem(name, p):
    if name == "countdown":
        return tuple(sorted(p.meta["numbers"])), p.meta["target"]
    if name == "subset_sum":
        return key_of(p.meta["numbers"], p.meta["target"])
    return p.meta["grid"]


CASES = [  # small settings, so that the stream repeats itself (repeats in all / longest run: 8 / 2, 5 / 2, 37 / 9)
    (
        "countdown",
        lambda: Countdown(min_numbers=3, max_numbers=3, max_number=8, max_target=20, min_solutions=2),
        _countdown,
        "train",
        40,
    ),
    ("subset_sum", lambda: SubsetSum(m=3, max_number=8), _subset_sum, "validation", 10),
    (
        "grid_paths",
        lambda: GridPaths(rows=3, cols=4, n_blocked=1, min_distance=2, min_solutions=1),
        _grid_paths,
        "validation",
        40,
    ),
]


@pytest.mark.parametrize("name, make, draw, split, n", CASES, ids=[c[0] for c in CASES])
def test_a_draw_is_its_streams_first_new_instances_and_runs_of_repeats_not_their_total_exhaust_it(
    name, make, draw, split, n, monkeypatch
):
    taken, repeats, longest = replay(make(), draw, name, split, n, seed=11)
    assert repeats > longest + 1  # the case the rule tells apart: more repeats in all than in the longest run
    monkeypatch.setattr(base, "MAX_DRAWS_WITHOUT_NEW", longest + 1)
    assert [key_of_problem(name, p) for p in drawn_afresh(make, split, n)] == taken
    monkeypatch.setattr(base, "MAX_DRAWS_WITHOUT_NEW", longest)
    with pytest.raises(ValueError, match=f"draws in a row gave none new\\), {n} were requested"):
        drawn_afresh(make, split, n)  # one repeat fewer in a row is exhaustion


def drawn_afresh(make, split, n):
    """The task's draw at seed 11 under the limit set now, not the process's cached one."""
    for module in (countdown, subset_sum, grid_paths):
        module._generated.cache_clear()
    return make().problems(split, n, seed=11)
