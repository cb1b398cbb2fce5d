"""GRPO advantages and the clipped loss, against plain-Python computations written out term by term."""

import math
import statistics

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from escov.llm.grpo import GRPOConfig, group_advantages, grpo_loss


@given(
    st.lists(st.lists(st.sampled_from([0.0, 0.1, 1.0]), min_size=2, max_size=8), min_size=1, max_size=5).filter(
        lambda g: len({len(r) for r in g}) == 1
    )
)
def test_group_advantages(groups):
    adv = group_advantages(np.array(groups))
    for row, a in zip(groups, adv):
        if max(row) == min(row):
            assert np.all(a == 0.0)  # all-equal group: zero advantage, never NaN
        else:
            mean, std = statistics.fmean(row), statistics.pstdev(row)
            np.testing.assert_allclose(a, [(r - mean) / (std + 1e-4) for r in row], rtol=1e-12)
    centered = group_advantages(np.array(groups), "none")  # scale_rewards = False: r - mean, no division
    for row, a in zip(groups, centered):
        np.testing.assert_allclose(a, [r - statistics.fmean(row) for r in row], rtol=1e-12, atol=1e-15)


def _reference_loss(logp, old, ref, adv, mask, eps, beta, loss_type):
    """The GRPO objective written with Python loops, token by token."""
    seq_terms, tok_sum, tok_n = [], 0.0, 0
    for i in range(len(logp)):
        terms = []
        for t in range(len(logp[i])):
            if not mask[i][t]:
                continue
            ratio = math.exp(logp[i][t] - old[i][t])
            clipped = min(max(ratio, 1 - eps), 1 + eps)
            term = -min(ratio * adv[i], clipped * adv[i])
            if ref is not None:
                d = ref[i][t] - logp[i][t]
                term += beta * (math.exp(d) - d - 1)
            terms.append(term)
        seq_terms.append(sum(terms) / max(len(terms), 1))
        tok_sum, tok_n = tok_sum + sum(terms), tok_n + len(terms)
    return sum(seq_terms) / len(logp) if loss_type == "grpo" else tok_sum / max(tok_n, 1)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["grpo", "bnpo"]), st.booleans())
def test_loss_matches_token_by_token_reference(seed, loss_type, with_ref):
    g = torch.Generator().manual_seed(seed)
    s, t = 4, 6
    logp = -torch.rand(s, t, generator=g, dtype=torch.float64) * 3
    old = logp + 0.4 * torch.randn(s, t, generator=g, dtype=torch.float64)  # ratios inside and outside the clip
    ref = logp + 0.3 * torch.randn(s, t, generator=g, dtype=torch.float64) if with_ref else None
    adv = torch.randn(s, generator=g, dtype=torch.float64)
    mask = (torch.rand(s, t, generator=g) < 0.7).double()
    cfg = GRPOConfig(loss_type=loss_type, epsilon=0.2, beta=0.04)
    loss, _, _ = grpo_loss(logp, old, ref, adv, mask, cfg, n_seq=s, n_tok=float(mask.sum()))
    expected = _reference_loss(
        logp.tolist(),
        old.tolist(),
        ref.tolist() if with_ref else None,
        adv.tolist(),
        mask.tolist(),
        0.2,
        0.04,
        loss_type,
    )
    assert float(loss) == pytest.approx(expected, rel=1e-10, abs=1e-12)


def test_on_policy_gradient_is_the_length_averaged_policy_gradient():
    """mu = 1, beta = 0: grad loss = -(1/S) sum_i A_i (1/T_i) sum_t grad log pi(y_it) (ratio = 1, no clipping)."""
    torch.manual_seed(0)
    theta = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=torch.float64)
    adv = torch.tensor([1.5, -0.5, 0.25], dtype=torch.float64)
    logp = torch.log_softmax(theta, dim=1) * mask
    loss, _, _ = grpo_loss(logp, logp.detach(), None, adv, mask, GRPOConfig(beta=0.0), n_seq=3, n_tok=float(mask.sum()))
    (grad,) = torch.autograd.grad(loss, theta, retain_graph=True)
    surrogate = -sum(adv[i] * logp[i].sum() / mask[i].sum() for i in range(3)) / 3
    (expected,) = torch.autograd.grad(surrogate, theta)
    torch.testing.assert_close(grad, expected)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(num_generations=1), "num_generations"),
        (dict(learning_rate=0.0), "learning_rate"),
        (dict(beta=-1.0), "beta"),
        (dict(loss_type="token"), "loss_type"),
        (dict(num_iterations=0), "num_iterations"),
    ],
)
def test_bad_grpo_settings_are_named(bad, match):
    with pytest.raises(ValueError, match=match):
        GRPOConfig(**bad).validate()
