"""The noise of an ES population, regenerated from seeds: full rank (as in llm/es.py) or low rank (EGGROLL).

Member m of an iteration uses direction d and sign s (`llm.es.member_direction`) and the weights
theta + s * sigma * E_d.

Full rank:  E_d = eps_d ~ N(0, I), exactly `llm.es.noise(seed, d, name, shape)`.
Low rank r (EGGROLL, "Evolution Strategies at the Hyperscale"): every weight matrix of shape
[out, in] gets

    E_d = A_d B_d^T / sqrt(r),      A_d ~ N(0, I) of shape [out, r],  B_d ~ N(0, I) of shape [in, r],

each factor drawn from its own seed (the parameter name plus "/lowrank-A" or "/lowrank-B"), so every
entry of E_d has variance 1 as with full-rank noise and sigma means the same thing, and
x E_d^T = (x B_d) A_d^T / sqrt(r) costs r (in + out) per row instead of in * out.
Vectors (norm weights, biases) keep full-rank noise.

The ES update sum_d c_d E_d is rebuilt from the same seeds; with low rank it is one matrix product,
(A * c) B^T / sqrt(r) with A = [A_1 .. A_D] and B = [B_1 .. B_D] side by side.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from llm.es import combined_noise, member_direction, noise


@dataclass(frozen=True)
class PopulationNoise:
    sigma: float
    antithetic: bool = False
    rank: int = 0            # 0: full rank; r > 0: E = A B^T / sqrt(r) for every weight matrix
    chunk: int = 1 << 20     # elements generated per call (llm.es.noise)

    def is_lowrank(self, shape: torch.Size | tuple[int, ...]) -> bool:
        return self.rank > 0 and len(shape) == 2

    def factors(self, seed: int, direction: int, name: str, shape) -> tuple[torch.Tensor, torch.Tensor]:
        """(A_d [out, r], B_d [in, r]) of a weight matrix, each from its own seed."""
        out_features, in_features = shape
        return (noise(seed, direction, f"{name}/lowrank-A", torch.Size((out_features, self.rank)), self.chunk),
                noise(seed, direction, f"{name}/lowrank-B", torch.Size((in_features, self.rank)), self.chunk))

    def direction(self, seed: int, direction: int, name: str, shape) -> torch.Tensor:
        """E_d of one parameter (fp32, materialized)."""
        if self.is_lowrank(shape):
            a, b = self.factors(seed, direction, name, shape)
            return (a @ b.T) / math.sqrt(self.rank)
        return noise(seed, direction, name, torch.Size(shape), self.chunk)

    def member_delta(self, seed: int, member: int, name: str, shape) -> torch.Tensor:
        """s * sigma * E_d for member m (direction d, sign s)."""
        d, sign = member_direction(member, self.antithetic)
        return (sign * self.sigma) * self.direction(seed, d, name, shape)

    def combined(self, seed: int, name: str, shape, coef: np.ndarray) -> torch.Tensor:
        """sum_d c_d E_d of one parameter (fp32), rebuilt from the seeds."""
        if not self.is_lowrank(shape):
            return combined_noise(seed, name, torch.Size(shape), coef, self.chunk)
        used = [(d, float(c)) for d, c in enumerate(coef) if c != 0.0]
        if not used:
            return torch.zeros(shape)
        pairs = [self.factors(seed, d, name, shape) for d, _ in used]
        a = torch.cat([f[0] * c for f, (_, c) in zip(pairs, used)], dim=1)
        b = torch.cat([f[1] for f in pairs], dim=1)
        return (a @ b.T) / math.sqrt(self.rank)


def check_rank(rank: int, shapes: dict[str, tuple[int, ...]]) -> None:
    """ValueError unless rank is 0 (full rank) or at most min(out, in) of every perturbed weight matrix."""
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise ValueError(f"noise_rank must be an integer >= 0 (0 = full rank), got {rank!r}")
    if rank == 0:
        return
    matrices = {n: tuple(s) for n, s in shapes.items() if len(s) == 2}
    if not matrices:
        raise ValueError("noise_rank > 0 needs at least one perturbed weight matrix; the parameter selection has none")
    name, shape = min(matrices.items(), key=lambda item: min(item[1]))
    if rank > min(shape):
        raise ValueError(f"noise_rank {rank} is larger than parameter {name} of shape {shape} allows "
                         f"(at most min(out, in) = {min(shape)})")
