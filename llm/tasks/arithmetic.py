"""Held-out arithmetic (the forgetting probe): "47+58=" -> "105".

Questions: a + b and a - b with two-digit operands, a * b with a two-digit operand and a one-digit one from 2 to 9.
The base model learns this beside Countdown; ES/GRPO train on Countdown only, so the change in
arithmetic accuracy measures forgetting. The split of an instance is fixed by its question text.
Reward 1 when the completion (its last <answer> block, else all of it) is exactly the integer
result, else 0.
"""

from __future__ import annotations

import random
import re

from escov.llm.tasks.base import Problem, Task, check_count, check_not_exhausted, check_split, split_of
from escov.llm.tasks.countdown import MAX_COMPLETION_CHARS, extract_answer

_INTEGER = re.compile(r"-?\d{1,12}")


def parse_integer(text: str) -> int | None:
    """The integer a completion states (optionally in <answer> tags), or None if it states none."""
    if not isinstance(text, str) or len(text) > MAX_COMPLETION_CHARS:
        return None
    answer = extract_answer(text)
    return int(answer) if answer is not None and _INTEGER.fullmatch(answer) else None


def format_prompt(question: str) -> str:
    return f"{question}="


class Arithmetic(Task):
    name = "arithmetic"

    def sample_question(self, rng: random.Random, split: str) -> tuple[str, int]:
        """(question, result) from the split: the pretraining corpus is built from these."""
        check_split(split)
        while True:
            op = rng.choice("+-*")
            if op == "*":
                a, b = rng.randint(10, 99), rng.randint(2, 9)
            else:
                a, b = rng.randint(10, 99), rng.randint(10, 99)
            question = f"{a}{op}{b}"
            if split_of(question) == split:
                return question, a + b if op == "+" else a - b if op == "-" else a * b

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        check_split(split)
        check_count(n)
        rng = random.Random(f"arithmetic/{split}/{seed}")
        out: dict[str, Problem] = {}
        misses = 0
        while len(out) < n:
            question, result = self.sample_question(rng, split)
            if question in out:
                misses += 1
                check_not_exhausted(misses, len(out), n, f"the {split} split of task arithmetic")
                continue
            misses = 0
            out[question] = Problem(
                id=f"arithmetic/{question}", prompt=format_prompt(question), meta={"result": result}
            )
        return list(out.values())

    def score(self, problem: Problem, completion: str) -> float:
        return 1.0 if parse_integer(completion) == problem.meta["result"] else 0.0

    def answer(self, problem: Problem, completion: str) -> str | None:
        value = parse_integer(completion)
        return None if value is None else str(value)
