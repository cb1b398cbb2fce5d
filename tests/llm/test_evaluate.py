"""evaluate() against independent recomputation from the same completions: brute-force Pass@k and
majority votes, exact per-token entropies from full forward passes, distinct-answer counts."""

import itertools
from collections import Counter

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from escov.llm.engines.hf import HFEngine
from escov.llm.evaluate import SAMPLES_PER_CALL, call_seed, evaluate
from escov.llm.rollout import rollout
from escov.llm.tasks import get_task
from escov.llm.tasks.base import Problem, Task


class FirstCharTask(Task):
    """A verifiable toy task on Countdown prompts: correct iff the completion starts with 1, 2 or 3;
    the answer is the first character (so answers repeat and votes are meaningful)."""

    name = "first-char"

    def problems(self, split, n, seed):
        return get_task("countdown").problems(split, n, seed)

    def score(self, problem: Problem, completion: str) -> float:
        return 1.0 if completion[:1] in ("1", "2", "3") else 0.0

    def answer(self, problem, completion):
        return completion[:1] or None


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return HFEngine(tiny_model_dir)


def brute_pass_at_k(n, c, k):
    """Fraction of the k-subsets of n samples (c correct) that hold a correct one, by enumeration."""
    flags = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(flags[i] for i in s) for s in subsets) / len(subsets)


def majority_credit(answers, correct):
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return 0.0
    top = max(counts.values())
    tied = [a for a, m in counts.items() if m == top]
    ok = {a for a, c in zip(answers, correct) if c}
    return sum(a in ok for a in tied) / len(tied)


@pytest.mark.parametrize("T", [1.0, 0.7])  # at T != 1, log-probs at T = 1 would pass an entropy check at T = 1
def test_metrics_match_independent_recomputation(engine, T):
    task, n, ks = FirstCharTask(), 6, [1, 2, 6]
    problems = task.problems("test", 30, seed=0)
    result = evaluate(engine, task, problems, n=n, ks=ks, temperature=T, max_new_tokens=10, seed=4, progress=False)
    # the same completions, from the documented call seeds
    per_call = SAMPLES_PER_CALL // n
    completions = []
    for index, i in enumerate(range(0, len(problems), per_call)):
        completions += engine.generate(
            [p.prompt for p in problems[i : i + per_call]],
            n=n,
            temperature=T,
            max_new_tokens=10,
            seed=call_seed(4, index),
        )
    counts = [sum(task.score(p, c.text) == 1.0 for c in row) for p, row in zip(problems, completions)]
    assert [r["correct"] for r in result["per_problem"]] == counts
    assert 0 < np.mean(counts) < n  # informative: some but not all samples correct
    for k in ks:
        assert result["pass_at_k"][str(k)] == pytest.approx(np.mean([brute_pass_at_k(n, c, k) for c in counts]))
    votes = [
        majority_credit([task.answer(p, c.text) for c in row], [task.score(p, c.text) == 1 for c in row])
        for p, row in zip(problems, completions)
    ]
    assert result["maj_at_k"][str(n)] == pytest.approx(np.mean(votes))
    solved = [(p, row) for p, row in zip(problems, completions) if any(task.score(p, c.text) for c in row)]
    assert result["solved_fraction"] == len(solved) / len(problems)
    assert result["distinct_correct_answers"] == pytest.approx(
        np.mean([len({c.text[:1] for c in row if task.score(p, c.text)}) for p, row in solved])
    )
    assert result["distinct_correct_texts"] == pytest.approx(
        np.mean([len({c.text.strip() for c in row if task.score(p, c.text)}) for p, row in solved])
    )
    lengths = [len(c.token_ids) for row in completions for c in row]
    assert result["mean_response_tokens"] == pytest.approx(np.mean(lengths))

    # entropy: the Monte Carlo estimate -mean log pi_T(y_t) against the exact entropies of the
    # same sampling distributions at the same positions (full forward passes)
    exact = []
    for p, row in zip(problems, completions):
        p_ids = engine.prompt_token_ids(p.prompt)
        for c in row:
            with torch.no_grad():
                logits = engine.model(input_ids=torch.tensor([p_ids + c.token_ids])).logits[0, len(p_ids) - 1 : -1] / T
            logp = F.log_softmax(logits, -1)
            exact += (-(logp.exp() * logp).sum(-1)).tolist()
            sampled = logp.gather(1, torch.tensor(c.token_ids)[:, None])[:, 0]  # log pi_T of each sampled token
            np.testing.assert_allclose(c.logprobs, sampled.numpy(), rtol=0, atol=1e-4)
    nll = [-lp for row in completions for c in row for lp in c.logprobs]
    se = np.std(np.array(nll) - np.array(exact), ddof=1) / np.sqrt(len(nll))
    assert result["mean_token_entropy"] == pytest.approx(np.mean(nll))
    assert abs(np.mean(nll) - np.mean(exact)) < 4 * se


def test_greedy_has_zero_entropy_and_identical_samples(engine):
    task = FirstCharTask()
    result = evaluate(
        engine,
        task,
        task.problems("test", 8, seed=0),
        n=4,
        ks=[1, 4],
        temperature=0.0,
        max_new_tokens=8,
        seed=0,
        progress=False,
    )
    assert result["mean_token_entropy"] == 0.0
    assert all(r["correct"] in (0, 4) for r in result["per_problem"])
    assert result["pass_at_k"]["1"] == result["pass_at_k"]["4"]


def test_rollout_entropy_is_the_evaluation_entropy_and_zero_when_greedy(engine):
    """Training rollouts and evaluation report token entropy by one rule: -mean log pi_T, 0 at T = 0."""
    task = FirstCharTask()
    problems = task.problems("test", 8, seed=0)
    greedy = rollout(engine, task, problems, n=2, temperature=0.0, max_new_tokens=8, seed=0, step=0)
    assert any(lp < 0 for row in greedy.completions for c in row for lp in c.logprobs)  # greedy log-probs are not 0
    assert greedy.token_entropy() == 0.0
    sampled = rollout(engine, task, problems, n=4, temperature=1.0, max_new_tokens=8, seed=3, step=0)
    nll = [-lp for row in sampled.completions for c in row for lp in c.logprobs]
    assert sampled.token_entropy() == pytest.approx(np.mean(nll)) and np.mean(nll) > 0
    assert 0 < sampled.correct.mean() < 1  # some correct, some not: the comparison below can fail
    np.testing.assert_array_equal(
        sampled.correct, [[task.is_correct(p, c.text) for c in row] for p, row in zip(problems, sampled.completions)]
    )


@pytest.mark.parametrize(
    "n, ks, match", [(4, [1, 8], "n .* must be >= the largest k"), (0, [1], "n "), (4, [], "ks"), (4, [0], "ks")]
)
def test_bad_arguments(engine, n, ks, match):
    task = FirstCharTask()
    with pytest.raises(ValueError, match=match):
        evaluate(
            engine,
            task,
            task.problems("test", 2, seed=0),
            n=n,
            ks=ks,
            temperature=1.0,
            max_new_tokens=4,
            seed=0,
            progress=False,
        )
    with pytest.raises(ValueError, match="problems"):
        evaluate(engine, task, [], n=4, ks=[1], temperature=1.0, max_new_tokens=4, seed=0, progress=False)
