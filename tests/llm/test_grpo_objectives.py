"""GRPO's per-token policy terms (llm/grpo_objectives.py) for each loss type and importance-sampling level, against
the formulas written out token by token in plain Python: each term's value and its gradient with respect to the
token's log-prob (derived by hand: d w_t / d logp_t = w_t; GSPO's w = exp(mean log-ratio) moves with every valid
token of its completion by w / T; cispo's capped ratio carries no gradient; a clipped term carries none)."""

import math

import pytest
import torch

from escov.llm.config import GRPOConfig
from escov.llm.grpo_objectives import importance_weights, policy_terms

# two completions of three token slots; the second's last slot is padding whose log-ratio is large on purpose
LOGP = [[-1.0, -2.0, -0.5], [-0.3, -1.2, -0.1]]
LOG_RATIO = [[math.log(1.5), math.log(0.5), 0.0], [math.log(0.7), math.log(1.1), 3.0]]
MASK = [[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]


def _batch(adv):
    logp = torch.tensor(LOGP, dtype=torch.float64, requires_grad=True)
    old = logp.detach() - torch.tensor(LOG_RATIO, dtype=torch.float64)
    return logp, old, torch.tensor(adv, dtype=torch.float64), torch.tensor(MASK, dtype=torch.float64)


def _terms_and_grads(cfg, adv):
    """Each valid token's term and d(sum of valid terms)/d logp_t, from the code."""
    logp, old, a, mask = _batch(adv)
    terms, w = policy_terms(logp, old, a, mask, cfg)
    full = terms.expand_as(logp)  # a sequence-level term is one per completion: [S, 1]
    (full * mask).sum().backward()
    return full.detach(), logp.grad, w.detach()


def test_token_and_sequence_weights_follow_their_definitions():
    logp, old, _, mask = _batch([1.0, 1.0])
    token = importance_weights(logp, old, mask, "token")
    assert token.flatten().tolist() == pytest.approx([math.exp(r) for row in LOG_RATIO for r in row], rel=1e-12)
    sequence = importance_weights(logp, old, mask, "sequence")
    expected = [
        math.exp(sum(r * m for r, m in zip(rows, ms)) / sum(ms)) for rows, ms in zip(LOG_RATIO, MASK)
    ]  # the padding's log-ratio 3.0 does not count
    assert sequence.shape == (2, 1) and sequence[:, 0].tolist() == pytest.approx(expected, rel=1e-12)
    empty = importance_weights(logp, old, torch.zeros_like(mask), "sequence")
    assert empty[:, 0].tolist() == [1.0, 1.0]  # no valid token: a ratio of 1, not a division by zero
    one = importance_weights(
        logp, old, torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64), "sequence"
    )
    assert one[:, 0].tolist() == pytest.approx([0.5, 0.7], rel=1e-12)  # one valid token: its own ratio


@pytest.mark.parametrize("epsilon_high", [0.28, 0.0])
def test_clipped_terms_clip_each_side_with_its_own_range(epsilon_high):
    """l_t = -min(w_t A, clip(w_t, 1 - eps, 1 + eps_high) A): with A > 0 a ratio above 1 + eps_high is clipped
    (no gradient), one below 1 - eps is not; with A < 0 the other way round. eps_high 0 means eps."""
    cfg = GRPOConfig(epsilon=0.2, epsilon_high=epsilon_high)
    high = epsilon_high or 0.2
    adv = [2.0, -3.0]
    terms, grads, _ = _terms_and_grads(cfg, adv)
    for i, a in enumerate(adv):
        for t in range(3):
            if not MASK[i][t]:
                continue
            w = math.exp(LOG_RATIO[i][t])
            clipped = min(max(w, 1 - 0.2), 1 + high)
            value = -min(w * a, clipped * a)
            binds = clipped * a < w * a
            assert float(terms[i, t]) == pytest.approx(value, rel=1e-12), (i, t)
            assert float(grads[i, t]) == pytest.approx(0.0 if binds else -a * w, abs=1e-12), (i, t)


def test_the_upper_range_is_epsilon_high_where_it_differs_from_epsilon():
    """A ratio of 1.25 with A > 0: inside [0.8, 1.28] (eps_high 0.28, its gradient kept), clipped at 1.2 when
    eps_high is 0 (eps on both sides)."""
    logp = torch.tensor([[0.0]], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([[-math.log(1.25)]], dtype=torch.float64)
    adv, mask = torch.tensor([1.0], dtype=torch.float64), torch.ones(1, 1, dtype=torch.float64)
    wide, _ = policy_terms(logp, old, adv, mask, GRPOConfig(epsilon=0.2, epsilon_high=0.28))
    narrow, _ = policy_terms(logp, old, adv, mask, GRPOConfig(epsilon=0.2, epsilon_high=0.0))
    assert float(wide.detach()) == pytest.approx(-1.25, rel=1e-12)
    assert float(narrow.detach()) == pytest.approx(-1.2, rel=1e-12)


def test_sequence_level_terms_use_one_ratio_per_completion_and_spread_its_gradient_over_its_tokens():
    """GSPO with the clipped loss: l = -min(w A, clip(w) A) once per completion, w = exp(mean valid log-ratio);
    an unclipped completion's d l / d logp_t = -A w / T for each of its T valid tokens, 0 on padding."""
    cfg = GRPOConfig(epsilon=0.2, epsilon_high=0.28, importance_sampling_level="sequence")
    adv = [2.0, -3.0]
    logp, old, a, mask = _batch(adv)
    terms, w = policy_terms(logp, old, a, mask, cfg)
    assert terms.shape == (2, 1)
    terms.sum().backward()
    for i, ai in enumerate(adv):
        valid = [t for t in range(3) if MASK[i][t]]
        wi = math.exp(sum(LOG_RATIO[i][t] for t in valid) / len(valid))
        assert 0.8 < wi < 1.28  # neither completion is clipped here
        assert float(terms[i, 0].detach()) == pytest.approx(-wi * ai, rel=1e-12)
        expected = [(-ai * wi / len(valid) if t in valid else 0.0) for t in range(3)]
        assert logp.grad[i].tolist() == pytest.approx(expected, abs=1e-12)


def test_cispo_caps_the_ratio_and_never_drops_a_tokens_gradient():
    """cispo: l_t = -sg[min(w_t, eps_high)] A logp_t; its gradient is -min(w_t, eps_high) A on every valid token,
    a ratio far below 1 - eps included (where the clipped loss drops it with A < 0)."""
    cfg = GRPOConfig(loss_type="cispo", epsilon_high=1.2)
    adv = [2.0, -3.0]
    terms, grads, _ = _terms_and_grads(cfg, adv)
    for i, a in enumerate(adv):
        for t in range(3):
            if MASK[i][t]:
                capped = min(math.exp(LOG_RATIO[i][t]), 1.2)
                assert float(terms[i, t]) == pytest.approx(-capped * a * LOGP[i][t], rel=1e-12), (i, t)
                assert float(grads[i, t]) == pytest.approx(-capped * a, rel=1e-12), (i, t)


def test_cispo_without_epsilon_high_caps_at_epsilon():
    cfg = GRPOConfig(loss_type="cispo", epsilon=0.2, epsilon_high=0.0)
    terms, _, _ = _terms_and_grads(cfg, [1.0, 1.0])
    assert float(terms[0, 0]) == pytest.approx(-0.2 * LOGP[0][0], rel=1e-12)  # w = 1.5 capped at 0.2


def test_sapo_gradient_at_ratio_one_is_the_policy_gradient_for_either_temperature():
    """sapo: d/dlogp of -(4/tau) sigmoid(tau (w - 1)) A is -4 sigmoid'(tau (w - 1)) w A = -A at w = 1, whatever
    tau; away from 1 the temperature of the advantage's sign sets it: -4 s (1 - s) w A, s = sigmoid(tau (w - 1))."""
    cfg = GRPOConfig(loss_type="sapo", sapo_temperature_pos=2.0, sapo_temperature_neg=0.5)
    adv = [2.0, -3.0]
    _, grads, _ = _terms_and_grads(cfg, adv)
    for i, a in enumerate(adv):
        tau = 2.0 if a > 0 else 0.5
        for t in range(3):
            if MASK[i][t]:
                w = math.exp(LOG_RATIO[i][t])
                s = 1 / (1 + math.exp(-tau * (w - 1)))
                assert float(grads[i, t]) == pytest.approx(-4 * s * (1 - s) * w * a, rel=1e-12), (i, t)
    assert float(grads[0, 2]) == pytest.approx(-2.0, rel=1e-12)  # w = 1: -A


def test_the_returned_ratio_is_the_importance_weight():
    for level in ("token", "sequence"):
        cfg = GRPOConfig(importance_sampling_level=level)
        logp, old, a, mask = _batch([1.0, -1.0])
        _, w = policy_terms(logp, old, a, mask, cfg)
        assert torch.equal(w, importance_weights(logp, old, mask, level))
