"""evaluate()'s record beyond its metrics (tests/llm/test_evaluate.py): an evaluation in several engine calls, each
from its documented call seed, with every sampling setting handed to the engine; the reward's named parts, the
step and the token ids handed to the reward; the problem handed to answer and vote; the progress bar; a reward that
is not finite; and the refusals of bad sizes, each message whole."""

from __future__ import annotations

import re

import numpy as np
import pytest

from escov.llm.engines.hf import HFEngine
from escov.llm.evaluate import SAMPLES_PER_CALL, call_seed, evaluate
from escov.llm.tasks import get_task
from escov.llm.tasks.base import Problem, RewardScores, Task
from escov.theory.errors import NonFiniteError
from escov.theory.metrics import maj_at_k

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class PartsTask(Task):
    """A toy task on Countdown prompts whose reward has two named parts, as reward functions give: "digit" (1 when
    the completion starts with 1, 2 or 3) and "even" (0.5 for a completion whose first token id is even, NaN: does
    not apply, otherwise); the total is their sum with NaN read as 0. Its answers and votes name their problem, and it
    keeps what score_batch was handed."""

    name = "parts"

    def __init__(self, nan_at: int | None = None):
        self.nan_at, self.handed = nan_at, []

    def problems(self, split, n, seed):
        return get_task("countdown").problems(split, n, seed)

    def score(self, problem: Problem, completion: str) -> float:
        return 1.0 if completion[:1] in ("1", "2", "3") else 0.0

    def score_batch(self, problems, completions, completion_ids=None, step: int = 0) -> RewardScores:
        self.handed.append({"ids": completion_ids, "step": step, "count": len(completions)})
        digit = np.array([self.score(p, c) for p, c in zip(problems, completions)])
        even = np.array([0.5 if ids and ids[0] % 2 == 0 else np.nan for ids in completion_ids])
        total = digit + np.nan_to_num(even)
        if self.nan_at is not None:
            total[self.nan_at] = np.nan
        return RewardScores(total=total, parts={"digit": digit, "even": even})

    @property
    def reward_names(self):
        return ["digit", "even"]

    def answer(self, problem, completion):
        return f"{problem.id}:{completion[:1]}" if completion else None

    def vote(self, problem, completion):
        return f"{problem.id}:{completion[:2]}" if completion else None


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return HFEngine(tiny_model_dir)


N = SAMPLES_PER_CALL // 2 + 1  # one problem per engine call: per_call = max(1, SAMPLES_PER_CALL // N) = 1


def test_an_evaluation_in_several_calls_samples_each_from_its_call_seed_with_every_setting(engine):
    """N above SAMPLES_PER_CALL / 2: one problem per engine call, each call seeded call_seed(seed, index), with the
    temperature, top_p and length given; the counts, the kept first completions, the reward parts (over the
    completions each applies to) and the Maj@k votes (k < N: subsets drawn from the evaluation's seed) are those of
    the completions regenerated here call by call."""
    task, problems, seed = PartsTask(), PartsTask().problems("test", 3, seed=0), 7
    got = evaluate(
        engine,
        task,
        problems,
        n=N,
        ks=[1, 2, N],
        temperature=0.9,
        max_new_tokens=5,
        seed=seed,
        top_p=0.8,
        progress=False,
        keep=3,
        step=11,
    )
    rows = [
        engine.generate([p.prompt], n=N, temperature=0.9, max_new_tokens=5, seed=call_seed(seed, index), top_p=0.8)[0]
        for index, p in enumerate(problems)
    ]
    digit = np.array([[task.score(p, c.text) for c in row] for p, row in zip(problems, rows)])
    even = np.array([[0.5 if c.token_ids and c.token_ids[0] % 2 == 0 else np.nan for c in row] for row in rows])
    assert [r["correct"] for r in got["per_problem"]] == [
        int(np.sum(d + np.nan_to_num(e) >= 1)) for d, e in zip(digit, even)
    ]
    assert [r["id"] for r in got["per_problem"]] == [p.id for p in problems]
    assert set(got["per_problem"][0]) == {
        "id",
        "correct",
        "distinct_correct_answers",
        "distinct_correct_texts",
        "mean_token_entropy",
    }
    # each prompt's entropy from its own completions' sampled-token log-probs; the pooled value weights prompts by
    # their tokens
    own = [[-lp for c in row for lp in c.logprobs] for row in rows]
    assert [r["mean_token_entropy"] for r in got["per_problem"]] == pytest.approx([np.mean(h) for h in own])
    assert got["mean_token_entropy"] == pytest.approx(np.mean([h for row in own for h in row]))
    assert got["kept"] == [
        {
            "prompt": p.prompt,
            "completion": row[0].text,
            "reward": float(task.score(p, row[0].text) + np.nan_to_num(e[0])),
        }
        for p, row, e in zip(problems, rows, even)
    ]
    assert 0 < np.nanmean(even) and np.isnan(even).any()  # the "even" part applies to some completions, not all
    assert got["rewards"] == {
        "digit": {"mean": pytest.approx(digit.mean()), "std": pytest.approx(digit.std()), "applied": 1.0},
        "even": {"mean": 0.5, "std": 0.0, "applied": pytest.approx(np.mean(~np.isnan(even)))},
    }
    correct = digit + np.nan_to_num(even) >= 1
    votes = [[task.vote(p, c.text) for c in row] for p, row in zip(problems, rows)]
    assert got["maj_at_k"]["2"] == pytest.approx(
        np.mean([maj_at_k(v, c, 2, seed=seed) for v, c in zip(votes, correct)])
    )
    # the votes, not the answers, are counted: at k = N they give another Maj@N here (0.5 against 1.0)
    answers = [[task.answer(p, c.text) for c in row] for p, row in zip(problems, rows)]
    by_votes, by_answers = (
        np.mean([maj_at_k(x, c, N, seed=seed) for x, c in zip(xs, correct)]) for xs in (votes, answers)
    )
    assert got["maj_at_k"][str(N)] == pytest.approx(by_votes) != pytest.approx(by_answers)
    assert (got["top_p"], got["seed"], got["temperature"], got["max_new_tokens"]) == (0.8, 7, 0.9, 5)
    # the reward saw every completion in one batch, with its token ids, at the step given
    assert task.handed == [{"ids": [c.token_ids for row in rows for c in row], "step": 11, "count": 3 * N}]


def test_by_default_an_evaluation_keeps_no_completion_tells_step_0_and_shows_its_progress(engine, capsys):
    """Defaults: no "kept" record, the reward told step 0, and a progress bar on stderr counting prompts."""
    task = PartsTask()
    got = evaluate(
        engine, task, task.problems("test", 2, seed=0), n=2, ks=[1], temperature=1.0, max_new_tokens=3, seed=0
    )
    assert "kept" not in got and task.handed[0]["step"] == 0
    bar = capsys.readouterr().err.replace("\r", "\n").splitlines()[-1]
    assert bar.startswith("eval parts: 100%") and "2/2" in bar, bar
    assert re.search(r"(?<![A-Za-z])prompt/s|s/prompt(?![A-Za-z])", bar), bar  # counted in prompts
    evaluate(
        engine,
        task,
        task.problems("test", 2, seed=0),
        n=2,
        ks=[1],
        temperature=1.0,
        max_new_tokens=3,
        seed=0,
        progress=False,
    )
    assert capsys.readouterr().err == ""


def test_a_reward_that_is_not_finite_stops_the_evaluation_naming_its_value_step_and_task(engine):
    task = PartsTask(nan_at=3)
    with pytest.raises(NonFiniteError, match=r"^step 4: reward is not finite \(nan\) for task parts \(evaluation\)$"):
        evaluate(
            engine,
            task,
            task.problems("test", 2, seed=0),
            n=2,
            ks=[1],
            temperature=1.0,
            max_new_tokens=3,
            seed=0,
            progress=False,
            step=4,
        )


def test_one_sample_per_problem_is_an_evaluation():
    """n = 1 with k = 1 is allowed (the smallest sizes); the refusals name the size and the value given."""
    from escov.llm.evaluate import check_eval_args

    assert check_eval_args(1, [1]) == [1] and check_eval_args(4, (4, 1, 4)) == [1, 4]
    for n in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match=rf"^n \(samples per problem\) must be an integer >= 1, got {n!r}$"):
            check_eval_args(n, [1])
    with pytest.raises(ValueError, match=r"^n \(samples per problem\) must be >= the largest k: n=2 < k=3$"):
        check_eval_args(2, [1, 3])
    for ks in ([], [0], [True], [1.0]):
        with pytest.raises(
            ValueError,
            match=rf"^ks must be a non-empty list of integers >= 1, got {ks!r}$".replace("[", r"\[").replace(
                "]", r"\]"
            ),
        ):
            check_eval_args(2, ks)


def test_no_problems_is_refused(engine):
    with pytest.raises(ValueError, match="^problems must be a non-empty list$"):
        evaluate(engine, PartsTask(), [], n=2, ks=[1], temperature=1.0, max_new_tokens=3, seed=0, progress=False)


def test_the_record_names_its_settings_and_reads_truncation_and_distinct_counts_as_stated(engine):
    """The record's settings as given; the truncated share is that of completions that stopped at the length limit
    (finish_reason "length"); with no prompt solved the distinct counts are 0, not a mean over nothing; the seconds
    are a float rounded to the hundredth."""
    from escov.llm.evaluate import CORRECT_THRESHOLD

    class NeverTask(PartsTask):
        def score(self, problem, completion):
            return 0.0

    task, problems = NeverTask(), NeverTask().problems("test", 3, seed=0)
    got = evaluate(engine, task, problems, n=4, ks=[4, 1], temperature=1.0, max_new_tokens=2, seed=3, progress=False)
    rows = [
        engine.generate([p.prompt for p in problems], n=4, temperature=1.0, max_new_tokens=2, seed=call_seed(3, 0))
    ][0]
    reasons = [c.finish_reason for row in rows for c in row]
    assert "length" in reasons  # two tokens: most stop at the limit
    assert got["truncated_fraction"] == pytest.approx(np.mean([r == "length" for r in reasons]))
    assert (got["task"], got["num_problems"], got["n"], got["ks"], got["correct_threshold"]) == (
        "parts",
        3,
        4,
        [1, 4],
        CORRECT_THRESHOLD,
    )
    assert got["solved_fraction"] == 0.0 and (got["distinct_correct_answers"], got["distinct_correct_texts"]) == (
        0.0,
        0.0,
    )
    assert isinstance(got["seconds"], float) and got["seconds"] >= 0 and round(got["seconds"], 2) == got["seconds"]


def test_a_reward_total_of_none_is_not_finite(engine):
    """A total written as None (a reward that gave nothing) is read as NaN and stops the evaluation like one."""

    class NoneTask(PartsTask):
        def score_batch(self, problems, completions, completion_ids=None, step: int = 0):
            scores = super().score_batch(problems, completions, completion_ids, step)
            return RewardScores(total=[None, *scores.total[1:].tolist()], parts=scores.parts)

    with pytest.raises(NonFiniteError, match=r"^step 0: reward is not finite \(nan\) for task parts \(evaluation\)$"):
        evaluate(
            engine,
            NoneTask(),
            NoneTask().problems("test", 2, seed=0),
            n=2,
            ks=[1],
            temperature=1.0,
            max_new_tokens=3,
            seed=0,
            progress=False,
        )


def test_the_record_counts_this_evaluations_grading_timeouts_keeps_what_is_asked_and_times_the_call(
    engine, monkeypatch
):
    """grading_timeouts: the answers of this evaluation that reached the math grader's safety net (the process's
    count after the call minus before it; here 5 before, 1 during); keep=1 keeps the first problem's first
    completion; the seconds lie within the call's own time."""
    import time

    from escov.llm.tasks import math_grader

    class TimeoutTask(PartsTask):
        def score_batch(self, problems, completions, completion_ids=None, step: int = 0):
            math_grader._count_safety_net_hit(["an answer too costly to grade"], "reached the safety net")
            return super().score_batch(problems, completions, completion_ids, step)

    monkeypatch.setattr(math_grader, "_SAFETY_NET_HITS", [5])  # this process had 5 before
    task = TimeoutTask()
    start = time.perf_counter()
    got = evaluate(
        engine,
        task,
        task.problems("test", 2, seed=0),
        n=2,
        ks=[1],
        temperature=1.0,
        max_new_tokens=3,
        seed=0,
        progress=False,
        keep=1,
    )
    took = time.perf_counter() - start
    assert got["grading_timeouts"] == 1 and math_grader.safety_net_hits() == 6
    assert [k["prompt"] for k in got["kept"]] == [task.problems("test", 2, seed=0)[0].prompt]
    assert 0 <= got["seconds"] <= round(took, 2) + 0.01
