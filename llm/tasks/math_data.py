"""Local math datasets (GSM8K, DeepScaleR/MATH style) from JSONL, JSON or Parquet, graded with math-verify.

Formats (one record per problem; `fields` maps these names to a file's own column names):
- gsm8k: `question`, `answer` ending in "#### N" (N is the gold answer; thousands commas dropped);
- deepscaler: `problem`, `answer` (the gold answer, LaTeX or plain).
`data` is the train split and `test_data` the test split (or `data_split`, llm/tasks/data_files.py).
Records are validated when the task is built, so a bad file fails before any model is loaded.
A gold answer that math-verify cannot parse is reported then (count and first examples) and its
record is left out; above `MAX_UNPARSEABLE_GOLD_SHARE` of a file that is an error.

Prompt styles (llm/tasks/reasoning_format.py): `plain` is the question followed by
`PROMPT_SUFFIX`; `instruct` asks for `<think>` reasoning and a `\\boxed{}` answer; `paper` is
understanding-es's GSM8K prompt: the system message `PAPER_SYSTEM_PROMPT` and the question as the
user turn. Grading (bounded, cached, the same in every thread and process): llm/tasks/math_grader.py.
Rewards (llm/tasks/rewards.py): `escov` gives 1 when math-verify finds the gold answer (boxed or
not), `format_reward` (default 0) for a wrong `\\boxed{}` answer, else 0; `paper-gsm8k` gives 1 when
the last `\\boxed{}` answer is correct, 0.1 when it is wrong, 0 without a box.
"""

from __future__ import annotations

import warnings

from escov.llm.tasks.base import Problem, Task, check_count, check_split
from escov.llm.tasks.data_files import check_fields, field, no_split_data, sample_split, split_files
from escov.llm.tasks.math_grader import gold_key, grade
from escov.llm.tasks.reasoning_format import MAX_COMPLETION_CHARS, check_style, system_prompt
from escov.llm.tasks.rewards import PAPER_BOXED_WRONG_REWARD, check_reward

PROMPT_SUFFIX = "\nPlease reason step by step, and put your final answer within \\boxed{}."
INSTRUCT_SUFFIX = "\nShow your reasoning in <think> </think> tags, then give the final answer within \\boxed{}."
PAPER_SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."
FIELDS = {"gsm8k": ("question", "answer"), "deepscaler": ("problem", "answer")}
MAX_UNPARSEABLE_GOLD_SHARE = 0.01  # more than 1% of a file's golds unparseable: the file is not what it claims
SHOWN_EXAMPLES = 3


def gold_answer(fmt: str, record: dict, where: str, fields: dict[str, str] | None = None) -> tuple[str, str]:
    """(question, gold answer) of one record, or ValueError naming the record and the field."""
    question_field, answer_field = FIELDS[fmt]
    question = field(record, question_field, fields, where)
    answer = field(record, answer_field, fields, where)
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"{where}: field {question_field!r} must be a non-empty string")
    if not isinstance(answer, (str, int, float)) or isinstance(answer, bool):
        raise ValueError(f"{where}: field {answer_field!r} must be a string or a number")
    answer = str(answer)
    if fmt == "gsm8k":
        if "####" not in answer:
            raise ValueError(f"{where}: field 'answer' must end in '#### N' (GSM8K format)")
        answer = answer.rsplit("####", 1)[1].strip().replace(",", "")
    if not answer.strip():
        raise ValueError(f"{where}: the gold answer is empty")
    return question, answer.strip()


def format_prompt(question: str, style: str) -> str:
    check_style(style)
    if style == "plain":
        return question + PROMPT_SUFFIX
    if style == "instruct":
        return question + INSTRUCT_SUFFIX
    return system_prompt(PAPER_SYSTEM_PROMPT, question.strip())


class MathData(Task):
    """GSM8K or DeepScaleR records from local files: `data` (train) and/or `test_data` (test). With
    records_needed=False and neither file, the verifier alone (no problems): what scores rows that hold their own gold
    answer (the coverage analyzer's --task)."""

    def __init__(
        self,
        name: str,
        data=None,
        test_data=None,
        data_split: str = "files",
        fields: dict[str, str] | None = None,
        prompt_style: str = "plain",
        reward: str = "escov",
        format_reward: float = 0.0,
        max_completion_chars: int = MAX_COMPLETION_CHARS,
        *,
        records_needed: bool = True,
    ):
        if name not in FIELDS:
            raise ValueError(f"math dataset format must be one of {sorted(FIELDS)}, got {name!r}")
        if data is None and test_data is None and records_needed:
            raise ValueError(
                f"task {name!r} needs a data file: pass data and/or test_data (--data PATH, --test_data PATH)"
            )
        if (
            isinstance(max_completion_chars, bool)
            or not isinstance(max_completion_chars, int)
            or max_completion_chars < 1
        ):
            raise ValueError(f"max_completion_chars must be an integer >= 1, got {max_completion_chars!r}")
        self.name = name
        self.reward = check_reward(reward, name, format_reward)
        self.prompt_style = check_style(prompt_style)
        self.format_reward, self.max_completion_chars = format_reward, max_completion_chars
        self.fields = check_fields(fields, FIELDS[name], name)
        self.splits: dict[str, list[Problem]] = {}
        self.unparseable: dict[str, list[tuple[str, int, str]]] = {}  # split -> (file, record index, gold)
        for split, rows in split_files(data, test_data, data_split).items():
            self.splits[split], self.unparseable[split] = self._load(split, rows)

    def _load(self, split: str, rows) -> tuple[list[Problem], list[tuple[str, int, str]]]:
        problems, bad = [], []
        for path, index, record in rows:
            question, gold = gold_answer(self.name, record, f"data file {path}: record {index}", self.fields)
            if gold_key(gold) is None:
                bad.append((path, index, gold))
                continue
            problems.append(
                Problem(
                    id=f"{self.name}/{split}/{index}",
                    prompt=format_prompt(question, self.prompt_style),
                    meta={"gold": gold},
                )
            )
        if bad:
            examples = "; ".join(f"record {i}: {g[:60]!r}" for _, i, g in bad[:SHOWN_EXAMPLES])
            message = (
                f"data file {bad[0][0]}: {len(bad)} of {len(rows)} gold answers cannot be parsed by "
                f"math-verify ({examples})"
            )
            if len(bad) > MAX_UNPARSEABLE_GOLD_SHARE * len(rows):
                raise ValueError(f"{message}; more than {MAX_UNPARSEABLE_GOLD_SHARE:.0%} of the file")
            warnings.warn(f"{message}; those records are left out", stacklevel=3)
        return problems, bad

    def size(self, split: str) -> int | None:
        check_split(split)
        return len(self.splits.get(split, []))

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        check_split(split)
        check_count(n)
        return sample_split(self.name, self.splits, split, n, seed, no_split_data(self.name, split))

    def score(self, problem: Problem, completion: str) -> float:
        graded = grade(problem.meta["gold"], completion, max_chars=self.max_completion_chars)
        if self.reward == "paper-gsm8k":
            return (1.0 if graded.correct else PAPER_BOXED_WRONG_REWARD) if graded.boxed else 0.0
        if graded.correct:
            return 1.0
        return self.format_reward if graded.boxed else 0.0

    def answer(self, problem: Problem, completion: str) -> str | None:
        """The normalized final answer: its exact numeric value, or sympy's form (the Maj@k vote)."""
        return grade(problem.meta["gold"], completion, max_chars=self.max_completion_chars).key
