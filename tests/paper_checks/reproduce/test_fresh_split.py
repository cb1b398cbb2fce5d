"""The answer's fresh test prompts against every earlier reader's (paper_checks/reproduce/fresh_split.py): the old
split rule against its definition, the readers' draws against the ids results/ recorded, the check on a planted
overlap, and (slow) the answer's 128 prompts against every reader."""

import hashlib
import re
from pathlib import Path

import pytest

from escov.llm.tasks.base import split_of
from escov.llm.tasks.countdown import Countdown
from escov.paper_checks.reproduce.budgets import BUDGETS
from escov.paper_checks.reproduce.fresh_split import TODAY, Reader, check, fresh_record, tenth_draw, tenth_split

ROOT = Path(__file__).resolve().parents[3]


def _ids(path: Path) -> set[str]:
    return set(re.findall(r'"(countdown/[0-9,]+=[0-9]+)"', path.read_text(encoding="utf-8")))


def test_the_tenth_rule_holds_out_one_key_in_ten_as_test_and_is_todays_held_out_tenth():
    keys = [f"{a},{b},{c}" for a in range(1, 25) for b in range(a, 25) for c in range(b, 25)]
    digests = [int.from_bytes(hashlib.blake2b(k.encode(), digest_size=8).digest(), "little") for k in keys]
    assert [tenth_split(k) == "test" for k in keys] == [d % 10 == 0 for d in digests]
    assert [tenth_split(k) == "test" for k in keys] == [split_of(k) != "train" for k in keys]


def test_the_re_implemented_draw_under_todays_rule_is_countdowns_own_draw():
    for task, split, n in ((Countdown(3, 3), "test", 12), (Countdown(3, 4), "validation", 6)):
        mine = tenth_draw(task, split, n, 0, split_rule=split_of)
        assert [p.id for p in mine] == [p.id for p in task.problems(split, n, seed=0)]
    old = tenth_draw(Countdown(3, 3), "test", 12, 0)
    assert {tenth_split(",".join(map(str, sorted(p.meta["numbers"])))) for p in old} == {"test"}
    assert {split_of(",".join(map(str, sorted(p.meta["numbers"])))) for p in old} == {"test", "validation"}


def test_the_re_implemented_draw_gives_countdowns_problems_whole_and_refuses_an_exhausted_split():
    """Under today's rule the re-implemented draw gives Countdown's own problems field for field (prompt and meta too),
    here with targets up to 10 so that the largest target occurs; a split with fewer problems than asked is refused
    as Countdown refuses it, naming the rule and the problems it holds (every one with a solution, by brute force)."""
    from itertools import combinations_with_replacement

    from escov.llm.tasks.base import MAX_DRAWS_WITHOUT_NEW
    from escov.llm.tasks.countdown import distinct_solutions

    task = Countdown(3, 3, max_number=12, max_target=10, min_solutions=1)
    mine, theirs = tenth_draw(task, "test", 40, 0, split_rule=split_of), task.problems("test", 40, seed=0)
    assert [(p.id, p.prompt, p.meta) for p in mine] == [(p.id, p.prompt, p.meta) for p in theirs]
    assert max(p.meta["target"] for p in mine) == 10
    small = Countdown(2, 2, max_number=3, max_target=6, min_solutions=1)
    held = sum(
        1
        for numbers in combinations_with_replacement(range(1, 4), 2)
        if tenth_split(",".join(map(str, numbers))) == "train"
        for target in range(1, 7)
        if distinct_solutions(list(numbers), target)
    )
    with pytest.raises(ValueError) as err:
        tenth_draw(small, "train", 100, 0)
    assert str(err.value) == (
        f"the train split under the tenth rule holds only about {held} distinct problems ({MAX_DRAWS_WITHOUT_NEW} "
        f"draws in a row gave none new), 100 were requested: ask for {held} or fewer"
    )


def test_the_check_finds_a_reader_that_drew_a_fresh_instance_in_another_order():
    reader = Reader("planted", "countdown3", "test", 3, 7, TODAY)
    drawn = reader.problems()
    moved = type(drawn[1])(  # the reader's second instance with its numbers in another order
        "countdown/moved", drawn[1].prompt, drawn[1].meta | {"numbers": list(reversed(drawn[1].meta["numbers"]))}
    )
    record = check([moved], {"planted": reader})
    assert record["overlap"] == ["countdown/moved"] and record["disjoint"] is False
    assert record["readers"] == {"planted": 3} and record["solutions"] != [2]
    fresh_validation = Countdown(3, 3, min_solutions=2).problems("validation", 40, seed=0)
    two = [p for p in fresh_validation if p.meta["n_solutions"] == 2][:2]
    record = check(two, {"planted": reader})
    assert record["overlap"] == 0 and record["splits"] == ["validation"] and record["disjoint"] is False


def test_only_the_answer_reads_the_fresh_block():
    assert BUDGETS["answer"].common["eval_solutions"] == 2
    assert not BUDGETS["small"].common.get("eval_solutions")  # the quick look stays on the task's own draw
    assert not BUDGETS["answer-paper-regime"].common.get("eval_solutions")


@pytest.mark.slow
def test_the_answers_fresh_prompts_are_disjoint_from_every_earlier_reader():
    """About 4 minutes on a loaded 2-core machine: the old countdown budgets' 4-number draws dominate."""
    record = fresh_record(BUDGETS["answer"])
    assert record["count"] == 128 and record["overlap"] == 0 and record["disjoint"] is True
    assert record["splits"] == ["test"] and record["solutions"] == [2]
    assert record["readers"]["paper-regime answer"] == 256 and record["readers"]["premise answer"] == 128
    assert record["answer_read_before"]["quick look"] == 64  # the quick look's 64 are the answer's first 64
    # the recomputed draws hold what results/ recorded: the answer's lost test prompts, the control's prompts
    from escov.paper_checks.reproduce.fresh_split import READERS

    answer = {p.id for p in READERS["premise answer"].problems()}
    control = {p.id for p in READERS["premise control"].problems()}
    assert _ids(ROOT / "results" / "report.json") <= answer
    assert _ids(ROOT / "results" / "premise-control" / "control.json") <= control


def test_the_reproduction_hands_the_check_to_the_premise_record_and_its_section(tmp_path):
    import shutil

    from escov.llm.rundir import read_json, write_json
    from escov.paper_checks.evidence import Evidence
    from escov.paper_checks.premise_record import premise_record, render
    from escov.paper_checks.reproduce.reproduction import FRESH_SPLIT, PREMISE_DIR, _with_fresh_split

    (tmp_path / PREMISE_DIR).mkdir()
    shutil.copy(ROOT / "results" / "premise-control" / "control.json", tmp_path / PREMISE_DIR / "control.json")
    assert "test_split_fresh" not in _with_fresh_split(tmp_path, BUDGETS["answer"])
    checked = {"rule": "r", "count": 5, "readers": {"a": 3, "b": 4}, "overlap": ["countdown/1,2,3=6"]}
    write_json(tmp_path / FRESH_SPLIT, checked | {"disjoint": False, "splits": ["test"]})
    control = _with_fresh_split(tmp_path, BUDGETS["answer"])
    assert control["test_split_fresh"] == read_json(tmp_path / FRESH_SPLIT)
    assert _with_fresh_split(tmp_path, BUDGETS["small"]) is None  # no premise control, no record
    record = premise_record(Evidence(runs=[]), control)
    assert record["test_split_fresh"] == checked | {"disjoint": False}
    assert "- Test prompts: 5, r; disjoint from 2 earlier readers' prompts: **no**." in render(record)


def test_the_check_is_a_job_of_the_answers_reproduction_only_until_its_record_is_written(tmp_path):
    from escov.paper_checks.reproduce.reproduction import FRESH_SPLIT, _fresh_split, reproduction_jobs

    def checks(budget: str) -> list:
        return [
            j for j in reproduction_jobs(BUDGETS[budget], tmp_path, None, progress=False) if j.stage == "fresh split"
        ]

    (job,) = checks("answer")
    assert job.make() == (_fresh_split, (tmp_path / FRESH_SPLIT, BUDGETS["answer"])) and job.after == ()
    assert checks("small") == [] and checks("answer-paper-regime") == []
    (tmp_path / FRESH_SPLIT).write_text("{}", encoding="utf-8")
    assert checks("answer") == []


def test_the_selection_runs_final_evaluations_are_a_reader_and_the_answer_skips_them(tmp_path):
    """What the premise control's and the ES pilot's runs evaluate at their end, recomputed from their own run
    settings (not from the reader's fields), is the reader's draw; the answer's test prompts (eval_skip) start after
    it, and without the skip the check would find them."""
    from escov.llm.config import TrainConfig
    from escov.llm.problem_sets import eval_set
    from escov.paper_checks.reproduce.es_pilot import SETTINGS, pilot_runs
    from escov.paper_checks.reproduce.fresh_split import READERS
    from escov.paper_checks.reproduce.premise_control import control_runs

    answer = BUDGETS["answer"]
    reader = READERS["selection runs' own final evaluations"]
    read = [p.id for p in reader.problems()]
    assert len(read) == 8
    selection = list(control_runs(tmp_path, answer).values()) + list(
        pilot_runs(tmp_path, answer, settings=tuple(SETTINGS)).values()
    )
    for cfg in selection:
        assert eval_set(TrainConfig.from_dict(cfg | {"task": answer.task}, source="run")).ids == read
    fresh = TrainConfig.from_dict(answer.common | {"task": answer.task, "eval_problems": 16}, source="budget")
    assert answer.common["eval_skip"] == 8 and not set(eval_set(fresh).ids) & set(read)
    unskipped = TrainConfig.from_dict(fresh.to_dict() | {"eval_skip": 0}, source="budget")
    record = check(eval_set(unskipped).problems, {"selection": reader})
    assert record["overlap"] == read and record["disjoint"] is False
    assert check(eval_set(fresh).problems, {"selection": reader})["disjoint"] is True


def _problem(pid: str, numbers: list[int], target: int):
    from escov.llm.tasks.base import Problem

    return Problem(pid, "", {"numbers": numbers, "target": target})


class _Fixed:
    """A reader whose prompts are given (the check reads only `problems()` and `source`)."""

    def __init__(self, problems, source="planted"):
        self._problems, self.source = problems, source

    def problems(self):
        return self._problems


def test_an_instance_is_its_numbers_and_target_and_the_answers_prompts_read_before_are_counted():
    """Two prompts are the same instance only when both their sorted numbers and their target agree; the count of
    the premise answer's prompts each reader read is the size of the intersection, not the reader's whole draw; the
    fresh prompts must have exactly FRESH_SOLUTIONS solutions to be disjoint."""
    from escov.llm.tasks.countdown import distinct_solutions
    from escov.paper_checks.reproduce.fresh_split import FRESH_SOLUTIONS, PREMISE_ANSWER

    fresh = Countdown(3, 3, min_solutions=1).problems("test", 60, seed=0)  # 1, 2 and 6 solutions
    two = [p for p in fresh if len(distinct_solutions(p.meta["numbers"], p.meta["target"])) == FRESH_SOLUTIONS][:2]
    other = [p for p in fresh if len(distinct_solutions(p.meta["numbers"], p.meta["target"])) != FRESH_SOLUTIONS][:1]
    assert len(two) == 2 and other
    a = two[0]
    same_numbers = _problem("x", list(reversed(a.meta["numbers"])), a.meta["target"] + 1)  # another target
    readers = {
        PREMISE_ANSWER: _Fixed([_problem("r1", list(reversed(a.meta["numbers"])), a.meta["target"]), other[0]]),
        "near": _Fixed([same_numbers, other[0], _problem("y", [1, 2, 3], 6)]),
    }
    record = check(two, readers)
    assert record["overlap"] == [a.id] and record["answer_read_before"] == {PREMISE_ANSWER: 2, "near": 1}
    assert check(two, {"near": readers["near"]})["disjoint"] is True
    far = {"far": _Fixed([_problem("y", [1, 2, 3], 6)])}  # read nothing of these
    assert check(two, far)["disjoint"] is True
    lone = check(two + other, far)  # a prompt of another solution count, read by no one
    assert lone["overlap"] == 0 and lone["splits"] == ["test"] and lone["disjoint"] is False


@pytest.mark.parametrize("task, numbers", [("countdown3", (3, 3)), ("countdown", (3, 4))])
def test_a_readers_draw_is_its_tasks_own_under_its_rule_and_a_shorter_one_its_prefix(task, numbers):
    from escov.paper_checks.reproduce.fresh_split import TENTH

    countdown = Countdown(*numbers)
    today = Reader("r", task, "test", 6, 11, TODAY).problems()
    assert [p.id for p in today] == [p.id for p in countdown.problems("test", 6, seed=11)]
    assert {len(p.meta["numbers"]) for p in Reader("r", task, "train", 40, 3, TODAY).problems()} == set(
        range(numbers[0], numbers[1] + 1)
    )
    old = Reader("r", task, "test", 5, 12, TENTH).problems()
    assert [p.id for p in old] == [p.id for p in tenth_draw(countdown, "test", 5, 12)]
    assert [p.id for p in Reader("r", task, "test", 3, 11, TODAY).problems()] == [p.id for p in today[:3]]
    longer = Reader("r", task, "test", 9, 11, TODAY).problems()
    assert [p.id for p in longer[:6]] == [p.id for p in today] and len(longer) == 9


def test_the_whole_record_of_the_check_and_its_default_readers(monkeypatch):
    """Every field of check()'s record on two fresh prompts and two readers, written out by hand; without readers
    given, the check reads fresh_split.READERS, each announced to `progress` by name in order."""
    from escov.paper_checks.reproduce import fresh_split

    fresh = Countdown(3, 3, min_solutions=2).problems("test", 60, seed=0)
    two = [p for p in fresh if p.meta["n_solutions"] == 2][:2]
    readers = {
        "a": _Fixed([_problem("r", list(reversed(two[1].meta["numbers"])), two[1].meta["target"])], source="here"),
        "b": _Fixed([_problem("s", [1, 2, 3], 6), _problem("t", [1, 2, 4], 7)], source="there"),
    }
    monkeypatch.setattr(fresh_split, "READERS", readers)
    announced = []
    record = check(two, progress=announced.append)
    assert announced == ["a", "b"]
    assert record == {
        "rule": fresh_split.RULE,
        "count": 2,
        "readers": {"a": 1, "b": 2},
        "sources": {"a": "here", "b": "there"},
        "overlap": [two[1].id],
        "splits": ["test"],
        "solutions": [2],
        "disjoint": False,
    }


def test_the_answers_record_checks_its_own_test_prompts(monkeypatch):
    """fresh_record draws the budget's test prompts as its runs do (eval_set of its settings): with the selection
    runs' final evaluations as the only reader, the answer's prompts (after its eval_skip) are disjoint from them, and
    the same budget without its skip is not."""
    from dataclasses import replace

    from escov.paper_checks.reproduce import fresh_split

    monkeypatch.setattr(
        fresh_split, "READERS", {"selection": fresh_split.READERS["selection runs' own final evaluations"]}
    )
    answer = BUDGETS["answer"]
    announced = []
    record = fresh_record(answer, progress=announced.append)
    assert announced == ["selection"]
    assert record["count"] == answer.common["eval_problems"] and record["disjoint"] is True
    assert record["readers"] == {"selection": 8} and record["splits"] == ["test"] and record["solutions"] == [2]
    unskipped = fresh_record(replace(answer, common=answer.common | {"eval_skip": 0}))
    assert unskipped["overlap"] != 0 and len(unskipped["overlap"]) == 8 and unskipped["disjoint"] is False
