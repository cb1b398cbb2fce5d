"""The cost of one update, as the paper counts it, for the bandit and for real training.

Per prompt of the batch, in units of P L (parameters times tokens per response):

    ES     2 N m              N members, m rollouts per member and prompt; forward passes only
    GRPO   (2 + 6 mu) G       G samples generated (2 each), then mu = num_iterations training passes
                              (forward + backward, 6 each); 8 G at mu = 1 (docs/paper.md: 8 T B G P L)

Sampled responses per prompt: N m for ES, G for GRPO. With m = mu = 1 the FLOPs are equal exactly
when N = 4 G (the paper's N = 32 against G = 8).
"""

from __future__ import annotations


def es_flops(population_size: int, member_samples: int = 1) -> float:
    """FLOPs of one ES update per prompt, in units of P L: 2 N m."""
    return 2.0 * population_size * member_samples


def grpo_flops(num_generations: int, num_iterations: int = 1) -> float:
    """FLOPs of one GRPO update per prompt, in units of P L: (2 + 6 mu) G."""
    return (2.0 + 6.0 * num_iterations) * num_generations
