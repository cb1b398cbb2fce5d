"""The ES center theta and its arithmetic: members written, the center restored, the update applied.

Two kinds, one class each; ES (algorithm.py), the Ray replicas (ray_actors.py) and the vLLM workers
(vllm_inplace.py) all hold one of them, so each rule below is written once:

    MasterCenter   fp32 master weights theta by HF name, never perturbed themselves:
                     member      the model <- theta + s sigma E_d          (written through `load`)
                     restore     the model <- theta                          (exact)
                     update      theta <- theta + (alpha / N) sum_d c_d E_d  (E_d rebuilt from the seeds),
                                 then the model <- theta
    InPlaceBF16    the paper's code: the engine's own bf16 weights are the center:
                     member      w += s sigma E_d        (each add rounded to bf16)
                     restore     w -= s sigma E_d        (leaves the rounding residue)
                     update      w += (alpha c_d / N) E_d, direction by direction, each add rounded

`load` writes (name, tensor) pairs into wherever the model lives: an engine's load_weights, the views
into a vLLM worker's parameters, or nothing (a center whose model is updated elsewhere).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable, Iterable

import torch

from escov.llm.es.noise import PopulationNoise
from escov.llm.es.plan import IterationPlan, Member, Update
from escov.theory.errors import NonFiniteError

Load = Callable[[Iterable[tuple[str, torch.Tensor]]], None]


class Center(ABC):
    """The center of the perturbed parameters `names`, with its noise."""

    names: list[str]
    noise: PopulationNoise
    exact_restore: bool  # whether restore gives the center back bit for bit (then one restore per iteration suffices)

    @abstractmethod
    def perturb(self, plan: IterationPlan, member: Member) -> None:
        """The model's perturbed parameters <- theta + s sigma E_d of the member."""

    @abstractmethod
    def restore(self, plan: IterationPlan, member: Member) -> None:
        """The model's perturbed parameters <- theta, after the member was written."""

    @abstractmethod
    def apply(self, update: Update) -> float:
        """theta <- theta + (alpha / N) sum_d c_d E_d, written into the model; returns ||delta theta||.
        NonFiniteError naming the step and tensor when a weight is not finite afterwards."""

    @abstractmethod
    def weights(self) -> dict[str, torch.Tensor]:
        """The current center by name (live tensors; fp32 for the master, bf16 in place)."""

    @property
    def modified(self) -> bool:
        """Whether the current update has written any center tensor (reset by `begin`)."""
        return self._modified

    def begin(self) -> None:
        """A new iteration: nothing of the center written yet."""
        self._modified = False

    def sha256(self) -> str:
        """SHA-256 of the center (members.weight_hash), computed once per update (what replicas are checked against
        and the replay log records)."""
        if getattr(self, "_sha256", None) is None:
            from escov.llm.es.members import weight_hash

            self._sha256 = weight_hash(self.weights())
        return self._sha256


class MasterCenter(Center):
    """fp32 master theta; members written as theta + s sigma E_d, restored by copying theta."""

    exact_restore = True

    def __init__(self, master: dict[str, torch.Tensor], noise: PopulationNoise, load: Load | None):
        self.master, self.noise, self.load, self.names = master, noise, load, list(master)
        self._modified = False

    def perturb(self, plan: IterationPlan, member: Member) -> None:
        scale = member.sign * plan.sigma
        self._load(
            (
                name,
                self.master[name]
                + scale * self.noise.direction(plan.noise_seed, member.direction, name, self.master[name].shape),
            )
            for name in self.names
        )

    def restore(self, plan: IterationPlan, member: Member) -> None:
        self.load_center()

    def load_center(self) -> None:
        """The model <- theta."""
        self._load((name, self.master[name]) for name in self.names)

    def apply(self, update: Update) -> float:
        sq_norm, self._sha256 = 0.0, None
        with torch.no_grad():
            for name in self.names:  # tensor by tensor: one tensor of scratch memory, no second model
                theta = self.master[name]
                new = theta + update.scale * self.noise.combined(
                    update.noise_seed, name, theta.shape, update.coefficients
                )
                if not torch.isfinite(new).all():
                    raise NonFiniteError(f"step {update.step}: weight {name} is not finite after the ES update")
                sq_norm += float(((new - theta) ** 2).sum())
                theta.copy_(new)
                self._modified = True
        self.load_center()
        return sq_norm**0.5

    def weights(self) -> dict[str, torch.Tensor]:
        return self.master

    def _load(self, items: Iterable[tuple[str, torch.Tensor]]) -> None:
        if self.load is not None:
            self.load(items)


class InPlaceBF16(Center):
    """The paper's arithmetic on the engine's own (bf16) weights: add, evaluate, subtract, no master."""

    exact_restore = False

    def __init__(self, live: dict[str, torch.Tensor], noise: PopulationNoise):
        self.live, self.noise, self.names = live, noise, list(live)
        self._modified = False

    def _add(self, plan: IterationPlan, member: Member, sign: float) -> None:
        self._sha256 = None
        with torch.no_grad():
            for name in self.names:
                p = self.live[name]
                p.add_(
                    self.noise.direction(plan.noise_seed, member.direction, name, p.shape).to(p.dtype),
                    alpha=sign * member.sign * plan.sigma,
                )

    def perturb(self, plan: IterationPlan, member: Member) -> None:
        self._add(plan, member, 1.0)

    def restore(self, plan: IterationPlan, member: Member) -> None:
        self._add(plan, member, -1.0)

    def apply(self, update: Update) -> float:
        sq_norm, self._sha256 = 0.0, None
        n = update.population_size
        with torch.no_grad():
            for name in self.names:  # member by member, each add rounded to bf16
                p = self.live[name]
                before = p.float()
                for d, c in enumerate(update.coefficients):
                    if c != 0.0:
                        p.add_(
                            self.noise.direction(update.noise_seed, d, name, p.shape).to(p.dtype),
                            alpha=update.alpha * c / n,
                        )
                        self._modified = True
                sq_norm += float(((p.float() - before) ** 2).sum())
                if not torch.isfinite(p).all():
                    raise NonFiniteError(f"step {update.step}: weight {name} is not finite after the ES update")
        return sq_norm**0.5

    def weights(self) -> dict[str, torch.Tensor]:
        return self.live
