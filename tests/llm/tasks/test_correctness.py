"""What counts as correct with reward functions (llm/tasks/correctness.py): the chosen function and threshold decide
Pass@k, Maj@k, the solved share and per-step Pass@1, not the weighted total; the default is a built-in task's verifier,
else the first function; bad choices are refused by name; an evaluation warns of a reward that never applies and of
totals that pass without the chosen reward."""

from __future__ import annotations

import json
import sys

import pytest

from escov.llm.config import TrainConfig
from escov.llm.engines.hf import HFEngine
from escov.llm.evaluate import evaluate, evaluation_warnings
from escov.llm.rollout import score_completions
from escov.llm.tasks import get_task
from escov.llm.tasks.base import Problem

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REWARDS = '''
def accuracy(prompts, completions, answer, **kwargs):
    return [1.0 if c.strip() == a else 0.0 for c, a in zip(completions, answer)]

def formatted(prompts, completions, **kwargs):
    """TRL's usual format reward: 1.0 for any non-empty completion (here: every one)."""
    return [1.0 if c.strip() else 0.0 for c in completions]

def length_penalty(prompts, completions, answer, **kwargs):
    return [(1.0 if c.strip() == a else 0.0) - 0.01 * len(c) for c, a in zip(completions, answer)]

def never(prompts, completions, **kwargs):
    return [None] * len(completions)

def everything(prompts, completions, **kwargs):
    return [1.0] * len(completions)
'''
ROWS = [{"prompt": f"{i} + 1 =", "answer": str(i + 1)} for i in range(8)]


@pytest.fixture
def data(tmp_path, monkeypatch):
    (tmp_path / "my_rewards.py").write_text(REWARDS)
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("my_rewards", None)


def _scored(task, completions: list[list[str]]):
    """score_completions on hand-written [prompt][sample] completions of the first len(completions) test rows."""
    from escov.llm.engines.base import Completion

    problems = sorted(task.problems("test", len(ROWS), seed=0), key=lambda p: int(p.id.split("/")[-1]))
    rows = [
        [Completion(text=t, token_ids=[1], logprobs=[0.0], finish_reason="stop") for t in row] for row in completions
    ]
    return score_completions(task, problems[: len(rows)], rows, step=0, temperature=1.0)


def test_a_format_reward_beside_accuracy_leaves_correct_to_accuracy(data):
    both = ["my_rewards:accuracy", "my_rewards:formatted"]
    task = get_task("prompts", test_data="test.jsonl", reward_function=both)
    out = _scored(task, [["1", "7"], ["x", "2"]])  # rows 0 and 1: answers "1" and "2"
    assert out.rewards.tolist() == [[2.0, 1.0], [1.0, 2.0]]  # every total reaches 1 through the format reward
    assert out.correct.tolist() == [[True, False], [False, True]]  # accuracy alone decides (the first function)
    assert task.correctness.describe() == "accuracy >= 1"
    total = get_task("prompts", test_data="test.jsonl", reward_function=both, correct_reward="total")
    assert _scored(total, [["1", "7"], ["x", "2"]]).correct.all()  # the old rule, when asked for
    second = get_task("prompts", test_data="test.jsonl", reward_function=both, correct_reward="formatted")
    assert _scored(second, [["1", " "]]).correct.tolist() == [[True, False]]


def test_a_length_penalty_with_a_threshold_counts_exact_answers(data):
    task = get_task("prompts", test_data="test.jsonl", reward_function="my_rewards:length_penalty")
    out = _scored(task, [["1", "11"]])
    assert out.rewards[0].tolist() == pytest.approx([0.99, -0.02])
    assert not out.correct.any()  # >= 1 never holds for an exact answer with a penalty
    lowered = get_task(
        "prompts", test_data="test.jsonl", reward_function="my_rewards:length_penalty", correct_threshold=0.9
    )
    assert _scored(lowered, [["1", "11"]]).correct.tolist() == [[True, False]]


def test_a_none_of_the_chosen_reward_is_not_correct(data):
    task = get_task("prompts", test_data="test.jsonl", reward_function=["my_rewards:never", "my_rewards:everything"])
    out = _scored(task, [["1", "2"]])
    assert out.rewards.tolist() == [[1.0, 1.0]] and not out.correct.any()


def test_a_builtin_task_with_reward_functions_is_graded_by_its_verifier(data):
    from escov.llm.tasks.countdown import distinct_solutions

    task = get_task("countdown", reward_function="my_rewards:everything")
    problem = task.problems("test", 1, seed=0)[0]
    solution = distinct_solutions(problem.meta["numbers"], problem.meta["target"])[0]
    assert task.correctness.describe() == "verifier >= 1"
    assert task.score(problem, "no answer") == 1.0 and not task.is_correct(problem, "no answer")
    assert get_task("countdown").score(problem, solution) == 1.0 and task.is_correct(problem, solution)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"correct_reward": "accuracy"}, "correct_reward / correct_threshold choose among reward functions"),
        ({"correct_threshold": 0.5}, "correct_reward / correct_threshold choose among reward functions"),
    ],
)
def test_correct_settings_without_reward_functions_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        get_task("countdown", **kwargs)
    with pytest.raises(ValueError, match=message):
        TrainConfig(**kwargs)


def test_an_unknown_correct_reward_names_the_choices(data):
    with pytest.raises(ValueError) as err:
        get_task("prompts", test_data="test.jsonl", reward_function="my_rewards:accuracy", correct_reward="acc")
    assert str(err.value) == (
        "correct_reward 'acc' is none of the reward functions' names or 'total'; choose one of ['accuracy', 'total']"
    )
    with pytest.raises(ValueError, match="task 'prompts' has no verifier of its own"):
        get_task("prompts", test_data="test.jsonl", reward_function="my_rewards:accuracy", correct_reward="verifier")
    with pytest.raises(ValueError, match="correct_threshold must be a finite number, got nan"):
        TrainConfig(task="prompts", reward_function=("my_rewards:accuracy",), correct_threshold=float("nan"))


def test_the_choice_is_recorded_and_rebuilds_the_same_task(data):
    cfg = TrainConfig(
        task="prompts",
        test_data="test.jsonl",
        reward_function=("my_rewards:accuracy",),
        correct_reward="total",
        correct_threshold=0.5,
    )
    assert cfg.to_dict()["correct_reward"] == "total" and cfg.to_dict()["correct_threshold"] == 0.5
    again = TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again.make_task().correctness.describe() == "total >= 0.5"


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return HFEngine(tiny_model_dir)


def test_an_evaluation_follows_accuracy_and_warns_when_the_total_passes_alone(data, engine):
    both = ["my_rewards:accuracy", "my_rewards:formatted"]
    problems = [
        Problem(id=f"p{i}", prompt=r["prompt"], meta={"columns": {"answer": r["answer"]}}) for i, r in enumerate(ROWS)
    ]
    task = get_task("prompts", test_data="test.jsonl", reward_function=both)
    result = evaluate(engine, task, problems, n=4, ks=[1, 4], temperature=1.0, max_new_tokens=4, seed=3, progress=False)
    accuracy = result["rewards"]["accuracy"]["mean"]  # applies to every completion, 0 or 1
    assert result["pass_at_k"]["1"] == pytest.approx(accuracy)
    assert result["correct"] == "accuracy >= 1" and result["correct_threshold"] == 1.0
    nonempty = result["rewards"]["formatted"]["mean"]
    assert nonempty > accuracy  # the total reaches 1 on completions accuracy calls wrong: the rules differ here
    passes_alone = round(32 * nonempty) - round(32 * accuracy)  # formatted and not accurate (accurate is non-empty)
    assert result["total_reaches_threshold_not_correct"] == passes_alone
    if passes_alone:
        assert (
            f"{passes_alone} of 32 completions reach a weighted total >= 1 without being correct by accuracy >= 1"
            in evaluation_warnings(result)[0]
        )
    total = evaluate(
        engine,
        get_task("prompts", test_data="test.jsonl", reward_function=both, correct_reward="total"),
        problems,
        n=4,
        ks=[1, 4],
        temperature=1.0,
        max_new_tokens=4,
        seed=3,
        progress=False,
    )
    assert total["pass_at_k"]["1"] == pytest.approx(nonempty)  # every non-empty completion's total is >= 1
    assert total["total_reaches_threshold_not_correct"] == 0 and not evaluation_warnings(total)


def test_a_reward_that_never_applies_is_warned_by_llm_eval(data, tiny_model_dir, capsys):
    from escov.llm.cli import main

    assert (
        main(
            [
                "eval",
                "--model",
                str(tiny_model_dir),
                "--task",
                "prompts",
                "--test_data",
                "test.jsonl",
                "--reward_function",
                "my_rewards:never",
                "--reward_function",
                "my_rewards:accuracy",
                "--n",
                "2",
                "--k",
                "1",
                "--out",
                "ev",
                "--no-progress",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert (
        "warning: reward function 'never' applied to none of the 16 completions of the evaluation (it returned "
        "None or NaN for every one): it adds nothing to the total and it decides what is correct, so nothing is" in err
    )
    assert json.loads((data / "ev" / "eval.json").read_text())["pass_at_k"]["1"] == 0.0


def test_a_threshold_is_a_finite_number_and_not_a_bool():
    from escov.llm.tasks.correctness import check_threshold

    for bad in (True, float("nan"), float("inf"), "1"):
        with pytest.raises(ValueError, match=rf"^correct_threshold must be a finite number, got {bad!r}$"):
            check_threshold(bad)
    assert check_threshold(1) == 1.0 and isinstance(check_threshold(1), float)
