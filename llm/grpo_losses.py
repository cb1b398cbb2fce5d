"""GRPO's loss types (`grpo.loss_type`, named as in TRL, or verl where TRL lacks one): how the per-token terms
l_it of a batch of S completions (T_i tokens each) are averaged into the loss. The one list of loss types;
llm/settings/ validates the setting against it and llm/grpo.py computes with it. Each rule uses only tensor methods, so
this module imports no torch (settings are validated without it)."""

from __future__ import annotations


def grpo_mean(per_token, mask, *, n_seq: int, n_tok: float, max_completion_length: int):
    """ "grpo": (1/S) sum_i (1/T_i) sum_t l_it, each completion's token mean (the paper's 1/T_i), then the mean
    over the S completions of the batch."""
    return ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1.0)).sum() / n_seq


def bnpo_mean(per_token, mask, *, n_seq: int, n_tok: float, max_completion_length: int):
    """ "bnpo" and "dapo": sum_it l_it / sum_i T_i, the mean over every completion token of the batch. (TRL:
    bnpo divides by the tokens of its micro-batch, dapo by those of the whole generation batch; here the
    batch is one update on one process, where the two are the same.)"""
    return (per_token * mask).sum() / max(n_tok, 1.0)


def dr_grpo_mean(per_token, mask, *, n_seq: int, n_tok: float, max_completion_length: int):
    """ "dr_grpo" (Dr. GRPO): sum_it l_it / (S * max_completion_length), a constant normalizer free of the
    completions' lengths."""
    return (per_token * mask).sum() / (n_seq * max_completion_length)


# cispo: TRL averages it as dapo; sapo as grpo; clip_cov and kl_cov: verl's default "token-mean" (bnpo's). The
# per-token terms of each: llm/grpo_objectives.py, llm/grpo_covariance.py
LOSSES = {
    "grpo": grpo_mean,
    "bnpo": bnpo_mean,
    "dr_grpo": dr_grpo_mean,
    "dapo": bnpo_mean,
    "cispo": bnpo_mean,
    "sapo": grpo_mean,
    "clip_cov": bnpo_mean,
    "kl_cov": bnpo_mean,
}
