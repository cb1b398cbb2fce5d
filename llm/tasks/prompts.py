"""Your own prompts, scored by your own reward function: the `prompts` task.

    python -m escov.llm train --task prompts --data train.parquet --test_data test.parquet \
        --reward_function my_rewards:accuracy --data_fields answer=reward_model.ground_truth ...

Each record of the data (llm/tasks/data_files.py: JSON, JSONL, Parquet, a `save_to_disk` folder)
gives one prompt in its `prompt` column (or the column `data_fields` maps `prompt` to):
- a string: fed like every task prompt (one user turn of the chat template when the tokenizer has
  one, else the text itself);
- a list of chat messages [{"role": ..., "content": ...}, ...] (TRL's conversational format, a
  verl parquet's `prompt`): rendered with the tokenizer's chat template; a tokenizer without one
  (the tiny test model's) is fed the messages' contents joined by a blank line.

Every record of a file must hold the same columns (checked at load: an error names the file, the
record and the column it lacks). Every other column goes to the reward function as a keyword
argument (TRL's convention), nested
values as they are (`reward_model={"ground_truth": ..., ...}`), and each other name of the field
mapping as well: `answer=reward_model.ground_truth` adds `answer`, read by dotted path.
The reward is the functions' weighted sum (llm/tasks/reward_function.py); correct means the first function's
reward >= 1 unless correct_reward / correct_threshold say otherwise (llm/tasks/correctness.py). The final
answer of a completion, for Maj@k and distinct answers, is its text with whitespace collapsed.
"""

from __future__ import annotations

from escov.llm.tasks.base import Problem, Task, check_count, check_split
from escov.llm.tasks.data_files import check_same_columns, field, no_split_data, sample_split, split_files
from escov.llm.tasks.reasoning_format import chat_prompt
from escov.llm.tasks.reward_function import ScoredByFunction, as_list, check_alone

PROMPT_FIELD = "prompt"


def prompts_task(
    reward_function,
    data=None,
    test_data=None,
    data_split: str = "files",
    fields: dict[str, str] | None = None,
    prompt_style: str = "plain",
    reward: str = "escov",
    format_reward: float = 0.0,
    reward_weights=None,
    correct_reward: str = "",
    correct_threshold: float = 1.0,
    reward_timeout: float = 0.0,
) -> Task:
    """The `prompts` task over data files, scored by the reward functions (import paths or callables,
    weighted by reward_weights; llm/tasks/reward_function.py) (the
    built-in tasks' prompt styles and reward conventions do not apply: they must stay at their defaults)."""
    if not as_list(reward_function):
        raise ValueError(
            "task 'prompts' needs a reward: give reward_function = 'module:function' "
            "(--reward_function my_rewards:accuracy)"
        )
    check_alone(reward_function, reward, format_reward)
    if prompt_style != "plain":
        raise ValueError("task 'prompts' feeds the data's prompts as they are; prompt_style is for built-in tasks")
    return ScoredByFunction(
        Prompts(data, test_data, data_split, fields),
        reward_function,
        reward_weights,
        correct_reward,
        correct_threshold,
        reward_timeout,
    )


class Prompts(Task):
    """Prompts read from data files (no reward of its own: prompts_task adds the reward function)."""

    name = "prompts"
    has_verifier = False

    def __init__(self, data=None, test_data=None, data_split: str = "files", fields: dict[str, str] | None = None):
        if data is None and test_data is None:
            raise ValueError(
                "task 'prompts' needs a data file: pass data and/or test_data (--data PATH, --test_data PATH)"
            )
        if fields is not None and (
            not isinstance(fields, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items())
        ):
            raise ValueError(f"fields must map field names to column names (strings), got {fields!r}")
        self.fields = dict(fields or {})
        rows_by_split = split_files(data, test_data, data_split)
        check_same_columns([row for rows in rows_by_split.values() for row in rows])
        self.splits = {split: [self._problem(split, *row) for row in rows] for split, rows in rows_by_split.items()}

    def _problem(self, split: str, path: str, index: int, record: dict) -> Problem:
        where = f"data file {path}: record {index}"
        given = field(record, PROMPT_FIELD, self.fields, where)
        if isinstance(given, str):
            if not given.strip():
                raise ValueError(f"{where}: field {PROMPT_FIELD!r} is empty")
            prompt = given
        else:
            prompt = chat_prompt(given, f"{where}: field {PROMPT_FIELD!r}")
        prompt_column = self.fields.get(PROMPT_FIELD, PROMPT_FIELD)
        columns = {k: v for k, v in record.items() if k != prompt_column}
        for name in self.fields:
            if name != PROMPT_FIELD:
                columns[name] = field(record, name, self.fields, where)
        return Problem(id=f"prompts/{split}/{index}", prompt=prompt, meta={"columns": columns})

    def size(self, split: str) -> int | None:
        check_split(split)
        return len(self.splits.get(split, []))

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        check_split(split)
        check_count(n)
        return sample_split(self.name, self.splits, split, n, seed, no_split_data(self.name, split))

    def score(self, problem: Problem, completion: str) -> float:
        raise ValueError("task 'prompts' is scored by a reward function (reward_function); build it with prompts_task")

    def answer(self, problem: Problem, completion: str) -> str | None:
        """The completion's text with whitespace collapsed (None when empty)."""
        text = " ".join(completion.split())
        return text or None
