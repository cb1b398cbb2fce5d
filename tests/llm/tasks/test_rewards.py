"""Reward conventions by name, each with the peer's own cases (inputs and expected outputs, ported;
never their code), and the reasoning-format rules: answers inside <think> never count."""

import json

import pytest

from escov.llm.tasks import get_task
from escov.llm.tasks.countdown import score
from escov.llm.tasks.reasoning_format import es_at_scale_format_score
from escov.llm.tasks.rewards import check_reward
from escov.theory.metrics import maj_at_k


def math_task(tmp_path, golds, **kwargs):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"problem": f"problem {i}", "answer": g}) + "\n" for i, g in enumerate(golds)))
    task = get_task("deepscaler", test_data=path, **kwargs)
    return task, {p.meta["gold"]: p for p in task.problems("test", len(golds), seed=0)}


# understanding-es, tests/test_rewards_and_metrics.py: its training reward (format_reward=0.1)
@pytest.mark.parametrize(
    "response, gold, expected",
    [
        (r"Reasoning. \boxed{18}", "18", 1.0),
        (r"Reasoning. \boxed{19}", "18", 0.1),
        ("The answer is 18.", "18", 0.0),
    ],
)
def test_paper_gsm8k_reward_understanding_es_cases(tmp_path, response, gold, expected):
    task, by_gold = math_task(tmp_path, [gold], reward="paper-gsm8k")
    assert task.score(by_gold[gold], response) == expected


# understanding-es, the same file: its evaluation's answer extraction (response -> extracted answer)
@pytest.mark.parametrize(
    "response, gold",
    [
        (r"Work. \boxed{1,024}", "1024"),
        ("Work.\n#### -3.5", "-3.5"),
        ("Therefore, the answer is 42.", "42"),
    ],
)
def test_escov_math_grading_understanding_es_extraction_cases(tmp_path, response, gold):
    task, by_gold = math_task(tmp_path, [gold, "7"])
    assert task.score(by_gold[gold], response) == 1.0
    assert task.score(by_gold["7"], response) == 0.0
    assert task.answer(by_gold[gold], response) == task.answer(by_gold[gold], rf"\boxed{{{gold}}}")


def test_no_numeric_result_has_no_answer(tmp_path):
    task, by_gold = math_task(tmp_path, ["7"])
    assert task.answer(by_gold["7"], "No numeric result") is None
    assert task.score(by_gold["7"], "No numeric result") == 0.0


def test_maj_votes_on_normalized_answers_understanding_es_rows(tmp_path):
    """understanding-es's mean@k rows, voted: gold 2 with answers 2, 3, 2.0, none: 2 and 2.0 are one
    vote, which wins; gold 5 with 4, 5, 4, 5: a tie of two answers, one correct, credits 1/2."""
    task, by_gold = math_task(tmp_path, ["2", "5"])
    rows = {
        "2": [r"\boxed{2}", r"\boxed{3}", r"\boxed{2.0}", "invalid"],
        "5": [r"\boxed{4}", r"\boxed{5}", r"\boxed{4}", r"\boxed{5}"],
    }
    expected = {"2": 1.0, "5": 0.5}
    for gold, responses in rows.items():
        p = by_gold[gold]
        votes = [task.vote(p, r) for r in responses]
        assert votes[0] is not None and len(set(votes[:3])) == 2  # 2 and 2.0 agree, 3 differs
        assert maj_at_k(votes, [task.is_correct(p, r) for r in responses], 4) == expected[gold]
    p = by_gold["2"]
    assert task.vote(p, r"\boxed{41}") == task.vote(p, r"\boxed{41.0000000000000}") == "41"
    assert task.vote(p, r"\boxed{0.75}") == task.vote(p, r"\boxed{\frac{3}{4}}") == "3/4"


# es-at-scale countdown_grader: 0.1 x format + answer, its documented rules applied by hand
# (prompt ends in "<think>", so the format is checked on "<think>" + completion)
NUMBERS, TARGET = [44, 19, 35], "98"


@pytest.mark.parametrize(
    "completion, fmt, expected",
    [
        (" 44+19=63, 63+35=98 </think>\n<answer>(44 + 19) + 35</answer>", 1.0, 1.1),  # full format, correct
        (" thinking </think> <answer>(44 + 19) + 35</answer>", 0.6, 1.06),  # no "\n": think 0.1 + answer 0.5
        (" </think>\n<answer>44 + 19 - 35</answer>", 1.0, 0.1),  # wrong value
        (" </think>\n<answer>(44 + 19) + 35 + 35</answer>", 1.0, 0.1),  # a number used twice
        (" </think>\n<answer>\n(44+19)+35</answer>", 1.0, 0.1),  # "\n" is outside its whitelist
        (" no tags at all", 0.0, 0.0),
        (" </think>\n<answer>(44 + 19) + 35</answer> trailing", 0.6, 1.06),  # text after </answer>
    ],
)
def test_es_at_scale_countdown_reward(completion, fmt, expected):
    assert es_at_scale_format_score(completion, starts_in_think=True) == pytest.approx(fmt)
    got = score(completion, NUMBERS, TARGET, style="paper", reward="es-at-scale-countdown")
    assert got == pytest.approx(expected)


def test_es_at_scale_non_integer_target_and_answers_inside_think():
    good = " </think>\n<answer>((15 / 61) * (99 - 17))</answer>"
    assert score(
        good, [15, 61, 17, 99], "20.163934426229506", style="paper", reward="es-at-scale-countdown"
    ) == pytest.approx(1.1)
    # an answer only inside <think> does not count (their grader would give it 1.06: a deliberate difference)
    inside = " <answer>(44 + 19) + 35</answer> </think>\n"
    assert score(inside, NUMBERS, TARGET, style="paper", reward="es-at-scale-countdown") == pytest.approx(0.06)


@pytest.mark.parametrize(
    "style, completion, expected",
    [
        ("paper", " </think>\n<answer>(44 + 19) + 35</answer>", 1.0),
        ("paper", " <answer>(44 + 19) + 35</answer>", 0.0),  # <think> never closed
        ("paper", " <answer>(44 + 19) + 35</answer></think>", 0.0),  # the answer is inside <think>
        ("instruct", "<think>x</think><answer>(44 + 19) + 35</answer>", 1.0),
        ("instruct", "(44 + 19) + 35", 0.0),  # untagged under a reasoning style
        ("instruct", "<think><answer>(44 + 19) + 35</answer>", 0.0),  # unterminated <think>
        ("plain", "(44 + 19) + 35", 1.0),  # the tiny model's format
        ("plain", "<think>(44 + 19) + 35", 0.0),
    ],
)
def test_answers_inside_think_never_count_for_countdown(style, completion, expected):
    assert score(completion, NUMBERS, TARGET, style=style) == expected


@pytest.mark.parametrize(
    "completion, expected",
    [
        (r"<think>so \boxed{41}</think> I do not know", 0.0),  # only inside <think> (TRL's reasoning rewards: 0)
        (r"<think>so \boxed{41}", 0.0),  # no </think>
        (r"<think>hmm</think> \boxed{41}", 1.0),
        (r"\boxed{41}", 1.0),
    ],
)
def test_answers_inside_think_never_count_for_math(tmp_path, completion, expected):
    task, by_gold = math_task(tmp_path, ["41"])
    assert task.score(by_gold["41"], completion) == expected


def test_conventions_are_checked_by_name_and_task(tmp_path):
    with pytest.raises(ValueError, match="reward must be one of"):
        get_task("countdown", reward="trl")
    with pytest.raises(ValueError, match="reward 'paper-gsm8k' is for the tasks"):
        get_task("countdown", reward="paper-gsm8k")
    with pytest.raises(ValueError, match="set it only with reward 'escov'"):
        math_task(tmp_path, ["1"], reward="paper-gsm8k", format_reward=0.2)
    task, by_gold = math_task(tmp_path, ["1"], format_reward=0.2)
    assert task.score(by_gold["1"], r"\boxed{2}") == 0.2 and task.score(by_gold["1"], "2") == 0.0


TASKS_OF = {  # the conventions' tasks as the module's docstring states them
    "escov": {"countdown", "countdown3", "arithmetic", "gsm8k", "deepscaler"},
    "es-at-scale-countdown": {"countdown", "countdown3"},
    "paper-gsm8k": {"gsm8k", "deepscaler"},
}


@pytest.mark.parametrize("reward", sorted(TASKS_OF))
@pytest.mark.parametrize("task", sorted(TASKS_OF["escov"]))
def test_each_convention_is_accepted_with_its_own_tasks_only(reward, task):
    if task in TASKS_OF[reward]:
        assert check_reward(reward, task) == reward
    else:
        with pytest.raises(ValueError, match=rf"^reward '{reward}' is for the tasks .*'{task}'"):
            check_reward(reward, task)


def test_format_reward_is_a_number_in_zero_to_one():
    assert check_reward("escov", "countdown", 0) == "escov" and check_reward("escov", "gsm8k", 0.99) == "escov"
    for bad in (1, 1.0, -0.01, True, "0.1", None):
        with pytest.raises(ValueError, match=r"^format_reward must lie in \[0, 1\), got"):
            check_reward("escov", "countdown", bad)
    with pytest.raises(ValueError, match="^reward must be one of"):
        check_reward("Escov", "countdown")
    with pytest.raises(ValueError, match="^format_reward is part of the reward convention 'paper-gsm8k'"):
        check_reward("paper-gsm8k", "gsm8k", 0.1)
