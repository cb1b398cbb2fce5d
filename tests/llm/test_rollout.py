"""llm/rollout.py from its docstrings, each number computed here another way: the evaluations' sampling seeds, the
token entropy estimate, the verifier's rewards and decisions on ragged [prompt][sample] completions, log-probs and
entropies of completions against a forward pass written out by hand, and padded batches."""

import math

import numpy as np
import pytest
import torch

from escov.llm.engines.base import Completion
from escov.llm.rollout import (
    NonFiniteError,
    Rollouts,
    completion_logprobs,
    derive_seed,
    evaluation_seed,
    mean_token_entropy,
    pad_batch,
    score_completions,
)
from escov.llm.tasks.base import Problem, RewardScores, Task


def _c(text: str, logprobs=(), token_ids=None) -> Completion:
    return Completion(text, list(token_ids if token_ids is not None else range(len(logprobs))), list(logprobs), "stop")


def test_each_evaluation_has_its_own_seed_derived_from_the_runs():
    assert evaluation_seed(7) == derive_seed(7, "eval") % 2**31
    assert evaluation_seed(7, "heldout") == derive_seed(7, "heldout") % 2**31
    assert evaluation_seed(7, "heldout") != evaluation_seed(7) != evaluation_seed(8)
    assert 0 <= evaluation_seed(123456789, "heldout") < 2**31


def test_the_token_entropy_is_minus_the_mean_sampled_log_probability_and_zero_when_greedy():
    completions = [[_c("a", [-0.5, -1.5]), _c("b", [-1.0])], [_c("c", [-3.0])]]
    assert mean_token_entropy(completions, 1.0) == pytest.approx((0.5 + 1.5 + 1.0 + 3.0) / 4)  # per token, not row
    assert mean_token_entropy(completions, 0.0) == 0.0
    assert mean_token_entropy([[_c("", [])]], 1.0) == 0.0
    rollouts = Rollouts(completions, np.zeros((2, 2)), np.zeros((2, 2), bool), temperature=0.7)
    assert rollouts.token_entropy() == pytest.approx(1.5) and rollouts.n_tokens == 4


class _Decides(Task):
    """Rewards len(text) / 2; correct when the text is "ok", whatever its reward (a task deciding correctness
    itself, as reward functions with a threshold do)."""

    name = "decides"

    def problems(self, split, n, seed):
        return []

    def score(self, problem, completion):
        return len(completion) / 2

    def answer(self, problem, completion):
        return completion

    def score_batch(self, problems, completions, completion_ids=None, step=0):
        total = np.array([len(c) / 2 for c in completions])
        if "nan" in completions:
            total[completions.index("nan")] = math.nan
        return RewardScores(total, {"half": total / 2}, correct=np.array([c == "ok" for c in completions]))


def test_scores_keep_prompt_and_sample_and_the_tasks_own_decision():
    problems = [Problem("p0", "x"), Problem("p1", "y")]
    got = score_completions(_Decides(), problems, [[_c("ok"), _c("long")], [_c("abcd"), _c("ok")]], 3, 0.6)
    np.testing.assert_array_equal(got.rewards, [[1.0, 2.0], [2.0, 1.0]])
    np.testing.assert_array_equal(got.correct, [[True, False], [False, True]])  # "abcd" earns 2, is not correct
    np.testing.assert_array_equal(got.parts["half"], [[0.5, 1.0], [1.0, 0.5]])
    assert got.temperature == 0.6
    with pytest.raises(NonFiniteError, match=r"^step 3: reward is not finite \(nan\) for task decides$"):
        score_completions(_Decides(), problems, [[_c("ok"), _c("nan")], [_c("ok"), _c("ok")]], 3, 0.6)


def test_log_probs_and_entropies_of_completions_by_hand():
    """A tiny causal LM: log pi_T(y_t | x, y_<t) = log_softmax(logits_{t-1} / T)[y_t] on the completion's positions
    (0 on the prompt's and the padding), and the entropy of that law there."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=11,
        hidden_size=8,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
    )
    model = Qwen2ForCausalLM(cfg).eval()
    prompts, completions = [[1, 2, 3], [4]], [[5, 6], [7, 8, 9]]
    seq, att, mask = pad_batch(prompts, completions, pad_id=0)
    with torch.no_grad():
        logp, ent = completion_logprobs(model, seq, att, mask, temperature=0.5, with_entropy=True)
        for i, (p, c) in enumerate(zip(prompts, completions)):
            row = torch.tensor([p + c])
            logits = model(input_ids=row).logits[0].float() / 0.5
            law = torch.log_softmax(logits, -1)
            for t in range(1, row.shape[1]):
                on = len(p) <= t < len(p) + len(c)
                want = law[t - 1, row[0, t]].item() if on else 0.0
                assert logp[i, t - 1].item() == pytest.approx(want, abs=1e-5), (i, t)
                want_h = -(law[t - 1].exp() * law[t - 1]).sum().item() if on else 0.0
                assert ent[i, t - 1].item() == pytest.approx(want_h, abs=1e-5), (i, t)
        assert torch.equal(completion_logprobs(model, seq, att, mask, temperature=0.5), logp)


def test_a_padded_batch_by_hand():
    seq, att, mask = pad_batch([[1, 2], [3]], [[4], [5, 6, 7]], pad_id=9)
    assert seq.tolist() == [[1, 2, 4, 9], [3, 5, 6, 7]]
    assert att.tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert mask.tolist() == [[0, 0, 1, 0], [0, 1, 1, 1]]
