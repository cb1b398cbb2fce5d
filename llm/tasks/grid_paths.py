"""Grid paths: walk from S to G on a small grid with blocked cells, by a shortest path of moves U/D/L/R.

Instance: an R x C grid (default 5 x 5) with `n_blocked` blocked cells, a start S and a goal G. The prompt writes
the grid row by row, rows joined by "|", "." free, "#" blocked, then ":" ("S..#.|.....|.#...|.....|...G.:").
The answer is a move string over "UDLR" (U: row - 1, D: row + 1, L: column - 1, R: column + 1): "RRDDDR".

Correct: every move stays on the grid and off blocked cells, the walk ends at G, and its length is the BFS
distance d(S, G) (a shortest path). Every shortest path is enumerated exactly by dynamic programming on the
BFS layers (`count_shortest_paths`, `shortest_paths`); the canonical solution id is the move string itself.

Strategy class of a path (`winding_class`): for each blocked cell b = (r_b, c_b), in sorted order, the signed
number of times the path crosses the ray that starts on b's right edge, at (r_b, c_b + 1/2), and runs up (to
rows < r_b): +1 for each R move from column c_b to c_b + 1 in a row above b, -1 for each L move back. Path
segments join cell centres and never enter b, so only these moves cross the ray. Two paths with the same ends
have equal classes exactly when, for every blocked cell, the closed loop one path forward and the other back
winds zero times around that point: the homology class of the path in the plane minus one point per blocked
cell ("which side of each block it passes"; a wall of adjacent blocks is passed on one side by all its cells).

The planted strategies (the tiny base model's corpus, llm/tinymodel_planted.py) are the first move's axis:
"dominant" = the path starts with a horizontal move (L/R), "rare" = it starts with a vertical one (U/D).
Rare-only instances are those whose every shortest path starts vertically.

Random guesser: a uniform draw from the 4^d move strings of the shortest length d (the guesser knows d);
its success rate is exactly (#shortest paths) / 4^d (`random_guess_rate`).

Splits: the instance key is the prompt's grid text; base.split_of(key) puts it in train (90%), validation or
test (5% each), so no grid is in two splits. Reward `escov` only, prompt style `plain` only, generated only.
"""

from __future__ import annotations

import functools
import random
import re
from collections import deque
from dataclasses import dataclass
from fractions import Fraction

from escov.llm.tasks.base import Problem, Task, check_count, check_not_exhausted, check_split, split_of
from escov.llm.tasks.reasoning_format import MAX_COMPLETION_CHARS
from escov.llm.tasks.rewards import check_reward

MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
FREE, BLOCKED, START, GOAL, ROW_SEP, END = ".", "#", "S", "G", "|", ":"
MAX_ANSWER_CHARS = 256  # a longer answer (after stripping) is wrong without being read
MAX_LISTED = 100_000  # shortest_paths refuses instances with more shortest paths than this
MAX_SIDE = 12  # rows and columns of a generated grid
STRATEGIES = ("dominant", "rare")
_PATH = re.compile(r"[UDLR]+")


@dataclass(frozen=True)
class Grid:
    rows: int
    cols: int
    blocked: frozenset
    start: tuple[int, int]
    goal: tuple[int, int]

    def is_free(self, cell: tuple[int, int]) -> bool:
        r, c = cell
        return 0 <= r < self.rows and 0 <= c < self.cols and cell not in self.blocked

    def text(self) -> str:
        """The grid as the prompt writes it (without the final ":"): the instance's key."""
        marks = {self.start: START, self.goal: GOAL, **{b: BLOCKED for b in self.blocked}}
        return ROW_SEP.join("".join(marks.get((r, c), FREE) for c in range(self.cols)) for r in range(self.rows))


@functools.lru_cache(maxsize=4096)
def parse_grid(text: str) -> Grid:
    """The Grid a prompt's text writes (with or without the final ":"); ValueError when it is not one."""
    rows = text.removesuffix(END).split(ROW_SEP)
    if (
        not rows
        or len({len(r) for r in rows}) != 1
        or not rows[0]
        or set("".join(rows)) - set(FREE + BLOCKED + START + GOAL)
    ):
        raise ValueError(f"not a grid (equal rows of '.#SG' joined by '|'): {text!r}")
    cells = {(r, c): ch for r, row in enumerate(rows) for c, ch in enumerate(row)}
    starts = [k for k, v in cells.items() if v == START]
    goals = [k for k, v in cells.items() if v == GOAL]
    if len(starts) != 1 or len(goals) != 1:
        raise ValueError(f"a grid needs one S and one G: {text!r}")
    return Grid(len(rows), len(rows[0]), frozenset(k for k, v in cells.items() if v == BLOCKED), starts[0], goals[0])


def distances(grid: Grid, source: tuple[int, int]) -> dict[tuple[int, int], int]:
    """BFS distance from source to every free cell it reaches."""
    dist, queue = {source: 0}, deque([source])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES.values():
            nxt = (r + dr, c + dc)
            if nxt not in dist and grid.is_free(nxt):
                dist[nxt] = dist[(r, c)] + 1
                queue.append(nxt)
    return dist


def shortest_distance(grid: Grid) -> int | None:
    """d(S, G), or None when G cannot be reached."""
    return distances(grid, grid.start).get(grid.goal)


def _on_shortest(grid: Grid) -> tuple[dict, dict, int] | None:
    from_start, to_goal = distances(grid, grid.start), distances(grid, grid.goal)
    d = from_start.get(grid.goal)
    return None if d is None else (from_start, to_goal, d)


def count_shortest_paths(grid: Grid) -> int:
    """Number of shortest S -> G paths: N(S) = 1, N(v) = sum of N(u) over neighbours u with d(S, u) = d(S, v) - 1,
    taken over the cells with d(S, v) + d(v, G) = d(S, G) (0 when G is unreachable)."""
    found = _on_shortest(grid)
    if found is None:
        return 0
    from_start, to_goal, d = found
    layer = sorted(
        (cell for cell in from_start if from_start[cell] + to_goal.get(cell, d + 1) == d), key=from_start.get
    )
    ways = {grid.start: 1}
    for cell in layer[1:]:
        ways[cell] = sum(
            ways.get((cell[0] - dr, cell[1] - dc), 0)
            for dr, dc in MOVES.values()
            if from_start.get((cell[0] - dr, cell[1] - dc)) == from_start[cell] - 1
        )
    return ways[grid.goal]


def shortest_paths(grid: Grid, limit: int = MAX_LISTED) -> list[str]:
    """Every shortest S -> G path as a move string, sorted; ValueError when there are more than `limit`.
    Depth-first along the cells of the shortest-path layers, each step one BFS layer nearer to G."""
    count = count_shortest_paths(grid)
    if count > limit:
        raise ValueError(f"{count} shortest paths, more than the limit {limit}")
    found = _on_shortest(grid)
    if found is None:
        return []
    _, to_goal, _ = found
    out: list[str] = []

    def walk(cell, moves):
        if cell == grid.goal:
            out.append("".join(moves))
            return
        for name, (dr, dc) in MOVES.items():
            nxt = (cell[0] + dr, cell[1] + dc)
            if to_goal.get(nxt) == to_goal[cell] - 1:
                moves.append(name)
                walk(nxt, moves)
                moves.pop()

    walk(grid.start, [])
    return sorted(out)


def walk_end(grid: Grid, moves: str) -> tuple[int, int] | None:
    """Where the moves lead from S, or None when one leaves the grid or enters a blocked cell."""
    r, c = grid.start
    for m in moves:
        dr, dc = MOVES[m]
        r, c = r + dr, c + dc
        if not grid.is_free((r, c)):
            return None
    return r, c


def is_shortest_path(grid: Grid, moves: str) -> bool:
    """Whether the move string (over UDLR) is a shortest S -> G path."""
    return len(moves) == shortest_distance(grid) and walk_end(grid, moves) == grid.goal


def winding_class(grid: Grid, moves: str) -> tuple[int, ...]:
    """The path's strategy class: for each blocked cell in sorted order, its signed crossings of the ray up from
    that cell's right edge (module docstring)."""
    crossings = dict.fromkeys(sorted(grid.blocked), 0)
    r, c = grid.start
    for m in moves:
        dr, dc = MOVES[m]
        if dc:
            left_col = min(c, c + dc)
            for br, bc in crossings:
                if bc == left_col and r < br:
                    crossings[(br, bc)] += dc
        r, c = r + dr, c + dc
    return tuple(crossings.values())


def strategy(moves: str) -> str:
    """The planted strategy of a path: "dominant" when its first move is horizontal (L/R), else "rare"."""
    return "dominant" if moves[:1] in ("L", "R") else "rare"


def random_guess_rate(grid: Grid) -> Fraction:
    """Success rate of a uniform guess among the 4^d move strings of length d = d(S, G): #shortest paths / 4^d."""
    d = shortest_distance(grid)
    return Fraction(0) if d is None else Fraction(count_shortest_paths(grid), 4**d)


def parse_answer(completion) -> str | None:
    """The move string a completion states: the whole completion stripped, when it is 1 to MAX_ANSWER_CHARS of
    U/D/L/R; None otherwise (anything else, too long, not a string). Never evaluates anything."""
    if not isinstance(completion, str) or len(completion) > MAX_COMPLETION_CHARS:
        return None
    text = completion.strip()
    return text if len(text) <= MAX_ANSWER_CHARS and _PATH.fullmatch(text) else None


def score(completion, grid_text: str) -> float:
    """1.0 when the completion is a shortest path of the grid, else 0.0."""
    moves = parse_answer(completion)
    return float(moves is not None and is_shortest_path(parse_grid(grid_text), moves))


def format_prompt(grid: Grid) -> str:
    return grid.text() + END


class GridPaths(Task):
    name = "grid_paths"

    def __init__(
        self,
        rows: int = 5,
        cols: int = 5,
        n_blocked: int = 3,
        min_distance: int = 4,
        min_solutions: int = 2,
        reward: str = "escov",
        format_reward: float = 0.0,
        prompt_style: str = "plain",
    ):
        if not (2 <= rows <= MAX_SIDE and 2 <= cols <= MAX_SIDE):
            raise ValueError(f"rows and cols must lie in [2, {MAX_SIDE}], got {rows}, {cols}")
        if not 0 <= n_blocked <= rows * cols - 2:
            raise ValueError(f"n_blocked must lie in [0, rows * cols - 2], got {n_blocked}")
        if min_distance < 1 or min_solutions < 1:
            raise ValueError(f"min_distance and min_solutions must be >= 1, got {min_distance}, {min_solutions}")
        check_reward(reward, self.name, format_reward)
        if format_reward or prompt_style != "plain":
            raise ValueError(
                "task 'grid_paths' has only the plain prompt style and the escov reward without format_reward"
            )
        self.settings = (rows, cols, n_blocked, min_distance, min_solutions)

    def sample_grid(self, rng: random.Random, split: str) -> Grid:
        """A random instance of the split meeting the settings (the pretraining corpus is built from these)."""
        check_split(split)
        rows, cols, n_blocked, min_distance, min_solutions = self.settings
        cells = [(r, c) for r in range(rows) for c in range(cols)]
        while True:
            chosen = rng.sample(cells, n_blocked + 2)
            grid = Grid(rows, cols, frozenset(chosen[2:]), chosen[0], chosen[1])
            if split_of(grid.text()) != split:
                continue
            d = shortest_distance(grid)
            if d is not None and d >= min_distance and count_shortest_paths(grid) >= min_solutions:
                return grid

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        check_split(split)
        check_count(n)
        return [Problem(p.id, p.prompt, dict(p.meta)) for p in _generated(self.settings, split, n, seed)]

    def score(self, problem: Problem, completion: str) -> float:
        return score(completion, problem.meta["grid"])

    def answer(self, problem: Problem, completion: str) -> str | None:
        """The move string (the canonical solution id), or None when the completion is not one."""
        return parse_answer(completion)


@functools.lru_cache(maxsize=64)
def _generated(settings: tuple, split: str, n: int, seed: int) -> tuple[Problem, ...]:
    task = GridPaths(*settings)
    rng = random.Random(f"grid_paths/{split}/{seed}")
    out: dict[str, Problem] = {}
    misses = 0
    while len(out) < n:
        grid = task.sample_grid(rng, split)
        key = grid.text()
        if key in out:
            misses += 1
            check_not_exhausted(misses, len(out), n, f"the {split} split of task grid_paths")
            continue
        misses = 0
        out[key] = Problem(
            id=f"grid_paths/{key}",
            prompt=format_prompt(grid),
            meta={"grid": key, "distance": shortest_distance(grid), "n_solutions": count_shortest_paths(grid)},
        )
    return tuple(out.values())
