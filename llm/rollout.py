"""Roll a policy out on a batch of problems, score the completions, and compute their log-probs
with an HF model (shared by ES, GRPO and the population measurements).

A completion's reward is the task's verifier score (0 for anything that fails to parse), computed for
the whole batch in one call (Task.score_batch: reward functions get TRL's batched call); it is
correct as the task decides (`llm.tasks.base.correct_of`: reward >= 1, or the run's correct_reward). A
non-finite reward is an error, named with the step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from escov.llm.seeds import derive_seed  # re-exported: the rule lives in llm/seeds.py (no torch)
from escov.llm.tasks.base import Problem, Task, correct_of
from escov.theory.errors import NonFiniteError

if TYPE_CHECKING:
    from escov.llm.engines.base import Completion, Engine

__all__ = [
    "NonFiniteError",
    "derive_seed",
    "evaluation_seed",
    "Rollouts",
    "rollout",
    "score_completions",
    "mean_token_entropy",
]


def evaluation_seed(run_seed: int, label: str = "eval") -> int:
    """The sampling seed of a run's evaluations (base, final, eval_steps; label "heldout" for the held-out task):
    what `llm eval --run` uses to reproduce them."""
    return derive_seed(run_seed, label) % 2**31


def mean_token_entropy(completions: list[list[Completion]], temperature: float) -> float:
    """Mean per-token entropy estimate -E[log pi_T(y_t | y_<t)] over the sampled tokens; 0 at temperature 0.

    The engines report the log-probability of each sampled token under the distribution it was
    sampled from (at the sampling temperature T), so this is an unbiased Monte Carlo estimate of
    the mean token entropy along the sampled trajectories. Greedy decoding (T = 0) samples from a
    point mass: entropy 0 (the engines' greedy log-probs are the T = 1 ones, not the sampled law's).
    """
    logprobs = [lp for row in completions for c in row for lp in c.logprobs]
    return 0.0 if temperature == 0 or not logprobs else float(-np.mean(logprobs))


@dataclass
class Rollouts:
    completions: list[list[Completion]]  # [prompt][sample]
    rewards: np.ndarray  # [prompt, sample]
    correct: np.ndarray  # [prompt, sample] bool
    temperature: float  # the sampling temperature (0: greedy)
    parts: dict = field(default_factory=dict)  # reward function name -> [prompt, sample] rewards (NaN: does not apply)

    @property
    def n_tokens(self) -> int:
        return sum(len(c.token_ids) for row in self.completions for c in row)

    def token_entropy(self) -> float:
        """mean_token_entropy of the completions at their sampling temperature."""
        return mean_token_entropy(self.completions, self.temperature)


def rollout(
    engine: Engine,
    task: Task,
    problems: list[Problem],
    *,
    n: int,
    temperature: float,
    max_new_tokens: int,
    seed: int,
    step: int,
    **sampling,
) -> Rollouts:
    """Generate n completions per problem (temperature 0 = greedy; sampling: the engine's top_p, top_k, min_p)
    and score them with the task's verifier."""
    completions = engine.generate(
        [p.prompt for p in problems], n=n, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, **sampling
    )
    return score_completions(task, problems, completions, step, temperature)


def score_completions(
    task: Task, problems: list[Problem], completions: list[list[Completion]], step: int, temperature: float
) -> Rollouts:
    """The verifier's rewards of [prompt][sample] completions sampled at the temperature; NonFiniteError
    naming the step if one is not finite."""
    shape = (len(problems), max((len(row) for row in completions), default=0))
    flat = [(p, c) for p, row in zip(problems, completions) for c in row]
    scores = task.score_batch(
        [p for p, _ in flat], [c.text for _, c in flat], [c.token_ids for _, c in flat], step=step
    )
    rewards = np.asarray(scores.total, dtype=float).reshape(shape)
    if not np.all(np.isfinite(rewards)):
        bad = float(rewards[~np.isfinite(rewards)][0])
        raise NonFiniteError(f"step {step}: reward is not finite ({bad}) for task {task.name}")
    return Rollouts(
        completions=completions,
        rewards=rewards,
        correct=correct_of(scores).reshape(shape),
        temperature=temperature,
        parts={k: np.asarray(v, dtype=float).reshape(shape) for k, v in scores.parts.items()},
    )


# ----------------------------------------------------------------------------- log-probs of completions


def completion_logprobs(
    model: torch.nn.Module,
    sequences: torch.Tensor,
    attention: torch.Tensor,
    completion_mask: torch.Tensor,
    temperature: float,
    with_entropy: bool = False,
):
    """log pi(y_t | x, y_<t) at the temperature for every position (0 where completion_mask is 0); with_entropy:
    also the entropy -sum_v pi(v | x, y_<t) log pi(v | x, y_<t) of that law (nats, 0 off the completion).

    sequences [S, L] = prompt then completion then padding; position t is predicted from t - 1. The
    inputs move to the model's device; the result is on it."""
    device = next(model.parameters()).device
    sequences, attention, completion_mask = sequences.to(device), attention.to(device), completion_mask.to(device)
    logits = model(input_ids=sequences, attention_mask=attention, use_cache=False).logits[:, :-1].float() / temperature
    log_law = F.log_softmax(logits, dim=-1)
    logp = torch.gather(log_law, 2, sequences[:, 1:, None]).squeeze(2) * completion_mask[:, 1:]
    if not with_entropy:
        return logp
    return logp, -(log_law.exp() * log_law).sum(-1) * completion_mask[:, 1:]


def pad_batch(prompt_ids: list[list[int]], completion_ids: list[list[int]], pad_id: int):
    """Right-padded [prompt + completion] rows, their attention mask, and the mask of completion tokens."""
    lengths = [len(p) + len(c) for p, c in zip(prompt_ids, completion_ids)]
    seq = torch.full((len(lengths), max(lengths)), pad_id, dtype=torch.long)
    attention = torch.zeros_like(seq)
    completion = torch.zeros(seq.shape, dtype=torch.float32)
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids)):
        seq[i, : len(p) + len(c)] = torch.tensor(p + c, dtype=torch.long)
        attention[i, : len(p) + len(c)] = 1
        completion[i, len(p) : len(p) + len(c)] = 1.0
    return seq, attention, completion
