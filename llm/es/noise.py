"""The noise of an ES population and the seeds it comes from: full rank or low rank (EGGROLL).

Seeds. The seeds of an iteration, and each member's direction d and sign s, are decided once by
llm/es/plan.py (`IterationPlan`). Noise is never stored: eps_d of one parameter tensor is drawn from a
generator seeded by a hash of (noise seed, direction d, parameter name), chunk by chunk, so every
tensor gets independent noise (re-seeding one generator with the same seed for every tensor would give
equal-shaped layers identical noise) and the update is rebuilt from the seeds and z alone.
Member m's weights are theta + s * sigma * E_d.

Full rank:  E_d = eps_d ~ N(0, I), `noise(seed, d, name, shape)`.
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
import threading
from typing import TYPE_CHECKING

import numpy as np
import torch

from llm.config import NOISE_CHUNK  # the default of es.noise_chunk
from llm.rollout import derive_seed

if TYPE_CHECKING:
    from llm.es.plan import IterationPlan, Member


_GENERATORS = threading.local()  # this thread's generator per device, re-seeded for every draw


def seeded_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """This thread's generator on the device, seeded with seed. Seeding resets the whole state, so it
    draws what a new torch.Generator seeded so would; making a new one costs more than drawing a
    small tensor (the noise of a tiny model is hundreds of such draws per iteration)."""
    device = torch.device(device)
    gens = _GENERATORS.__dict__
    if device not in gens:
        gens[device] = torch.Generator(device=device)
    return gens[device].manual_seed(seed)


def fill_noise(seed: int, direction: int, name: str, out: torch.Tensor, chunk: int = NOISE_CHUNK) -> torch.Tensor:
    """out <- eps of (seed, direction, name), in place (a contiguous fp32 tensor on the generator's device):
    the values noise() returns, drawn chunk by chunk from one generator."""
    gen = seeded_generator(derive_seed(seed, direction, name), out.device)
    flat = out.view(-1)
    for start in range(0, flat.numel(), chunk):
        torch.randn(min(chunk, flat.numel() - start), generator=gen, device=out.device, out=flat[start:start + chunk])
    return out


def noise(seed: int, direction: int, name: str, shape: torch.Size, chunk: int = NOISE_CHUNK,
          device: torch.device | str = "cpu") -> torch.Tensor:
    """The whole eps tensor of one parameter (fp32, drawn on the device)."""
    return fill_noise(seed, direction, name, torch.empty(shape, device=device), chunk)


def combined_noise(it_seed: int, name: str, shape: torch.Size, coef: np.ndarray, chunk: int = NOISE_CHUNK,
                   draw=noise, device: torch.device | str = "cpu") -> torch.Tensor:
    """sum_d c_d eps_d for one parameter tensor (fp32), each eps_d from draw (default: regenerated from its seed)."""
    out = torch.zeros(shape, device=device)
    for d, c in enumerate(coef):
        if c != 0.0:
            out.add_(draw(it_seed, d, name, shape, chunk), alpha=float(c))
    return out


class KeptDraws:
    """The noise drawn for one iteration seed, kept up to a byte budget (a new seed forgets the last one's)."""

    def __init__(self, budget_bytes: int, device: torch.device | str = "cpu"):
        self.budget_bytes, self.device, self.seed, self.used_bytes = budget_bytes, device, None, 0
        self.tensors: dict[tuple[int, str], torch.Tensor] = {}

    def get(self, seed: int, direction: int, label: str, shape, chunk: int, out: torch.Tensor | None = None) -> torch.Tensor:
        """noise(seed, direction, label, shape), kept while the budget allows (do not modify it); drawn
        into `out` when given (then `out` is what is kept)."""
        if self.seed != seed:
            self.seed, self.used_bytes, self.tensors = seed, 0, {}
        key = (direction, label)
        if key not in self.tensors:
            eps = noise(seed, direction, label, torch.Size(shape), chunk, self.device) if out is None \
                else fill_noise(seed, direction, label, out, chunk)
            size = eps.numel() * eps.element_size()
            if self.used_bytes + size > self.budget_bytes:
                return eps
            self.tensors[key], self.used_bytes = eps, self.used_bytes + size
        elif out is not None:
            out.copy_(self.tensors[key])
        return self.tensors[key] if out is None else out


class PopulationNoise:
    """E_d of every member and parameter, full or low rank, drawn from the seeds (kept within an iteration)
    by generators on the device of the weights they perturb."""

    def __init__(self, rank: int = 0, chunk: int = NOISE_CHUNK, keep_bytes: int = 0,
                 device: torch.device | str = "cpu"):
        self.chunk, self.device = chunk, device
        self.rank = rank            # 0: full rank; r > 0: E = A B^T / sqrt(r) for every weight matrix
        self.kept = KeptDraws(keep_bytes, device) if keep_bytes else None

    def draw(self, seed: int, direction: int, label: str, shape, chunk: int | None = None,
             out: torch.Tensor | None = None) -> torch.Tensor:
        """noise(seed, direction, label, shape), kept while this iteration's budget allows (do not modify
        it); written into `out` when given."""
        chunk = self.chunk if chunk is None else chunk
        if self.kept is None:
            return noise(seed, direction, label, torch.Size(shape), chunk, self.device) if out is None \
                else fill_noise(seed, direction, label, out, chunk)
        return self.kept.get(seed, direction, label, shape, chunk, out)

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

    def fill_member(self, plan: IterationPlan, member: Member, name: str, theta: torch.Tensor,
                    out: torch.Tensor) -> None:
        """out <- (theta + s sigma E_d)^T for the member (direction d, sign s): one pass, transposed for a
        matrix (the layout of llm/es/batched_hf.py), as is for a vector. Low rank: one addmm of the
        factors, E_d never materialized."""
        seed, d, scale = plan.noise_seed, member.direction, member.sign * plan.sigma
        if self.is_lowrank(theta.shape):
            a, b = self.factors(seed, d, name, theta.shape)
            torch.addmm(theta.T, b, a.T, alpha=scale / math.sqrt(self.rank), out=out)
        else:
            eps = self.direction(seed, d, name, theta.shape)
            torch.add(theta.T if theta.dim() == 2 else theta, eps.T if eps.dim() == 2 else eps, alpha=scale, out=out)

    def fill_members(self, plan: IterationPlan, members: tuple[Member, ...], name: str, theta: torch.Tensor,
                     out: torch.Tensor) -> None:
        """out[i] <- (theta + s sigma E_d)^T for members[i], as fill_member does one by one; a full-rank
        parameter of members that share one sign (no antithetic pairs) is drawn into one buffer and added
        in one call (the same elementwise sums)."""
        signs = {m.sign for m in members}
        if len(signs) != 1 or self.is_lowrank(theta.shape):
            for i, m in enumerate(members):
                self.fill_member(plan, m, name, theta, out=out[i])
            return
        eps = torch.empty((len(members), *theta.shape), device=theta.device)
        for i, m in enumerate(members):
            self.draw(plan.noise_seed, m.direction, name, theta.shape, out=eps[i])
        scale = signs.pop() * plan.sigma
        if theta.dim() == 2:
            torch.add(theta.T, eps.transpose(1, 2), alpha=scale, out=out)
        else:
            torch.add(theta, eps, alpha=scale, out=out)

    def combined(self, seed: int, name: str, shape, coef: np.ndarray) -> torch.Tensor:
        """sum_d c_d E_d of one parameter (fp32), rebuilt from the seeds."""
        if not self.is_lowrank(shape):
            return combined_noise(seed, name, torch.Size(shape), coef, self.chunk, draw=self.draw, device=self.device)
        used = [(d, float(c)) for d, c in enumerate(coef) if c != 0.0]
        if not used:
            return torch.zeros(shape, device=self.device)
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
