"""The problems a run is measured on, defined once from its settings.

    train_pool(cfg, task)  the run's training pool (train_pool problems of the train split, train_solutions)
    eval_set(cfg)      the run's task and its test problems: what every evaluation of the run reads
                       (llm/train.py before and after training, llm/curve.py along it), and what
                       `python -m escov.llm eval` with the run's flags and the Lemma 1 grid
                       (paper_checks/lemma_grid.py) evaluate
    split_set(cfg, split, n)  n problems of any split: the test problems (eval_set), the validation
                       problems settings are chosen on (SELECTION_SPLIT: scripts/measure_bases.py, the premise
                       control, `llm curve --split validation`), or training-split prompts of a curve
    heldout_set(cfg)   the forgetting check's task and problems (heldout_task, heldout_problems)
    probe_problems     the prompts of the Lemma 1 probe (probe_prompts)
    fit_to_data        problem counts left at their defaults lowered to what a data file holds

A run's test problems are the first `eval_problems` of its task's test split (the task built from the
run's settings: task, data files, split, fields, prompt style, reward) drawn with EVAL_PROBLEM_SEED,
whatever the run's seed: every run and seed of a task is evaluated on the same problems, so runs and
seeds are compared on equal footing (the sampling seeds still follow the run's seed). The held-out
problems are drawn the same way from the held-out task; the probe's prompts are another draw of the
test split (PROBE_PROBLEM_SEED). With `eval_solutions` = k (generated Countdown) the test and validation problems
are the first of the split's instances with exactly k distinct solutions, in the task's draw order
(llm/tasks/solution_blocks.py): instances the task's own draw (at least 3 solutions) never gives, so no earlier
measurement read them; the training pool, the training-split curves, the probe and the held-out task are unchanged.
With `eval_skip` = m the test problems start after the first m of that draw (the prompts runs that chose settings
evaluated at their end: the answer skips them).

Splits (llm/tasks/base.py split_of): a generated task holds 90% of its instances in train, 5% in validation and
5% in test. Every setting of a published answer (base recipe, step sizes, prompt counts, the premise's
positive control) is chosen on train or validation prompts; the test prompts are read by the answer's runs
alone (tests/test_selection_split.py checks the commands that choose settings against the answer's test ids;
earlier answers and quick looks read the task's own test draw, so the answer reads a block none drew,
eval_solutions: docs/answer-budget.md, "Prompts").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from escov.llm.tasks import get_task
from escov.llm.tasks.base import SPLITS

if TYPE_CHECKING:
    from escov.llm.config import TrainConfig
    from escov.llm.tasks.base import Problem, Task

EVAL_PROBLEM_SEED = 0
PROBE_PROBLEM_SEED = 1
# the training-split prompts of a curve read on train: another draw than any run's training pool of seed 0-9
# (llm/train.py draws it with the run's seed); a generated task's train split is large, so they rarely meet
TRAIN_CURVE_SEED = 1_000_003
SELECTION_SPLIT = "validation"  # the split settings are chosen on (a base, the premise's positive control)
CURVE_SPLITS = tuple(
    reversed(SPLITS)
)  # the splits a curve or a base measurement can read: all, test (the default) first


@dataclass(frozen=True)
class ProblemSet:
    """A task and the problems of it that are measured."""

    task: Task
    problems: list[Problem]

    @property
    def ids(self) -> list[str]:
        return [p.id for p in self.problems]


def _test_draw(task: Task, n: int) -> ProblemSet:
    return ProblemSet(task, task.problems("test", n, seed=EVAL_PROBLEM_SEED))


def train_pool(cfg: TrainConfig, task: Task) -> list[Problem]:
    """The run's training pool: cfg.train_pool problems of the train split drawn with the run's seed, or with
    train_solutions = k its instances with exactly k solutions (the answer matches them to its eval_solutions)."""
    if not cfg.train_solutions:
        return task.problems("train", cfg.train_pool, seed=cfg.seed)
    from escov.llm.tasks.solution_blocks import block_problems

    return block_problems(task, "train", cfg.train_pool, cfg.seed, cfg.train_solutions)


def _measured_draw(cfg: TrainConfig, task: Task, split: str, n: int) -> list[Problem]:
    """The first n problems of a measured split (test or validation) drawn with EVAL_PROBLEM_SEED: the task's own
    draw, or with eval_solutions = k its instances with exactly k solutions (llm/tasks/solution_blocks.py)."""
    if not cfg.eval_solutions:
        return task.problems(split, n, seed=EVAL_PROBLEM_SEED)
    from escov.llm.tasks.solution_blocks import block_problems

    return block_problems(task, split, n, EVAL_PROBLEM_SEED, cfg.eval_solutions)


def eval_set(cfg: TrainConfig, *, task: Task | None = None, n_problems: int | None = None) -> ProblemSet:
    """The run's task (built from cfg's settings, unless the run was handed a task object) and its test
    problems: n_problems (default: cfg.eval_problems) of the test split drawn with EVAL_PROBLEM_SEED (with
    eval_solutions: of its block, _measured_draw), after the first cfg.eval_skip of that draw."""
    n = cfg.eval_problems if n_problems is None else n_problems
    task = cfg.make_task() if task is None else task
    return ProblemSet(task, _measured_draw(cfg, task, "test", cfg.eval_skip + n)[cfg.eval_skip :])


def split_set(cfg: TrainConfig, split: str, n_problems: int | None = None) -> ProblemSet:
    """n_problems (default: cfg.eval_problems) problems of the run's task from one split: "test" is eval_set;
    "validation" the split's first n drawn with EVAL_PROBLEM_SEED (with eval_solutions: of its block); "train" a
    draw with TRAIN_CURVE_SEED (eval_solutions leaves it alone)."""
    if split not in CURVE_SPLITS:
        raise ValueError(f"split must be one of {', '.join(CURVE_SPLITS)}, got {split!r}")
    n = cfg.eval_problems if n_problems is None else n_problems
    if split == "test":
        return eval_set(cfg, n_problems=n)
    task = cfg.make_task()
    if split == "train":
        return ProblemSet(task, task.problems(split, n, seed=TRAIN_CURVE_SEED))
    return ProblemSet(task, _measured_draw(cfg, task, split, n))


def heldout_set(cfg: TrainConfig) -> ProblemSet | None:
    """The forgetting check: cfg.heldout_task (with its default settings) and its first heldout_problems
    test problems, drawn as the run's own; None when heldout_task is ""."""
    return _test_draw(get_task(cfg.heldout_task), cfg.heldout_problems) if cfg.heldout_task else None


def probe_problems(cfg: TrainConfig, task: Task) -> list[Problem]:
    """The fixed prompts of the Lemma 1 probe: probe_prompts test problems drawn with PROBE_PROBLEM_SEED."""
    return task.problems("test", cfg.probe_prompts, seed=PROBE_PROBLEM_SEED)


def _defaults() -> dict:
    from escov.llm.config import TrainConfig

    return TrainConfig.__dataclass_fields__


FITTED_COUNTS = (("train_pool", "train"), ("eval_problems", "test"), ("probe_prompts", "test"))  # setting, split


def fit_to_data(cfg: TrainConfig, task: Task) -> list[str]:
    """Problem counts left at their defaults that ask for more problems than the data holds are lowered to
    what it holds (a note for each, to print); a count given explicitly that does not fit is a ValueError
    naming its flag, as is a batch_size above the training pool."""
    notes = []
    for name, split in FITTED_COUNTS:
        held, wanted = task.size(split), getattr(cfg, name)
        if not held or held >= wanted or (name == "probe_prompts" and not cfg.probe):
            continue  # generated problems, an empty split (the task's own error names it), or enough
        if wanted != _defaults()[name].default:
            raise ValueError(
                f"{name} = {wanted} but the {split} data holds {held} records: give --{name} {held} or less"
            )
        setattr(cfg, name, held)
        notes.append(f"the {split} data holds {held} records: {name} = {held} (default {wanted}; --{name} sets it)")
    if cfg.batch_size > cfg.train_pool and cfg.batch_size == _defaults()["batch_size"].default:
        notes.append(
            f"the training pool holds {cfg.train_pool} prompts: batch_size = {cfg.train_pool} "
            f"(default {cfg.batch_size}; --batch_size sets it)"
        )
        cfg.batch_size = cfg.train_pool
    if cfg.batch_size > cfg.train_pool:
        raise ValueError(
            f"batch_size = {cfg.batch_size} but the training pool holds {cfg.train_pool} prompts: "
            f"give --batch_size {cfg.train_pool} or less"
        )
    return notes


def prompt_sources(cfg: TrainConfig, task: Task) -> dict[str, list]:
    """The prompts a run can use, by where they come from (llm/prompt_lengths.py checks them): every record
    of its data files; for generated problems the train pool, the evaluation and probe problems; the
    held-out task's evaluation problems."""
    from escov.llm.tasks.data_files import split_source

    sources: dict[str, list] = {}
    for split, used in (
        ("train", lambda: train_pool(cfg, task)),
        ("test", lambda: eval_set(cfg, task=task).problems + probe_problems(cfg, task)),
    ):
        size = task.size(split)
        if size == 0:
            continue
        name = split_source(cfg.data, cfg.test_data, cfg.data_split, split) or f"task {task.name} ({split} problems)"
        sources.setdefault(name, []).extend(task.problems(split, size, seed=0) if size is not None else used())
    if (heldout := heldout_set(cfg)) is not None:
        sources[f"held-out task {cfg.heldout_task}"] = heldout.problems
    return sources
