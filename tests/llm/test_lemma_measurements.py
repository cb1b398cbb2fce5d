"""The population estimators against exact values computed by enumeration (no sampling)."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import binom

from escov.llm.lemma_measurements import jspol_estimate, jssucc_estimates, lemma2_estimates, mixture_terms
from escov.theory.metrics import binary_entropy, generalized_js


def _random_members(seed, n, v):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, v)) * rng.uniform(0.1, 3)
    return np.exp(logits) / np.exp(logits).sum(1, keepdims=True)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 6), st.integers(2, 7))
def test_mixture_estimator_is_exact_in_expectation(seed, n, v):
    """E_{y ~ pi_bar} f(y) = (1/N) sum_j sum_y pi_j(y) f(y) equals JSpol_N computed from the distributions."""
    pi = _random_members(seed, n, v)
    f = mixture_terms(np.log(pi).T)  # f(y) for every outcome y: logp[y, k] = log pi_k(y)
    assert np.all(f >= -1e-12)
    expectation = float(np.mean([np.dot(pi[j], f) for j in range(n)]))
    assert math.isclose(expectation, generalized_js(pi), rel_tol=1e-9, abs_tol=1e-12)


def test_stratified_estimate_covers_the_true_value():
    pi = _random_members(3, 4, 5)
    rng = np.random.default_rng(0)
    m = 400
    ys = np.array([rng.choice(5, size=m, p=pi[j]) for j in range(4)])  # [j, s]
    logp = np.log(pi).T[ys]  # [j, s, k]
    est, se = jspol_estimate(logp)
    assert abs(est - generalized_js(pi)) < 4 * se


def _expect_over_outcomes(p, m, fn):
    """E[fn(correct)] over independent Binomial(m, p_j) member counts, by enumeration."""
    total = 0.0
    for counts in itertools.product(range(m + 1), repeat=len(p)):
        weight = np.prod([binom.pmf(c, m, pj) for c, pj in zip(counts, p)])
        correct = np.array([[s < c for s in range(m)] for c in counts])
        total += weight * fn(correct)
    return total


def test_miller_madow_reduces_the_plug_in_bias_of_jssucc():
    p, m = np.array([0.3, 0.6]), 6
    truth = float(binary_entropy(p.mean()) - binary_entropy(p).mean())
    plug = _expect_over_outcomes(p, m, lambda c: jssucc_estimates(c, n_permutations=1)["plug_in"])
    mm = _expect_over_outcomes(p, m, lambda c: jssucc_estimates(c, n_permutations=1)["miller_madow"])
    assert plug > truth  # the plug-in value is biased upward
    assert abs(mm - truth) < 0.5 * abs(plug - truth)


def test_permutation_null_measures_the_bias_when_members_are_equal():
    p, m = np.array([0.4, 0.4, 0.4]), 4
    plug = _expect_over_outcomes(p, m, lambda c: jssucc_estimates(c, n_permutations=1)["plug_in"])
    null = _expect_over_outcomes(p, m, lambda c: jssucc_estimates(c, n_permutations=50, seed=1)["permutation_null"])
    assert plug > 0.02  # the truth is 0: all the plug-in value is bias
    assert abs(null - plug) < 0.25 * plug


def test_lemma2_distinct_members_estimate_is_unbiased():
    """1 - e_K(1 - p_hat) / C(N, K) is multilinear in the independent p_hat_j, so unbiased."""
    p, m = np.array([0.1, 0.5, 0.8]), 3
    for k in (1, 2, 3):
        exact = 1 - np.mean([np.prod([1 - p[j] for j in s]) for s in itertools.combinations(range(3), k)])
        est = _expect_over_outcomes(p, m, lambda c: lemma2_estimates(c, np.array([True, False]), [k])["distinct_members_pass"][0])
        assert math.isclose(est, exact, rel_tol=1e-9)
    # the direct estimate (sample s of every member is one draw) over every sample's own outcome
    direct = 0.0
    for bits in itertools.product([False, True], repeat=3 * m):
        c = np.array(bits).reshape(3, m)
        weight = np.prod(np.where(c, p[:, None], 1 - p[:, None]))
        direct += weight * lemma2_estimates(c, np.array([True]), [3])["direct_one_from_each"]
    assert math.isclose(direct, 1 - np.prod(1 - p), rel_tol=1e-9)


def test_fisher_sketch_averages_the_token_exactly(tiny_model_dir):
    """At one completion position the sketch's expectation over xi is sum_v pi(v) ||grad log pi(v | x)||^2,
    computed here by one backward pass per token v of the vocabulary."""
    import torch

    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import fisher_sketch

    torch.manual_seed(0)
    engine = HFEngine(tiny_model_dir)
    model, temperature = engine.model, 0.7
    params = list(model.parameters())
    prompt = engine.prompt_token_ids("12 + 7 =")
    logp = torch.log_softmax(model(input_ids=torch.tensor([prompt])).logits[0, -1].float() / temperature, dim=-1)
    exact = 0.0
    for v in range(logp.numel()):
        grads = torch.autograd.grad(logp[v], params, retain_graph=True, allow_unused=True)
        exact += float(logp[v].detach().exp()) * sum(float((g.double() ** 2).sum()) for g in grads if g is not None)
    generator = torch.Generator().manual_seed(1)
    est = np.array([fisher_sketch(model, params, [prompt], [[5]], temperature, engine.tokenizer.pad_token_id, generator)
                    for _ in range(500)])
    assert abs(est.mean() - exact) < 3 * est.std(ddof=1) / math.sqrt(est.size)
    assert est.std(ddof=1) / math.sqrt(est.size) < 0.06 * exact  # precise enough to catch a wrong factor
    # the completion's own token does not matter, only its context
    other = np.array([fisher_sketch(model, params, [prompt] * 64, [[9]] * 64, temperature, engine.tokenizer.pad_token_id,
                                    torch.Generator().manual_seed(1)) for _ in range(1)])
    assert other[0] == pytest.approx(fisher_sketch(model, params, [prompt] * 64, [[5]] * 64, temperature,
                                                   engine.tokenizer.pad_token_id, torch.Generator().manual_seed(1)))


def test_success_diversity_by_hand():
    """JSsucc, Lemma 2's gap and its local form on the members' rates, beside their permutation nulls."""
    from escov.llm.lemma_measurements import success_diversity

    h = lambda p: float(binary_entropy(p))
    one = success_diversity(np.array([[True, False], [False, False]]), n_permutations=50)
    js = h(0.25) - (h(0.5) + h(0.0)) / 2
    assert one["jssucc"] == pytest.approx(js)
    assert one["gap"] == pytest.approx((1 - 0.5 * 1.0) - (1 - 0.75 ** 2))
    assert one["local"] == pytest.approx(2 * 0.25 * 0.75 * js)
    # one success among four outcomes: every dealing gives the same rates up to order, so the null is the plug-in
    assert [one[f"{k}_null"] for k in ("jssucc", "gap", "local")] == pytest.approx([one[k] for k in ("jssucc", "gap", "local")])
    two = success_diversity(np.array([[True, True], [False, False]]), n_permutations=3000, seed=1)
    assert two["jssucc"] == pytest.approx(math.log(2)) and two["gap"] == pytest.approx(0.25)
    # dealt at random: rates (1, 0) or (0, 1) with chance 2/6, (1/2, 1/2) otherwise
    assert two["jssucc_null"] == pytest.approx(math.log(2) / 3, abs=0.02)
    assert two["gap_null"] == pytest.approx(0.25 / 3, abs=0.01)
