"""The named checks `python -m escov.theory` runs, grouped by topic; each group returns result dicts.

    lemma1.py          Lemma 1: closed forms, E[JSpol_N] and E[JSsucc_N] by Monte Carlo, sympy, the chain rule
    dpi.py             data processing: 0 <= JSsucc_N <= JSpol_N <= log N, and F_succ <= I
    lemma2.py          Lemma 2: P_pop >= P_same, its exact gap, its local form, the K-of-N case
    lemma3.py          Lemma 3: p_w - p_bar = N Cov(w, p), and what the real ES update obeys
    prop1.py           Proposition 1: the exact difference of f_K, its bounds, Pinsker, the proposition
    cross_prompt.py    across prompts: at a fixed mean Pass@1, mean Pass@K is largest when success is even
    grpo.py            the GRPO side: the exact prompt weight w_G(p), the entropy change of a softmax policy
    shared_metrics.py  the shared metrics of theory.metrics against independent computations
    toys.py            the fixed toy policies the checks run on (built from fixed seeds)
    result.py          one check's outcome as a plain dict (what `--json` prints)

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
