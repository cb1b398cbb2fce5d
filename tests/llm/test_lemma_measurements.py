"""The population estimators against exact values computed by enumeration (no sampling)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
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


def test_miller_madow_adds_half_over_m_per_outcome_seen_beyond_the_first_by_hand():
    """Members with 0, 3 and 6 of m = 6 correct: the pooled 9 of 18 sees both outcomes (h = log 2, + 1/36); the
    members see one outcome, both and one (h = 0, log 2 + 1/12, 0), so MM = log 2 + 1/36 - (log 2 + 1/12) / 3."""
    correct = np.array([[s < c for s in range(6)] for c in (0, 3, 6)])
    got = jssucc_estimates(correct, n_permutations=1)
    assert got["miller_madow"] == pytest.approx(math.log(2) + 1 / 36 - (math.log(2) + 1 / 12) / 3, abs=1e-12)
    assert got["plug_in"] == pytest.approx(math.log(2) - math.log(2) / 3, abs=1e-12)
    assert got["first_order_bias"] == pytest.approx((1 - 1 / 3) / 12, abs=1e-15)


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
        est = _expect_over_outcomes(
            p, m, lambda c: lemma2_estimates(c, np.array([True, False]), [k])["distinct_members_pass"][0]
        )
        assert math.isclose(est, exact, rel_tol=1e-9)
    # the direct estimate (sample s of every member is one draw) over every sample's own outcome
    direct = 0.0
    for bits in itertools.product([False, True], repeat=3 * m):
        c = np.array(bits).reshape(3, m)
        weight = np.prod(np.where(c, p[:, None], 1 - p[:, None]))
        direct += weight * lemma2_estimates(c, np.array([True]), [3])["direct_one_from_each"]
    assert math.isclose(direct, 1 - np.prod(1 - p), rel_tol=1e-9)


def _directions(model, k, seed):
    import torch

    g = torch.Generator().manual_seed(seed)
    return [{n: torch.randn(p.shape, generator=g) for n, p in model.named_parameters()} for _ in range(k)]


def test_direction_gram_is_the_fisher_along_the_directions_by_enumeration(tiny_model_dir):
    """At one completion position, G[j, k] = sum_v pi(v) (grad log pi(v | x) . d_j)(grad log pi(v | x) . d_k): the
    Fisher of the token's categorical along the directions, computed here by one backward pass per token v of the
    vocabulary. A padded row of a longer batch gives the same values as alone."""
    import torch

    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import direction_gram

    engine = HFEngine(tiny_model_dir)
    model, temperature, pad = engine.model, 0.7, engine.tokenizer.pad_token_id
    center = {n: p.detach().clone() for n, p in model.named_parameters()}
    dirs = _directions(model, 3, 0)
    prompt = engine.prompt_token_ids("12 + 7 =")
    logp = torch.log_softmax(model(input_ids=torch.tensor([prompt])).logits[0, -1].float() / temperature, dim=-1)
    params = list(model.parameters())
    names = [n for n, _ in model.named_parameters()]
    exact = np.zeros((3, 3))
    for v in range(logp.numel()):
        grads = torch.autograd.grad(logp[v], params, retain_graph=True, allow_unused=True)
        dots = np.array(
            [
                sum(float((g.double() * d[n].double()).sum()) for n, g in zip(names, grads) if g is not None)
                for d in dirs
            ]
        )
        exact += float(logp[v].detach().exp()) * np.outer(dots, dots)
    gram = direction_gram(model, center, [prompt, prompt], [[5], [5, 9, 11]], dirs, temperature, pad)
    assert gram.shape == (3, 3, 2)
    np.testing.assert_allclose(gram[:, :, 0], exact, rtol=1e-4, atol=1e-6 * np.abs(exact).max())
    assert model.config._attn_implementation == "sdpa"  # the model's attention is given back
    # the completion's own token does not matter, only its context; the second row sums three positions
    other = direction_gram(model, center, [prompt], [[9]], dirs, temperature, pad)
    np.testing.assert_allclose(other[:, :, 0], gram[:, :, 0], rtol=1e-6)
    assert np.all(np.diagonal(gram[:, :, 1]) > np.diagonal(gram[:, :, 0]))


def test_population_prediction_is_the_centered_quadratic_form():
    from escov.llm.lemma_measurements import population_prediction

    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 6))
    fisher, eps = a @ a.T, rng.normal(size=(4, 6))
    d = eps - eps.mean(axis=0)
    expected = 0.5 * 0.01**2 * np.mean([x @ fisher @ x for x in d])
    assert population_prediction(eps @ fisher @ eps.T, 0.01) == pytest.approx(expected)
    # its mean over the noise is (sigma^2/2)(1 - 1/N) tr I (Monte Carlo over 4000 populations)
    draws = [population_prediction(e @ fisher @ e.T, 0.01) for e in rng.normal(size=(4000, 4, 6))]
    assert np.mean(draws) == pytest.approx(0.5 * 0.01**2 * 0.75 * np.trace(fisher), rel=0.05)


def test_chain_rule_term_averages_to_the_exact_kl_to_the_mixture(tiny_model_dir):
    """Over two-token completions y = (a, b): sum_a pi_j(a | x) chain(a, b) (chain does not depend on the last token b)
    equals KL(pi_j || pi_bar) computed from the joint probabilities pi_k(a, b) = pi_k(a) pi_k(b | a) of every pair,
    and the scores are the sequences' log-probabilities."""
    import torch

    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import _load, score_population

    engine = HFEngine(tiny_model_dir)
    model, temperature, pad = engine.model, 0.8, engine.tokenizer.pad_token_id
    center = {n: p.detach().clone() for n, p in model.named_parameters()}
    dirs = _directions(model, 2, 1)
    members = 2
    weights = lambda k: ((n, center[n] + (0.02 * dirs[k][n] if k < members else 0)) for n in center)
    prompt = engine.prompt_token_ids("3 4 =")
    vocab = model.config.vocab_size
    joint = []
    for k in range(members):
        _load(model, weights(k))
        with torch.no_grad():
            first = torch.log_softmax(model(input_ids=torch.tensor([prompt])).logits[0, -1].double() / temperature, -1)
            seqs = torch.tensor([prompt + [a] for a in range(vocab)])
            second = torch.log_softmax(model(input_ids=seqs).logits[:, -1].double() / temperature, -1)
        joint.append((first[:, None] + second).numpy())  # log pi_k(a, b)
    joint = np.array(joint)
    log_mix = np.logaddexp(joint[0], joint[1]) - math.log(2)
    exact = [float(np.sum(np.exp(joint[j]) * (joint[j] - log_mix))) for j in range(members)]
    rows = [(j, a) for j in range(members) for a in range(vocab)]
    logp, chain = score_population(
        model,
        weights,
        members,
        [prompt] * len(rows),
        [[a, 7] for _, a in rows],
        [j for j, _ in rows],
        temperature,
        pad,
        micro_batch=64,
    )
    for j in range(members):
        mine = np.array([r[0] == j for r in rows])
        p_first = np.exp(joint[j]).sum(axis=1)
        assert float(np.dot(p_first, chain[mine])) == pytest.approx(exact[j], rel=1e-6)
    np.testing.assert_allclose(logp[:vocab, 1], joint[1][:, 7], rtol=1e-6)  # member 1 scores member 0's rows
    _load(model, weights(members))


def test_success_diversity_by_hand():
    """JSsucc, Lemma 2's gap and its local form on the members' rates, beside their permutation nulls."""
    from escov.llm.lemma_measurements import success_diversity

    h = lambda p: float(binary_entropy(p))
    one = success_diversity(np.array([[True, False], [False, False]]), n_permutations=50)
    js = h(0.25) - (h(0.5) + h(0.0)) / 2
    assert one["jssucc"] == pytest.approx(js)
    assert one["gap"] == pytest.approx((1 - 0.5 * 1.0) - (1 - 0.75**2))
    assert one["local"] == pytest.approx(2 * 0.25 * 0.75 * js)
    # one success among four outcomes: every dealing gives the same rates up to order, so the null is the plug-in
    assert [one[f"{k}_null"] for k in ("jssucc", "gap", "local")] == pytest.approx(
        [one[k] for k in ("jssucc", "gap", "local")]
    )
    two = success_diversity(np.array([[True, True], [False, False]]), n_permutations=3000, seed=1)
    assert two["jssucc"] == pytest.approx(math.log(2)) and two["gap"] == pytest.approx(0.25)
    # dealt at random: rates (1, 0) or (0, 1) with chance 2/6, (1/2, 1/2) otherwise
    assert two["jssucc_null"] == pytest.approx(math.log(2) / 3, abs=0.02)
    assert two["gap_null"] == pytest.approx(0.25 / 3, abs=0.01)


def test_antithetic_population_is_sampled_and_scored_under_the_mirrored_members(tiny_model_dir):
    """population_samples(sign=-1) samples from and scores members theta - sigma eps_j: member 1's completions, drawn
    again here from those weights with the same seed, have the log-probabilities it reports under every member and
    the center; the chain-rule terms are KL terms (>= 0)."""
    import torch

    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import _load, population_direction, population_samples
    from escov.llm.rollout import completion_logprobs, derive_seed, pad_batch, rollout
    from escov.llm.tasks import get_task

    engine = HFEngine(tiny_model_dir)
    task = get_task("countdown3")
    problems = task.problems("test", 1, seed=0)
    center = {n: p.detach().clone() for n, p in engine.model.named_parameters()}
    sigma, temperature, pad = 0.05, 0.8, engine.tokenizer.pad_token_id
    logp, correct, chain = population_samples(
        engine=engine,
        scorer=engine.model,
        task=task,
        problems=problems,
        encode=engine.prompt_token_ids,
        pad_id=pad,
        center=center,
        sigma=sigma,
        members=2,
        samples=2,
        temperature=temperature,
        max_new_tokens=5,
        seed=3,
        step=0,
        sign=-1.0,
    )
    assert logp.shape == (1, 2, 2, 3) and chain.shape == correct.shape == (1, 2, 2) and np.all(chain >= 0)
    weights = lambda k: (
        {n: center[n] - sigma * population_direction(center, 3, 0, k)[n] for n in center} if k < 2 else center
    )
    _load(engine.model, weights(1).items())
    out = rollout(
        engine,
        task,
        problems,
        n=2,
        temperature=temperature,
        max_new_tokens=5,
        seed=derive_seed(3, 0, "population-sample", 1, "sign", -1.0),
        step=0,
    )
    prompt = engine.prompt_token_ids(problems[0].prompt)
    seq, att, mask = pad_batch([prompt] * 2, [c.token_ids for c in out.completions[0]], pad)
    for k in range(3):
        _load(engine.model, weights(k).items())
        with torch.no_grad():
            expected = completion_logprobs(engine.model, seq, att, mask, temperature).sum(1).numpy()
        np.testing.assert_allclose(logp[0, 1, :, k], expected, rtol=1e-4)
    _load(engine.model, center.items())


def test_the_stratified_mixture_estimate_by_hand_on_more_samples_than_members():
    """jspol_estimate on logp [N = 2, m = 3, N = 2]: each sample's f(y) = (1/N) sum_k r_k log r_k over its own row of N
    log-probabilities (the last axis), then the mean over the 6 samples and the stratified standard error."""
    pi = np.array([[0.5, 0.25], [0.125, 0.5], [0.25, 0.25]])  # pi[s, k] for the three samples of member 0
    logp = np.log(np.stack([pi, pi[::-1]]))  # member 1's samples are member 0's in reverse order

    def f(row):
        r = 2 * row / row.sum()
        return float(np.sum(r * np.log(r)) / 2)

    terms = np.array([[f(row) for row in pi], [f(row) for row in pi[::-1]]])
    np.testing.assert_allclose(mixture_terms(logp), terms, rtol=1e-12)
    mean, se = jspol_estimate(logp)
    assert mean == pytest.approx(terms.mean())
    assert se == pytest.approx(math.sqrt(2 * terms[0].var(ddof=1) / (2 * 2 * 3)))


def test_the_permutation_nulls_are_the_mean_over_200_seeded_deals():
    """Unless told otherwise, 200 deals of the pooled outcomes to the members from numpy's generator seeded 0 (each a
    permutation of the flattened outcomes, cut into the members' rows): the null is each statistic's mean over them."""
    from escov.llm.lemma_measurements import success_diversity
    from escov.theory.metrics import jssucc

    correct = np.array([[True, True, False, False, True], [False, False, False, True, False], [True] * 5])

    def null_jssucc(deals, seed):
        rng = np.random.default_rng(seed)
        return np.mean([jssucc(rng.permutation(correct.reshape(-1)).reshape(3, 5).mean(axis=1)) for _ in range(deals)])

    for seed in (0, 7):
        assert success_diversity(correct, seed=seed)["jssucc_null"] == pytest.approx(null_jssucc(200, seed), rel=1e-12)
        assert jssucc_estimates(correct, seed=seed)["permutation_null"] == pytest.approx(null_jssucc(200, seed))
    assert success_diversity(correct)["jssucc_null"] == pytest.approx(null_jssucc(200, 0), rel=1e-12)
    assert jssucc_estimates(correct)["permutation_null"] == pytest.approx(null_jssucc(200, 0), rel=1e-12)
    assert success_diversity(correct, n_permutations=20, seed=3)["jssucc_null"] == pytest.approx(null_jssucc(20, 3))


def test_the_validity_parameter_is_the_mean_k3_of_the_centers_ratio_by_hand():
    """s from logp [N = 2, m = 3, N + 1]: k3 = r - 1 - log r with r = pi_0(y) / pi_j(y) (k = N the center), averaged
    over the 6 samples. The member's own column is j; the other member's column is never read."""
    from escov.llm.lemma_measurements import validity_estimate

    own = np.log([[0.5, 0.25, 0.125], [0.25, 0.5, 0.5]])  # log pi_j(y_js)
    center = np.log([[0.5, 0.5, 0.0625], [0.0625, 0.5, 1.0]])  # log pi_0(y_js)
    logp = np.full((2, 3, 3), np.log(0.3))
    logp[0, :, 0], logp[1, :, 1], logp[:, :, 2] = own[0], own[1], center
    ratios = [1.0, 2.0, 0.5, 0.25, 1.0, 2.0]  # their logs do not sum to 0: a sign slip in either term shows
    expected = sum(r - 1 - math.log(r) for r in ratios) / 6  # (2 (1 - ln 2) + (ln 2 - 0.5) + (ln 4 - 0.75)) / 6
    assert expected == pytest.approx((0.75 + math.log(2)) / 6)
    assert validity_estimate(logp) == pytest.approx(expected, rel=1e-12)


def test_the_score_norm_is_the_squared_gradient_of_the_sequences_log_probability(tiny_model_dir):
    """||grad_theta log pi(y | x)||^2 over the chosen parameters, against a gradient taken here by a separate forward:
    log pi(y | x) = sum_t log softmax(logits_t / T)[y_t] over the completion's tokens, one backward pass, then the
    sum of the squared gradient entries (not their absolute values, not a norm)."""
    import torch

    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import score_sq_norms

    engine = HFEngine(tiny_model_dir)
    model, temperature = engine.model, 0.7
    params = [p for n, p in model.named_parameters() if "layers.0." in n]
    prompts = [engine.prompt_token_ids("3 4 ="), engine.prompt_token_ids("12 5 7 =")]
    completions = [[5, 9, 11], [7, 3]]
    got = score_sq_norms(model, params, prompts, completions, temperature, engine.tokenizer.pad_token_id)
    for value, prompt, completion in zip(got, prompts, completions):
        model.zero_grad(set_to_none=True)
        ids = torch.tensor([prompt + completion])
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].double() / temperature
        logp = torch.log_softmax(logits, -1)[torch.arange(len(completion)), torch.tensor(completion)].sum()
        logp.backward()
        expected = sum(float((p.grad.double() ** 2).sum()) for p in params if p.grad is not None)
        model.zero_grad(set_to_none=True)
        assert value == pytest.approx(expected, rel=1e-6) and expected > 0
