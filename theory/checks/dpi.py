"""Data processing: 0 <= JSsucc_N <= JSpol_N <= log N on every population, and F_succ <= I.

The success indicator is a function of the outcome, so projecting each member onto its Bernoulli
cannot increase the Jensen-Shannon divergence (nor the Fisher information). Checked population by
population (not on average) over ES populations of the toys at small to huge sigma, and over
arbitrary Dirichlet populations. Items report the worst case as a ratio to the bound (<= 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escov.theory.categorical import CategoricalPolicy
from escov.theory.checks.result import check_result
from escov.theory.checks.toys import TOYS
from escov.theory.metrics import binary_entropy, generalized_js_batch, success_probability

ROUNDING = 1e-12  # float rounding of entropies of order 1
RESOLVED = 1e-8  # JSpol above this is far above rounding, so ratios to it are meaningful


@dataclass(frozen=True)
class DpiConfig:
    draws: int = 300  # populations per (toy, sigma, N)
    sigmas: tuple[float, ...] = (0.01, 0.3, 3.0, 30.0)
    members: tuple[int, ...] = (2, 8, 64)
    dirichlet_draws: int = 5000
    dirichlet_outcomes: int = 6
    loewner_instances: int = 200


CFG = DpiConfig()


def _populations(rng: np.random.Generator):
    """Yield (probs [R, N, M], correct mask [M]) for ES populations and Dirichlet populations."""
    for name in ("tabular", "shared", "sequence"):
        policy, theta = TOYS[name]()
        for sigma in CFG.sigmas:
            for n in CFG.members:
                eps = rng.standard_normal((CFG.draws, n, policy.dim))
                yield policy.probs(theta + sigma * eps), policy.correct
    for n in CFG.members:
        alpha = rng.choice([0.05, 0.5, 5.0], size=(CFG.dirichlet_draws, 1, 1))
        probs = rng.gamma(np.broadcast_to(alpha, (CFG.dirichlet_draws, n, CFG.dirichlet_outcomes)))
        probs /= probs.sum(axis=-1, keepdims=True)
        yield probs, np.arange(CFG.dirichlet_outcomes) < 2


def js_chain(rng: np.random.Generator) -> list[dict]:
    """Worst cases of JSsucc/JSpol and JSpol/log N; ratios only where JSpol > RESOLVED (above rounding)."""
    worst_ratio, worst_excess, worst_pol_over_log_n, min_succ, count = 0.0, -np.inf, 0.0, np.inf, 0
    for probs, correct in _populations(rng):
        n = probs.shape[-2]
        jspol = generalized_js_batch(probs)
        p = success_probability(probs, correct)
        raw_succ = binary_entropy(p.mean(axis=-1)) - binary_entropy(p).mean(axis=-1)  # unclipped
        resolved = jspol > RESOLVED
        worst_ratio = max(worst_ratio, float(np.max(raw_succ[resolved] / jspol[resolved], initial=0.0)))
        worst_excess = max(worst_excess, float(np.max(raw_succ - jspol)))
        worst_pol_over_log_n = max(worst_pol_over_log_n, float(np.max(jspol / np.log(n))))
        min_succ = min(min_succ, float(raw_succ.min()))
        count += probs.shape[0]
    return [
        check_result(
            "dpi/jssucc_le_jspol",
            1.0,
            worst_ratio,
            worst_ratio <= 1.0 + 1e-6 and worst_excess <= ROUNDING,
            detail=f"max over {count} populations of JSsucc_N / JSpol_N (where JSpol_N > {RESOLVED:g}); "
            f"max of JSsucc_N - JSpol_N over all: {worst_excess:.1e}",
        ),
        check_result(
            "dpi/jspol_le_log_n",
            1.0,
            worst_pol_over_log_n,
            worst_pol_over_log_n <= 1.0 + ROUNDING,
            detail=f"max over {count} populations of JSpol_N / log N",
        ),
        check_result(
            "dpi/jssucc_nonnegative",
            0.0,
            min_succ,
            min_succ >= -ROUNDING,
            detail=f"min over {count} populations of h(p_bar) - mean h(p_i) (computed without clipping)",
        ),
    ]


def fisher_loewner(rng: np.random.Generator) -> list[dict]:
    """F_succ <= I: the smallest eigenvalue of I - F_succ (relative to the largest of I) is >= 0.
    Worst case over random softmax policies, thetas and verifiers, and the sequence toy."""
    worst = np.inf
    instances = []
    for _ in range(CFG.loewner_instances):
        m = int(rng.integers(3, 10))
        d = int(rng.integers(1, 8))
        policy = CategoricalPolicy(
            rng.standard_normal((m, d)) * rng.uniform(0.2, 3.0),
            rng.standard_normal(m),
            rng.permutation(np.arange(m) < rng.integers(1, m)),
        )
        instances.append((policy, rng.standard_normal(d)))
    instances.append(TOYS["sequence"]())
    for policy, theta in instances:
        fisher = policy.fisher(theta)
        gap = np.linalg.eigvalsh(fisher - policy.success_fisher(theta))
        worst = min(worst, float(gap[0] / np.linalg.eigvalsh(fisher)[-1]))
    return [
        check_result(
            "dpi/fisher_loewner",
            0.0,
            worst,
            worst >= -1e-8,
            detail=f"min over {len(instances)} policies (random softmax ones and the sequence toy) of "
            f"lambda_min(I - F_succ) / lambda_max(I); F_succ <= I means >= 0",
        )
    ]


def run(rng: np.random.Generator) -> list[dict]:
    return js_chain(rng) + fisher_loewner(rng)
