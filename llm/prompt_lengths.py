"""Prompts checked against the model's context, before any model is loaded.

A model of C positions (`max_position_embeddings` in its config.json) that writes completions of up
to L tokens (`max_completion_length`) has room for prompts of at most C - L tokens (the prompt
budget). A longer prompt would run silently past the positions the model was trained on, or
allocate memory for a sequence it cannot hold; so a run (and `llm eval`) checks every prompt it will
use, counted with the engine's own encoding (chat template included), from the tokenizer alone:

- by default a prompt over the budget stops the run with one line naming its data file, how many of
  its prompts are over, and the longest (its problem id and its length);
- with `truncate_prompts = true` (`--truncate_prompts`) such prompts are cut to their last C - L
  tokens (TRL's rule: prompts are truncated from the left), and the run says so once per file with
  the count and the longest.

A model whose config.json names no context length is not checked.
"""

from __future__ import annotations

import json
from pathlib import Path

CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")  # how configs name it


def model_context(model_dir) -> int | None:
    """The number of positions the model at model_dir holds (its config.json), or None when it names none."""
    path = Path(model_dir) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # the engine's own checks name a missing or damaged model directory
    for key in CONTEXT_KEYS:
        value = config.get(key) if isinstance(config, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def prompt_budget(model_dir, max_completion_length: int) -> int | None:
    """The longest prompt (tokens) the model has room for beside a full completion; None when unknown."""
    context = model_context(model_dir)
    if context is None:
        return None
    if max_completion_length >= context:
        raise ValueError(
            f"max_completion_length {max_completion_length} leaves no room for a prompt: the model "
            f"{model_dir} holds {context} positions (max_position_embeddings in its config.json)"
        )
    return context - max_completion_length


def check_prompt_lengths(
    sources: dict[str, list], tokenizer, model_dir, max_completion_length: int, truncate: bool = False
) -> int | None:
    """Check the prompts of each source (a data file's name -> its problems) against the prompt budget.

    Returns the budget when prompts are to be cut to it (truncate, and some prompt is over it), else None.
    ValueError naming the first source with prompts over the budget, their count and the longest,
    unless truncate (then one note per such source on stderr)."""
    import sys

    from escov.llm.engines.base import encode_prompt

    budget = prompt_budget(model_dir, max_completion_length)
    if budget is None:
        return None
    cut = False
    for source, problems in sources.items():
        lengths = [(len(encode_prompt(tokenizer, p.prompt)), p.id) for p in problems]
        over = [(n, pid) for n, pid in lengths if n > budget]
        if not over:
            continue
        longest, longest_id = max(over)
        what = (
            f"{source}: {len(over)} of {len(problems)} prompts are longer than the model has room for "
            f"({budget} tokens: {budget + max_completion_length} positions of {model_dir} less "
            f"max_completion_length {max_completion_length}); the longest, {longest_id}, has {longest} tokens"
        )
        if not truncate:
            raise ValueError(
                f"{what}; shorten them, lower max_completion_length, or set truncate_prompts = true "
                f"(--truncate_prompts) to keep their last {budget} tokens"
            )
        print(
            f"note: {what}; truncate_prompts: they are cut to their last {budget} tokens", file=sys.stderr, flush=True
        )
        cut = True
    return budget if cut else None
