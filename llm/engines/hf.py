"""HFEngine: batched sampling on a transformers causal LM with a KV cache and left padding.

Each call expands the prompts to prompt-major rows (n rows per prompt), left-pads them, runs one
prefill and then one forward per new token on the cached keys/values. A row stops at its first
end-of-sequence token. Sampling: softmax(logits / T), optionally restricted to the top_k most likely tokens
(ties with the k-th kept), then to the top-p nucleus (the smallest set of most likely tokens whose mass
reaches top_p), then to the tokens at least min_p times as likely as the most likely one, drawn with a torch.Generator
seeded once per call, so a call is deterministic given (seed, prompts, n, max_batch_size).
`load_weights` copies tensors into the live parameters; editing `engine.model` in place works too.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

import torch
import torch.nn.functional as F

from escov.llm.engines.base import (
    Completion,
    Engine,
    check_generate_args,
    check_model_dir,
    load_tokenizer,
    stop_token_ids,
    with_pad_token,
)


def sample_next(
    logits: torch.Tensor,
    temperature: float,
    top_p: float,
    generator: torch.Generator,
    top_k: int = 0,
    min_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(token [B], log-prob [B] under the distribution sampled from) for logits [B, V]."""
    if temperature == 0:
        logp = F.log_softmax(logits, dim=-1)
        token = logits.argmax(dim=-1)
        return token, logp.gather(1, token[:, None])[:, 0]
    logp = F.log_softmax(logits / temperature, dim=-1)
    if 0 < top_k < logp.shape[-1]:
        kth = logp.topk(top_k, dim=-1).values[:, -1:]
        logp = F.log_softmax(logp.masked_fill(logp < kth, float("-inf")), dim=-1)
    if top_p < 1.0:
        sorted_logp, order = logp.sort(dim=-1, descending=True)
        mass_before = sorted_logp.exp().cumsum(dim=-1) - sorted_logp.exp()
        drop = torch.zeros_like(logp, dtype=torch.bool).scatter(1, order, mass_before >= top_p)
        logp = F.log_softmax(logp.masked_fill(drop, float("-inf")), dim=-1)
    if min_p > 0:
        floor = logp.max(dim=-1, keepdim=True).values + math.log(min_p)
        logp = F.log_softmax(logp.masked_fill(logp < floor, float("-inf")), dim=-1)
    token = torch.multinomial(logp.exp(), 1, generator=generator)[:, 0]
    return token, logp.gather(1, token[:, None])[:, 0]


class HFEngine(Engine):
    """HFEngine(model_dir) or HFEngine(model, tokenizer): generation on a live transformers model."""

    def __init__(
        self,
        model,
        tokenizer=None,
        *,
        dtype: torch.dtype = torch.float32,
        device: str = "cpu",
        max_batch_size: int = 256,
    ):
        from transformers import AutoModelForCausalLM

        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if isinstance(model, (str, Path)):
            self.model_dir = str(check_model_dir(model))
            self.tokenizer = load_tokenizer(self.model_dir)
            self.model = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=dtype).to(device)
        else:
            if tokenizer is None:
                raise ValueError("tokenizer is required when model is a loaded module, not a directory")
            self.model_dir = None
            self.model, self.tokenizer = model, with_pad_token(tokenizer)
        self.model.eval()
        self.device = torch.device(device)
        self.max_batch_size = max_batch_size
        self.stop_ids = torch.tensor(sorted(stop_token_ids(self.tokenizer, self.model_dir)), device=self.device)

    @torch.no_grad()
    def generate(
        self,
        prompts: list[str],
        *,
        n: int,
        temperature: float,
        max_new_tokens: int,
        seed: int,
        top_p: float = 1.0,
        top_k: int = 0,
        min_p: float = 0.0,
    ) -> list[list[Completion]]:
        check_generate_args(prompts, n, temperature, max_new_tokens, top_p, top_k, min_p)
        rows = [ids for ids in (self.prompt_token_ids(p) for p in prompts) for _ in range(n)]
        generator = torch.Generator(device=self.device).manual_seed(int(seed))
        flat: list[Completion] = []
        for start in range(0, len(rows), self.max_batch_size):
            flat += self.generate_rows(
                rows[start : start + self.max_batch_size],
                temperature,
                top_p,
                max_new_tokens,
                [generator],
                top_k=top_k,
                min_p=min_p,
            )
        return [flat[i * n : (i + 1) * n] for i in range(len(prompts))]

    @torch.no_grad()
    def generate_rows(
        self,
        rows: list[list[int]],
        temperature: float,
        top_p: float,
        max_new_tokens: int,
        generators: list[torch.Generator],
        top_k: int = 0,
        min_p: float = 0.0,
    ) -> list[Completion]:
        """One left-padded batch: prefill, then KV-cached decoding until every row stopped.

        The rows split into len(generators) equal contiguous blocks; block i samples with generators[i]
        (one block per population member in llm/es/batched_hf.py)."""
        batch, width = len(rows), max(len(r) for r in rows)
        if batch % len(generators):
            raise ValueError(f"{batch} rows do not split into {len(generators)} equal blocks")
        per = batch // len(generators)
        input_ids = torch.full((batch, width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros((batch, width), dtype=torch.long)
        for i, r in enumerate(rows):
            input_ids[i, width - len(r) :] = torch.tensor(r)
            attention[i, width - len(r) :] = 1
        input_ids, attention = input_ids.to(self.device), attention.to(self.device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=input_ids, attention_mask=attention, position_ids=positions, use_cache=True)
        done = torch.zeros(batch, dtype=torch.bool, device=self.device)
        tokens, logprobs = [], []
        for step in range(max_new_tokens):
            logits = out.logits[:, -1, :].float()
            if temperature == 0 or len(generators) == 1:
                token, logp = sample_next(logits, temperature, top_p, generators[0], top_k, min_p)
            else:  # each block draws from its own generator, as its own generate call would
                drawn = [
                    sample_next(logits[i * per : (i + 1) * per], temperature, top_p, g, top_k, min_p)
                    for i, g in enumerate(generators)
                ]
                token, logp = torch.cat([t for t, _ in drawn]), torch.cat([lp for _, lp in drawn])
            token = token.masked_fill(done, self.tokenizer.pad_token_id)
            tokens.append(token)
            logprobs.append(logp)
            done |= torch.isin(token, self.stop_ids)
            if bool(done.all()) or step == max_new_tokens - 1:
                break
            attention = torch.cat([attention, torch.ones((batch, 1), dtype=attention.dtype, device=self.device)], 1)
            positions = positions[:, -1:] + 1
            out = self.model(
                input_ids=token[:, None],
                attention_mask=attention,
                position_ids=positions,
                past_key_values=out.past_key_values,
                use_cache=True,
            )
        token_rows = torch.stack(tokens, 1).tolist()
        logprob_rows = torch.stack(logprobs, 1).tolist()
        stops = set(self.stop_ids.tolist())
        completions = []
        for ids, lps in zip(token_rows, logprob_rows):
            end = next((t + 1 for t, tok in enumerate(ids) if tok in stops), None)
            ids, lps = (ids[:end], lps[:end]) if end is not None else (ids, lps)
            completions.append(
                Completion(
                    text=self.tokenizer.decode(ids, skip_special_tokens=True),
                    token_ids=ids,
                    logprobs=lps,
                    finish_reason="stop" if end is not None else "length",
                )
            )
        return completions

    def live_module(self) -> torch.nn.Module:
        return self.model

    @torch.no_grad()
    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> None:
        params = dict(self.model.named_parameters())
        for name, tensor in named_tensors:
            if name not in params:
                raise ValueError(f"load_weights: the model has no parameter named {name!r}")
            if tuple(tensor.shape) != tuple(params[name].shape):
                raise ValueError(
                    f"load_weights: {name} has shape {tuple(params[name].shape)}, "
                    f"got a tensor of shape {tuple(tensor.shape)}"
                )
            params[name].copy_(tensor)
