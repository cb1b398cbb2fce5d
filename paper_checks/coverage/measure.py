"""Every coverage measurement of a Coverage table against a reference model, with problem-bootstrap intervals.

The report (a dict, written as OUT.json):

    reference, n, prompts, ks (the budgets: 1, 2, 4, ..., and n), taus, confidence, replicates, bootstrap_seed
    models: {name: {
        seeds                      the model's seeds (intervals are conditional on them; theory/coverage.py)
        pass_at_k                  {"1": {mean, lo, hi}, "2": ..., str(n): ...}: the unbiased estimator averaged
                                   over prompts (and seeds), with its percentile problem-bootstrap interval
        cover_at_tau               {"0.5": {mean, lo, hi}, ...}: the share of prompts with c / n >= tau
        maj_at_k, distinct_correct, answer_entropy    {mean, lo, hi} each (maj_at_k by k), when answers are known
        crossing (not the reference)   {k_star, lo, hi, no_crossing_share, k_star_interpolated}: k_star is
                                   theory.coverage.crossing_k of the two mean curves, the first evaluated budget at
                                   which the reference leads (null: it never overtakes up to n); k_star_interpolated
                                   the same crossing read between budgets on log2 k; lo, hi the
                                   percentile interval of the replicates' k*, a replicate with no crossing counting
                                   as k* = infinity (hi null: beyond n in more than (1 - confidence) / 2 of them)
        solvability (not the reference) {preserved, gained, lost, neither, srr, ndr, nscr} at k = n
                                   (theory.coverage.solvability; with several seeds, averaged over seed pairs)
    }}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escov.paper_checks.coverage.table import Coverage, InputError
from escov.theory.coverage import (
    answer_entropy,
    cover_at_tau,
    crossing_k,
    distinct_correct,
    k_grid,
    pass_at_k_table,
    percentile_interval,
    problem_bootstrap_indices,
    solvability,
)
from escov.theory.metrics import maj_at_ks

TAUS = (0.25, 0.5, 0.75)
REPLICATES = 1000
CONFIDENCE = 0.95
MAJ_SUBSETS = 64  # random k-subsets per prompt for Maj@k at k < n (theory.metrics.maj_at_ks)


@dataclass
class MeasureOptions:
    reference: str
    ks: tuple | None = None  # default: k_grid(n)
    taus: tuple = TAUS
    replicates: int = REPLICATES
    confidence: float = CONFIDENCE
    seed: int = 0


def bootstrap_weights(prompts: int, replicates: int, seed: int) -> np.ndarray:
    """[replicates, prompts] how often each prompt is drawn in each problem-bootstrap replicate."""
    idx = problem_bootstrap_indices(prompts, replicates, seed)
    flat = (np.arange(replicates)[:, None] * prompts + idx).ravel()
    return np.bincount(flat, minlength=replicates * prompts).reshape(replicates, prompts).astype(float)


def _summary(per_prompt: np.ndarray, weights: np.ndarray, confidence: float) -> dict:
    """{mean, lo, hi} of a per-prompt value [prompts]: its mean and the bootstrap percentile interval."""
    lo, hi = percentile_interval(weights @ per_prompt / per_prompt.shape[0], confidence)
    return {"mean": float(per_prompt.mean()), "lo": lo, "hi": hi}


def _crossing(ks, model_pp, reference_pp, weights, confidence) -> dict:
    """k* of the mean curves and the percentile interval of the replicates' k* (no crossing = infinity)."""
    prompts = model_pp.shape[0]
    model_curve, reference_curve = model_pp.mean(axis=0), reference_pp.mean(axis=0)
    point = crossing_k(ks, model_curve, reference_curve)
    reps = crossing_k(ks, weights @ model_pp / prompts, weights @ reference_pp / prompts)
    none = np.isnan(reps)
    a = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(np.where(none, np.inf, reps), [a, 1.0 - a], method="inverted_cdf")
    finite = [None if not np.isfinite(v) else float(v) for v in (point, lo, hi)]
    between = crossing_k(ks, model_curve, reference_curve, interpolate=True)
    return {
        "k_star": finite[0],
        "lo": finite[1],
        "hi": finite[2],
        "no_crossing_share": float(none.mean()),
        "k_star_interpolated": None if np.isnan(between) else float(between),
    }


def _solvability(model_counts: np.ndarray, reference_counts: np.ndarray) -> dict:
    """The sets at k = n; with several seeds on either side, each figure averaged over all seed pairs."""
    pairs = [solvability(m, r) for m in model_counts for r in reference_counts]
    if len(pairs) == 1:
        return pairs[0]
    out = {}
    for key in pairs[0]:
        values = [p[key] for p in pairs if p[key] is not None]
        out[key] = float(np.mean(values)) if values else None
    return out


def _answer_measures(answers: list, ks, weights, confidence) -> dict:
    """Maj@k, distinct correct canonical solutions and answer entropy per prompt (seeds averaged)."""
    seeds, prompts = len(answers), len(answers[0])
    maj = np.zeros((prompts, len(ks)))
    distinct, entropy = np.zeros(prompts), np.zeros(prompts)
    for per_prompt in answers:
        for p, (ans, ok, votes) in enumerate(per_prompt):
            maj[p] += maj_at_ks(votes, ok, ks, n_subsets=MAJ_SUBSETS, seed=p)
            distinct[p] += distinct_correct(ans, ok)
            entropy[p] += answer_entropy(ans)
    maj, distinct, entropy = maj / seeds, distinct / seeds, entropy / seeds
    return {
        "maj_at_k": {str(k): _summary(maj[:, j], weights, confidence) for j, k in enumerate(ks)},
        "distinct_correct": _summary(distinct, weights, confidence),
        "answer_entropy": _summary(entropy, weights, confidence),
    }


def check_ks(ks, n: int, source: str) -> list[int]:
    """The requested budgets, increasing, each in [1, n] (InputError naming the first that is not)."""
    ks = sorted({int(k) for k in ks})
    for k in ks:
        if k < 1 or k > n:
            raise InputError(
                f"{source}: every prompt has {n} samples, fewer than k={k} (--k); Pass@k needs k <= n"
                if k > n
                else f"--k: expected budgets >= 1, got {k}"
            )
    return ks


def measure(cov: Coverage, options: MeasureOptions) -> dict:
    """The report of every model against options.reference (module docstring)."""
    if options.reference not in cov.models:
        raise InputError(
            f"--reference {options.reference!r}: no such model in {cov.source} "
            f"(models: {', '.join(sorted(cov.models))})"
        )
    n = cov.n
    ks = check_ks(options.ks, n, cov.source) if options.ks else k_grid(n)
    first = next(iter(cov.models.values()))
    prompts = len(first.prompt_ids)
    weights = bootstrap_weights(prompts, options.replicates, options.seed)
    curves = {name: pass_at_k_table(cov.aligned(name), n, ks).mean(axis=0) for name in cov.models}
    report = {
        "source": cov.source,
        "reference": options.reference,
        "n": n,
        "prompts": prompts,
        "ks": ks,
        "taus": list(options.taus),
        "confidence": options.confidence,
        "replicates": options.replicates,
        "bootstrap_seed": options.seed,
        "models": {},
    }
    names = [options.reference] + sorted(m for m in cov.models if m != options.reference)
    for name in names:
        m, counts = cov.models[name], cov.aligned(name)
        entry = {
            "seeds": m.seeds,
            "pass_at_k": {str(k): _summary(curves[name][:, j], weights, options.confidence) for j, k in enumerate(ks)},
            "cover_at_tau": {
                str(t): _summary(cover_at_tau(counts, n, t).mean(axis=0), weights, options.confidence)
                for t in options.taus
            },
        }
        if m.answers is not None:
            order = {p: i for i, p in enumerate(m.prompt_ids)}
            aligned = [[seed_answers[order[p]] for p in first.prompt_ids] for seed_answers in m.answers]
            entry.update(_answer_measures(aligned, ks, weights, options.confidence))
        if name != options.reference:
            entry["crossing"] = _crossing(ks, curves[name], curves[options.reference], weights, options.confidence)
            entry["solvability"] = _solvability(counts, cov.aligned(options.reference))
        report["models"][name] = entry
    for name in names[1:]:  # each compared model also at the top level, as the interface states it (OUT[MODEL])
        report.setdefault(name, report["models"][name])  # a name equal to a report field stays under "models" only
    return report
