"""Two methods compared at matched Pass@1: along each run's curve (llm/curve.py), not at its end.

Each run has curve points t = 0 (the base), ..., T with a mean sampled Pass@1 m_t over the shared
test prompts and, per prompt p, a metric y_t[p] (Pass@32, Pass@16 from the correct counts; or the
no-correct indicator, correct count == 0). For a Pass@1 level L the run is read where its curve
first reaches L, interpolated linearly between the two points around it:

    t* : first segment with L between m_t and m_{t+1};  w = (L - m_t) / (m_{t+1} - m_t)
    y(L)[p] = (1 - w) y_t[p] + w y_{t+1}[p]

The levels compared are those every run of both methods reaches: the common range
[max over runs of min_t m_t, min over runs of max_t m_t], at MATCHED_LEVELS evenly spaced interior levels (theory.matched)
(its ends excluded: at the lower end two methods on one seed often sit on the same base
measurement, a difference of exactly zero by construction). The per-(seed, prompt) value is
the mean over levels of y_A(L)[p] - y_B(L)[p], runs paired by seed, and its interval comes from
paper_checks.design.seeds_by_prompts (seeds and shared prompts, with its power line). One number
per claim, so testing several levels is not a multiple comparison. When the common range is
narrower than MIN_RANGE there is nothing to compare: the comparison is None and the reason is
returned, with how far each method's Pass@1 moved.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paper_checks.design import Estimate, seeds_by_prompts
from theory.matched import interior_levels
from theory.metrics import pass_at_k_counts

MIN_RANGE = 0.02    # the common Pass@1 range must span at least 2 points


@dataclass(frozen=True)
class Curve:
    """One run's curve: steps (T,), mean sampled Pass@1 (T,), per-prompt correct counts (T, P) of n
    samples, mean token entropy (T,), greedy accuracy (T,), the prompt ids and the seed."""
    seed: int
    steps: np.ndarray
    pass1: np.ndarray
    counts: np.ndarray
    n: int
    entropy: np.ndarray
    greedy: np.ndarray
    ids: tuple[str, ...]

    def metric(self, name: str) -> np.ndarray:
        """(T, P) per-prompt values: "pass@K" or "no_correct"."""
        if name == "no_correct":
            return (self.counts == 0).astype(float)
        if name.startswith("pass@"):
            k = int(name[5:])
            return np.stack([pass_at_k_counts(self.n, row, k) for row in self.counts])
        raise ValueError(f"metric must be pass@K or no_correct, got {name!r}")


def curve_of(points: list[dict], seed: int) -> Curve | None:
    """A Curve from curve.json points (None unless there are >= 2 points on the same prompts)."""
    if not points or len(points) < 2:
        return None
    ids = tuple(p["id"] for p in points[0]["sampled"]["per_problem"])
    if any(tuple(p["id"] for p in pt["sampled"]["per_problem"]) != ids for pt in points):
        return None
    counts = np.array([[p["correct"] for p in pt["sampled"]["per_problem"]] for pt in points])
    return Curve(seed=seed, steps=np.array([pt["step"] for pt in points]),
                 pass1=np.array([pt["sampled"]["pass_at_k"]["1"] for pt in points]), counts=counts,
                 n=int(points[0]["sampled"]["n"]), entropy=np.array([pt["sampled"]["mean_token_entropy"] for pt in points]),
                 greedy=np.array([pt["greedy"]["pass_at_k"]["1"] for pt in points]), ids=ids)


def at_level(pass1: np.ndarray, values: np.ndarray, level: float) -> np.ndarray | None:
    """values (T, ...) read where the curve pass1 (T,) first reaches `level`, linearly interpolated
    between its two neighbouring points; None when the curve never reaches it."""
    for t in range(len(pass1) - 1):
        a, b = pass1[t], pass1[t + 1]
        if min(a, b) <= level <= max(a, b):
            w = 0.0 if a == b else (level - a) / (b - a)
            return (1 - w) * values[t] + w * values[t + 1]
    if len(pass1) == 1 and pass1[0] == level:
        return values[0]
    return None


def common_range(curves: list[Curve]) -> tuple[float, float]:
    """[max of the curves' minimum Pass@1, min of their maximum]: the Pass@1 levels every curve reaches."""
    return float(max(c.pass1.min() for c in curves)), float(min(c.pass1.max() for c in curves))


def paired(a: list[Curve], b: list[Curve]) -> list[tuple[Curve, Curve]]:
    """Curves of two methods paired by seed, on the same prompts."""
    by_seed = {c.seed: c for c in b}
    pairs = [(ca, by_seed[ca.seed]) for ca in a if ca.seed in by_seed]
    return [(ca, cb) for ca, cb in pairs if ca.ids == cb.ids == pairs[0][0].ids]


def matched_difference(a: list[Curve], b: list[Curve], metric: str) -> tuple[Estimate | None, dict]:
    """Mean over the common Pass@1 levels of a - b in `metric`, per (seed, prompt), with its interval;
    (None, info) when fewer than 2 pairs or the common range is under MIN_RANGE. info: the range,
    the levels and each method's Pass@1 movement (max - start, mean over seeds)."""
    pairs = paired(a, b)
    info: dict = {"pairs": len(pairs)}
    if not pairs:
        return None, info | {"reason": "no runs of both methods on the same seeds and prompts"}
    curves = [c for pair in pairs for c in pair]
    lo, hi = common_range(curves)
    info |= {"range": [lo, hi], "moved_a": float(np.mean([ca.pass1.max() - ca.pass1[0] for ca, _ in pairs])),
             "moved_b": float(np.mean([cb.pass1.max() - cb.pass1[0] for _, cb in pairs]))}
    if hi - lo < MIN_RANGE:
        return None, info | {"reason": f"the Pass@1 range every run reaches is {100 * max(hi - lo, 0):.1f} pts wide "
                                       f"(under {100 * MIN_RANGE:g}): nothing to compare at matched Pass@1"}
    levels = interior_levels(lo, hi)
    rows, per_level = [], []
    for ca, cb in pairs:
        ya, yb = ca.metric(metric), cb.metric(metric)
        diffs = np.stack([at_level(ca.pass1, ya, L) - at_level(cb.pass1, yb, L) for L in levels])
        rows.append(diffs.mean(0))
        per_level.append(diffs.mean(1))
    info |= {"levels": levels.tolist(), "per_level_mean": np.mean(per_level, axis=0).tolist()}
    return seeds_by_prompts(np.stack(rows), pairs[0][0].n), info


def matched_seed_values(a: list[Curve], b: list[Curve], field: str) -> tuple[list[float] | None, dict]:
    """Per seed, the mean over the common levels of a - b in a per-run series (`entropy`, `greedy`)."""
    pairs = paired(a, b)
    if not pairs:
        return None, {"reason": "no runs of both methods on the same seeds and prompts"}
    lo, hi = common_range([c for pair in pairs for c in pair])
    if hi - lo < MIN_RANGE:
        return None, {"range": [lo, hi], "reason": "common Pass@1 range under MIN_RANGE"}
    levels = interior_levels(lo, hi)
    values = [float(np.mean([at_level(ca.pass1, getattr(ca, field), L) - at_level(cb.pass1, getattr(cb, field), L)
                             for L in levels])) for ca, cb in pairs]
    return values, {"range": [lo, hi], "levels": levels.tolist()}
