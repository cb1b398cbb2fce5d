"""The named checks `python -m escov.theory` runs, grouped by topic; each group returns result dicts.

Every group gets its own random generator derived from (seed, group index), so a group's result
does not depend on which other groups run.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from tqdm import tqdm

from escov.theory.checks import cross_prompt, dpi, grpo, lemma1, lemma2, lemma3, prop1, shared_metrics
from escov.theory.checks.result import TOPICS, check_result, counts

GROUPS: dict[str, Callable[[np.random.Generator], list[dict]]] = {
    "lemma1": lemma1.run,
    "dpi": dpi.run,
    "lemma2": lemma2.run,
    "lemma3": lemma3.run,
    "prop1": prop1.run,
    "cross_prompt": cross_prompt.run,
    "grpo": grpo.run,
    "metrics": shared_metrics.run,
}


def run_checks(seed: int = 0, only: tuple[str, ...] = (), progress: bool = True) -> list[dict]:
    """Run every group (or those named in `only`) and return all result items in a fixed order."""
    unknown = [name for name in only if name not in GROUPS]
    if unknown:
        raise ValueError(f"only must name groups among {list(GROUPS)}, got {unknown}")
    results = []
    names = [name for name in GROUPS if not only or name in only]
    for name in tqdm(names, desc="theory checks", disable=not progress):
        rng = np.random.default_rng([seed, list(GROUPS).index(name)])
        results += GROUPS[name](rng)
    return results


__all__ = ["GROUPS", "TOPICS", "check_result", "counts", "run_checks"]
