"""Exact coverage measures of the tasks whose solutions are enumerated (grid_paths, subset_sum); numpy, no torch.

For one prompt with the enumerated solution set S (canonical ids), its strategy classes C(s) and the canonical ids
of n samples:

- `share_found(found, S)`: |found ∩ S| / |S|, the share of the enumerated solution set that the samples hit
  (ids outside S, i.e. wrong answers, count for nothing);
- `classes_found_share(found, class_of)`: |{C(s): s in found ∩ S}| / |{C(s): s in S}|, the share of the
  strategy classes hit;
- `rare_share_on_both(strategies, both)`: over the prompts both planted strategies solve (`both`, from the
  enumeration), the pooled share of correct samples that use the rare strategy: sum of rare correct samples
  divided by the sum of correct samples (NaN when those prompts have no correct sample).

`enumerated(task, meta)` gives, from a problem's meta, {canonical id: (strategy class, planted strategy)}:
grid_paths, the move string -> (its winding class, first-move strategy); subset_sum, the sorted subset ->
((strategy, subset size), strategy).
"""

from __future__ import annotations

import numpy as np

from escov.llm.tasks import grid_paths, subset_sum

COVERAGE_TASKS = ("grid_paths", "subset_sum")


def share_found(found, solutions) -> float:
    """|set(found) ∩ set(solutions)| / |set(solutions)|; ValueError for an empty solution set."""
    universe = set(solutions)
    if not universe:
        raise ValueError("the enumerated solution set is empty: no share of it can be found")
    return len(universe & set(found)) / len(universe)


def classes_found_share(found, class_of: dict) -> float:
    """Share of the strategy classes {class_of[s]} that the found solutions (keys of class_of) reach."""
    classes = set(class_of.values())
    if not classes:
        raise ValueError("the enumerated solution set is empty: no share of its classes can be found")
    return len({class_of[s] for s in set(found) if s in class_of}) / len(classes)


def rare_share_on_both(strategies, both) -> float:
    """Pooled share of "rare" among the correct samples' strategies (strategies[i]: a list of "dominant"/"rare",
    one per correct sample of prompt i) over the prompts i with both[i] true; NaN when they hold no sample."""
    both = np.asarray(both, dtype=bool)
    if len(both) != len(strategies):
        raise ValueError(f"strategies ({len(strategies)} prompts) and both ({len(both)}) must have one row per prompt")
    rare = sum(int(np.sum(np.asarray(row) == "rare")) for row, keep in zip(strategies, both) if keep)
    total = sum(len(row) for row, keep in zip(strategies, both) if keep)
    return rare / total if total else float("nan")


def enumerated(task: str, meta: dict) -> dict[str, tuple]:
    """{canonical id: (strategy class, planted strategy)} of every correct solution of a problem (its meta)."""
    if task == "grid_paths":
        grid = grid_paths.parse_grid(meta["grid"])
        return {p: (grid_paths.winding_class(grid, p), grid_paths.strategy(p)) for p in grid_paths.shortest_paths(grid)}
    if task == "subset_sum":
        numbers = meta["numbers"]
        return {
            subset_sum.canonical(c): ((subset_sum.strategy(numbers, c), len(c)), subset_sum.strategy(numbers, c))
            for c in subset_sum.solutions(numbers, meta["target"])
        }
    raise ValueError(f"exact coverage needs one of the tasks {', '.join(COVERAGE_TASKS)}, got {task!r}")
