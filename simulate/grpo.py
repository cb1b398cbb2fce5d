"""GRPO on the bandit, with exact (analytic) gradients of the sampled surrogate.

One step, for each seed: draw G paths y_1..y_G ~ pi_old(.|x) (temperature T) for each batch prompt,
    A_g = (r_g - mean r) / std r    (population std, A = 0 for a group of equal rewards;
                                     `scale_rewards=False`: r_g - mean r)
then `num_iterations` (mu) ascent steps on the PPO-clipped surrogate
    L(theta) = 1/(B G) sum_{x,g} min(rho_g A_g, clip(rho_g, 1-eps, 1+eps) A_g) - beta/B sum_x KL(pi_theta || pi_ref),
    rho_g = pi_theta(y_g|x) / pi_old(y_g|x),
whose logit gradient is 1/(B G) sum_g [term active] A_g rho_g (e_{y_g} - pi_theta)/T
minus beta/B pi (log pi - log pi_ref - KL)/T (exact KL per prompt in place of the k3 estimate;
single-token outcomes make the 1/T_i length average trivial). The theta gradient is Phi^T of it.
Optimizer: Adam (as TRL's AdamW without weight decay) or plain SGD.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escov.theory.budget import grpo_flops
from escov.theory.standardize import standardize

from .bandit import BanditTask, _check_range, sample

ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-8


@dataclass(frozen=True)
class GRPOConfig:
    num_generations: int = 8  # G
    learning_rate: float = 0.02
    epsilon: float = 0.2  # PPO clip range
    beta: float = 0.001  # KL penalty to the reference (base) policy
    num_iterations: int = 1  # mu: surrogate steps per batch of samples
    scale_rewards: bool = True  # divide advantages by the group std
    temperature: float = 1.0
    optimizer: str = "adam"  # "adam" or "sgd"
    batch_size: int | None = None  # prompts per step (None: all)

    name = "grpo"

    def __post_init__(self):
        _check_range("num_generations", self.num_generations, 2, integer=True)
        _check_range("learning_rate", self.learning_rate, 0, low_open=True)
        _check_range("epsilon", self.epsilon, 0, low_open=True)
        _check_range("beta", self.beta, 0)
        _check_range("num_iterations", self.num_iterations, 1, integer=True)
        _check_range("temperature", self.temperature, 0, low_open=True)
        if self.optimizer not in ("adam", "sgd"):
            raise ValueError(f"optimizer must be 'adam' or 'sgd', got {self.optimizer!r}")
        if self.batch_size is not None:
            _check_range("batch_size", self.batch_size, 1, integer=True)

    def responses_per_step(self, n_batch: int) -> int:
        return self.num_generations * n_batch

    def flops_per_step(self, n_batch: int) -> float:
        """The paper's count (theory.budget) per response of unit length and per parameter: (2 + 6 mu) G B."""
        return grpo_flops(self.num_generations, self.num_iterations) * n_batch


def compute_advantages(rewards: np.ndarray, scale: bool = True) -> np.ndarray:
    """Group-normalized advantages over the last (group) axis, or only centred when scale is False."""
    return standardize(rewards, scale=scale)


def surrogate_logit_gradient(
    probs: np.ndarray,
    ref_probs: np.ndarray,
    paths: np.ndarray,
    advantages: np.ndarray,
    old_prob_of_path: np.ndarray,
    cfg: GRPOConfig,
):
    """Gradient of L w.r.t. the batch logits. probs, ref_probs: (S, B, V) at temperature T;
    paths, advantages, old_prob_of_path: (S, B, G).
    Returns (gradient (S, B, V), share of samples whose term is clipped, per seed)."""
    S, B, V = probs.shape
    G = paths.shape[-1]
    ratio = np.take_along_axis(probs, paths, axis=-1) / old_prob_of_path
    active = ((advantages > 0) & (ratio < 1 + cfg.epsilon)) | ((advantages < 0) & (ratio > 1 - cfg.epsilon))
    coef = np.where(active, advantages * ratio, 0.0) / (B * G)
    onehot = paths[..., None] == np.arange(V)
    grad = np.einsum("sbg,sbgv->sbv", coef, onehot) - coef.sum(-1, keepdims=True) * probs
    if cfg.beta > 0:
        log_ratio = np.log(probs) - np.log(ref_probs)
        kl = (probs * log_ratio).sum(-1, keepdims=True)
        grad -= cfg.beta / B * probs * (log_ratio - kl)
    clipped = (~active & (advantages != 0)).mean(axis=(1, 2))
    return grad / cfg.temperature, clipped


def _ascend(theta: np.ndarray, grad: np.ndarray, state: dict, cfg: GRPOConfig) -> np.ndarray:
    if cfg.optimizer == "sgd":
        return theta + cfg.learning_rate * grad
    b1, b2 = ADAM_BETAS
    state["t"] = state.get("t", 0) + 1
    state["m"] = b1 * state.get("m", 0.0) + (1 - b1) * grad
    state["v"] = b2 * state.get("v", 0.0) + (1 - b2) * grad**2
    m_hat = state["m"] / (1 - b1 ** state["t"])
    v_hat = state["v"] / (1 - b2 ** state["t"])
    return theta + cfg.learning_rate * m_hat / (np.sqrt(v_hat) + ADAM_EPS)


def grpo_step(
    task: BanditTask, theta: np.ndarray, cfg: GRPOConfig, rng: np.random.Generator, theta_ref: np.ndarray, state: dict
):
    """One GRPO update (mu surrogate steps on one batch of samples). state holds the optimizer moments.
    Returns (new theta, info dict)."""
    S, P, V = task.n_seeds, task.n_prompts, task.n_paths
    n_batch = P if cfg.batch_size is None else min(cfg.batch_size, P)
    batch = np.sort(rng.choice(P, size=n_batch, replace=False))
    old = task.policy(theta, cfg.temperature)[:, batch]
    ref = task.policy(theta_ref, cfg.temperature)[:, batch]
    paths = sample(rng, old, cfg.num_generations)
    rewards = np.take_along_axis(task.reward[:, batch], paths, axis=-1)
    adv = compute_advantages(rewards, cfg.scale_rewards)
    old_prob = np.take_along_axis(old, paths, axis=-1)
    clipped = []
    for it in range(cfg.num_iterations):
        probs = old if it == 0 else task.policy(theta, cfg.temperature)[:, batch]
        g_batch, clip_share = surrogate_logit_gradient(probs, ref, paths, adv, old_prob, cfg)
        g_logits = np.zeros((S, P, V))
        g_logits[:, batch] = g_batch
        theta = _ascend(theta, task.pullback(g_logits), state, cfg)
        clipped.append(clip_share)
    return theta, {
        "reward": rewards.mean(axis=(1, 2)),
        "zero_std_share": (rewards.std(-1) == 0).mean(-1),
        "clipped_share": np.mean(clipped, axis=0),
        "responses": cfg.responses_per_step(n_batch),
        "flops": cfg.flops_per_step(n_batch),
    }
