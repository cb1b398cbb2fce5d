"""What ES decides about one iteration, decided once: the plan handed to every member evaluation.

Iteration `step` of a run with seed S:

    noise seed      derive_seed(S, step, "es-noise"): every E_d of the iteration is drawn from it (noise.py)
    rollout seed    derive_seed(S, step, "es-rollout"); member m samples from
                    derive_seed(rollout seed, m, "member"): sampled members draw independently of each
                    other (as in simulate), not common random numbers; greedy members do not use it
    direction, sign member m uses direction d = m and sign s = +1; with antithetic pairs d = m // 2,
                    s = +1 for even m and -1 for odd m. Its weights are theta + s sigma E_d.

After the rewards, the update theta <- theta + alpha / N sum_m z_m s_m E_{d_m} is handed on as
`Update`: the noise seed and the coefficients c_d = sum over members m of direction d of s_m z_m,
which is all a replica (a Ray actor, a vLLM worker) needs to apply it; nothing is derived again.

`IterationPlan.derive` is the one place these rules are applied; strategies read the plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escov.llm.rollout import derive_seed


@dataclass(frozen=True)
class Member:
    """One population member of an iteration."""

    index: int  # m, its position in the population (0..N-1)
    direction: int  # d: the noise direction E_d it uses
    sign: float  # s: +1, or -1 for the second member of an antithetic pair
    rollout_seed: int  # the sampling seed of its rollouts (unused by greedy members)


@dataclass(frozen=True)
class Update:
    """What applying an iteration's update needs: theta <- theta + (alpha / N) sum_d c_d E_d."""

    step: int
    noise_seed: int
    coefficients: tuple[float, ...]  # c_d, one per direction
    alpha: float
    population_size: int  # N

    @property
    def scale(self) -> float:
        """alpha / N, the factor of sum_d c_d E_d."""
        return self.alpha / self.population_size


@dataclass(frozen=True)
class IterationPlan:
    """Iteration `step`: its noise seed, sigma, and every evaluated member's direction, sign and rollout seed."""

    step: int
    noise_seed: int
    sigma: float
    members: tuple[Member, ...]

    @classmethod
    def derive(
        cls, run_seed: int, step: int, *, sigma: float, population_size: int, antithetic: bool
    ) -> "IterationPlan":
        """The plan of iteration `step` of a run with seed run_seed (the rules of this module's docstring)."""
        noise_seed = derive_seed(run_seed, step, "es-noise")
        rollout_seed = derive_seed(run_seed, step, "es-rollout")
        members = []
        for m in range(population_size):
            direction, sign = (m // 2, 1.0 if m % 2 == 0 else -1.0) if antithetic else (m, 1.0)
            members.append(Member(m, direction, sign, derive_seed(rollout_seed, m, "member")))
        return cls(step, noise_seed, float(sigma), tuple(members))

    def subset(self, indices: list[int]) -> "IterationPlan":
        """The same iteration restricted to the members at these population indices (in this order)."""
        by_index = {m.index: m for m in self.members}
        return IterationPlan(self.step, self.noise_seed, self.sigma, tuple(by_index[i] for i in indices))

    def update(self, z: np.ndarray, alpha: float) -> Update:
        """The update for fitness z (one per member of the plan, in order): c_d = sum_{m: d_m = d} s_m z_m."""
        if len(z) != len(self.members):
            raise ValueError(f"z has {len(z)} entries for {len(self.members)} members")
        coef = np.zeros(max(m.direction for m in self.members) + 1)
        for member, zm in zip(self.members, z):
            coef[member.direction] += member.sign * zm
        return Update(self.step, self.noise_seed, tuple(float(c) for c in coef), float(alpha), len(self.members))
