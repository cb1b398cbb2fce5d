"""The answer's fresh test prompts, checked against every earlier reader's prompts (issue 49).

Rule (recorded in docs/answer-budget.md, "Prompts"): the answer's test prompts are countdown3's test instances with
exactly FRESH_SOLUTIONS distinct solutions (the answer budget's `eval_solutions`; llm/tasks/solution_blocks.py),
ANSWER_PROMPTS of them in the task's draw order after the first `eval_skip`: those the runs that chose the answer's
settings (premise controls, ES pilot, GRPO variants' selection) evaluated at their end. Every other earlier reader drew
instances with at least 3 solutions.

READERS recomputes what each earlier reader read, by its own draw (Countdown.problems with that reader's task, split,
count and seed) under the split rule of its commit: today's (llm/tasks/base.py split_of: the held-out tenth halved
into validation and test, since e6e33f6) or the rule before it, re-implemented here (tenth_split: test = the whole
held-out tenth, blake2b digest % 10 == 0; its draw, tenth_draw, is Countdown's draw with that rule). Two prompts
are the same instance when their sorted numbers and target agree (an id keeps the numbers in drawn order).

    check(...)        {"rule", "count", "readers": {name: prompts read}, "overlap": 0 or the fresh ids read before,
                      "disjoint", "splits", "answer_read_before": {name: how many of the premise answer's 128
                      test prompts that reader had read}}
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from escov.llm.problem_sets import EVAL_PROBLEM_SEED, PROBE_PROBLEM_SEED, TRAIN_CURVE_SEED
from escov.llm.tasks.base import HELD_OUT_BUCKETS, Problem, check_not_exhausted, split_of
from escov.llm.tasks.countdown import Countdown, distinct_solutions, format_prompt, random_expression
from escov.llm.tasks.solution_blocks import block_problems
from escov.paper_checks.reproduce.premise_control import SELECTION_EVAL

FRESH_SOLUTIONS = 2  # the answer budget's eval_solutions
TODAY, TENTH = "halves", "tenth"  # the split rules: today's split_of, and the rule before e6e33f6
RULE = (
    "countdown3 test instances (split_of) with exactly 2 distinct solutions, eval_problems of them in the task's "
    "draw order after the first eval_skip (eval_solutions = 2, llm/tasks/solution_blocks.py); the skipped ones are "
    "the selection runs' own final evaluations, every other earlier reader drew at least 3 solutions"
)


def tenth_split(key: str) -> str:
    """The split rule before the validation split existed (e6e33f6^ llm/tasks/base.py): "test" when the key's 64-bit
    blake2b digest is 0 mod 10 (the whole held-out tenth), else "train"."""
    digest = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")
    return "test" if digest % HELD_OUT_BUCKETS == 0 else "train"


def tenth_draw(task: Countdown, split: str, n: int, seed: int, split_rule=tenth_split) -> list[Problem]:
    """Countdown.problems(split, n, seed) of a generated task under another split rule: the same stream
    (random.Random("countdown/SPLIT/SEED"), numbers drawn, kept when their sorted set falls in the split, a random
    full-use expression with an integer value in [1, max_target]), an instance taken once when it has at least
    min_solutions solutions. With split_rule = split_of it is Countdown.problems (tests/ check it)."""
    rng, out, seen, misses = random.Random(f"countdown/{split}/{seed}"), [], set(), 0
    while len(out) < n:
        count = rng.randint(task.min_numbers, task.max_numbers)
        numbers = [rng.randint(1, task.max_number) for _ in range(count)]
        if split_rule(",".join(map(str, sorted(numbers)))) != split:
            continue
        drawn = random_expression(numbers, rng)
        if drawn is None or drawn[1].denominator != 1 or not 1 <= drawn[1] <= task.max_target:
            continue
        target = int(drawn[1])
        key = (tuple(sorted(numbers)), target)
        if key in seen:
            misses += 1
            check_not_exhausted(misses, len(out), n, f"the {split} split under the tenth rule")
            continue
        misses = 0
        seen.add(key)
        solutions = len(distinct_solutions(numbers, target))
        if solutions >= task.min_solutions:
            meta = {"numbers": numbers, "target": target, "n_solutions": solutions}
            out.append(
                Problem(f"countdown/{','.join(map(str, numbers))}={target}", format_prompt(numbers, target), meta)
            )
    return out


@dataclass(frozen=True)
class Reader:
    """An earlier measurement's prompts: the first n of (task, split, seed) under a split rule."""

    source: str  # where it is recorded: commit, results folder, module
    task: str  # countdown3 (3 numbers) or countdown (3-4 numbers)
    split: str
    n: int
    seed: int
    rule: str  # TODAY or TENTH
    solutions: int = 0  # k: the instances with exactly k solutions (eval_solutions, solution_blocks.py); 0: the draw

    def problems(self) -> list[Problem]:
        """The reader's draw: the first n of its stream (a shorter draw of one stream is a prefix of a longer)."""
        stream = (self.task, self.split, self.seed, self.rule, self.solutions)
        if len(_DRAWN.get(stream, ())) < self.n:
            task = Countdown(min_numbers=3, max_numbers=3 if self.task == "countdown3" else 4)
            if self.solutions:
                _DRAWN[stream] = block_problems(task, self.split, self.n, self.seed, self.solutions)
            else:
                draw = task.problems if self.rule == TODAY else lambda *a, seed: tenth_draw(task, *a, seed)
                _DRAWN[stream] = draw(self.split, self.n, seed=self.seed)
        return _DRAWN[stream][: self.n]


_DRAWN: dict[tuple, list[Problem]] = {}  # the longest draw of each stream so far, in this process


PREMISE_ANSWER = "premise answer"
READERS = {
    PREMISE_ANSWER: Reader(
        "results/ (46fb25a, registered a9c2c36), 128 test prompts", "countdown3", "test", 128, EVAL_PROBLEM_SEED, TODAY
    ),
    "premise answer's Lemma 1 probe": Reader(
        "results/ runs' probe.json, probe_prompts 4", "countdown3", "test", 4, PROBE_PROBLEM_SEED, TODAY
    ),
    "quick look": Reader(
        "--budget small since e6e33f6, 64 test prompts", "countdown3", "test", 64, EVAL_PROBLEM_SEED, TODAY
    ),
    "paper-regime answer": Reader(
        "results/paper-regime/ (90f37fc, runs/answer3), 256 test prompts",
        "countdown3",
        "test",
        256,
        EVAL_PROBLEM_SEED,
        TENTH,
    ),
    "64-prompt answers": Reader(
        "runs/answer 6b8f28a, runs/answer2 9ceafa5, results/diffuse/ fd32650",
        "countdown3",
        "test",
        64,
        EVAL_PROBLEM_SEED,
        TENTH,
    ),
    "base choice": Reader(
        "scripts/measure_bases.py before e6e33f6: the first 128 test prompts",
        "countdown3",
        "test",
        128,
        EVAL_PROBLEM_SEED,
        TENTH,
    ),
    "quick look before the split": Reader(
        "--budget small 4e96714..e6e33f6, 64 test prompts", "countdown3", "test", 64, EVAL_PROBLEM_SEED, TENTH
    ),
    "Lemma 1 probe before the split": Reader(
        "probe_prompts 4, before e6e33f6", "countdown3", "test", 4, PROBE_PROBLEM_SEED, TENTH
    ),
    "premise control": Reader(
        "results/premise-2026-12-03/premise-control/ (premise_control.py), 128 validation prompts",
        "countdown3",
        "validation",
        128,
        EVAL_PROBLEM_SEED,
        TODAY,
    ),
    "GRPO-variants selection and ES pilot": Reader(
        "grpo_variants.py, es_pilot.py: the control's validation prompts",
        "countdown3",
        "validation",
        128,
        EVAL_PROBLEM_SEED,
        TODAY,
    ),
    "selection runs' own final evaluations": Reader(
        "premise controls on the block (results/premise-control-block*/), the ES pilot (results/es-pilot/), the "
        "GRPO variants' selection: each run's eval.json, premise_control.SELECTION_EVAL",
        "countdown3",
        "test",
        SELECTION_EVAL["eval_problems"],
        EVAL_PROBLEM_SEED,
        TODAY,
        FRESH_SOLUTIONS,
    ),
    "step sweep and pilot": Reader(
        "results/step-sweep/, results/pilot/: 64 training-split prompts",
        "countdown3",
        "train",
        64,
        TRAIN_CURVE_SEED,
        TODAY,
    ),
    "countdown budgets before the split": Reader(
        "full (200) and the first small (64) test prompts, base choice's 128",
        "countdown",
        "test",
        200,
        EVAL_PROBLEM_SEED,
        TENTH,
    ),
    "countdown budgets": Reader(
        "full since e6e33f6, 200 test prompts", "countdown", "test", 200, EVAL_PROBLEM_SEED, TODAY
    ),
}


def instance(p: Problem) -> tuple:
    """What makes two prompts the same instance: the sorted numbers and the target."""
    return tuple(sorted(p.meta["numbers"])), p.meta["target"]


def check(fresh: list[Problem], readers: dict[str, Reader] | None = None, progress=lambda name: None) -> dict:
    """The fresh prompts against every reader's (module docstring): overlap by instance, and each fresh prompt in
    the test split (neither validation nor train) with exactly FRESH_SOLUTIONS solutions."""
    readers = READERS if readers is None else readers
    read: dict[str, list[Problem]] = {}
    for name, reader in readers.items():
        progress(name)
        read[name] = reader.problems()
    earlier = {instance(p) for problems in read.values() for p in problems}
    overlap = [p.id for p in fresh if instance(p) in earlier]
    splits = sorted({split_of(",".join(map(str, instance(p)[0]))) for p in fresh})
    solutions = sorted({len(distinct_solutions(p.meta["numbers"], p.meta["target"])) for p in fresh})
    record = {
        "rule": RULE,
        "count": len(fresh),
        "readers": {name: len(problems) for name, problems in read.items()},
        "sources": {name: reader.source for name, reader in readers.items()},
        "overlap": overlap or 0,
        "splits": splits,
        "solutions": solutions,
        "disjoint": not overlap and splits == ["test"] and solutions == [FRESH_SOLUTIONS],
    }
    if PREMISE_ANSWER in read:
        answer = {instance(p) for p in read[PREMISE_ANSWER]}
        record["answer_read_before"] = {
            name: len(answer & {instance(p) for p in problems}) for name, problems in read.items()
        }
    return record


def fresh_record(budget, progress=lambda name: None) -> dict:
    """check() of the budget's test prompts (llm/problem_sets.py eval_set with the budget's settings)."""
    from escov.llm.config import TrainConfig
    from escov.llm.problem_sets import eval_set

    cfg = TrainConfig.from_dict(budget.common | {"task": budget.task}, source="budget settings")
    return check(eval_set(cfg).problems, progress=progress)
