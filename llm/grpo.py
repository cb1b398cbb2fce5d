"""GRPO (group relative policy optimization) on an engine, as in docs/paper.md; settings named as in TRL.

One step on a batch of B prompts:

    sample G completions per prompt at the sampling temperature (num_generations = G)
    A_i = (r_i - mean_group r) / (std_group r + 1e-4)      (population std; all-equal group -> A = 0)
    repeat mu = num_iterations times (one AdamW step each, on the whole batch):
        ratio_t = pi_theta(y_t | .) / pi_old(y_t | .)        (log-probs at the sampling temperature)
        l_t = -min(ratio_t A, clip(ratio_t, 1 - epsilon, 1 + epsilon) A) + beta * k3_t
        k3_t = exp(log pi_ref - log pi_theta) - (log pi_ref - log pi_theta) - 1   (KL to the frozen reference)
    loss normalization (loss_type):
        "grpo": mean over each completion's T_i tokens, then mean over completions (the paper's 1/T_i)
        "bnpo": sum over all completion tokens of the batch / their number (token level)

The policy's training forward is an HF model in fp32. When the engine is an HFEngine holding the
same module, the two share it; otherwise the updated weights are written into the engine with
engine.load_weights after every optimizer step.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, TYPE_CHECKING

import numpy as np
import torch

from escov.llm.config import GRPOConfig  # defined with every other setting (importable without torch)
from escov.llm.rollout import Rollouts, completion_logprobs, derive_seed, pad_batch, rollout
from escov.llm.tasks.base import Problem, Task
from escov.theory.errors import NonFiniteError
from escov.theory.paper import GRPO_ADVANTAGE_EPS
from escov.theory.standardize import standardize

if TYPE_CHECKING:
    from escov.llm.engines.base import Engine

def group_advantages(rewards: np.ndarray, scale: bool = True) -> np.ndarray:
    """rewards [B, G] -> (r - group mean) / (group std + 1e-4); exactly 0 for an all-equal group."""
    return standardize(rewards, GRPO_ADVANTAGE_EPS, scale=scale)


def grpo_loss(logp: torch.Tensor, old: torch.Tensor, ref: torch.Tensor | None, adv: torch.Tensor, mask: torch.Tensor,
              cfg: GRPOConfig, *, n_seq: int, n_tok: float):
    """The clipped GRPO objective of a (micro-)batch, normalized for the whole batch of n_seq completions
    (n_tok completion tokens). logp, old, ref, mask: [S, T] per completion token; adv: [S].
    Returns (loss, k3 per token or None, ratio)."""
    ratio = torch.exp(logp - old)
    a = adv[:, None]
    per_token = -torch.min(ratio * a, torch.clamp(ratio, 1 - cfg.epsilon, 1 + cfg.epsilon) * a)
    k3 = None
    if ref is not None:
        diff = ref - logp
        k3 = torch.exp(diff) - diff - 1
        per_token = per_token + cfg.beta * k3
    if cfg.loss_type == "grpo":
        loss = ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1.0)).sum() / n_seq
    else:
        loss = (per_token * mask).sum() / max(n_tok, 1.0)
    return loss, k3, ratio


@dataclass
class GRPOStep:
    rollouts: Rollouts
    loss: float
    kl: float                 # mean k3 per completion token (0 without reference)
    clip_fraction: float      # share of completion tokens whose ratio was clipped (last inner iteration)
    grad_norm: float          # before clipping (last inner iteration)
    seconds: float


class GRPO:
    """GRPO with an fp32 HF policy; reference (frozen) needed when beta > 0.

    encode(prompt) must give the token ids the engine conditions on for that prompt."""

    def __init__(self, cfg: GRPOConfig, engine: Engine, task: Task, policy: torch.nn.Module,
                 reference: torch.nn.Module | None, encode: Callable[[str], list[int]], *,
                 temperature: float, max_new_tokens: int, seed: int, pad_id: int):
        if cfg.beta > 0 and reference is None:
            raise ValueError("reference model is required when grpo.beta > 0")
        self.cfg, self.engine, self.task, self.policy, self.reference = cfg, engine, task, policy, reference
        self.encode, self.temperature, self.max_new_tokens, self.seed, self.pad_id = encode, temperature, max_new_tokens, seed, pad_id
        self.shares_engine_model = engine.live_module() is policy
        self.optimizer = torch.optim.AdamW(policy.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
        self.optimizer_steps = 0  # taken in the current step

    def state_is_intact(self) -> bool:
        """Whether policy and optimizer are still those before the current step (no optimizer step taken)."""
        return self.optimizer_steps == 0

    def _micro_batches(self, n: int):
        return [slice(i, min(i + self.cfg.micro_batch_size, n)) for i in range(0, n, self.cfg.micro_batch_size)]

    def step(self, problems: list[Problem], step: int) -> GRPOStep:
        t0 = time.perf_counter()
        cfg = self.cfg
        self.optimizer_steps = 0
        out = rollout(self.engine, self.task, problems, n=cfg.num_generations, temperature=self.temperature,
                      max_new_tokens=self.max_new_tokens, seed=derive_seed(self.seed, step, "grpo-rollout"), step=step)
        device = next(self.policy.parameters()).device  # the run's device (llm/device.py)
        adv = torch.tensor(group_advantages(out.rewards, cfg.scale_rewards).reshape(-1), dtype=torch.float32, device=device)
        prompt_ids = [self.encode(p.prompt) for p in problems for _ in range(cfg.num_generations)]
        completion_ids = [c.token_ids for row in out.completions for c in row]
        seq, attention, mask = (t.to(device) for t in pad_batch(prompt_ids, completion_ids, self.pad_id))
        tmask = mask[:, 1:]
        n_seq, n_tok = seq.shape[0], float(tmask.sum())
        # frozen log-probs: the sampling policy (pi_old) and the reference
        with torch.no_grad():
            old = torch.cat([completion_logprobs(self.policy, seq[s], attention[s], mask[s], self.temperature)
                             for s in self._micro_batches(n_seq)]) if cfg.num_iterations > 1 else None
            ref = torch.cat([completion_logprobs(self.reference, seq[s], attention[s], mask[s], self.temperature)
                             for s in self._micro_batches(n_seq)]) if cfg.beta > 0 else None
        self.policy.train(False)  # no dropout: the training forward is the sampling policy
        for _ in range(cfg.num_iterations):
            self.optimizer.zero_grad(set_to_none=True)
            total_loss, kl_sum, clipped = 0.0, 0.0, 0.0
            for s in self._micro_batches(n_seq):
                logp = completion_logprobs(self.policy, seq[s], attention[s], mask[s], self.temperature)
                m = tmask[s]
                old_s = old[s] if old is not None else logp.detach()
                loss, k3, ratio = grpo_loss(logp, old_s, ref[s] if ref is not None else None, adv[s], m, cfg,
                                            n_seq=n_seq, n_tok=n_tok)
                if k3 is not None:
                    kl_sum += float((k3.detach() * m).sum())
                if not torch.isfinite(loss):
                    raise NonFiniteError(f"step {step}: GRPO loss is not finite ({float(loss)})")
                loss.backward()
                total_loss += float(loss.detach())
                clipped += float((((ratio - 1).abs() > cfg.epsilon).float() * m).sum())
            params = [p for p in self.policy.parameters() if p.grad is not None]
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")))
            if not np.isfinite(grad_norm):
                raise NonFiniteError(f"step {step}: GRPO gradient norm is not finite ({grad_norm})")
            self.optimizer.step()
            self.optimizer_steps += 1
        for name, p in self.policy.named_parameters():
            if not torch.isfinite(p).all():
                raise NonFiniteError(f"step {step}: weight {name} is not finite after the GRPO update")
        if not self.shares_engine_model:
            self.engine.load_weights((n, p.detach()) for n, p in self.policy.named_parameters())
        return GRPOStep(rollouts=out, loss=total_loss, kl=kl_sum / max(n_tok, 1.0), clip_fraction=clipped / max(n_tok, 1.0),
                        grad_norm=grad_norm, seconds=time.perf_counter() - t0)
