"""The split that settings are chosen on: generated tasks hold train (90%), validation (5%) and test (5%)
instances, the train split is the one the pretraining corpus always drew from, and no command that chooses a
setting (a base measurement, the step sweep, the pilot, the premise control) reads one of the answer's test
prompts."""

import hashlib
import importlib.util
from pathlib import Path

import pytest

from escov.llm.config import TrainConfig
from escov.llm.problem_sets import SELECTION_SPLIT, eval_set, split_set
from escov.llm.tasks import get_task
from escov.llm.tasks.base import split_of


def _digest(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


def test_train_is_the_tenth_rule_it_always_was_and_the_held_out_tenth_is_halved():
    keys = [f"{a},{b},{c}" for a in range(1, 30) for b in range(a, 30) for c in range(b, 30)]  # 4,495 number sets
    splits = [split_of(k) for k in keys]
    assert [s == "train" for s in splits] == [_digest(k) % 10 != 0 for k in keys]  # the corpus' split, unchanged
    held = [s for s in splits if s != "train"]
    share = held.count("validation") / len(held)
    assert 0.1 * len(keys) * 0.8 < len(held) < 0.1 * len(keys) * 1.2
    assert abs(share - 0.5) < 4 * (0.25 / len(held)) ** 0.5  # within 4 binomial standard deviations of a half


def test_generated_splits_never_share_a_number_set():
    task = get_task("countdown3")
    sets = {
        split: {tuple(sorted(p.meta["numbers"])) for p in task.problems(split, 24, seed=5)}
        for split in ("train", "validation", "test")
    }
    assert not sets["train"] & sets["validation"] and not sets["train"] & sets["test"]
    assert not sets["validation"] & sets["test"]
    arithmetic = get_task("arithmetic")
    questions = {split: {p.prompt for p in arithmetic.problems(split, 40, seed=0)} for split in ("validation", "test")}
    assert not questions["validation"] & questions["test"]


def test_a_data_file_task_has_no_validation_split_and_says_to_choose_on_train():
    sample = Path(__file__).parent / "data" / "countdown_sample.json"
    with pytest.raises(ValueError) as err:
        get_task("countdown", data=sample, data_split="first-3").problems("validation", 1, seed=0)
    assert str(err.value) == (
        "task 'countdown' reads its problems from data files, which give a train and a test "
        "split but no validation split: choose settings on the train split (--split train)"
    )


def test_a_generated_split_asked_for_more_problems_than_it_holds_says_how_many_it_has():
    task = get_task("countdown", min_numbers=2, max_numbers=2, max_number=4, max_target=8, min_solutions=1)
    with pytest.raises(
        ValueError,
        match=r"the test split of task countdown \(2-2 numbers, at least 1 solutions\) "
        r"holds only about \d+ distinct problems .* ask for \d+ or fewer",
    ):
        task.problems("test", 500, seed=0)
    with pytest.raises(
        ValueError, match=r"the validation split of task arithmetic holds only about \d+ distinct problems"
    ):
        get_task("arithmetic").problems("validation", 5000, seed=0)  # about 850 questions of 16,920 are validation


def _measure_bases():
    spec = importlib.util.spec_from_file_location(
        "measure_bases", Path(__file__).parents[1] / "scripts" / "measure_bases.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_command_that_chooses_a_setting_reads_the_answers_test_prompts():
    """Each command's prompts (the first 16 of what it reads: the draws differ only in length) lie in number sets
    outside the test split, by the split rule checked above, so none is one of the answer's test prompts."""
    from escov.paper_checks.reproduce import pilot, premise_control, step_sweep
    from escov.paper_checks.reproduce.budgets import BUDGETS

    answer = BUDGETS["answer"]
    answer_cfg = TrainConfig.from_dict(answer.common | {"task": answer.task, "model": "base", "out": "run"})
    test_ids = set(eval_set(answer_cfg, n_problems=16).ids)
    model = Path("base")

    def read(run: dict, split: str):
        return split_set(TrainConfig.from_dict(run | {"out": "run"}), split, 16).problems

    reads = {
        "measure_bases": _measure_bases().base_problems(answer.task, 16, SELECTION_SPLIT).problems,
        "sweep": read(
            next(iter(step_sweep.sweep_runs(model, 40, step_sweep.SETTINGS).values())), step_sweep.CURVE_SPLIT
        ),
        "pilot": read(next(iter(pilot.pilot_runs("answer", model, (200, 201)).values())), pilot.CURVE_SPLIT),
        "premise-control": read(
            next(iter(premise_control.control_runs(model, BUDGETS["answer"]).values())), SELECTION_SPLIT
        ),
    }
    for command, problems in reads.items():
        assert problems and all(
            p.meta["numbers"] and split_of(",".join(map(str, sorted(p.meta["numbers"])))) != "test" for p in problems
        ), command
        assert not {p.id for p in problems} & test_ids, command


@pytest.mark.parametrize("name", ["answer", "answer-grid_paths", "answer-subset_sum"])
def test_no_answer_evaluates_a_test_prompt_its_premise_controls_runs_evaluated(name):
    """A premise control's runs end with an evaluation on the first test prompts of the answer's draw
    (premise_control.SELECTION_EVAL), and so does the ES pilot's: the answer's runs evaluate test prompts past them
    (the first 16 of each run's: the draws differ only in length)."""
    from escov.paper_checks.reproduce import premise_control
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.plan import plan

    budget = BUDGETS[name]
    assert budget.premise_control

    def tested(runs: dict, n: int | None = None) -> set[str]:
        configs = [TrainConfig.from_dict(run | {"out": "run"}) for run in runs.values()]
        return {i for cfg in configs for i in eval_set(cfg, n_problems=n).ids}

    answer = tested(plan(budget, Path("base"), None), 16)
    controls = tested(premise_control.control_runs(Path("base"), budget))
    assert answer and controls and not answer & controls
