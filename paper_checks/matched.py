"""Two methods compared at matched Pass@1: along each run's curve (llm/curve.py), where it was measured.

Each run has curve points t = 0 (the base), ..., T with a mean sampled Pass@1 m_t over the shared
test prompts and, per prompt p, a metric y_t[p] (Pass@32, Pass@16 from the correct counts; or the
no-correct indicator, correct count == 0). Every run is read the one way theory.matched defines:
the common range of all runs of both methods, its interior levels, each run read at its first
crossing of a level by linear interpolation between the two measured points around it.

Support rule: a level is compared only where every run of both methods supports it, i.e. the
segment it is read from spans at most RESOLUTION of Pass@1. A level inside a wider gap is left out:
there the straight line is a chord, below a concave frontier, and the method measured more sparsely
reads low. With no supported level the comparison is not testable here, and the reason gives each
method's count of measured points inside the range.

Estimate: the per-(seed, prompt) value is the mean over the compared levels of y_A(L)[p] - y_B(L)[p],
runs paired by seed; its interval comes from escov.paper_checks.design.seeds_by_prompts. One number per
claim, so testing several levels is not a multiple comparison. With at="top" the value is read at the
highest supported level alone (AT_TOP): the highest Pass@1 both methods reach, where GRPO has sharpened most,
not an average that starts one or two steps from the base where the difference must be about 0.

Bias control, beside every difference: the method with more measured points in the range (over its
runs) is thinned to the other's layout (per seed, for each point of the other run, its own point
nearest in Pass@1; its lowest, highest, first and last points kept) and read against itself at the
same levels. Its mean, signed as a shift of A - B (full - thinned when A is the dense one, thinned -
full when B is), is the interpolation bias the sparser layout can produce on these data.

When the common range is narrower than MIN_RANGE there is nothing to compare and the reason says
how far each method's Pass@1 moved.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from escov.paper_checks.design import Estimate, plan, seeds_by_prompts
from escov.theory.matched import RESOLUTION, compared_levels, differences_at, points_in_range
from escov.theory.metrics import pass_at_k_counts

MIN_RANGE = 0.02  # the common Pass@1 range must span at least 2 points
AT_LEVELS, AT_TOP = "levels", "top"  # read over every supported level, or at the highest one alone
NO_PAIRS = "no runs of both methods on the same seeds and prompts"


@dataclass(frozen=True)
class Curve:
    """One run's curve: steps (T,), mean sampled Pass@1 (T,), per-prompt correct counts (T, P) of n
    samples, mean token entropy (T,), greedy accuracy (T,), the prompt ids and the seed; per-prompt distinct
    correct solutions (T, P), 0 where none is correct, and per-prompt mean token entropy (T, P) (each None when a
    point lacks them: curves measured before they were recorded)."""

    seed: int
    steps: np.ndarray
    pass1: np.ndarray
    counts: np.ndarray
    n: int
    entropy: np.ndarray
    greedy: np.ndarray
    ids: tuple[str, ...]
    distinct: np.ndarray | None = None
    prompt_entropy: np.ndarray | None = None

    def metric(self, name: str) -> np.ndarray:
        """(T, P) per-prompt values: "pass@K", "no_correct", "distinct" (distinct correct solutions) or "entropy"
        (each prompt's mean token entropy)."""
        if name == "entropy":
            if self.prompt_entropy is None:
                raise ValueError(f"seed {self.seed}: a curve point lacks per-prompt mean_token_entropy")
            return self.prompt_entropy
        if name == "no_correct":
            return (self.counts == 0).astype(float)
        if name == "distinct":
            if self.distinct is None:
                raise ValueError(f"seed {self.seed}: a curve point lacks per-prompt distinct_correct_answers")
            return np.where(self.counts > 0, self.distinct, 0.0)
        if name.startswith("pass@"):
            k = int(name[5:])
            return np.stack([pass_at_k_counts(self.n, row, k) for row in self.counts])
        raise ValueError(f"metric must be pass@K, no_correct, distinct or entropy, got {name!r}")

    def subset(self, keep) -> "Curve":
        """The curve measured only at the points `keep` (indices, training order kept)."""
        idx = np.array(sorted(set(int(i) for i in keep)))
        return replace(
            self,
            steps=self.steps[idx],
            pass1=self.pass1[idx],
            counts=self.counts[idx],
            entropy=self.entropy[idx],
            greedy=self.greedy[idx],
            distinct=None if self.distinct is None else self.distinct[idx],
            prompt_entropy=None if self.prompt_entropy is None else self.prompt_entropy[idx],
        )


def curve_of(points: list[dict], seed: int) -> Curve | None:
    """A Curve from curve.json points (None unless there are >= 2 points on the same prompts)."""
    if not points or len(points) < 2:
        return None
    ids = tuple(p["id"] for p in points[0]["sampled"]["per_problem"])
    if any(tuple(p["id"] for p in pt["sampled"]["per_problem"]) != ids for pt in points):
        return None
    counts = np.array([[p["correct"] for p in pt["sampled"]["per_problem"]] for pt in points])
    rows = [p for pt in points for p in pt["sampled"]["per_problem"]]
    distinct, prompt_entropy = (
        np.array([[p[key] for p in pt["sampled"]["per_problem"]] for pt in points], dtype=float)
        if all(key in p for p in rows)
        else None
        for key in ("distinct_correct_answers", "mean_token_entropy")
    )
    return Curve(
        seed=seed,
        steps=np.array([pt["step"] for pt in points]),
        pass1=np.array([pt["sampled"]["pass_at_k"]["1"] for pt in points]),
        counts=counts,
        n=int(points[0]["sampled"]["n"]),
        entropy=np.array([pt["sampled"]["mean_token_entropy"] for pt in points]),
        greedy=np.array([pt["greedy"]["pass_at_k"]["1"] for pt in points]),
        ids=ids,
        distinct=distinct,
        prompt_entropy=prompt_entropy,
    )


def paired(a: list[Curve], b: list[Curve]) -> list[tuple[Curve, Curve]]:
    """Curves of two methods paired by seed, on the same prompts."""
    by_seed = {c.seed: c for c in b}
    pairs = [(ca, by_seed[ca.seed]) for ca in a if ca.seed in by_seed]
    return [(ca, cb) for ca, cb in pairs if ca.ids == cb.ids == pairs[0][0].ids]


def thinned(dense: Curve, layout_pass1) -> Curve:
    """`dense` kept only at its points nearest in Pass@1 to each level of `layout_pass1`, plus its first,
    last, lowest and highest points (so it spans the same Pass@1 range)."""
    m = dense.pass1
    keep = {0, len(m) - 1, int(np.argmin(m)), int(np.argmax(m))}
    keep |= {int(np.argmin(np.abs(m - level))) for level in np.asarray(layout_pass1, dtype=float)}
    return dense.subset(keep)


def _layout(pairs: list[tuple[Curve, Curve]], resolution: float) -> dict:
    """Range, levels, which levels every run supports, and each method's measured points in the range."""
    curves = [c for pair in pairs for c in pair]
    lo, hi, levels, kept = compared_levels([c.pass1 for c in curves], resolution)
    return {
        "pairs": len(pairs),
        "range": [lo, hi],
        "resolution": resolution,
        "moved_a": float(np.mean([ca.pass1.max() - ca.pass1[0] for ca, _ in pairs])),
        "moved_b": float(np.mean([cb.pass1.max() - cb.pass1[0] for _, cb in pairs])),
        "points_in_range_a": [points_in_range(ca.pass1, lo, hi) for ca, _ in pairs],
        "points_in_range_b": [points_in_range(cb.pass1, lo, hi) for _, cb in pairs],
        "levels": levels.tolist(),
        "supported": kept.tolist(),
        "compared_levels": levels[kept].tolist(),
    }


def _not_compared(info: dict, names: tuple[str, str]) -> str | None:
    """Why nothing is compared (None when some level is)."""
    lo, hi = info["range"]
    if hi - lo < MIN_RANGE:
        return (
            f"the Pass@1 range every run reaches is {100 * max(hi - lo, 0):.1f} pts wide (under {100 * MIN_RANGE:g}): "
            f"nothing to compare at matched Pass@1"
        )
    if not info["compared_levels"]:
        return (
            f"not testable here: too few measured points in the range {100 * lo:.1f}-{100 * hi:.1f} pts (no level has "
            f"measured points within {100 * info['resolution']:g} pts on both sides in every run); measured points "
            f"in the range per run: {names[0]} {info['points_in_range_a']}, {names[1]} {info['points_in_range_b']}"
        )
    return None


def _bias(pairs, values_of, levels, lo: float, hi: float) -> tuple[str, np.ndarray]:
    """('a' or 'b': the method with more measured points in [lo, hi], thinned; per pair the (levels, ...)
    shift of a - b its thinning produces)."""
    count = lambda side: sum(points_in_range(pair[side].pass1, lo, hi) for pair in pairs)
    side = 0 if count(0) >= count(1) else 1
    shifts = []
    for pair in pairs:
        dense, other = pair[side], pair[1 - side]
        thin = thinned(dense, other.pass1)
        d = differences_at(levels, dense.pass1, values_of(dense), thin.pass1, values_of(thin))
        shifts.append(d if side == 0 else -d)
    return "ab"[side], np.stack(shifts)


def _supported_levels(a: list[Curve], b: list[Curve], resolution: float, names: tuple[str, str], at: str = AT_LEVELS):
    """(pairs, info, the supported common levels: all of them, or with at=AT_TOP the highest) of two methods'
    curves; (None, info with "reason", None) when no run pairs or no level passes the support rule."""
    if at not in (AT_LEVELS, AT_TOP):
        raise ValueError(f"at must be {AT_LEVELS!r} or {AT_TOP!r}, got {at!r}")
    pairs = paired(a, b)
    if not pairs:
        return None, {"pairs": 0, "reason": NO_PAIRS}, None
    info = _layout(pairs, resolution)
    reason = _not_compared(info, names)
    if reason is not None:
        return None, info | {"reason": reason, "not_testable": reason.startswith("not testable")}, None
    if at == AT_TOP:
        info["compared_levels"] = [max(info["compared_levels"])]
    return pairs, info, np.array(info["compared_levels"])


def matched_difference(
    a: list[Curve],
    b: list[Curve],
    metric: str,
    *,
    resolution: float = RESOLUTION,
    names: tuple[str, str] = ("A", "B"),
    at: str = AT_LEVELS,
) -> tuple[Estimate | None, dict]:
    """Mean over the supported common Pass@1 levels (at=AT_TOP: the highest alone) of a - b in `metric`, per
    (seed, prompt), with its interval; (None, info with "reason") when nothing can be compared. info also holds the
    range, the
    levels, which are supported, each method's measured points in range per run, the per-level mean
    difference, the bias control ("bias": the method thinned and its Estimate) and the design's plan (its
    variance components and the seeds a 2-point effect needs, design.plan)."""
    pairs, info, levels = _supported_levels(a, b, resolution, names, at)
    if pairs is None:
        return None, info
    diffs = np.stack(
        [differences_at(levels, ca.pass1, ca.metric(metric), cb.pass1, cb.metric(metric)) for ca, cb in pairs]
    )
    side, shifts = _bias(pairs, lambda c: c.metric(metric), levels, *info["range"])
    n = pairs[0][0].n
    bias = seeds_by_prompts(shifts.mean(1), n)
    info |= {
        "per_level_mean": diffs.mean(axis=(0, 2)).tolist(),
        "plan": plan(diffs.mean(1)),
        "bias": {
            "thinned": names["ab".index(side)],
            "to_layout_of": names[1 - "ab".index(side)],
            "per_level_mean": shifts.mean(axis=(0, 2)).tolist(),
            "estimate": bias.to_json(),
        },
    }
    return seeds_by_prompts(diffs.mean(1), n), info


def matched_seed_values(
    a: list[Curve], b: list[Curve], field: str, *, resolution: float = RESOLUTION, names: tuple[str, str] = ("A", "B")
) -> tuple[list[float] | None, dict]:
    """Per seed, the mean over the supported common levels of a - b in a per-run series (`entropy`,
    `greedy`), with the same range, support rule and bias control (info["bias"]["per_seed"])."""
    pairs, info, levels = _supported_levels(a, b, resolution, names)
    if pairs is None:
        return None, info
    values = [
        float(differences_at(levels, ca.pass1, getattr(ca, field), cb.pass1, getattr(cb, field)).mean())
        for ca, cb in pairs
    ]
    side, shifts = _bias(pairs, lambda c: getattr(c, field), levels, *info["range"])
    info["bias"] = {
        "thinned": names["ab".index(side)],
        "to_layout_of": names[1 - "ab".index(side)],
        "per_seed": shifts.mean(1).tolist(),
    }
    return values, info
