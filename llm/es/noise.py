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

Drawing the noise is most of ES's own work, and an iteration needs each draw twice (member weights,
then the update). With keep_bytes > 0 the draws of the current iteration seed are kept, up to that
many bytes, and the update reuses them: the same tensors, so the same update bit for bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from llm.es import combined_noise, member_direction, noise


@dataclass(frozen=True)
class PopulationNoise:
    sigma: float
    antithetic: bool = False
    rank: int = 0            # 0: full rank; r > 0: E = A B^T / sqrt(r) for every weight matrix
    chunk: int = 1 << 20     # elements generated per call (llm.es.noise)
    keep_bytes: int = 0      # draws of the current iteration kept for reuse, at most this many bytes
    _kept: dict = field(default_factory=dict, compare=False, repr=False)

    def draw(self, seed: int, direction: int, label: str, shape, chunk: int | None = None) -> torch.Tensor:
        """llm.es.noise(seed, direction, label, shape): kept while this iteration's budget allows (do not modify it)."""
        chunk = self.chunk if chunk is None else chunk
        if not self.keep_bytes:
            return noise(seed, direction, label, torch.Size(shape), chunk)
        kept = self._kept
        if kept.get("seed") != seed:  # a new iteration: forget the last one's draws
            kept.clear()
            kept.update(seed=seed, bytes=0)
        key = (direction, label)
        if key not in kept:
            eps = noise(seed, direction, label, torch.Size(shape), chunk)
            size = eps.numel() * eps.element_size()
            if kept["bytes"] + size > self.keep_bytes:
                return eps
            kept[key], kept["bytes"] = eps, kept["bytes"] + size
        return kept[key]

    def is_lowrank(self, shape: torch.Size | tuple[int, ...]) -> bool:
        return self.rank > 0 and len(shape) == 2

    def factors(self, seed: int, direction: int, name: str, shape) -> tuple[torch.Tensor, torch.Tensor]:
        """(A_d [out, r], B_d [in, r]) of a weight matrix, each from its own seed."""
        out_features, in_features = shape
        return (self.draw(seed, direction, f"{name}/lowrank-A", (out_features, self.rank)),
                self.draw(seed, direction, f"{name}/lowrank-B", (in_features, self.rank)))

    def direction(self, seed: int, direction: int, name: str, shape) -> torch.Tensor:
        """E_d of one parameter (fp32, materialized)."""
        if self.is_lowrank(shape):
            a, b = self.factors(seed, direction, name, shape)
            return (a @ b.T) / math.sqrt(self.rank)
        return self.draw(seed, direction, name, shape)

    def fill_member(self, seed: int, member: int, name: str, theta: torch.Tensor, out: torch.Tensor) -> None:
        """out <- (theta + s sigma E_d)^T for member m (direction d, sign s): one pass, transposed for a
        matrix (the layout of llm/population_forward.py), as is for a vector. Low rank: one addmm of the
        factors, E_d never materialized."""
        d, sign = member_direction(member, self.antithetic)
        scale = sign * self.sigma
        if self.is_lowrank(theta.shape):
            a, b = self.factors(seed, d, name, theta.shape)
            torch.addmm(theta.T, b, a.T, alpha=scale / math.sqrt(self.rank), out=out)
        else:
            eps = self.direction(seed, d, name, theta.shape)
            torch.add(theta.T if theta.dim() == 2 else theta, eps.T if eps.dim() == 2 else eps, alpha=scale, out=out)

    def combined(self, seed: int, name: str, shape, coef: np.ndarray) -> torch.Tensor:
        """sum_d c_d E_d of one parameter (fp32), rebuilt from the seeds."""
        if not self.is_lowrank(shape):
            return combined_noise(seed, name, torch.Size(shape), coef, self.chunk, draw=self.draw)
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
