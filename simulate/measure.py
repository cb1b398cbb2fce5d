"""Per-step metrics, from exact policy probabilities wherever possible.

Policy metrics (each an array over seeds, prompts averaged):
- pass@K = E_x[1 - (1 - p(x))^K] exact; pass@K_sampled: the unbiased estimator on M = eval_samples
  draws per prompt (their correct count drawn as Binomial(M, p(x)), the exact law of M draws);
- entropy = E_x H(pi(.|x)); zero_success = share of prompts with p(x) < zero_tol;
- coverage = E_x #{correct y : pi(y|x) >= cover_tol}; reward = E_x sum_y pi(y|x) r(x, y);
- greedy_accuracy = share of prompts whose argmax path is correct (what greedy-rollout ES optimizes);
- drift = D_rel = ||theta - theta_0|| / ||theta_0||.
Population metrics of an ES step (members theta + sigma eps_i at temperature 1, per prompt, averaged):
- js_pol = JSpol_N, js_succ = JSsucc_N, lemma1 = (sigma^2/2)(1 - 1/N) tr I_x(theta),
  validity s = (sigma^2/2) tr I_x(theta);
- p_pop = 1 - prod_i (1 - p_i), p_same = 1 - (1 - p_bar)^N, lemma2_local = N p_bar (1-p_bar)^(N-1) JSsucc,
  centre_pass@N = 1 - (1 - p_theta)^N;
- lemma3: p_w - p_bar for the fitness weights w_i = z_i^+ / sum_j z_j^+ (uniform if no z_i > 0),
  and N Cov(w, p) (equal by Lemma 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from escov.theory.lemmas import (
    lemma1_prediction,
    lemma2_gap_local,
    lemma3_covariance,
    mixture_gain,
    population_pass,
    same_policy_pass,
    validity_parameter,
)
from escov.theory.metrics import entropy, generalized_js_batch, jssucc_batch, pass_at_k_counts, pass_at_k_from_p

from .bandit import BanditTask, _check_range, softmax

DEFAULT_KS = (1, 2, 4, 8, 16, 32, 64, 256)


@dataclass(frozen=True)
class MeasureConfig:
    ks: tuple[int, ...] = DEFAULT_KS  # exact Pass@K
    eval_samples: int = 32  # M samples per prompt for the sampled estimate
    sampled_ks: tuple[int, ...] = (1, 16, 32)
    temperature: float = 1.0  # evaluation temperature
    zero_tol: float = 1e-3
    cover_tol: float = 1e-2

    def __post_init__(self):
        for k in self.ks:
            _check_range("ks", k, 1, integer=True)
        _check_range("eval_samples", self.eval_samples, 1, integer=True)
        for k in self.sampled_ks:
            _check_range("sampled_ks", k, 1, integer=True)
            if k > self.eval_samples:
                raise ValueError(
                    f"sampled_ks entry {k} needs at least {k} samples per prompt, "
                    f"but eval_samples = {self.eval_samples}"
                )
        _check_range("temperature", self.temperature, 0, low_open=True)
        _check_range("zero_tol", self.zero_tol, 0, 1)
        _check_range("cover_tol", self.cover_tol, 0, 1, low_open=True)


def policy_metrics(
    task: BanditTask, theta: np.ndarray, theta0: np.ndarray, cfg: MeasureConfig, rng: np.random.Generator
):
    """Metrics of the policies theta (S, d), drift measured from theta0 (S, d).
    Returns (dict name -> (S,), success p(x) as (S, P))."""
    probs = task.policy(theta, cfg.temperature)
    p = np.clip(task.success(probs), 0.0, 1.0)  # only float rounding can leave [0, 1]
    out = {f"pass@{k}": pass_at_k_from_p(p, k).mean(-1) for k in cfg.ks}
    counts = rng.binomial(cfg.eval_samples, p)
    for k in cfg.sampled_ks:
        out[f"pass@{k}_sampled"] = pass_at_k_counts(cfg.eval_samples, counts, k).mean(-1)
    out["entropy"] = entropy(probs).mean(-1)
    out["zero_success"] = (p < cfg.zero_tol).mean(-1)
    out["coverage"] = ((probs >= cfg.cover_tol) & task.correct).sum(-1).mean(-1)
    out["reward"] = (probs * task.reward).sum(-1).mean(-1)
    greedy = probs.argmax(-1)[..., None]
    out["greedy_accuracy"] = np.take_along_axis(task.correct, greedy, -1)[..., 0].mean(-1)
    out["drift"] = np.linalg.norm(theta - theta0, axis=-1) / np.linalg.norm(theta0, axis=-1)
    return out, p


def fitness_weights(z: np.ndarray) -> np.ndarray:
    """w_i = z_i^+ / sum_j z_j^+ over the member axis (uniform where no z_i > 0): monotone in fitness."""
    pos = np.maximum(z, 0.0)
    total = pos.sum(-1, keepdims=True)
    uniform = np.full_like(pos, 1.0 / pos.shape[-1])
    return np.where(total > 0, pos / np.where(total > 0, total, 1.0), uniform)


def population_metrics(task: BanditTask, theta: np.ndarray, member_logits: np.ndarray, z: np.ndarray, sigma: float):
    """Diversity of an ES population (member_logits (S, N, P, V), z (S, N)) around theta (S, d).

    Returns (dict name -> (S,), member success p_i as (S, P, N), fitness-weighted mixture success p_w as (S, P))."""
    N = member_logits.shape[1]
    members = softmax(member_logits).transpose(0, 2, 1, 3)  # (S, P, N, V)
    p_i = np.clip(task.success(members.transpose(0, 2, 1, 3)), 0.0, 1.0).transpose(0, 2, 1)  # (S, P, N)
    centre = task.policy(theta)
    trace = task.fisher_trace(centre).mean(-1)  # (S,), prompts averaged
    w = np.broadcast_to(fitness_weights(z)[:, None, :], p_i.shape)
    p_centre = np.clip(task.success(centre), 0.0, 1.0)
    out = {
        "js_pol": generalized_js_batch(members).mean(-1),
        "js_succ": jssucc_batch(p_i).mean(-1),
        "lemma1": np.array([lemma1_prediction(t, sigma, N) for t in trace]),
        "validity_s": np.array([validity_parameter(t, sigma) for t in trace]),
        "p_pop": population_pass(p_i).mean(-1),
        "p_same": same_policy_pass(p_i).mean(-1),
        "lemma2_local": lemma2_gap_local(p_i).mean(-1),
        "centre_pass@N": pass_at_k_from_p(p_centre, N).mean(-1),
        "lemma3_gain": mixture_gain(w, p_i).mean(-1),
        "lemma3_cov": lemma3_covariance(w, p_i).mean(-1),
    }
    return out, p_i, (w * p_i).sum(-1)
