"""The task: a reasoning benchmark as a contextual bandit with shared, network-like parameters.

Each of P prompts x has V "reasoning paths" y (final outcomes), some of them correct. The policy is

    pi_theta(y | x) = softmax_y( Phi(x) theta + b(x) ) ,      Phi(x) in R^{V x d},

with random Gaussian features Phi (entries N(0, 1/d)) that couple every prompt and path, so d
stands in for model size; `feature_dim=None` gives independent logits (Phi = identity, d = P V).

The base policy is designed prompt by prompt: success probability p(x) ~ Beta(m c, (1 - m) c)
(mean m = `base_pass1`, concentration c = `difficulty_concentration`); one common correct path
holds (1 - rare_share) of p(x), the rare correct paths split the rest; `n_tempting` wrong paths
hold `tempting_share` of the failure mass (all of it if they are the only wrong paths). Every path keeps a floor of
`floor / V` mass.
theta_0 is the least-squares fit of the designed log-probabilities and the frozen bias b(x) is the
residual, so pi_{theta_0} is exactly the design (b = 0 for independent logits). `theta0_offset`
adds an N(0, theta0_offset^2) vector to theta_0 (b cancels it): the policy is unchanged, only the
size of the weights, hence the relative drift and the bfloat16 rounding, depends on it.

Reward r(x, y) = 1 for a correct path, `format_bonus` for a wrong path marked "formatted"
(the paper's 0.1 for a boxed but wrong answer), 0 otherwise. Success (for Pass@K) is correctness.

Every array carries a leading seed axis S: each seed draws its own task instance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


def _check_range(name: str, value, low=None, high=None, low_open=False, integer=False):
    if integer and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not integer and not (isinstance(value, (int, float, np.floating, np.integer)) and np.isfinite(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")


@dataclass(frozen=True)
class TaskShape:
    """How a task instance is drawn (see the module docstring)."""

    n_prompts: int = 64
    n_paths: int = 16
    n_correct: int = 4  # 1 common + (n_correct - 1) rare correct paths
    base_pass1: float = 0.4  # mean base success probability over prompts
    difficulty_concentration: float = 1.5  # Beta a + b: small = many very hard and very easy prompts
    rare_share: float = 0.1  # share of a prompt's success mass on its rare correct paths
    n_tempting: int = 2  # wrong paths that take most of the failure mass
    tempting_share: float = 0.8
    formatted_share: float = 0.5  # share of wrong paths that earn the format bonus
    format_bonus: float = 0.0  # reward of a formatted wrong path (paper: 0.1)
    floor: float = 1e-4  # mass spread uniformly over all paths
    feature_dim: int | None = 64  # None: independent logits
    theta0_offset: float = 0.0  # std of an extra N(0, .) component of theta_0 that b cancels

    def __post_init__(self):
        _check_range("n_prompts", self.n_prompts, 1, integer=True)
        _check_range("n_paths", self.n_paths, 2, integer=True)
        _check_range("n_correct", self.n_correct, 1, self.n_paths - 1, integer=True)
        _check_range("n_tempting", self.n_tempting, 0, self.n_paths - self.n_correct, integer=True)
        _check_range("base_pass1", self.base_pass1, 0, 1, low_open=True)
        if self.base_pass1 >= 1:
            raise ValueError(f"base_pass1 must be < 1, got {self.base_pass1}")
        _check_range("difficulty_concentration", self.difficulty_concentration, 0, low_open=True)
        for name in ("rare_share", "tempting_share", "formatted_share", "format_bonus"):
            _check_range(name, getattr(self, name), 0, 1)
        if self.n_correct == 1 and self.rare_share > 0:
            raise ValueError("rare_share must be 0 when n_correct == 1 (no rare correct paths)")
        _check_range("floor", self.floor, 0, 1, low_open=True)
        if self.floor >= 1:
            raise ValueError(f"floor must be < 1, got {self.floor}")
        if self.feature_dim is not None:
            _check_range("feature_dim", self.feature_dim, 1, integer=True)
        _check_range("theta0_offset", self.theta0_offset, 0)


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """softmax(logits / temperature) along the last axis."""
    z = logits / temperature
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def sample(rng: np.random.Generator, probs: np.ndarray, n: int) -> np.ndarray:
    """n independent draws from each distribution on the last axis: indices of shape probs.shape[:-1] + (n,)."""
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(probs.shape[:-1] + (n,)) * cdf[..., -1:]
    return np.minimum((u[..., :, None] >= cdf[..., None, :]).sum(axis=-1), probs.shape[-1] - 1)


def _design_probs(shape: TaskShape, rng: np.random.Generator):
    """One task instance: base probabilities (P, V), correct mask, formatted mask."""
    P, V, C = shape.n_prompts, shape.n_paths, shape.n_correct
    m, c = shape.base_pass1, shape.difficulty_concentration
    p = rng.beta(m * c, (1 - m) * c, size=P)
    probs = np.zeros((P, V))
    correct = np.zeros((P, V), bool)
    formatted = np.zeros((P, V), bool)
    W = V - C
    for x in range(P):
        order = rng.permutation(V)
        good, bad = order[:C], order[C:]
        correct[x, good] = True
        probs[x, good[0]] = p[x] * (1 - shape.rare_share)
        if C > 1:
            probs[x, good[1:]] = p[x] * shape.rare_share * rng.dirichlet(np.ones(C - 1))
        T = shape.n_tempting
        share = shape.tempting_share if 0 < T < W else float(T == W)  # one group takes all if the other is empty
        if T > 0:
            probs[x, bad[:T]] = (1 - p[x]) * share * rng.dirichlet(np.ones(T))
        if W - T > 0:
            probs[x, bad[T:]] = (1 - p[x]) * (1 - share) * rng.dirichlet(np.ones(W - T))
        formatted[x, bad[rng.random(W) < shape.formatted_share]] = True
    probs = (1 - shape.floor) * probs + shape.floor / V
    return probs, correct, formatted


@dataclass
class BanditTask:
    """A batch of S task instances (one per seed) and the linear-softmax policy class on them."""

    shape: TaskShape
    seeds: tuple[int, ...]
    features: np.ndarray | None  # (S, P*V, d); None = independent logits
    bias: np.ndarray  # (S, P, V) frozen residual logits
    theta0: np.ndarray  # (S, d) base parameters
    correct: np.ndarray  # (S, P, V) bool
    reward: np.ndarray  # (S, P, V)

    def __post_init__(self):
        S, P, V = self.correct.shape
        if self.features is None:
            self._features_t = None
            self._sqnorm = np.ones((S, P, V))
        else:
            self._features_t = np.ascontiguousarray(self.features.transpose(0, 2, 1))
            self._sqnorm = (self.features**2).sum(-1).reshape(S, P, V)

    @property
    def n_seeds(self) -> int:
        return self.correct.shape[0]

    @property
    def n_prompts(self) -> int:
        return self.correct.shape[1]

    @property
    def n_paths(self) -> int:
        return self.correct.shape[2]

    @property
    def dim(self) -> int:
        return self.theta0.shape[1]

    def _lead(self, arr: np.ndarray, trailing: int) -> tuple[int, ...]:
        if arr.ndim < 1 + trailing or arr.shape[0] != self.n_seeds:
            raise ValueError(f"expected an array with leading seed axis {self.n_seeds}, got shape {arr.shape}")
        return arr.shape[1 : arr.ndim - trailing]

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """theta (S, *M, d) -> logits (S, *M, P, V) = Phi theta + b."""
        S, P, V, d = self.n_seeds, self.n_prompts, self.n_paths, self.dim
        if theta.shape[-1] != d:
            raise ValueError(f"theta must end in the parameter dimension {d}, got shape {theta.shape}")
        lead = self._lead(theta, 1)
        flat = theta.reshape(S, -1, d)
        z = flat if self._features_t is None else flat @ self._features_t
        return z.reshape((S, *lead, P, V)) + self.bias.reshape((S,) + (1,) * len(lead) + (P, V))

    def pullback(self, grad_logits: np.ndarray) -> np.ndarray:
        """Gradient w.r.t. logits (S, *M, P, V) -> gradient w.r.t. theta (S, *M, d) = Phi^T g."""
        S, P, V = self.n_seeds, self.n_prompts, self.n_paths
        lead = self._lead(grad_logits, 2)
        flat = grad_logits.reshape(S, -1, P * V)
        g = flat if self.features is None else flat @ self.features
        return g.reshape((S, *lead, self.dim))

    def policy(self, theta: np.ndarray, temperature: float = 1.0) -> np.ndarray:
        """pi_theta at a sampling temperature: probabilities (S, *M, P, V)."""
        return softmax(self.logits(theta), temperature)

    def _per_prompt(self, arr: np.ndarray, ndim: int) -> np.ndarray:
        return arr.reshape((arr.shape[0],) + (1,) * (ndim - 3) + arr.shape[1:])

    def success(self, probs: np.ndarray) -> np.ndarray:
        """Success probability p(x) = sum_{y correct} pi(y | x): (S, *M, P, V) -> (S, *M, P)."""
        return (probs * self._per_prompt(self.correct, probs.ndim)).sum(-1)

    def fisher_trace(self, probs: np.ndarray) -> np.ndarray:
        """tr I_x(theta) = sum_y pi_y ||Phi_y||^2 - ||sum_y pi_y Phi_y||^2 per prompt: (S, P, V) -> (S, P)."""
        if probs.shape != self.correct.shape:
            raise ValueError(f"probs must have shape {self.correct.shape}, got {probs.shape}")
        first = (probs * self._sqnorm).sum(-1)
        if self.features is None:
            mean_sq = (probs**2).sum(-1)
        else:
            S, P, V = probs.shape
            phi = self.features.reshape(S, P, V, self.dim)
            mean_feat = np.einsum("spv,spvd->spd", probs, phi)
            mean_sq = (mean_feat**2).sum(-1)
        return first - mean_sq


def make_task(shape: TaskShape = TaskShape(), seeds: Sequence[int] | int = 1) -> BanditTask:
    """Draw one task instance per seed (seeds: a list of ints, or a count meaning range(count))."""
    seeds = tuple(range(seeds)) if isinstance(seeds, (int, np.integer)) else tuple(int(s) for s in seeds)
    if len(seeds) < 1:
        raise ValueError("seeds must name at least one seed")
    P, V = shape.n_prompts, shape.n_paths
    feats, biases, thetas, corrects, rewards = [], [], [], [], []
    for seed in seeds:
        rng = np.random.default_rng([seed, 7919])
        probs, correct, formatted = _design_probs(shape, rng)
        logp = np.log(probs)
        logp -= logp.mean(axis=1, keepdims=True)  # softmax is invariant to a per-prompt shift
        if shape.feature_dim is None:
            theta0 = logp.reshape(-1) + shape.theta0_offset * rng.standard_normal(P * V)
            bias = logp - theta0.reshape(P, V)
        else:
            phi = rng.standard_normal((P * V, shape.feature_dim)) / np.sqrt(shape.feature_dim)
            theta0 = np.linalg.lstsq(phi, logp.reshape(-1), rcond=None)[0]
            theta0 = theta0 + shape.theta0_offset * rng.standard_normal(shape.feature_dim)
            bias = logp - (phi @ theta0).reshape(P, V)
            feats.append(phi)
        biases.append(bias)
        thetas.append(theta0)
        corrects.append(correct)
        rewards.append(np.where(correct, 1.0, np.where(formatted, shape.format_bonus, 0.0)))
    return BanditTask(
        shape=shape,
        seeds=seeds,
        features=np.stack(feats) if feats else None,
        bias=np.stack(biases),
        theta0=np.stack(thetas),
        correct=np.stack(corrects),
        reward=np.stack(rewards),
    )
