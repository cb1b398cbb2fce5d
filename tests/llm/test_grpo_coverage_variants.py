"""GRPO's coverage-keeping variants that TRL does not have (verl's grpo_passk, clip_cov, kl_cov; Chen et al.'s
Pass@k advantage; zero-success gating; the outcome bonus), and TRL's adaptive entropy rule and token selection,
against hand computations from their formulas (numpy, enumeration, plain Python), never against the code's own
output. verl is not installed here (its core_algos needs tensordict and omegaconf, which pin torch); TRL's options
are compared with TRL itself in tests/llm/test_grpo_trl_parity.py."""

import itertools
import math
import statistics
from dataclasses import replace

import numpy as np
import pytest
import torch

from escov.llm.config import GRPOConfig
from escov.llm.grpo import grpo_loss
from escov.llm.grpo_advantages import (
    grpo_passk_advantages,
    max_of_k_weights,
    passk_analytic_advantages,
    pkpo_advantages,
)
from escov.llm.grpo_entropy import EntropyControl, high_entropy_mask
from escov.llm.grpo_exploration import gate_solved, outcome_bonus

# ----------------------------------------------------------------------------- advantages


def test_grpo_passk_gives_the_gap_to_the_best_alone():
    rewards = np.array([[0.2, 0.9, 0.5, 0.1], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.3, 1.0, 0.0]])
    plain = grpo_passk_advantages(rewards, scale=False)
    np.testing.assert_allclose(plain, [[0, 0.4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0.7, 0]], atol=1e-15)
    scaled = grpo_passk_advantages(rewards, scale=True)
    assert scaled[0, 1] == pytest.approx(0.4 / (statistics.stdev([0.2, 0.9, 0.5, 0.1]) + 1e-6), rel=1e-12)
    assert scaled[3, 2] == pytest.approx(0.7 / (statistics.stdev([0.0, 0.3, 1.0, 0.0]) + 1e-6), rel=1e-12)
    assert np.count_nonzero(scaled) == 2  # tied bests and an all-equal group: nothing


@pytest.mark.parametrize("g,k", [(4, 1), (4, 2), (6, 3), (8, 4), (5, 5)])
def test_passk_analytic_equals_the_mean_over_k_subsets(g, k):
    """Chen et al.'s closed form against its definition: every k-subset of the group is a Pass@k draw with reward
    max_j c_j; a completion's advantage is the mean, over the subsets holding it, of (reward - mean) / std over
    all subsets."""
    rng = np.random.default_rng(g * 10 + k)
    correct = np.array([np.arange(g) < c for c in range(g + 1)])
    correct = np.array([rng.permutation(row) for row in correct])
    got = passk_analytic_advantages(correct, k)
    for row, adv in zip(correct, got):
        subsets = list(itertools.combinations(range(g), k))
        value = {s: float(row[list(s)].any()) for s in subsets}
        mean = statistics.fmean(value.values())
        std = statistics.pstdev(value.values())
        for i in range(g):
            want = 0.0 if std == 0 else statistics.fmean((value[s] - mean) / std for s in subsets if i in s)
            assert adv[i] == pytest.approx(want, abs=1e-12), (row, i)


@pytest.mark.parametrize("g,k", [(4, 1), (5, 2), (6, 3), (4, 4)])
def test_pkpo_weights_are_the_sum_over_k_subsets_of_their_max(g, k):
    """s_i = (1 / C(G, k)) sum over the k-subsets holding i of max_S r, by enumeration (rewards with ties)."""
    rewards = np.random.default_rng(g + k).choice([0.0, 0.25, 0.5, 1.0], size=(5, g))
    got = max_of_k_weights(rewards, k)
    for row, s in zip(rewards, got):
        for i in range(g):
            want = sum(max(row[list(S)]) for S in itertools.combinations(range(g), k) if i in S) / math.comb(g, k)
            assert s[i] == pytest.approx(want, abs=1e-12)


def test_pkpo_is_an_unbiased_gradient_of_pass_at_k():
    """Exactly, by enumeration: a categorical policy over 3 answers with rewards 0, 0.3, 1; the expectation over
    every group of G = 4 draws of sum_i A_i grad log p(y_i) equals the gradient of E[max of k = 2 draws]
    (autograd on its closed form). The leave-one-out baseline keeps it unbiased; an all-equal group gets 0."""
    theta = torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64, requires_grad=True)
    r = np.array([0.0, 0.3, 1.0])
    p = torch.softmax(theta, 0)
    target = sum(p[a] * p[b] * max(r[a], r[b]) for a in range(3) for b in range(3))
    (want,) = torch.autograd.grad(target, theta)
    probs = p.detach().numpy()
    got = np.zeros(3)
    for ys in itertools.product(range(3), repeat=4):
        adv = pkpo_advantages(r[list(ys)][None, :], 2, scale=False)[0]
        weight = np.prod(probs[list(ys)])
        got += weight * sum(a * (np.eye(3)[y] - probs) for a, y in zip(adv, ys))
    np.testing.assert_allclose(got, want.numpy(), atol=1e-12)
    assert np.all(pkpo_advantages(np.full((1, 4), 0.3), 2, scale=False) == pytest.approx(0.0, abs=1e-15))


def test_plain_advantages_under_each_scale_rewards_by_hand():
    """scale_rewards batch: r - the group's mean, over the whole batch's population std + 1e-4; true and false are
    group and none (TRL's booleans)."""
    from escov.llm.grpo_advantages import group_advantages

    rewards = np.array([[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    batch_std = statistics.pstdev([0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0])  # sqrt(15 / 64)
    centred = [[-0.5, 0.5, 0.5, -0.5], [-0.25, -0.25, -0.25, 0.75]]
    np.testing.assert_allclose(group_advantages(rewards, "batch"), np.array(centred) / (batch_std + 1e-4), rtol=1e-12)
    np.testing.assert_allclose(group_advantages(rewards, False), centred, rtol=1e-12)
    np.testing.assert_allclose(group_advantages(rewards, "none"), centred, rtol=1e-12)
    by_group = [
        [-1.0, 1.0, 1.0, -1.0],
        [-0.25 / (math.sqrt(3) / 4), -0.25 / (math.sqrt(3) / 4), -0.25 / (math.sqrt(3) / 4), 0.75 / (math.sqrt(3) / 4)],
    ]
    np.testing.assert_allclose(group_advantages(rewards, True), group_advantages(rewards, "group"), rtol=1e-15)
    np.testing.assert_allclose(
        group_advantages(rewards, "group"),
        np.array(by_group) * [[0.5 / (0.5 + 1e-4)], [(math.sqrt(3) / 4) / (math.sqrt(3) / 4 + 1e-4)]],
        rtol=1e-12,
    )
    integers = group_advantages(rewards.astype(int), "batch")
    np.testing.assert_allclose(integers, group_advantages(rewards, "batch"), rtol=1e-12)


def _mean_max_over_subsets(row, k) -> float:
    """E[max of k draws without replacement] from the row: the mean over its k-subsets of their max, by enumeration."""
    return statistics.fmean(max(row[list(S)]) for S in itertools.combinations(range(len(row)), k))


@pytest.mark.parametrize("g,k", [(4, 1), (5, 2), (6, 3), (4, 4)])
def test_the_pass_at_k_of_a_group_is_the_mean_over_k_subsets_of_their_max(g, k):
    from escov.llm.grpo_advantages import pass_at_k_of

    rewards = np.random.default_rng(10 * g + k).choice([0.0, 0.25, 0.5, 1.0], size=(5, g))
    want = [_mean_max_over_subsets(row, k) for row in rewards]
    np.testing.assert_allclose(pass_at_k_of(rewards, k), want, atol=1e-12)


@pytest.mark.parametrize("g,k", [(4, 1), (5, 2), (6, 3), (4, 3)])
def test_pkpo_advantages_are_the_weights_minus_the_leave_one_out_pass_at_k(g, k):
    """A_i = s_i - (k / G) x (the mean over k-subsets of the other G - 1 completions of their max), by enumeration;
    with scale_rewards group divided by the group's population std + 1e-4."""
    rewards = np.random.default_rng(g * k).choice([0.0, 0.3, 1.0], size=(4, g))
    plain, scaled = pkpo_advantages(rewards, k, scale=False), pkpo_advantages(rewards, k, scale=True)
    for row, a, b in zip(rewards, plain, scaled):
        for i in range(g):
            s_i = sum(max(row[list(S)]) for S in itertools.combinations(range(g), k) if i in S) / math.comb(g, k)
            want = s_i - k / g * _mean_max_over_subsets(np.delete(row, i), k)
            assert a[i] == pytest.approx(want, abs=1e-12)
            assert b[i] == pytest.approx(want / (statistics.pstdev(row) + 1e-4), abs=1e-9)


def test_integer_rewards_weigh_as_their_float_values():
    rewards = np.array([[0, 1, 1, 0, 2]])
    np.testing.assert_allclose(max_of_k_weights(rewards, 2), max_of_k_weights(rewards.astype(float), 2), atol=1e-15)
    assert max_of_k_weights(rewards, 2)[0, 0] == pytest.approx(0.4)  # its 4 pairs: maxima 1, 1, 0, 2, over C(5, 2)


@pytest.mark.parametrize(
    "estimator, k, message",
    [
        (pkpo_advantages, 0, "pkpo needs pass_k in [1, 3] (a leave-one-out baseline of the group), got 0"),
        (pkpo_advantages, 4, "pkpo needs pass_k in [1, 3] (a leave-one-out baseline of the group), got 4"),
        (passk_analytic_advantages, 0, "pass_k must lie in [1, 4] (the group size), got 0"),
        (passk_analytic_advantages, 5, "pass_k must lie in [1, 4] (the group size), got 5"),
    ],
)
def test_a_pass_k_outside_the_group_is_refused(estimator, k, message):
    group = np.array([[1.0, 0.0, 0.0, 1.0]])
    with pytest.raises(ValueError) as err:
        estimator(group, k, scale=False) if estimator is pkpo_advantages else estimator(group > 0, k)
    assert str(err.value) == message
    inside = 3 if estimator is pkpo_advantages else 4  # the largest k each accepts, and k = 1
    for ok in (1, inside):
        estimator(group, ok, scale=False) if estimator is pkpo_advantages else estimator(group > 0, ok)


# ----------------------------------------------------------------------------- verl's covariance losses


def _batch(seed=0, s=3, t=5):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(s, t, generator=g, dtype=torch.float64) * 3
    old = logp + 0.3 * torch.randn(s, t, generator=g, dtype=torch.float64)
    adv = torch.tensor([2.0, -1.5, 0.5], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=torch.float64)
    return logp, old, adv, mask


def _covariances(logp, adv, mask):
    lp, m = logp.numpy(), mask.numpy() > 0
    a = np.broadcast_to(adv.numpy()[:, None], lp.shape)
    return (a - a[m].mean()) * (lp - lp[m].mean()), a, lp, m


def test_kl_cov_penalizes_the_tokens_of_largest_covariance():
    """kl_cov with kl_cov_ratio 0.25 over 11 tokens: the floor(2.75) = 2 tokens of largest cov_t get
    -A w + ppo_kl_coef |logp - old|, the rest -A w, unclipped; the token mean over the batch."""
    logp, old, adv, mask = _batch()
    cfg = GRPOConfig(loss_type="kl_cov", kl_cov_ratio=0.25, ppo_kl_coef=0.7, beta=0.0)
    cov, a, lp, m = _covariances(logp, adv, mask)
    top = sorted(zip(cov[m], zip(*np.nonzero(m))), reverse=True)[:2]
    w = np.exp(lp - old.numpy())
    terms = -a * w
    for _, (i, j) in top:
        terms[i, j] += 0.7 * abs(lp[i, j] - old.numpy()[i, j])
    loss, _, _ = grpo_loss(logp, old, None, adv, mask, cfg, n_seq=3, n_tok=float(mask.sum()))
    assert float(loss) == pytest.approx(terms[m].sum() / m.sum(), rel=1e-12)


def test_kl_cov_penalizes_at_least_one_token_and_reports_its_share():
    """kl_cov_terms' share is the penalized tokens over the valid ones: floor(11 x 0.25) = 2 of 11; a ratio whose
    floor is 0 still penalizes the one token of largest covariance (1 of 11); a batch with no valid token gets the
    plain -A w and a share of 0."""
    from escov.llm.grpo_covariance import kl_cov_terms

    logp, old, adv, mask = _batch()
    cov, a, lp, m = _covariances(logp, adv, mask)
    w = np.exp(lp - old.numpy())
    for ratio, k in ((0.25, 2), (0.01, 1)):
        cfg = GRPOConfig(loss_type="kl_cov", kl_cov_ratio=ratio, ppo_kl_coef=0.7)
        terms, ratios, share = kl_cov_terms(logp, old, adv, mask, cfg)
        assert share == pytest.approx(k / 11)
        np.testing.assert_allclose(ratios.numpy(), w, rtol=1e-12)
        penalized = np.abs(terms.numpy() - (-a * w)) > 1e-12
        top = [ij for _, ij in sorted(zip(cov[m], zip(*np.nonzero(m))), reverse=True)[:k]]
        assert sorted(zip(*np.nonzero(penalized))) == sorted(top)
        assert terms.dtype == logp.dtype
    cfg = GRPOConfig(loss_type="kl_cov", kl_cov_ratio=0.25, ppo_kl_coef=0.7)
    terms, _, share = kl_cov_terms(logp, old, adv, torch.zeros_like(mask), cfg)
    assert share == 0.0
    np.testing.assert_allclose(terms.numpy(), -a * w, rtol=1e-12)


def test_clip_cov_cuts_the_gradient_of_unclipped_tokens_inside_the_covariance_band():
    """clip_cov with a band that holds a known set of tokens and a ratio that cuts all of them: those tokens'
    terms are 0, the rest are PPO's clipped terms; the cut tokens get no gradient."""
    logp, old, adv, mask = _batch(seed=3)
    cov, a, lp, m = _covariances(logp, adv, mask)
    w = np.exp(lp - old.numpy())
    unclipped, clipped = -a * w, -a * np.clip(w, 0.8, 1.2)
    band = np.sort(cov[m & ~(clipped > unclipped)])
    lb, ub = band[-4] - 1e-9, band[-1] + 1e-9  # the 4 unclipped tokens of largest covariance
    cfg = GRPOConfig(loss_type="clip_cov", clip_cov_ratio=0.4, clip_cov_lb=float(lb), clip_cov_ub=float(ub), beta=0.0)
    cut = m & ~(clipped > unclipped) & (cov > lb) & (cov < ub)
    assert cut.sum() == 4 and int(0.4 * m.sum()) >= 4  # floor(0.4 x 11) = 4: every candidate is cut
    expected = np.where(cut, 0.0, np.maximum(unclipped, clipped))[m].sum() / m.sum()
    theta = logp.clone().requires_grad_(True)
    loss, _, _ = grpo_loss(
        theta, old, None, adv, mask, cfg, n_seq=3, n_tok=float(mask.sum()), generator=torch.Generator().manual_seed(0)
    )
    assert float(loss) == pytest.approx(expected, rel=1e-12)
    (grad,) = torch.autograd.grad(loss, theta)
    assert np.all(grad.numpy()[cut] == 0.0) and np.count_nonzero(grad.numpy()[m & ~cut]) > 0


def test_clip_cov_draws_its_share_among_the_candidates_alone():
    """With more candidates than floor(ratio N), exactly that many are cut, all among the candidates, and the
    seeded draw decides which."""
    logp, old, adv, mask = _batch(seed=5)
    cfg = GRPOConfig(loss_type="clip_cov", clip_cov_ratio=0.2, clip_cov_lb=-100.0, clip_cov_ub=100.0, beta=0.0)
    from escov.llm.grpo_covariance import clip_cov_terms

    cov, a, lp, m = _covariances(logp, adv, mask)
    w = np.exp(lp - old.numpy())
    candidates = m & ~(-a * np.clip(w, 0.8, 1.2) > -a * w)
    cuts = []
    for seed in range(6):
        terms, _, share = clip_cov_terms(logp, old, adv, mask, cfg, torch.Generator().manual_seed(seed))
        zero = (terms.numpy() == 0) & m
        assert zero.sum() == 2 and share == pytest.approx(2 / 11) and np.all(candidates[zero])
        cuts.append(tuple(np.flatnonzero(zero)))
    assert len(set(cuts)) > 1


def test_clip_cov_band_is_open_and_cuts_at_least_one_candidate():
    """The band is open (cov > lb and cov < ub: a token whose covariance is a bound is no candidate); a ratio whose
    floor is 0 still cuts one candidate; the share is cut tokens over valid tokens (1 of 1 in a one-token batch);
    one seeded generator draws the same cut twice."""
    from escov.llm.grpo_covariance import _covariance, clip_cov_terms

    logp, old, adv, mask = _batch(seed=5)
    valid = mask > 0
    cov = _covariance(logp, adv[:, None].expand_as(logp), valid)
    w = np.exp((logp - old).numpy())
    a = np.broadcast_to(adv.numpy()[:, None], w.shape)
    unclipped = valid.numpy() & ~(-a * np.clip(w, 0.8, 1.2) > -a * w)
    top, bottom = float(cov[torch.from_numpy(unclipped)].max()), float(cov[torch.from_numpy(unclipped)].min())

    def share(lb, ub, ratio=0.2, m=mask, seed=0):
        cfg = GRPOConfig(loss_type="clip_cov", clip_cov_ratio=ratio, clip_cov_lb=lb, clip_cov_ub=ub)
        terms, _, cut = clip_cov_terms(logp, old, adv, m, cfg, torch.Generator().manual_seed(seed))
        return cut, terms

    assert share(top, 100.0)[0] == 0.0 and share(-100.0, bottom)[0] == 0.0  # on a bound: no candidate
    assert share(-100.0, 100.0, ratio=0.01)[0] == pytest.approx(1 / 11)  # floor(0.11) = 0: one cut all the same
    first, again = share(-100.0, 100.0, seed=4)[1], share(-100.0, 100.0, seed=4)[1]
    assert torch.equal(first, again)
    one = torch.zeros_like(mask)
    i, j = np.argwhere(unclipped)[0]
    one[i, j] = 1.0  # a single valid token, unclipped: its covariance is 0, inside (-100, 100)
    assert share(-100.0, 100.0, m=one)[0] == 1.0


# ----------------------------------------------------------------------------- entropy (TRL's rules)


def test_high_entropy_mask_keeps_the_top_quantile():
    entropy = torch.tensor([[0.1, 0.5, 2.0, 0.0], [1.5, 0.7, 0.2, 3.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.float64)
    values = np.array([0.1, 0.5, 2.0, 1.5, 0.7, 0.2, 3.0])
    threshold = np.quantile(values, 0.7)  # top 30%
    kept = high_entropy_mask(entropy, mask, 0.3)
    assert kept.tolist() == [
        [bool(v >= threshold) for v in (0.1, 0.5, 2.0)] + [False],
        [bool(v >= threshold) for v in (1.5, 0.7, 0.2, 3.0)],
    ]
    assert int(kept.sum()) == 2  # the 0.7 quantile interpolates to 1.6: 2.0 and 3.0


def test_adaptive_entropy_coefficient_follows_trls_rule():
    """Skywork-OR1 as TRL: the bonus is off until an entropy at or below the target is measured; the coefficient
    moves by delta each optimizer step toward more bonus below the target, less above, inside [min, max]."""
    cfg = GRPOConfig(
        entropy_coef=0.01,
        use_adaptive_entropy=True,
        entropy_coef_min=0.0,
        entropy_coef_max=0.02,
        entropy_coef_delta=0.006,
        entropy_target=0.5,
    )
    cfg.validate()
    control = EntropyControl(cfg, dict)
    applied = []
    for measured in (0.9, 0.5, 0.3, 0.2, 0.8, 0.1):  # 0.5: at the target counts as below
        applied.append(control.applied())
        control.measured(measured)
    # coef after each: 0.004, 0.010, 0.016, 0.020 (max), 0.014, 0.020; applied only after a measure <= 0.5
    assert applied == pytest.approx([0.0, 0.0, 0.010, 0.016, 0.020, 0.0])
    assert control.state == pytest.approx({"coef": 0.020, "last": 0.1})


def test_a_fixed_entropy_coefficient_applies_at_every_step():
    control = EntropyControl(GRPOConfig(entropy_coef=0.03), dict)
    for measured in (0.9, 0.1):
        assert control.applied() == 0.03
        control.measured(measured)
    assert control.state == {"coef": 0.03, "last": math.inf}  # kept in the optimizer's state, not moved
    off = EntropyControl(GRPOConfig(), lambda: pytest.fail("no state is asked for without a bonus"))
    assert not off.enabled and off.applied() == 0.0


def test_an_adaptive_coefficient_starting_at_zero_is_on_and_kept_in_the_optimizers_state():
    """use_adaptive_entropy with entropy_coef 0 (TRL's start from 0): the bonus is on, its state is the dict the
    optimizer checkpoints, and a low entropy raises the coefficient there by delta."""
    held = {}
    control = EntropyControl(GRPOConfig(use_adaptive_entropy=True, entropy_coef=0.0, entropy_target=0.5), lambda: held)
    assert control.enabled and held == {"coef": 0.0, "last": math.inf}
    control.measured(0.25)
    assert held == pytest.approx({"coef": 0.005, "last": 0.25}) and control.applied() == pytest.approx(0.005)


def test_the_entropy_threshold_is_inclusive_and_no_token_is_selected_without_tokens():
    """1 - quantile = 0.75 of the five entropies 0..4 is 3 exactly (torch.quantile's linear rule lands on a token):
    tokens at or above it, 3 and 4, are kept, as TRL's `>=`; padding never is; an all-padding batch keeps none."""
    entropy = torch.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    assert high_entropy_mask(entropy, mask, 0.25).tolist() == [[False, False, False], [True, True, False]]
    none = high_entropy_mask(entropy, torch.zeros_like(mask), 0.25)
    assert none.dtype == torch.bool and none.shape == mask.shape and not none.any()


def test_the_covariance_of_a_single_valid_token_is_zero():
    from escov.llm.grpo_covariance import _covariance

    valid = torch.tensor([[False, True, False]])
    logp, a = torch.tensor([[-1.0, -2.0, -3.0]]), torch.tensor([[0.5, 0.5, 0.5]])
    assert _covariance(logp, a, valid)[0, 1] == 0.0  # its own means: a - a = 0


# ----------------------------------------------------------------------------- exploration across steps


def test_zero_success_gating_updates_only_prompts_never_solved_before():
    state = {}
    adv = np.ones((3, 2))
    out, share = gate_solved(adv, ["a", "b", "c"], np.array([[0, 1], [0, 0], [0, 0]], bool), state)
    assert share == 0.0 and np.all(out == 1.0)  # nothing solved before the first step
    out, share = gate_solved(adv, ["a", "b", "c"], np.array([[0, 0], [1, 0], [0, 0]], bool), state)
    assert out.tolist() == [[0, 0], [1, 1], [1, 1]] and share == pytest.approx(1 / 3)
    out, _ = gate_solved(adv[:2], ["b", "c"], np.zeros((2, 2), bool), state)
    assert out.tolist() == [[0, 0], [1, 1]]
    assert state["solved"] == ["a", "b"]


def test_outcome_bonus_is_c_over_root_count_of_the_answer_so_far():
    state = {}
    first = outcome_bonus([["1", "1", None, "2"]], ["p"], 0.5, state)
    np.testing.assert_allclose(first, [[0.5 / math.sqrt(2), 0.5 / math.sqrt(2), 0.0, 0.5]])
    second = outcome_bonus([["2", "3", "1", "1"]], ["p"], 0.5, state)
    np.testing.assert_allclose(second, [[0.5 / math.sqrt(2), 0.5, 0.5 / 2, 0.5 / 2]])
    other = outcome_bonus([["1"]], ["q"], 0.5, state)  # counts are per prompt
    np.testing.assert_allclose(other, [[0.5]])
    # the counts the next step continues from (kept with the optimizer's state): state["counts"], nothing else
    assert state == {"counts": {"p": {"1": 4, "2": 2, "3": 1}, "q": {"1": 1}}}


def test_a_step_without_prompts_gates_no_share():
    out, share = gate_solved(np.zeros((0, 4)), [], np.zeros((0, 4), bool), {"solved": ["a"]})
    assert out.shape == (0, 4) and share == 0.0


def test_sapo_temperatures_set_the_soft_gate():
    """sapo: l_t = -(4 / tau) sigmoid(tau (w_t - 1)) A, tau = sapo_temperature_pos for A > 0, _neg otherwise,
    averaged as grpo (per completion, then over completions); written out token by token."""
    logp, old, adv, mask = _batch(seed=7)
    cfg = GRPOConfig(loss_type="sapo", sapo_temperature_pos=2.0, sapo_temperature_neg=0.5, beta=0.0)
    cfg.validate()
    rows = []
    for i in range(3):
        tau = 2.0 if adv[i] > 0 else 0.5
        terms = [
            -(4 / tau) / (1 + math.exp(-tau * (math.exp(lp - o) - 1))) * float(adv[i])
            for lp, o, m in zip(logp[i].tolist(), old[i].tolist(), mask[i].tolist())
            if m
        ]
        rows.append(sum(terms) / len(terms))
    loss, _, _ = grpo_loss(logp, old, None, adv, mask, cfg, n_seq=3, n_tok=float(mask.sum()))
    assert float(loss) == pytest.approx(sum(rows) / 3, rel=1e-12)


@pytest.mark.parametrize("estimator", ["grpo_passk", "passk_analytic"])
def test_a_steps_advantages_follow_the_estimator(tiny_model_dir, estimator):
    """One on-policy GRPO step (beta 0, loss grpo): every token's term is -A of its completion, so the loss is
    -mean(A); A from the step's own rewards by the estimator's formula, computed here by hand."""
    from escov.llm.engines.hf import HFEngine
    from escov.llm.grpo import GRPO
    from tests.llm.tasks_for_tests import CountdownScoredBy, digit_share

    task = CountdownScoredBy("digit-share", digit_share)  # correct: every character a digit
    engine = HFEngine(str(tiny_model_dir))
    cfg = GRPOConfig(
        num_generations=6,
        learning_rate=1e-4,
        beta=0.0,
        adv_estimator=estimator,
        **({"pass_k": 3} if estimator == "passk_analytic" else {}),
    )
    cfg.validate()
    grpo = GRPO(
        cfg,
        engine,
        task,
        engine.model,
        None,
        engine.prompt_token_ids,
        temperature=1.0,
        max_new_tokens=6,
        seed=1,
        pad_id=engine.tokenizer.pad_token_id,
    )
    out = grpo.step(task.problems("train", 4, seed=2), 0)
    by_hand = []
    for row, ok in zip(out.rollouts.rewards.tolist(), (out.rollouts.rewards >= 1.0).tolist()):
        if estimator == "grpo_passk":
            best, gap = row.index(max(row)), max(row) - sorted(row)[-2]
            by_hand += [gap / (statistics.stdev(row) + 1e-6) if i == best else 0.0 for i in range(6)]
        else:
            c = sum(ok)
            mean = 1 - math.comb(6 - c, 3) / math.comb(6, 3)
            sd = math.sqrt(mean * (1 - mean))
            wrong = (1 - mean - math.comb(6 - c - 1, 2) / math.comb(5, 2)) / sd if sd else 0.0
            by_hand += [((1 - mean) / sd if sd else 0.0) if o else wrong for o in ok]
    assert any(by_hand), out.rollouts.rewards  # the step had a signal
    assert out.loss == pytest.approx(-statistics.fmean(by_hand), rel=1e-5, abs=1e-7)
    assert out.variants["adv_nonzero_share"] == pytest.approx(np.mean(np.array(by_hand) != 0))


def test_pass_k_is_bounded_by_g_only_where_an_estimator_reads_it():
    GRPOConfig(num_generations=2).validate()  # the default k = 4, unread by adv_estimator grpo, beside G = 2
    with pytest.raises(ValueError, match=r"grpo.pass_k must be an integer in \[1, grpo.num_generations=2\], got 4"):
        GRPOConfig(num_generations=2, adv_estimator="passk_analytic").validate()
    with pytest.raises(ValueError, match="grpo.pass_k must be an integer"):
        GRPOConfig(pass_k=0).validate()


def test_the_adaptive_coefficient_stops_at_its_floor_and_starts_from_zero_when_asked():
    """coef_min 0.008: above the target the coefficient falls by delta 0.005 but not below 0.008 (0.015 -> 0.010 ->
    0.008); an adaptive bonus whose coefficient starts at 0 is on (it grows from 0: 0.005 after a low entropy)."""
    cfg = GRPOConfig(
        use_adaptive_entropy=True,
        entropy_coef=0.015,
        entropy_coef_min=0.008,
        entropy_coef_max=0.05,
        entropy_coef_delta=0.005,
        entropy_target=0.5,
    )
    cfg.validate()
    control = EntropyControl(cfg, dict)
    coefs = []
    for measured in (0.9, 0.9, 0.9):
        control.measured(measured)
        coefs.append(control.state["coef"])
    assert coefs == pytest.approx([0.010, 0.008, 0.008])
    start_at_zero = replace(cfg, entropy_coef=0.0, entropy_coef_min=0.0)
    start_at_zero.validate()
    grows = EntropyControl(start_at_zero, dict)
    assert grows.enabled and grows.applied() == 0.0
    grows.measured(0.1)
    assert grows.state["coef"] == pytest.approx(0.005) and grows.applied() == pytest.approx(0.005)
