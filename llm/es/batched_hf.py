"""ES members evaluated together: all N perturbed members in one batched generate on an HF model (`BatchedHF`).

The rows of the batch belong to members in contiguous blocks (member 0's rows, then member 1's ...),
and every perturbed parameter acts per row, for the row's member m:

    Linear      y = x W_m^T + b_m                  W_m = theta + s_m sigma E_m, one grouped matmul (bmm)
    low rank    y = x W^T + (x B_m) A'_m^T + b      A'_m = s_m sigma A_m / sqrt(r): the shared product
                                                    plus two thin grouped matmuls (W never copied)
    Embedding   e = W_m[token]                      (low rank: W[token] + A'_m[token] B_m^T)
    RMSNorm     y = w_m * x / rms(x)

so one forward per decoding step serves the whole population, and the population equals member-by-
member perturbation of every parameter ES perturbs (tied weights, e.g. lm_head = embed_tokens, use
the same member weights in both places). The member weights of an iteration are built once from the
seeds (`PopulationWeights.build`), never per decoding step. Full-rank member weights take N times the
perturbed parameters' memory; factored low-rank ones N r (out + in) per matrix. Low-rank members
can also be stacked (W_m = theta + s sigma A B^T / sqrt(r) built once per iteration): more memory,
but one grouped matmul per layer, faster where the thin products cost more than they save (small
layers on a CPU).

Sampling uses one torch.Generator per member, seeded like the member-by-member engine call (seed: one
for every member, or one per member), so at
temperature > 0 member m draws the same random numbers as its own `HFEngine.generate` call (identical
completions as long as one member's rows fit in one engine batch and logits agree to the last bit).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from escov.llm.engines.base import Completion, check_generate_args
from escov.llm.engines.hf import HFEngine
from escov.llm.es.members import MemberEvaluator, Sampling, member_fitness
from escov.llm.es.noise import PopulationNoise
from escov.llm.member_options import check_batched_engine
from escov.llm.tasks.base import Problem, Task

if TYPE_CHECKING:
    from escov.llm.es.center import MasterCenter
    from escov.llm.es.plan import IterationPlan

RMS_NORMS = ("LlamaRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm", "MistralRMSNorm")  # y = weight * x / rms(x)


@dataclass
class MemberParam:
    """One perturbed parameter for a block of M members: stacked weights, or low-rank factors.

    Matrices are kept in the layout of the grouped matmul x_m W_m^T: transposed, [M, in, out]
    (a contiguous right operand is 10-20% faster in torch.bmm on a CPU than a transposed view)."""

    stacked: torch.Tensor | None = None  # [M, n] of a vector, [M, in, out] (W_m^T) of a matrix: theta + s_m sigma E_m
    a: torch.Tensor | None = None  # [M, r, out]: (s_m sigma A_m / sqrt(r))^T
    b: torch.Tensor | None = None  # [M, in, r]

    def block(self, start: int, stop: int) -> "MemberParam":
        pick = lambda t: None if t is None else t[start:stop]
        return MemberParam(pick(self.stacked), pick(self.a), pick(self.b))


@dataclass
class PopulationWeights:
    """The perturbed parameters (HF names) of M members, built once per ES iteration from the seeds."""

    params: dict[str, MemberParam]
    members: int

    @classmethod
    def build(
        cls,
        center: dict[str, torch.Tensor],
        noise: PopulationNoise,
        plan: IterationPlan,
        dtype: torch.dtype,
        factored: bool = True,
    ) -> "PopulationWeights":
        """center: fp32 theta by name; the plan's members, in order. Stacked theta + s sigma E_m, except
        low-rank matrices when factored (then the factors, and the shared theta stays in the model)."""
        members = plan.members
        if not members:
            raise ValueError("members must name at least one population member")
        params = {}
        for name, theta in center.items():
            if factored and noise.is_lowrank(theta.shape):
                a, b = [], []
                for m in members:
                    fa, fb = noise.factors(plan.noise_seed, m.direction, name, theta.shape)
                    a.append(fa * (m.sign * plan.sigma / noise.rank**0.5))
                    b.append(fb)
                params[name] = MemberParam(
                    a=torch.stack(a).transpose(1, 2).contiguous().to(dtype), b=torch.stack(b).to(dtype)
                )
            else:  # member m's row: theta^T + s sigma E_d^T of a matrix (theta + s sigma E_d of a vector)
                stacked = torch.empty((len(members), *theta.shape[::-1]), device=theta.device)
                noise.fill_members(plan, members, name, theta, out=stacked)
                params[name] = MemberParam(stacked=stacked.to(dtype))
        return cls(params, len(members))

    def block(self, start: int, stop: int) -> "PopulationWeights":
        """Members start..stop-1 (views, no copy)."""
        return PopulationWeights({n: p.block(start, stop) for n, p in self.params.items()}, stop - start)


# ----------------------------------------------------------------------------- per-row modules


def _rows(x: torch.Tensor, members: int) -> torch.Tensor:
    """[R, ..., d] with R = members * rows per member -> [members, rows per member * ..., d]."""
    if x.shape[0] % members:
        raise ValueError(f"a batch of {x.shape[0]} rows does not split into {members} members")
    return x.reshape(members, -1, x.shape[-1])


class PopulationLinear(nn.Module):
    """nn.Linear whose weight and/or bias differ per member (contiguous row blocks)."""

    def __init__(self, base: nn.Linear, weight: MemberParam | None, bias: MemberParam | None, members: int):
        super().__init__()
        self.base, self.weight_m, self.bias_m, self.members = base, weight, bias, members

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xm, w = _rows(x, self.members), self.weight_m
        if w is not None and w.stacked is not None:
            out = torch.bmm(xm, w.stacked)
        else:
            out = F.linear(xm, self.base.weight)
            if w is not None:
                out = torch.baddbmm(out, torch.bmm(xm, w.b), w.a)
        if self.bias_m is not None:
            out = out + self.bias_m.stacked[:, None, :]
        elif self.base.bias is not None:
            out = out + self.base.bias
        return out.reshape(*x.shape[:-1], out.shape[-1])


class PopulationEmbedding(nn.Module):
    """nn.Embedding whose table differs per member: row (m, token) of the stacked tables."""

    def __init__(self, base: nn.Embedding, weight: MemberParam, members: int):
        super().__init__()
        self.base, self.weight_m, self.members = base, weight, members

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        idm = ids.reshape(self.members, -1)
        member = torch.arange(self.members, device=ids.device)[:, None]
        w = self.weight_m
        if w.stacked is not None:  # [M, hidden, vocab]: column `token` of member m's table
            out = w.stacked.transpose(1, 2)[member, idm]
        else:
            a_rows = w.a.transpose(1, 2)[member, idm]  # [M, L, r]
            out = torch.baddbmm(F.embedding(idm, self.base.weight), a_rows, w.b.transpose(1, 2))
        return out.reshape(*ids.shape, out.shape[-1])


class PopulationRMSNorm(nn.Module):
    """RMSNorm (weight * x / rms(x), Llama/Qwen/Mistral form) with a weight per member."""

    def __init__(self, base: nn.Module, weight: MemberParam, members: int):
        super().__init__()
        self.base, self.weight_m, self.members = base, weight, members

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        hf = h.to(torch.float32)
        normed = (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + self.base.variance_epsilon)).to(h.dtype)
        return (self.weight_m.stacked[:, None, :] * _rows(normed, self.members)).reshape(h.shape)


def _population_module(module: nn.Module, own: dict[str, MemberParam], members: int, where: str) -> nn.Module:
    """The per-row replacement of a module whose own parameters (local name -> member weights) are perturbed."""
    if isinstance(module, nn.Linear) and set(own) <= {"weight", "bias"}:
        return PopulationLinear(module, own.get("weight"), own.get("bias"), members)
    if isinstance(module, nn.Embedding) and set(own) == {"weight"} and module.max_norm is None:
        return PopulationEmbedding(module, own["weight"], members)
    if type(module).__name__ in RMS_NORMS and set(own) == {"weight"}:
        return PopulationRMSNorm(module, own["weight"], members)
    raise ValueError(
        f"population-batched generation cannot perturb {sorted(own)} of module {where!r} "
        f"({type(module).__name__}); supported: nn.Linear, nn.Embedding, {', '.join(RMS_NORMS)}. "
        "Restrict es.param_pattern or use member-by-member evaluation"
    )


def _swaps(model: nn.Module, weights: PopulationWeights) -> list[tuple[nn.Module, str, nn.Module, nn.Module]]:
    """(parent, attribute, original, replacement) for every module holding a perturbed parameter."""
    param_names = {id(p): n for n, p in model.named_parameters()}  # a tied parameter is listed once
    modules = dict(model.named_modules())
    swaps, covered = [], set()
    for where, module in model.named_modules():
        own = {
            local: param_names[id(p)]
            for local, p in module.named_parameters(recurse=False)
            if param_names.get(id(p)) in weights.params
        }
        if not own:
            continue
        if not where:
            raise ValueError("population-batched generation cannot perturb parameters of the root module")
        covered |= set(own.values())
        parent, _, attr = where.rpartition(".")
        swaps.append(
            (
                modules[parent],
                attr,
                module,
                _population_module(module, {k: weights.params[v] for k, v in own.items()}, weights.members, where),
            )
        )
    missing = set(weights.params) - covered
    if missing:
        raise ValueError(f"population weights name parameters the model does not have: {sorted(missing)}")
    return swaps


def batched_module(engine) -> nn.Module:
    """The HF module a batched forward runs on: the engine's own (an HFEngine), or the ValueError of
    check_batched_engine."""
    check_batched_engine("hf" if isinstance(engine, HFEngine) else type(engine).__name__)
    return engine.live_module()


def check_supported(model: nn.Module, names: list[str]) -> None:
    """ValueError (before any work) when a parameter to perturb sits in a module the batched forward lacks."""
    params = dict(model.named_parameters())
    stub = PopulationWeights({n: MemberParam(stacked=params[n][None]) for n in names}, 1)
    _swaps(model, stub)


@contextmanager
def population_forward(model: nn.Module, weights: PopulationWeights) -> Iterator[nn.Module]:
    """Inside the block, model(...) on weights.members equal row blocks runs each block as its member."""
    swaps = _swaps(model, weights)
    try:
        for parent, attr, _, replacement in swaps:
            setattr(parent, attr, replacement)
        yield model
    finally:
        for parent, attr, original, _ in swaps:
            setattr(parent, attr, original)


# ----------------------------------------------------------------------------- generation


@torch.no_grad()
def generate_population(
    engine: HFEngine,
    weights: PopulationWeights,
    prompts: list[str],
    *,
    n: int,
    temperature: float,
    max_new_tokens: int,
    seed: int | list[int],
    top_p: float = 1.0,
    max_rows: int = 4096,
) -> list[list[list[Completion]]]:
    """[member][prompt][sample] completions of every member, each member's rows as `engine.generate` lays them out.

    Members are generated together in blocks of whole members of at most max_rows rows (at least one member)."""
    check_generate_args(prompts, n, temperature, max_new_tokens, top_p)
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ValueError(f"max_rows must be an integer >= 1, got {max_rows!r}")
    seeds = [seed] * weights.members if isinstance(seed, int) else list(seed)
    if len(seeds) != weights.members:
        raise ValueError(f"seed must be one int or one per member ({weights.members}), got {len(seeds)}")
    rows = [ids for ids in (engine.prompt_token_ids(p) for p in prompts) for _ in range(n)]
    per_block = max(1, max_rows // len(rows))
    out: list[list[list[Completion]]] = []
    for start in range(0, weights.members, per_block):
        block = weights.block(start, min(weights.members, start + per_block))
        generators = [
            torch.Generator(device=engine.device).manual_seed(int(seeds[start + i])) for i in range(block.members)
        ]
        with population_forward(engine.live_module(), block):
            flat = engine.generate_rows(rows * block.members, temperature, top_p, max_new_tokens, generators)
        per = len(rows)
        out += [
            [flat[m * per + i * n : m * per + (i + 1) * n] for i in range(len(prompts))] for m in range(block.members)
        ]
    return out


# ----------------------------------------------------------------------------- the ES strategy


class BatchedHF(MemberEvaluator):
    """Member evaluation for ES: the members' weights built once per iteration from the plan, then one
    population-batched generate on the HF engine (the same rollouts as member by member)."""

    def __init__(
        self, engine: HFEngine, task: Task, sampling: Sampling, center: MasterCenter, *, max_rows: int, factored: bool
    ):
        module = batched_module(engine)
        check_supported(module, center.names)
        self.engine, self.task, self.sampling, self.center = engine, task, sampling, center
        self.dtype = next(module.parameters()).dtype
        self.max_rows, self.factored = max_rows, factored

    def rewards(self, plan: IterationPlan, problems: list[Problem]) -> tuple[np.ndarray, int, float]:
        tw = time.perf_counter()
        weights = PopulationWeights.build(self.center.master, self.center.noise, plan, self.dtype, self.factored)
        weight_s = time.perf_counter() - tw
        s = self.sampling
        per_member = generate_population(
            self.engine,
            weights,
            [p.prompt for p in problems],
            n=s.n,
            temperature=s.temperature,
            max_new_tokens=s.max_new_tokens,
            seed=[m.rollout_seed for m in plan.members],
            max_rows=self.max_rows,
        )
        rewards, tokens = member_fitness(self.task, problems, per_member, plan.step, s.temperature)
        return rewards, tokens, weight_s
