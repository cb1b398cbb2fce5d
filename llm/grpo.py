"""GRPO (group relative policy optimization) on an engine, as in docs/paper.md; settings and variants named as in TRL.

One step on a batch of B prompts:

    sample G completions per prompt at the sampling temperature (num_generations = G; top_p / top_k / min_p
        restrict the rollouts' sampling, the log-probs below are at the temperature alone, as in TRL)
    A_i = (r_i - mean_group r) / (s + 1e-4)      s (scale_rewards): "group" the group's population std
        (all-equal group -> A = 0), "batch" the batch's population std, "none" s + 1e-4 replaced by 1
    repeat mu = num_iterations times (one AdamW step each, on the whole batch, lr from lr_factor):
        ratio_t = pi_theta(y_t | .) / pi_old(y_t | .)        (log-probs at the sampling temperature)
        l_t = -min(ratio_t A, clip(ratio_t, 1 - epsilon, 1 + epsilon_high) A) + beta * k3_t
        k3_t = exp(log pi_ref - log pi_theta) - (log pi_ref - log pi_theta) - 1   (KL to the frozen reference)
    the loss averages l_t over the completions' tokens as loss_type says (llm/grpo_losses.py);
    mask_truncated_completions: tokens of completions cut at max_completion_length get no term.

The coverage-keeping variants (docs/training.md) change parts of this: the advantages (adv_estimator,
llm/grpo_advantages.py; outcome bonus and zero-success gating, llm/grpo_exploration.py), the policy term and
its ratio (loss_type cispo / sapo and importance_sampling_level, llm/grpo_objectives.py; clip_cov / kl_cov,
llm/grpo_covariance.py), and entropy (top_entropy_quantile's token selection, the entropy bonus,
llm/grpo_entropy.py). Their statistics go to GRPOStep.variants.

TRL's std is Bessel-corrected (ddof 1); ours is the population std (ddof 0) of docs/paper.md, in every mode.
The policy's training forward is an HF model in fp32. When the engine is an HFEngine holding the
same module, the two share it; otherwise the updated weights are written into the engine with
engine.load_weights after every optimizer step. With use_peft, LoRA adapters (llm/grpo_lora.py) are
trained on a copy of the phase's starting weights and the merged weights go to the run's model and engine.
"""
from __future__ import annotations

import contextlib
import copy
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np
import torch

from escov.llm.config import GRPOConfig  # with every other setting (importable without torch)
from escov.llm.grpo_advantages import advantages, group_advantages  # noqa: F401 (group_advantages: re-exported)
from escov.llm.grpo_covariance import clip_cov_terms, kl_cov_terms
from escov.llm.grpo_entropy import EntropyControl, high_entropy_mask
from escov.llm.grpo_exploration import gate_solved, outcome_bonus
from escov.llm.grpo_losses import LOSSES
from escov.llm.grpo_objectives import policy_terms
from escov.llm.rollout import Rollouts, completion_logprobs, derive_seed, pad_batch, rollout
from escov.llm.tasks.base import Problem, Task
from escov.theory.errors import NonFiniteError

if TYPE_CHECKING:
    from escov.llm.engines.base import Engine


# ----------------------------------------------------------------------------- the loss

@dataclass
class LossParts:
    loss: torch.Tensor
    terms: torch.Tensor        # l_t, [S, T] (sequence-level terms without a KL term: [S, 1])
    k3: torch.Tensor | None    # the KL estimate per token (None without reference)
    ratio: torch.Tensor        # the importance weight per token ([S, 1] at the sequence level)
    cov_share: float           # clip_cov / kl_cov: share of the micro-batch's tokens cut or penalized


def grpo_loss_parts(logp: torch.Tensor, old: torch.Tensor, ref: torch.Tensor | None, adv: torch.Tensor,
                    mask: torch.Tensor, cfg: GRPOConfig, *, n_seq: int, n_tok: float, max_completion_length: int = 0,
                    entropy: torch.Tensor | None = None, selected: torch.Tensor | None = None, n_selected: float = 0.0,
                    entropy_coef: float = 0.0, generator: torch.Generator | None = None) -> LossParts:
    """The loss of a (micro-)batch, normalized for the whole batch: the loss type's policy terms
    (llm/grpo_objectives.py, llm/grpo_covariance.py) times the selected tokens (top_entropy_quantile; None: all),
    plus beta k3, averaged as loss_type says (llm/grpo_losses.py), minus entropy_coef x sum(entropy x selected
    mask) / n_selected (the whole batch's selected tokens; llm/grpo_entropy.py)."""
    if cfg.loss_type == "dr_grpo" and max_completion_length < 1:
        raise ValueError("loss_type dr_grpo needs max_completion_length >= 1")
    share = 0.0
    if cfg.loss_type == "clip_cov":
        terms, ratio, share = clip_cov_terms(logp, old, adv, mask, cfg, generator or torch.Generator().manual_seed(0))
    elif cfg.loss_type == "kl_cov":
        terms, ratio, share = kl_cov_terms(logp, old, adv, mask, cfg)
    else:
        terms, ratio = policy_terms(logp, old, adv, mask, cfg)
    if selected is not None:
        terms = terms * selected
    k3 = None
    if ref is not None:
        diff = ref - logp
        k3 = torch.exp(diff) - diff - 1
        terms = terms + cfg.beta * k3
    loss = LOSSES[cfg.loss_type](terms, mask, n_seq=n_seq, n_tok=n_tok, max_completion_length=max_completion_length)
    if entropy_coef:
        kept = mask if selected is None else mask * selected
        loss = loss - entropy_coef * (entropy * kept).sum() / max(n_selected, 1.0)
    return LossParts(loss, terms, k3, ratio, share)


def grpo_loss(logp: torch.Tensor, old: torch.Tensor, ref: torch.Tensor | None, adv: torch.Tensor, mask: torch.Tensor,
              cfg: GRPOConfig, *, n_seq: int, n_tok: float, max_completion_length: int = 0, **variant):
    """The GRPO objective of a (micro-)batch, normalized for the whole batch of n_seq completions
    (n_tok completion tokens; max_completion_length: dr_grpo's normalizer). logp, old, ref, mask: [S, T] per
    completion token; adv: [S]; variant: grpo_loss_parts's entropy settings. Returns (loss, k3 per token or
    None, ratio)."""
    parts = grpo_loss_parts(logp, old, ref, adv, mask, cfg, n_seq=n_seq, n_tok=n_tok,
                            max_completion_length=max_completion_length, **variant)
    return parts.loss, parts.k3, parts.ratio


def clipped_share_sum(ratio: torch.Tensor, mask: torch.Tensor, cfg: GRPOConfig) -> float:
    """The number of completion tokens whose ratio lies outside [1 - epsilon, 1 + epsilon_high]."""
    return float((((ratio - 1 > cfg.clip_high) | (1 - ratio > cfg.epsilon)).float() * mask).sum())


def clip_region_sums(ratio: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor,
                     cfg: GRPOConfig) -> tuple[float, float]:
    """The completion tokens whose clip binds (TRL's clip_ratio/low and /high): ratio < 1 - epsilon with A < 0,
    and ratio > 1 + epsilon_high with A > 0 (adv [S], ratio and mask [S, T])."""
    a = adv[:, None]
    low = ((ratio < 1 - cfg.epsilon) & (a < 0)).float() * mask
    high = ((ratio > 1 + cfg.clip_high) & (a > 0)).float() * mask
    return float(low.sum()), float(high.sum())


def truncated_rows(completions) -> torch.Tensor:
    """1.0 for each completion that stopped on an end-of-sequence token, 0.0 for one cut at the length limit."""
    return torch.tensor([0.0 if c.finish_reason == "length" else 1.0 for c in completions])


# ----------------------------------------------------------------------------- the learning-rate schedule

def warmup_steps(cfg: GRPOConfig, total: int) -> int:
    """warmup_steps, or ceil(warmup_ratio x total) optimizer steps (transformers' rule)."""
    return cfg.warmup_steps if cfg.warmup_steps > 0 else math.ceil(cfg.warmup_ratio * total)


def lr_factor(cfg: GRPOConfig, k: int, total: int) -> float:
    """The multiplier of learning_rate at the k-th optimizer step (from 0) of a phase of `total` steps, with
    W = warmup_steps: k / max(1, W) while k < W; then constant 1 | linear max(0, (total - k) / max(1, total - W))
    | cosine max(0, (1 + cos(pi p)) / 2), p = (k - W) / max(1, total - W) (transformers' schedules)."""
    w = warmup_steps(cfg, total)
    if k < w:
        return float(k) / float(max(1, w))
    if cfg.lr_scheduler_type == "linear":
        return max(0.0, float(total - k) / float(max(1, total - w)))
    if cfg.lr_scheduler_type == "cosine":
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(k - w) / float(max(1, total - w)))))
    return 1.0


@dataclass
class GRPOStep:
    rollouts: Rollouts
    loss: float
    kl: float                 # mean k3 per completion token (0 without reference)
    clip_fraction: float      # share of completion tokens whose ratio was clipped (last inner iteration)
    grad_norm: float          # before clipping (last inner iteration)
    seconds: float
    clip_low: float = 0.0     # share whose lower clip binds (ratio < 1 - epsilon, A < 0; last inner iteration)
    clip_high: float = 0.0    # share whose upper clip binds (ratio > 1 + epsilon_high, A > 0)
    learning_rate: float = 0.0  # the learning rate of the step's last optimizer step
    variants: dict = field(default_factory=dict)  # the variants' statistics (docs/training.md), last inner iteration

    @property
    def samples(self) -> Rollouts:
        """The samples the step's metrics describe: its rollouts, from the policy before the update."""
        return self.rollouts

    @property
    def generated_tokens(self) -> int:
        return self.rollouts.n_tokens

    @property
    def replay(self) -> None:
        """The step's replay.jsonl record: none (the replay log holds ES's updates only, llm/replay_log.py)."""
        return None

    def metrics(self) -> dict:
        """The step's own fields of its metrics.jsonl row (StepMetrics, llm/rundir/records.py): the rollouts'
        mean reward (as reward_mean and center_reward_mean: the policy is the center), the grpo_* fields (the clip
        shares: TRL's clip_ratio/low and /high) and the learning rate of the step's last optimizer step."""
        reward = float(self.rollouts.rewards.mean())
        return {"reward_mean": reward, "center_reward_mean": reward, "grpo_loss": self.loss, "grpo_kl": self.kl,
                "grpo_clip_fraction": self.clip_fraction, "grpo_clip_low_share": self.clip_low,
                "grpo_clip_high_share": self.clip_high, "grpo_grad_norm": self.grad_norm,
                "learning_rate": self.learning_rate} \
            | ({"grpo_variants": self.variants} if self.variants else {})


@contextlib.contextmanager
def _seeded(seed: int, model: torch.nn.Module):
    """torch's global RNG (of the CPU and of the model's device) seeded inside, restored after: what draws from it
    (LoRA's initialization and dropout) is the same in a run and in its resume."""
    device = next(model.parameters()).device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed % 2**63)
        yield


class GRPO:
    """GRPO with an fp32 HF policy; reference (frozen) needed when beta > 0.

    encode(prompt) must give the token ids the engine conditions on for that prompt. The learning-rate
    schedule runs over the phase's optimizer steps: phase_steps GRPO steps from step phase_start, each
    num_iterations optimizer steps. With cfg.use_peft, LoRA adapters are trained on lora_base (a model holding
    the phase's starting weights; default: a copy of policy) and policy receives the merged weights."""

    def __init__(self, cfg: GRPOConfig, engine: Engine, task: Task, policy: torch.nn.Module,
                 reference: torch.nn.Module | None, encode: Callable[[str], list[int]], *,
                 temperature: float, max_new_tokens: int, seed: int, pad_id: int, phase_start: int = 0,
                 phase_steps: int = 1, lora_base: torch.nn.Module | None = None):
        if cfg.beta > 0 and reference is None:
            raise ValueError("reference model is required when grpo.beta > 0")
        self.cfg, self.engine, self.task, self.model, self.reference = cfg, engine, task, policy, reference
        self.encode, self.temperature, self.max_new_tokens = encode, temperature, max_new_tokens
        self.seed, self.pad_id = seed, pad_id
        self.phase_start, self.schedule_steps = phase_start, phase_steps * cfg.num_iterations
        self.shares_engine_model = engine.live_module() is policy
        if cfg.use_peft:
            from escov.llm import grpo_lora

            with _seeded(derive_seed(seed, phase_start, "lora-init"), policy):  # peft draws A from torch's global RNG
                self.policy = grpo_lora.lora_model(lora_base if lora_base is not None else copy.deepcopy(policy), cfg)
        else:
            self.policy = policy  # trained in place: the run's model is the policy
        if cfg.gradient_checkpointing:
            self.policy.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        trained = [p for p in self.policy.parameters() if p.requires_grad] if cfg.use_peft else self.policy.parameters()
        self.optimizer = torch.optim.AdamW(trained, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
        self.optimizer_steps = 0  # taken in the current step
        self.sampling = {k: getattr(cfg, k) for k, off in (("top_p", 1.0), ("top_k", 0), ("min_p", 0.0))
                         if getattr(cfg, k) != off}  # rollouts' sampling restrictions (engine.generate)

    def state_is_intact(self) -> bool:
        """Whether policy and optimizer are still those before the current step (no optimizer step taken)."""
        return self.optimizer_steps == 0

    def center_weights(self, copy: bool = True) -> dict[str, torch.Tensor]:
        """Weights held outside the run's model: none (the policy is the model, LoRA's merged weights included)."""
        return {}

    def checkpoint_state(self, base: str = "") -> tuple[dict, tuple[dict, dict] | None]:
        """What a checkpoint keeps besides the weights: the optimizer state, and with use_peft the LoRA adapters as
        a PEFT adapter folder's (adapter_config.json's content for base model `base`, the phase's starting weights;
        the tensors by peft's saved names)."""
        adapter = None
        if self.cfg.use_peft:
            from escov.llm import grpo_lora

            adapter = (grpo_lora.adapter_config(self.policy, base), grpo_lora.adapter_state(self.policy))
        return self.optimizer.state_dict(), adapter

    def restore_state(self, optimizer_state: dict) -> None:
        """Continue from a checkpoint's state (checkpoint_state's, the adapters under "adapter" with use_peft)."""
        optimizer_state = dict(optimizer_state)
        if self.cfg.use_peft:
            from escov.llm import grpo_lora

            grpo_lora.load_adapter_state(self.policy, optimizer_state.pop("adapter"), "resumed checkpoint")
        self.optimizer.load_state_dict(optimizer_state)

    def close(self) -> None:
        """Nothing to release (ES's Ray actors have their counterpart)."""

    def _micro_batches(self, n: int):
        return [slice(i, min(i + self.cfg.micro_batch_size, n)) for i in range(0, n, self.cfg.micro_batch_size)]

    @contextlib.contextmanager
    def _training_forward(self):
        """The forwards that take gradients: no dropout (the training forward is the sampling policy), except
        LoRA's own dropout (lora_dropout); with gradient_checkpointing, the decoder layers recompute their
        activations in the backward pass (transformers does so only for a layer flagged as training; the
        flag is set on the layers alone, not their children, and cleared afterwards so generation keeps its cache)."""
        self.policy.train(False)
        lora_dropout = [m for n, m in self.policy.named_modules() if n.endswith("lora_dropout")]
        layers = [m for m in self.policy.modules() if getattr(m, "gradient_checkpointing", False) is True]
        for m in lora_dropout:
            m.train(True)
        for m in layers:
            m.training = True
        try:
            yield
        finally:
            self.policy.train(False)

    def step(self, problems: list[Problem], step: int) -> GRPOStep:
        t0 = time.perf_counter()
        cfg = self.cfg
        self.optimizer_steps = 0
        out = rollout(self.engine, self.task, problems, n=cfg.num_generations, temperature=self.temperature,
                      max_new_tokens=self.max_new_tokens, seed=derive_seed(self.seed, step, "grpo-rollout"), step=step,
                      **self.sampling)
        device = next(self.policy.parameters()).device  # the run's device (llm/device.py)
        adv_np, variants = self._advantages(problems, out)
        adv = torch.tensor(adv_np.reshape(-1), dtype=torch.float32, device=device)
        prompt_ids = [self.encode(p.prompt) for p in problems for _ in range(cfg.num_generations)]
        completions = [c for row in out.completions for c in row]
        padded = pad_batch(prompt_ids, [c.token_ids for c in completions], self.pad_id)
        seq, attention, mask = (t.to(device) for t in padded)
        tmask = mask[:, 1:]
        if cfg.mask_truncated_completions:
            tmask = tmask * truncated_rows(completions).to(device)[:, None]
        n_seq, n_tok = seq.shape[0], float(tmask.sum())
        # frozen log-probs: the sampling policy (pi_old) and the reference
        with torch.no_grad():
            old = torch.cat([completion_logprobs(self.policy, seq[s], attention[s], mask[s], self.temperature)
                             for s in self._micro_batches(n_seq)]) if cfg.num_iterations > 1 else None
            ref = torch.cat([completion_logprobs(self.reference, seq[s], attention[s], mask[s], self.temperature)
                             for s in self._micro_batches(n_seq)]) if cfg.beta > 0 else None
        control = EntropyControl(cfg, lambda: self._variant_state().setdefault("entropy", {}))
        wants_entropy = control.enabled or cfg.top_entropy_quantile < 1.0
        cov_generator = torch.Generator().manual_seed(derive_seed(self.seed, step, "grpo-clip-cov") % 2**63)
        with self._training_forward(), _seeded(derive_seed(self.seed, step, "grpo-dropout"), self.policy):
            for i in range(cfg.num_iterations):
                self.optimizer.zero_grad(set_to_none=True)
                total_loss, kl_sum, clipped, entropy_sum, cov_sum, ratio_sum, capped = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
                low, high = 0.0, 0.0
                selected = self._selected_tokens(seq, attention, mask, tmask)
                n_selected = n_tok if selected is None else float(selected.sum())
                coef = control.applied() if control.enabled else 0.0
                for s in self._micro_batches(n_seq):
                    logp = completion_logprobs(self.policy, seq[s], attention[s], mask[s], self.temperature,
                                               with_entropy=wants_entropy)
                    logp, entropy = logp if wants_entropy else (logp, None)
                    m = tmask[s]
                    old_s = old[s] if old is not None else logp.detach()
                    parts = grpo_loss_parts(logp, old_s, ref[s] if ref is not None else None, adv[s], m, cfg,
                                            n_seq=n_seq, n_tok=n_tok, max_completion_length=self.max_new_tokens,
                                            entropy=entropy, selected=None if selected is None else selected[s],
                                            n_selected=n_selected, entropy_coef=coef, generator=cov_generator)
                    loss = parts.loss
                    if parts.k3 is not None:
                        kl_sum += float((parts.k3.detach() * m).sum())
                    if not torch.isfinite(loss):
                        raise NonFiniteError(f"step {step}: GRPO loss is not finite ({float(loss)})")
                    loss.backward()
                    total_loss += float(loss.detach())
                    clipped += clipped_share_sum(parts.ratio, m, cfg)
                    low_s, high_s = clip_region_sums(parts.ratio.detach(), adv[s], m, cfg)
                    low, high = low + low_s, high + high_s
                    cov_sum += parts.cov_share * float(m.sum())
                    ratio_sum += float((parts.ratio.detach() * m).sum())
                    capped += float((((parts.ratio > cfg.clip_high) & (adv[s][:, None] > 0)).float() * m).sum())
                    if entropy is not None:
                        kept = m if selected is None else m * selected[s]
                        entropy_sum += float((entropy.detach() * kept).sum())
                params = [p for p in self.policy.parameters() if p.grad is not None]
                limit = cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")
                grad_norm = float(torch.nn.utils.clip_grad_norm_(params, limit))
                if not np.isfinite(grad_norm):
                    raise NonFiniteError(f"step {step}: GRPO gradient norm is not finite ({grad_norm})")
                k = (step - self.phase_start) * cfg.num_iterations + i  # this phase's optimizer step, from 0
                for group in self.optimizer.param_groups:
                    group["lr"] = cfg.learning_rate * lr_factor(cfg, k, self.schedule_steps)
                self.optimizer.step()
                self.optimizer_steps += 1
                if wants_entropy:
                    control.measured(entropy_sum / max(n_selected, 1.0))
        if wants_entropy:
            variants["entropy"] = entropy_sum / max(n_selected, 1.0)
        if control.enabled:
            variants["entropy_coef"] = coef
        if cfg.top_entropy_quantile < 1.0:
            variants["token_share"] = n_selected / max(n_tok, 1.0)
        if cfg.loss_type in ("clip_cov", "kl_cov"):
            variants["cov_share"] = cov_sum / max(n_tok, 1.0)
        if cfg.importance_sampling_level == "sequence" or cfg.loss_type in ("cispo", "sapo"):
            variants["ratio_mean"] = ratio_sum / max(n_tok, 1.0)  # the importance weight's token mean
        if cfg.loss_type == "cispo":
            variants["cispo_clip_ratio"] = capped / max(n_tok, 1.0)  # TRL's: w > epsilon_high with A > 0
        for name, p in self.policy.named_parameters():
            if not torch.isfinite(p).all():
                raise NonFiniteError(f"step {step}: weight {name} is not finite after the GRPO update")
        if self.policy is not self.model:  # LoRA: the merged weights are the run's model
            from escov.llm import grpo_lora

            merged = grpo_lora.merged_weights(self.policy)
            with torch.no_grad():
                live = dict(self.model.named_parameters())
                for n, w in merged.items():
                    live[n].copy_(w)
        if not self.shares_engine_model:
            self.engine.load_weights((n, p.detach()) for n, p in self.model.named_parameters())
        return GRPOStep(rollouts=out, loss=total_loss, kl=kl_sum / max(n_tok, 1.0),
                        clip_fraction=clipped / max(n_tok, 1.0), grad_norm=grad_norm,
                        seconds=time.perf_counter() - t0, variants=variants,
                        clip_low=low / max(n_tok, 1.0), clip_high=high / max(n_tok, 1.0),
                        learning_rate=self.optimizer.param_groups[0]["lr"])

    # -- the variants' parts of a step (docs/training.md) ----------------------------------------------------
    def _variant_state(self) -> dict:
        """What the variants keep across the phase's steps (adaptive entropy coefficient, solved prompts, answer
        counts): plain values inside the optimizer's first parameter group, so that checkpoints keep them."""
        return self.optimizer.param_groups[0].setdefault("escov_variants", {})

    def _advantages(self, problems: list[Problem], out: Rollouts) -> tuple[np.ndarray, dict]:
        """[B, G] advantages of the step (adv_estimator, outcome bonus, zero-success gating) and their statistics."""
        cfg, prompts, stats = self.cfg, [str(p.prompt) for p in problems], {}
        rewards = out.rewards
        if cfg.outcome_bonus_coef > 0:
            answers = [[self.task.vote(p, c.text) for c in row] for p, row in zip(problems, out.completions)]
            bonus = outcome_bonus(answers, prompts, cfg.outcome_bonus_coef, self._variant_state())
            rewards = rewards + bonus
            stats["outcome_bonus_mean"] = float(bonus.mean())
        adv = advantages(rewards, out.correct, cfg)
        if cfg.zero_success_gating:
            adv, stats["gated_share"] = gate_solved(adv, prompts, out.correct, self._variant_state())
        if cfg.adv_estimator != "grpo" or cfg.zero_success_gating:
            stats["adv_nonzero_share"] = float((adv != 0).mean())
        return adv, stats

    def _selected_tokens(self, seq, attention, mask, tmask) -> torch.Tensor | None:
        """top_entropy_quantile < 1: the batch's tokens of highest entropy under the current policy (a forward
        without gradient over the whole batch; llm/grpo_entropy.py), else None (every token)."""
        if self.cfg.top_entropy_quantile >= 1.0:
            return None
        with torch.no_grad():
            entropy = torch.cat([completion_logprobs(self.policy, seq[s], attention[s], mask[s], self.temperature,
                                                     with_entropy=True)[1] for s in self._micro_batches(len(seq))])
        return high_entropy_mask(entropy, tmask, self.cfg.top_entropy_quantile).to(tmask.dtype)
