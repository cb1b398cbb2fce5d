"""Local math datasets (GSM8K, DeepScaleR/MATH style) from JSONL or Parquet, checked with math-verify.

Formats (one record per problem):
- gsm8k: `question`, `answer` ending in "#### N" (N is the gold answer; thousands commas dropped);
- deepscaler: `problem`, `answer` (the gold answer, LaTeX or plain).
Each split is its own file (`train_data`, `test_data`); records are validated when the task is
built, so a bad file fails before any model is loaded.

Answer checking: math_verify.verify(parse(gold), parse(completion)) (gold first). math-verify
bounds its time with signal.alarm, which works only in the main thread: there we pass
`TIMEOUT_SECONDS`; in any other thread we pass no timeout (math-verify's documented mode for
threads) and the only bound is `MAX_COMPLETION_CHARS` (longer completions score 0).
"""
from __future__ import annotations

import json
import random
import threading
from pathlib import Path

from llm.tasks.base import Problem, Task, check_count, check_split

MAX_COMPLETION_CHARS = 20_000
TIMEOUT_SECONDS = 2
PROMPT_SUFFIX = "\nPlease reason step by step, and put your final answer within \\boxed{}."
FIELDS = {"gsm8k": ("question", "answer"), "deepscaler": ("problem", "answer")}


def load_records(path) -> list[dict]:
    """Records of a .jsonl/.json (JSON lines or one JSON array) or .parquet file."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"data file {str(path)!r} does not exist")
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq
        records = pq.read_table(p).to_pylist()
    elif suffix in (".jsonl", ".json"):
        text = p.read_text(encoding="utf-8")
        if suffix == ".json" and text.lstrip().startswith("["):
            records = json.loads(text)
        else:
            records = []
            for line_no, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        raise ValueError(f"data file {p}: line {line_no} is not valid JSON ({e.msg})") from None
    else:
        raise ValueError(f"data file {p} must end in .jsonl, .json or .parquet, got {suffix!r}")
    if not records:
        raise ValueError(f"data file {p} holds no records")
    return records


def gold_answer(fmt: str, record: dict, where: str) -> tuple[str, str]:
    """(question, gold answer) of one record, or ValueError naming the record and the field."""
    if not isinstance(record, dict):
        raise ValueError(f"{where} must be a JSON object, got {type(record).__name__}")
    question_field, answer_field = FIELDS[fmt]
    for name in (question_field, answer_field):
        if name not in record or record[name] is None:
            raise ValueError(f"{where} lacks the field {name!r} that {fmt} records need")
    question, answer = record[question_field], record[answer_field]
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


def _timeout() -> int | None:
    return TIMEOUT_SECONDS if threading.current_thread() is threading.main_thread() else None


def _parse(text: str) -> list:
    from math_verify import parse
    try:
        return parse(text, parsing_timeout=_timeout())
    except Exception:  # math-verify raises on pathological LaTeX; a malformed answer scores 0
        return []


def verify_answer(gold: str, completion: str) -> bool:
    """math-verify's equivalence of the completion's final answer with the gold answer."""
    from math_verify import verify
    if not isinstance(completion, str) or len(completion) > MAX_COMPLETION_CHARS:
        return False
    gold_parsed = _parse(gold if "$" in gold or "\\boxed" in gold else f"${gold}$")
    pred = _parse(completion)
    if not gold_parsed or not pred:
        return False
    try:
        return bool(verify(gold_parsed, pred, timeout_seconds=_timeout()))
    except Exception:
        return False


class MathData(Task):
    """GSM8K or DeepScaleR records from local files: `train_data` and/or `test_data`."""

    def __init__(self, name: str, train_data=None, test_data=None, prompt_suffix: str = PROMPT_SUFFIX):
        if name not in FIELDS:
            raise ValueError(f"math dataset format must be one of {sorted(FIELDS)}, got {name!r}")
        if train_data is None and test_data is None:
            raise ValueError(f"task {name!r} needs a data file: pass train_data and/or test_data (--data PATH)")
        self.name, self.prompt_suffix = name, prompt_suffix
        self.splits: dict[str, list[Problem]] = {}
        for split, path in (("train", train_data), ("test", test_data)):
            if path is not None:
                self.splits[split] = [self._problem(split, i, path, r) for i, r in enumerate(load_records(path))]

    def _problem(self, split: str, index: int, path, record) -> Problem:
        question, gold = gold_answer(self.name, record, f"data file {path}: record {index}")
        return Problem(id=f"{self.name}/{split}/{index}", prompt=question + self.prompt_suffix,
                       meta={"gold": gold})

    def size(self, split: str) -> int | None:
        check_split(split)
        return len(self.splits.get(split, []))

    def problems(self, split: str, n: int, seed: int) -> list[Problem]:
        check_split(split)
        check_count(n)
        if split not in self.splits:
            raise ValueError(f"task {self.name!r} has no {split} data file")
        pool = self.splits[split]
        if n > len(pool):
            raise ValueError(f"n={n} problems requested but the {split} data holds {len(pool)}")
        return random.Random(f"{self.name}/{split}/{seed}").sample(pool, n)

    def score(self, problem: Problem, completion: str) -> float:
        return 1.0 if verify_answer(problem.meta["gold"], completion) else 0.0

    def answer(self, problem: Problem, completion: str) -> str | None:
        if not isinstance(completion, str) or len(completion) > MAX_COMPLETION_CHARS:
            return None
        parsed = _parse(completion)
        return str(parsed[0]) if parsed else None
