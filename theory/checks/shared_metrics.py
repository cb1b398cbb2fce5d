"""Checks of the shared metrics in theory.metrics against independent computations."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from escov.theory.checks.result import check_result
from escov.theory.metrics import (
    entropy,
    generalized_js,
    generalized_js_batch,
    jssucc,
    maj_at_k,
    pass_at_k,
    pass_at_k_from_p,
)


@dataclass(frozen=True)
class MetricsConfig:
    brute_force_n: int = 8  # pass@k against all size-k subsets for n up to this
    unbiased_n: int = 16
    js_populations: int = 2000
    maj_n: int = 8
    maj_k: int = 3
    z: float = 4.0


CFG = MetricsConfig()


def pass_at_k_checks(rng: np.random.Generator) -> list[dict]:
    worst, cases = 0.0, 0
    for n in range(1, CFG.brute_force_n + 1):
        for c in range(n + 1):
            samples = np.arange(n) < c  # which samples are correct
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(range(n), k))
                brute = np.mean([samples[list(s)].any() for s in subsets])
                worst = max(worst, abs(pass_at_k(n, c, k) - brute))
                cases += 1
    n = CFG.unbiased_n
    worst_bias = 0.0
    for p in np.linspace(0, 1, 21):
        for k in (1, 2, 5, n):
            expected = sum(math.comb(n, c) * p**c * (1 - p) ** (n - c) * pass_at_k(n, c, k) for c in range(n + 1))
            worst_bias = max(worst_bias, abs(expected - float(pass_at_k_from_p(p, k))))
    return [
        check_result(
            "metrics/pass_at_k_brute_force",
            0.0,
            worst,
            worst < 1e-12,
            detail=f"max |pass_at_k - share of all size-k subsets with a correct sample| over {cases} (n, c, k), "
            f"n <= {CFG.brute_force_n}",
        ),
        check_result(
            "metrics/pass_at_k_unbiased",
            0.0,
            worst_bias,
            worst_bias < 1e-12,
            detail=f"max over p and k of |E_(c ~ Binomial({n}, p)) pass_at_k({n}, c, k) - (1 - (1 - p)^k)|",
        ),
    ]


def js_checks(rng: np.random.Generator) -> list[dict]:
    n, v = 5, 7
    probs = rng.dirichlet(np.full(v, 0.7), size=(CFG.js_populations, n))
    weights = rng.dirichlet(np.ones(n), size=CFG.js_populations)
    kl_form = np.array([generalized_js(pr, w) for pr, w in zip(probs, weights)])
    mix = np.einsum("rn,rnv->rv", weights, probs)
    entropy_form = entropy(mix) - np.einsum("rn,rn->r", weights, entropy(probs))
    batch = generalized_js_batch(probs)  # equal weights, all populations at once
    single = np.array([generalized_js(pr) for pr in probs])
    p = rng.random((200, n))
    bern = np.array([generalized_js(np.stack([q, 1 - q], axis=1)) for q in p])
    succ = np.array([jssucc(q) for q in p])
    return [
        check_result(
            "metrics/generalized_js_entropy_form",
            float(entropy_form.sum()),
            float(kl_form.sum()),
            float(np.max(np.abs(kl_form - entropy_form))) < 1e-12,
            detail="sum_i w_i KL(pi_i || pi_bar) vs H(pi_bar) - sum_i w_i H(pi_i), random weights, "
            f"{CFG.js_populations} populations; batched == single: {np.max(np.abs(batch - single)):.1e}",
        ),
        check_result(
            "metrics/jssucc_bernoulli_rows",
            float(bern.sum()),
            float(succ.sum()),
            float(np.max(np.abs(bern - succ))) < 1e-12,
            detail="jssucc(p) vs generalized_js of the rows (p_i, 1 - p_i)",
        ),
    ]


def maj_checks(rng: np.random.Generator) -> list[dict]:
    """maj_at_k with k < n averages random subsets: compare with the exact mean over all k-subsets."""
    answers = ["7", "7", "3", None, "3", "3", "12", "7"]
    correct = [a == "7" for a in answers]
    n, k = CFG.maj_n, CFG.maj_k

    def vote(idx) -> float:
        counts = {}
        for i in idx:
            if answers[i] is not None:
                counts[answers[i]] = counts.get(answers[i], 0) + 1
        if not counts:
            return 0.0
        top = max(counts.values())
        tied = [a for a, m in counts.items() if m == top]
        return sum(a == "7" for a in tied) / len(tied)

    votes = np.array([vote(s) for s in itertools.combinations(range(n), k)])
    exact = float(votes.mean())
    estimate = maj_at_k(answers, correct, k, n_subsets=4096, seed=int(rng.integers(1 << 31)))
    se = float(votes.std() / np.sqrt(4096))
    full = maj_at_k(answers, correct, n)
    return [
        check_result(
            "metrics/maj_at_k_subsets",
            exact,
            estimate,
            abs(estimate - exact) <= CFG.z * se,
            stderr=se,
            detail=f"4096 random {k}-subsets vs all C({n},{k}) subsets (ties split); k = n gives {full} "
            "(3 votes each for '7' and '3': a tie, half credit)",
        )
    ]


def run(rng: np.random.Generator) -> list[dict]:
    return pass_at_k_checks(rng) + js_checks(rng) + maj_checks(rng)
