"""The noise of an ES population and the seeds it comes from: full rank or low rank (EGGROLL).

Seeds. The seeds of an iteration, and each member's direction d and sign s, are decided once by
llm/es/plan.py (`IterationPlan`). Noise is never stored: eps_d of one parameter tensor is read from a
shared table of standard normals at places given by a hash of (noise seed, direction d, parameter
name, slice), so every tensor gets its own noise (equal-shaped layers are not given identical noise)
and the update is rebuilt from the seeds and z alone.
Member m's weights are theta + s * sigma * E_d.

The noise table (Salimans et al. 2017, "Evolution Strategies as a Scalable Alternative to
Reinforcement Learning"): NOISE_TABLE_SIZE standard normals drawn once per process and device from
a fixed seed (on the CPU, then copied to the device, so every device reads the same values). A
tensor's noise is a run of numel entries, cut into slices of at most `chunk` elements (es.noise_chunk);
slice j of tensor `name` is the run of table entries starting at the place hash(seed, d, name, j) mod
(table size - its length + 1). A vector's eps is its run; a matrix [out, in] reads its run as an
[in, out] matrix, transposed (`param_layout`), so the batched population's member weights
theta^T + s sigma E^T (llm/es/batched_hf.py) add two contiguous tensors, and a tensor of one slice is a
view of the table: no copy at all. Each entry is N(0, 1); two slices are independent unless their runs overlap, and an
overlap by a shift of k != 0 pairs different entries (uncorrelated). Reading a run is at most a
copy: about 20x cheaper on a CPU than drawing the normals with torch's generator (mt19937, about 5 ns a
number on one core), which was most of ES's own work.

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

An iteration needs each run twice (member weights, then the update). With keep_bytes > 0 the runs
of the current iteration seed are kept, up to that many bytes, and the update reuses them: the same
tensors, so the same update bit for bit (a run of several slices is then copied once, not twice).
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING

import numpy as np
import torch

# NOISE_CHUNK: the default of es.noise_chunk
from escov.llm.config import NOISE_CHUNK, NOISE_TABLE_SIZE, check_noise_chunk, check_noise_rank
from escov.llm.rollout import derive_seed

if TYPE_CHECKING:
    from escov.llm.es.plan import IterationPlan, Member


NOISE_TABLE_SEED = 20170310  # the seed of the CPU generator that draws the table
_TABLES: dict[torch.device, torch.Tensor] = {}
_TABLES_LOCK = threading.Lock()


def noise_table(device: torch.device | str = "cpu") -> torch.Tensor:
    """The noise table on the device: drawn once per process (on the CPU, fixed seed), then copied."""
    device = torch.device(device)
    if device not in _TABLES:
        with _TABLES_LOCK:
            if device not in _TABLES:
                cpu = _TABLES.get(torch.device("cpu"))
                if cpu is None:
                    cpu = torch.randn(NOISE_TABLE_SIZE, generator=torch.Generator().manual_seed(NOISE_TABLE_SEED))
                    _TABLES[torch.device("cpu")] = cpu
                _TABLES[device] = cpu.to(device)
    return _TABLES[device]


def noise_run(
    seed: int, direction: int, name: str, numel: int, chunk: int = NOISE_CHUNK, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """The flat run of table entries that makes the noise of (seed, direction, name), numel long (do not
    modify it): one slice is a view of the table; several are copied into a new tensor."""
    check_noise_chunk(chunk)
    table = noise_table(device)

    def place(j: int, length: int) -> int:
        return derive_seed(seed, direction, name, j) % (NOISE_TABLE_SIZE - length + 1)

    if numel <= chunk:
        at = place(0, numel)
        return table[at : at + numel]
    run = torch.empty(numel, device=table.device)
    for j, start in enumerate(range(0, numel, chunk)):
        length = min(chunk, numel - start)
        at = place(j, length)
        run[start : start + length].copy_(table[at : at + length])
    return run


def param_layout(run: torch.Tensor, shape) -> torch.Tensor:
    """A run in a parameter's shape (a view): a matrix [out, in] is the run read as [in, out], transposed."""
    shape = tuple(shape)
    return run.view(shape[1], shape[0]).T if len(shape) == 2 else run.view(shape)


def noise(
    seed: int,
    direction: int,
    name: str,
    shape: torch.Size,
    chunk: int = NOISE_CHUNK,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """eps of one parameter (fp32, on the device) in its shape: a view of the table when it is one slice,
    so do not modify it."""
    shape = torch.Size(shape)
    return param_layout(noise_run(seed, direction, name, shape.numel(), chunk, device), shape)


def combined_noise(
    it_seed: int,
    name: str,
    shape: torch.Size,
    coef: np.ndarray,
    chunk: int = NOISE_CHUNK,
    run=None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """sum_d c_d eps_d for one parameter tensor (fp32, in its shape), summed d by d over the runs, each
    from run(seed, d, name, numel) (default: noise_run at this chunk)."""
    shape = torch.Size(shape)
    run = run or (lambda seed, d, label, numel: noise_run(seed, d, label, numel, chunk, device))
    out = torch.zeros(shape.numel(), device=device)
    for d, c in enumerate(coef):
        if c != 0.0:
            out.add_(run(it_seed, d, name, shape.numel()), alpha=float(c))
    return param_layout(out, shape)


class KeptDraws:
    """The noise runs read for one iteration seed, kept up to a byte budget (a new seed forgets the last
    one's): a run of several slices is a copy, and the update needs every run a second time."""

    def __init__(self, budget_bytes: int, device: torch.device | str = "cpu"):
        self.budget_bytes, self.device, self.seed, self.used_bytes = budget_bytes, device, None, 0
        self.runs: dict[tuple[int, str, int], torch.Tensor] = {}  # (direction, label, numel) -> run

    def get(self, seed: int, direction: int, label: str, numel: int, chunk: int) -> torch.Tensor:
        """noise_run(seed, direction, label, numel), kept while the budget allows (do not modify it)."""
        if self.seed != seed:
            self.seed, self.used_bytes, self.runs = seed, 0, {}
        key = (direction, label, numel)
        if key not in self.runs:
            run = noise_run(seed, direction, label, numel, chunk, self.device)
            size = run.numel() * run.element_size()
            if self.used_bytes + size > self.budget_bytes:
                return run
            self.runs[key], self.used_bytes = run, self.used_bytes + size
        return self.runs[key]


class PopulationNoise:
    """E_d of every member and parameter, full or low rank, read from the seeds (kept within an iteration)
    out of the noise table on the device of the weights they perturb."""

    def __init__(
        self, rank: int = 0, chunk: int = NOISE_CHUNK, keep_bytes: int = 0, device: torch.device | str = "cpu"
    ):
        self.chunk, self.device = chunk, device
        self.rank = rank  # 0: full rank; r > 0: E = A B^T / sqrt(r) for every weight matrix
        self.kept = KeptDraws(keep_bytes, device) if keep_bytes else None

    def run(self, seed: int, direction: int, label: str, numel: int) -> torch.Tensor:
        """noise_run(seed, direction, label, numel), kept while this iteration's budget allows (do not modify it)."""
        if self.kept is None:
            return noise_run(seed, direction, label, numel, self.chunk, self.device)
        return self.kept.get(seed, direction, label, numel, self.chunk)

    def draw(self, seed: int, direction: int, label: str, shape) -> torch.Tensor:
        """noise(seed, direction, label, shape) from the (kept) run: a view, do not modify it."""
        return param_layout(self.run(seed, direction, label, torch.Size(shape).numel()), shape)

    def is_lowrank(self, shape: torch.Size | tuple[int, ...]) -> bool:
        return self.rank > 0 and len(shape) == 2

    def factors(self, seed: int, direction: int, name: str, shape) -> tuple[torch.Tensor, torch.Tensor]:
        """(A_d [out, r], B_d [in, r]) of a weight matrix, each from its own seed."""
        out_features, in_features = shape
        return (
            self.draw(seed, direction, f"{name}/lowrank-A", (out_features, self.rank)),
            self.draw(seed, direction, f"{name}/lowrank-B", (in_features, self.rank)),
        )

    def direction(self, seed: int, direction: int, name: str, shape) -> torch.Tensor:
        """E_d of one parameter (fp32; full rank: a view of its run, do not modify it)."""
        if self.is_lowrank(shape):
            a, b = self.factors(seed, direction, name, shape)
            return (a @ b.T) / math.sqrt(self.rank)
        return self.draw(seed, direction, name, shape)

    def fill_member(
        self,
        plan: IterationPlan,
        member: Member,
        name: str,
        theta: torch.Tensor,
        out: torch.Tensor,
        theta_t: torch.Tensor | None = None,
    ) -> None:
        """out <- (theta + s sigma E_d)^T for the member (direction d, sign s): one pass, transposed for a
        matrix (the layout of llm/es/batched_hf.py), as is for a vector. Full rank: E_d^T of a matrix is
        its run read as [in, out], so the sum is of contiguous tensors when theta_t (theta^T, contiguous)
        is given. Low rank: one addmm of the factors, E_d never materialized."""
        seed, d, scale = plan.noise_seed, member.direction, member.sign * plan.sigma
        if self.is_lowrank(theta.shape):
            a, b = self.factors(seed, d, name, theta.shape)
            torch.addmm(theta.T, b, a.T, alpha=scale / math.sqrt(self.rank), out=out)
            return
        base = theta_t if theta_t is not None else (theta.T if theta.dim() == 2 else theta)
        torch.add(base, self.run(seed, d, name, theta.numel()).view(base.shape), alpha=scale, out=out)

    def fill_members(
        self, plan: IterationPlan, members: tuple[Member, ...], name: str, theta: torch.Tensor, out: torch.Tensor
    ) -> None:
        """out[i] <- (theta + s sigma E_d)^T for members[i], as fill_member does; theta^T is laid out
        contiguously once for all members (the same elementwise sums)."""
        theta_t = theta.T.contiguous() if theta.dim() == 2 and not self.is_lowrank(theta.shape) else None
        for i, m in enumerate(members):
            self.fill_member(plan, m, name, theta, out=out[i], theta_t=theta_t)

    def combined(self, seed: int, name: str, shape, coef: np.ndarray) -> torch.Tensor:
        """sum_d c_d E_d of one parameter (fp32), rebuilt from the seeds."""
        if not self.is_lowrank(shape):
            return combined_noise(seed, name, torch.Size(shape), coef, self.chunk, run=self.run, device=self.device)
        used = [(d, float(c)) for d, c in enumerate(coef) if c != 0.0]
        if not used:
            return torch.zeros(shape, device=self.device)
        pairs = [self.factors(seed, d, name, shape) for d, _ in used]
        a = torch.cat([f[0] * c for f, (_, c) in zip(pairs, used)], dim=1)
        b = torch.cat([f[1] for f in pairs], dim=1)
        return (a @ b.T) / math.sqrt(self.rank)


def check_rank(rank: int, shapes: dict[str, tuple[int, ...]]) -> None:
    """ValueError unless rank is 0 (full rank) or at most min(out, in) of every perturbed weight matrix."""
    check_noise_rank(rank, "noise_rank")
    if rank == 0:
        return
    matrices = {n: tuple(s) for n, s in shapes.items() if len(s) == 2}
    if not matrices:
        raise ValueError("noise_rank > 0 needs at least one perturbed weight matrix; the parameter selection has none")
    name, shape = min(matrices.items(), key=lambda item: min(item[1]))
    if rank > min(shape):
        raise ValueError(
            f"noise_rank {rank} is larger than parameter {name} of shape {shape} allows "
            f"(at most min(out, in) = {min(shape)})"
        )
