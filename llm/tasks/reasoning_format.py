"""Prompt styles and the reasoning format: where in a completion the answer may sit.

Prompt styles (`prompt_style`, recorded in config.json):
- `plain`: the task's own short prompt (the tiny model's format), fed as today: as one user turn of
  the chat template when the tokenizer has one, else raw;
- `instruct`: an instruction asking for `<think> </think>` reasoning and an `<answer> </answer>`
  (Countdown) or `\\boxed{}` (math) answer, as one user turn of the chat template when there is one;
- `paper`: the paper's own prompts: for Countdown the exact `context` text of its data file (raw
  text ending in "\\n<think>", no chat template, as es-at-scale feeds it); for math the system
  message "Please reason step by step, and put your final answer within \\boxed{}." and the question
  as the user turn (understanding-es's GSM8K prompt).

Completions longer than `MAX_COMPLETION_CHARS` have no answer. Answers inside `<think>` never count: when a
completion opens `<think>` (or the prompt ends inside one), only the text after the last `</think>` may
hold the answer, and with no `</think>` there is no answer at all. Under the reasoning styles (instruct,
paper) a Countdown answer must sit in `<answer>` tags; under `plain` a bare expression is the answer (the
tiny model writes no tags).
"""

from __future__ import annotations

PROMPT_STYLES = ("plain", "instruct", "paper")
MAX_COMPLETION_CHARS = 64_000  # longer completions have no answer (long chain-of-thought fits; every check is linear)
REASONING_STYLES = ("instruct", "paper")
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"


def check_style(style: str) -> str:
    if style not in PROMPT_STYLES:
        raise ValueError(f"prompt_style must be one of {list(PROMPT_STYLES)}, got {style!r}")
    return style


class Prompt(str):
    """A prompt's text, with how an engine feeds it (llm.engines.base.encode_prompt).

    chat=False: the text is tokenized as it is, even when the tokenizer has a chat template.
    chat=True with `messages` (a list of {"role", "content"} turns, e.g. a system turn and a user
    turn): the turns go through the tokenizer's chat template; the text itself (used only when the
    tokenizer has no chat template, as the tiny model's has none) is the turns' contents joined by a
    blank line. A plain `str` prompt is one user turn of the chat template when there is one, else raw.
    """

    chat: bool
    messages: tuple[dict, ...] | None

    def __new__(cls, text: str, *, chat: bool, messages=None):
        obj = super().__new__(cls, text)
        obj.chat = chat
        obj.messages = None if messages is None else tuple(dict(m) for m in messages)
        return obj

    def __reduce__(self):  # pickles (Ray, multiprocessing) with its feeding rule
        return (_rebuild_prompt, (str(self), self.chat, self.messages))


def _rebuild_prompt(text, chat, messages) -> Prompt:
    return Prompt(text, chat=chat, messages=messages)


def raw_prompt(text: str) -> Prompt:
    return Prompt(text, chat=False)


def chat_prompt(messages, where: str = "prompt") -> Prompt:
    """A prompt given as chat messages (TRL's conversational format; a verl parquet's `prompt`):
    a non-empty list of {"role": str, "content": str}; ValueError naming `where` otherwise."""
    if (
        not isinstance(messages, (list, tuple))
        or not messages
        or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages
        )
    ):
        raise ValueError(
            f"{where}: chat messages must be a non-empty list of {{'role': ..., 'content': ...}} "
            f"with string values, got {str(messages)[:80]}"
        )
    turns = [{"role": m["role"], "content": m["content"]} for m in messages]
    return Prompt("\n\n".join(m["content"] for m in turns), chat=True, messages=turns)


def system_prompt(system: str, user: str) -> Prompt:
    return chat_prompt([{"role": "system", "content": system}, {"role": "user", "content": user}])


def after_thinking(completion: str, starts_in_think: bool = False) -> str | None:
    """The part of a completion that may hold its answer: after the last `</think>` when the
    completion thinks (opens `<think>`, or its prompt ends in one), None when the thinking never ends."""
    end = completion.rfind(THINK_CLOSE)
    if end >= 0:
        return completion[end + len(THINK_CLOSE) :]
    if starts_in_think or THINK_OPEN in completion:
        return None
    return completion


def last_tagged(text: str, open_tag: str = ANSWER_OPEN, close_tag: str = ANSWER_CLOSE) -> str | None:
    """Content of the last open_tag ... close_tag block (unstripped), or None (linear time)."""
    end = text.rfind(close_tag)
    start = text.rfind(open_tag, 0, end) if end >= 0 else -1
    return text[start + len(open_tag) : end] if start >= 0 else None


def es_at_scale_format_score(completion: str, starts_in_think: bool) -> float:
    """es-at-scale's Countdown format score, computed in linear time (no regular expressions).

    The text is "<think>" + completion when the prompt ends in `<think>`. 1.0 when the whole text is
    `<think>...</think>\\n<answer>...</answer>`; otherwise 0.1 when it holds a `<think>...</think>`
    block plus 0.5 when it holds an `<answer>...</answer>` block.
    """
    text = THINK_OPEN + completion if starts_in_think else completion
    joint = THINK_CLOSE + "\n" + ANSWER_OPEN
    if (
        text.startswith(THINK_OPEN)
        and text.endswith(ANSWER_CLOSE)
        and text.find(joint, len(THINK_OPEN), len(text) - len(ANSWER_CLOSE)) >= 0
    ):
        return 1.0
    return 0.1 * _has_block(text, THINK_OPEN, THINK_CLOSE) + 0.5 * _has_block(text, ANSWER_OPEN, ANSWER_CLOSE)


def _has_block(text: str, open_tag: str, close_tag: str) -> bool:
    start = text.find(open_tag)
    return start >= 0 and text.find(close_tag, start + len(open_tag)) >= 0
