"""Grid paths: shortest paths against brute force over every move string, the verifier against the enumeration,
the winding class against an angle sum, hostile outputs, split disjointness, and a one-step `llm train`."""

import itertools
import math
import random
from fractions import Fraction

import pytest

from escov.llm.tasks import get_task
from escov.llm.tasks.base import SPLITS, split_of
from escov.llm.tasks.grid_paths import (
    Grid,
    GridPaths,
    count_shortest_paths,
    parse_grid,
    random_guess_rate,
    score,
    shortest_distance,
    shortest_paths,
    strategy,
    winding_class,
)

# one ES step on a few prompts and samples (what keeps the command's test short)
SHORT_RUN = [
    "--steps",
    "1",
    "--batch_size",
    "2",
    "--train_pool",
    "4",
    "--eval_problems",
    "4",
    "--eval_samples",
    "2",
    "--eval_ks",
    "1",
    "--threads",
    "1",
    "--heldout_task",
    "",
    "--probe_prompts",
    "1",
    "--probe_members",
    "2",
    "--probe_samples",
    "2",
    "--probe_center_samples",
    "2",
    "--step_samples",
    "2",
    "--es.population_size",
    "4",
    "--no-progress",
]
STEP = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}


def brute_walk(grid: Grid, moves: str):
    """The cells a move string visits, or None when it leaves the grid or steps on a block (written anew here)."""
    cells = [grid.start]
    for m in moves:
        r, c = cells[-1][0] + STEP[m][0], cells[-1][1] + STEP[m][1]
        if not (0 <= r < grid.rows and 0 <= c < grid.cols) or (r, c) in grid.blocked:
            return None
        cells.append((r, c))
    return cells


def brute_shortest(grid: Grid, longest: int = 8):
    """(d, every move string of length d reaching the goal) for the least d <= longest with any; None if none."""
    for length in range(longest + 1):
        hits = [
            "".join(p)
            for p in itertools.product("UDLR", repeat=length)
            if (w := brute_walk(grid, "".join(p))) is not None and w[-1] == grid.goal
        ]
        if hits:
            return length, sorted(hits)
    return None


def random_grid(rng: random.Random, rows: int, cols: int, blocks: int) -> Grid:
    cells = rng.sample([(r, c) for r in range(rows) for c in range(cols)], blocks + 2)
    return Grid(rows, cols, frozenset(cells[2:]), cells[0], cells[1])


def test_enumeration_distance_and_guess_rate_match_brute_force_over_all_move_strings():
    rng = random.Random(1)
    checked = 0
    while checked < 25:
        rows, cols = rng.randint(2, 4), rng.randint(2, 4)
        grid = random_grid(rng, rows, cols, rng.randint(0, min(4, rows * cols - 2)))
        brute = brute_shortest(grid, 7)
        if brute is None:
            if shortest_distance(grid) is None:
                assert count_shortest_paths(grid) == 0 and shortest_paths(grid) == []
            continue
        d, hits = brute
        assert shortest_distance(grid) == d
        assert shortest_paths(grid) == hits
        assert count_shortest_paths(grid) == len(hits)
        assert random_guess_rate(grid) == Fraction(len(hits), 4**d)
        checked += 1


def test_known_counts():
    """An open R x C grid corner to corner has C(R+C-2, R-1) shortest paths; a 3x3 with the centre blocked has 2."""
    assert count_shortest_paths(Grid(5, 5, frozenset(), (0, 0), (4, 4))) == math.comb(8, 4)
    assert count_shortest_paths(Grid(4, 6, frozenset(), (3, 0), (0, 5))) == math.comb(8, 3)
    assert shortest_paths(Grid(3, 3, frozenset({(1, 1)}), (0, 0), (2, 2))) == ["DDRR", "RRDD"]
    with pytest.raises(ValueError, match="^70 shortest paths, more than the limit 69$"):
        shortest_paths(Grid(5, 5, frozenset(), (0, 0), (4, 4)), limit=69)
    assert len(shortest_paths(Grid(5, 5, frozenset(), (0, 0), (4, 4)), limit=70)) == 70  # the limit itself is listed


def test_verifier_accepts_exactly_the_enumerated_set():
    task = GridPaths()
    rng = random.Random(2)
    for problem in task.problems("train", 40, seed=3):
        grid = parse_grid(problem.meta["grid"])
        solutions = set(shortest_paths(grid))
        assert len(solutions) == problem.meta["n_solutions"] >= 2
        for path in solutions:
            assert task.score(problem, path) == 1.0 and task.score(problem, f"  {path}\n") == 1.0
            assert task.answer(problem, path) == path
        d = problem.meta["distance"]
        for length in (d - 1, d, d + 2):
            for _ in range(300):
                guess = "".join(rng.choice("UDLR") for _ in range(length))
                assert task.score(problem, guess) == float(guess in solutions)
        path = sorted(solutions)[0]
        for i in range(len(path)):  # one move changed: a shortest path only if enumerated
            for m in "UDLR":
                other = path[:i] + m + path[i + 1 :]
                assert task.score(problem, other) == float(other in solutions)


@pytest.mark.parametrize(
    "completion",
    [
        None,
        b"RRDD",
        42,
        "",
        "   ",
        "rrdd",
        "R R D D",
        "RRDD\x00",
        "RRDDX",
        "<answer>RRDD</answer>",
        "__import__('os')",
        "R" * 100_000,
        "R" * 300,
        "RRDD" * 70_000,
        "ＲＲＤＤ",
        "RRDD\nRRDD",
    ],
)
def test_hostile_outputs_score_zero(completion):
    grid = Grid(3, 3, frozenset(), (0, 0), (2, 2))
    assert score(completion, grid.text()) == 0.0
    assert score("RRDD", grid.text()) == 1.0


def loop_winding(cells: list, point: tuple) -> int:
    """Winding number of a closed polyline of (row, col) points around a point: the sum of turning angles / 2 pi."""
    total = 0.0
    for (r0, c0), (r1, c1) in zip(cells, cells[1:] + cells[:1]):
        a0 = math.atan2(r0 - point[0], c0 - point[1])
        a1 = math.atan2(r1 - point[0], c1 - point[1])
        total += (a1 - a0 + math.pi) % (2 * math.pi) - math.pi
    return round(total / (2 * math.pi))


def test_winding_class_differences_are_winding_numbers_around_each_block():
    """Class(p) - class(q), block by block, is the winding number of p forward then q backward around the point on
    the block's right edge (an angle sum, independent of the ray count); a block passed above versus below."""
    over, under = "URRD", "DRRU"
    grid = Grid(3, 3, frozenset({(1, 1)}), (1, 0), (1, 2))
    assert winding_class(grid, over) == (1,) and winding_class(grid, under) == (0,)
    # the ray starts on the block's right edge: S right above the block, stepping right, crosses it (R from the
    # block's column c_b to c_b + 1, in a row above); a walk from the column left of the block to it does not
    right_of = Grid(2, 4, frozenset({(1, 1)}), (0, 1), (0, 3))
    assert winding_class(right_of, "RR") == (1,)
    assert winding_class(Grid(2, 4, frozenset({(1, 1)}), (0, 0), (0, 1)), "R") == (0,)
    assert winding_class(Grid(2, 4, frozenset({(1, 1)}), (0, 2), (0, 0)), "LL") == (-1,)
    rng = random.Random(4)
    tested = 0
    for _ in range(300):
        grid = random_grid(rng, 5, 5, 3)
        if shortest_distance(grid) is None:
            continue
        paths = shortest_paths(grid)
        p, q = rng.choice(paths), rng.choice(paths)
        loop = brute_walk(grid, p) + brute_walk(grid, q)[::-1][1:-1]
        diff = [a - b for a, b in zip(winding_class(grid, p), winding_class(grid, q))]
        assert diff == [loop_winding(loop, (br, bc + 0.5)) for br, bc in sorted(grid.blocked)]
        tested += diff != [0, 0, 0]
    assert tested > 5  # some pairs pass a block on different sides


def test_strategy_is_the_first_moves_axis():
    assert [strategy(p) for p in ("RD", "LU", "DR", "UL")] == ["dominant", "dominant", "rare", "rare"]


def test_splits_follow_the_recorded_rule_are_disjoint_and_deterministic():
    task = get_task("grid_paths")
    keys = {}
    for split in SPLITS:
        problems = task.problems(split, 60, seed=0)
        keys[split] = {p.meta["grid"] for p in problems}
        assert len(keys[split]) == 60
        assert all(split_of(p.meta["grid"]) == split and p.prompt == p.meta["grid"] + ":" for p in problems)
        assert [p.prompt for p in problems] == [p.prompt for p in GridPaths().problems(split, 60, seed=0)]
    assert not keys["train"] & keys["validation"] and not keys["train"] & keys["test"]
    assert not keys["validation"] & keys["test"]


def test_bad_settings_are_one_line_errors():
    with pytest.raises(ValueError, match="generates its problems"):
        get_task("grid_paths", data="x.json")
    with pytest.raises(ValueError, match="plain prompt style"):
        get_task("grid_paths", prompt_style="instruct")
    for rows, cols in ((1, 5), (5, 13), (13, 2)):
        with pytest.raises(ValueError, match=rf"^rows and cols must lie in \[2, 12\], got {rows}, {cols}$"):
            GridPaths(rows=rows, cols=cols)
    GridPaths(rows=2, cols=12, n_blocked=0)
    # S and G need two free cells: at most rows * cols - 2 blocked
    with pytest.raises(ValueError, match=r"^n_blocked must lie in \[0, rows \* cols - 2\], got 24$"):
        GridPaths(rows=5, cols=5, n_blocked=24)
    with pytest.raises(ValueError, match=r"^n_blocked must lie in \[0, rows \* cols - 2\], got -1$"):
        GridPaths(n_blocked=-1)
    GridPaths(rows=5, cols=5, n_blocked=23)
    for setting in (dict(min_distance=0), dict(min_solutions=0)):
        with pytest.raises(ValueError, match="^min_distance and min_solutions must be >= 1, got "):
            GridPaths(**setting)


def test_one_step_train_and_eval_from_the_command_line(tiny_model_dir, tmp_path, capsys):
    from escov.llm.cli import main

    run = tmp_path / "run"
    assert main(["train", "--task", "grid_paths", "--model", str(tiny_model_dir), "--out", str(run), *SHORT_RUN]) == 0
    assert "grid_paths (base -> final" in capsys.readouterr().out
    assert (run / "eval.json").is_file()
    assert (
        main(
            [
                "eval",
                "--task",
                "grid_paths",
                "--model",
                str(tiny_model_dir),
                "--eval_problems",
                "3",
                "--n",
                "2",
                "--k",
                "1",
                "--out",
                str(tmp_path / "eval"),
            ]
        )
        == 0
    )
    assert (tmp_path / "eval" / "eval.json").is_file()
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "grid_paths" in capsys.readouterr().out


def test_a_walk_that_leaves_the_grid_on_any_side_or_enters_a_wall_ends_nowhere():
    """A 2 x 3 grid "S.#|..G" (rows joined by "|"): each move off an edge, or into the wall, ends the walk (None);
    the one shortest path around the wall reaches G."""
    from escov.llm.tasks.grid_paths import walk_end

    grid = parse_grid("S.#|..G")
    assert (grid.rows, grid.cols, grid.start, grid.goal, set(grid.blocked)) == (2, 3, (0, 0), (1, 2), {(0, 2)})
    for moves in ("U", "L", "DD", "RRR", "DRRR", "RR"):
        assert walk_end(grid, moves) is None, moves
    assert walk_end(grid, "DRR") == (1, 2) and walk_end(grid, "RDR") == (1, 2)
    assert not grid.is_free((1, 3)) and not grid.is_free((2, 0)) and not grid.is_free((-1, 0)) and grid.is_free((1, 1))


@pytest.mark.parametrize(
    "text, message",
    [
        ("S.#|.G", "not a grid (equal rows of '.#SG' joined by '|'): 'S.#|.G'"),  # rows of unequal length
        ("S.#|..G|", "not a grid (equal rows of '.#SG' joined by '|'): 'S.#|..G|'"),  # an empty last row
        ("", "not a grid (equal rows of '.#SG' joined by '|'): ''"),
        ("S.x|..G", "not a grid (equal rows of '.#SG' joined by '|'): 'S.x|..G'"),
        (":S.|.G", "not a grid (equal rows of '.#SG' joined by '|'): ':S.|.G'"),  # ":" only ends a grid
        ("S.|.G::", "not a grid (equal rows of '.#SG' joined by '|'): 'S.|.G::'"),
        ("S.|..", "a grid needs one S and one G: 'S.|..'"),
        ("..|.G", "a grid needs one S and one G: '..|.G'"),
        ("SS|.G", "a grid needs one S and one G: 'SS|.G'"),
        ("SG|.G", "a grid needs one S and one G: 'SG|.G'"),
    ],
)
def test_a_text_that_is_not_one_grid_is_refused_by_what_it_lacks(text, message):
    with pytest.raises(ValueError) as err:
        parse_grid(text)
    assert str(err.value) == message


def test_a_grid_reads_the_same_with_and_without_its_final_colon():
    assert parse_grid("S#|.G:") == parse_grid("S#|.G")
    assert (parse_grid("S#|.G").rows, parse_grid("S#|.G").cols, set(parse_grid("S#|.G").blocked)) == (2, 2, {(0, 1)})


def test_generated_grids_reach_down_to_their_minimum_distance_and_solution_count():
    """Every generated instance meets the settings (distance >= min_distance, >= min_solutions shortest paths, counted
    by brute force here), and both bounds are attained: the minimum is allowed, not excluded."""
    from escov.llm.tasks.grid_paths import GridPaths

    task = GridPaths(min_distance=4, min_solutions=2)
    problems = task.problems("train", 120, seed=0)
    distances = [p.meta["distance"] for p in problems]
    counts = [p.meta["n_solutions"] for p in problems]
    assert min(distances) == 4 and min(counts) == 2
    for p in [p for p in problems if p.meta["distance"] <= 6][:20]:  # 4^6 move strings at most
        d, paths = brute_shortest(parse_grid(p.meta["grid"]), longest=6)
        assert (d, len(paths)) == (p.meta["distance"], p.meta["n_solutions"])


def test_the_defaults_the_draws_and_the_edges_by_hand():
    """A 5 x 5 grid with 3 blocked cells, S and G at least 4 apart with 2 shortest paths or more, by default; every
    generated grid has exactly its n_blocked blocked cells; two seeds draw two sets; ids name the grid."""
    assert GridPaths().settings == (5, 5, 3, 4, 2)
    for n_blocked in (1, 3, 5):
        problems = GridPaths(n_blocked=n_blocked).problems("validation", 10, seed=0)
        assert {len(parse_grid(p.meta["grid"]).blocked) for p in problems} == {n_blocked}
        assert all(p.id == f"grid_paths/{p.meta['grid']}" for p in problems)
    assert [p.id for p in GridPaths().problems("test", 5, seed=1)] != [p.id for p in GridPaths().problems("test", 5, 2)]
    walled = Grid(3, 3, frozenset({(0, 1), (1, 1), (2, 1)}), (0, 0), (0, 2))
    assert random_guess_rate(walled) == 0  # G cannot be reached
    # a walk (not a shortest path) that crosses the block's ray rightwards then back: the crossings cancel
    assert winding_class(Grid(2, 3, frozenset({(1, 1)}), (0, 0), (0, 0)), "RRLL") == (0,)


def test_answers_at_the_length_limits():
    from escov.llm.tasks.grid_paths import MAX_ANSWER_CHARS, parse_answer
    from escov.llm.tasks.reasoning_format import MAX_COMPLETION_CHARS

    assert parse_answer("R" * MAX_ANSWER_CHARS) == "R" * MAX_ANSWER_CHARS
    assert parse_answer("R" * (MAX_ANSWER_CHARS + 1)) is None
    padded = "RD" + " " * (MAX_COMPLETION_CHARS - 2)
    assert parse_answer(padded) == "RD" and parse_answer(padded + " ") is None
