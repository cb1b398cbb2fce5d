"""The toy policies' and the theory formulas' inputs, each refusal word for word with the boundary accepted beside it,
the policies' arrays kept as float arrays, batches computed row by row, and how the Lemma 1 Monte Carlo estimate is
assembled from antithetic pairs (theory/policy.py, categorical.py, autoregressive.py, population.py, grpo.py,
coverage.py)."""

import itertools

import numpy as np
import pytest

from escov.theory import coverage, grpo, lemmas, population
from escov.theory.autoregressive import SequencePolicy
from escov.theory.categorical import CategoricalPolicy


def _refused(fn, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as err:
        fn(*args, **kwargs)
    return str(err.value)


def test_a_categorical_policys_arrays_and_their_refusals():
    policy = CategoricalPolicy([[1, 0], [0, 1], [1, 1]], [0, 0, 1], np.array([True, False, False]))
    assert isinstance(policy.A, np.ndarray) and policy.A.dtype == float and policy.b.dtype == float
    assert policy.correct.tolist() == [True, False, False]
    assert _refused(CategoricalPolicy, np.eye(3), [[0.0, 0, 0]], np.array([True, False, False])) == (
        "b must have 1 axes, got shape (1, 3)"
    )
    assert _refused(CategoricalPolicy, np.eye(3), np.zeros(2), np.array([True, False, False])) == (
        "b must have shape (3,) to match A (3, 3), got (2,)"
    )
    assert _refused(CategoricalPolicy, np.eye(3, 2), np.zeros(3), np.array([True, True, True])) == (
        "correct must mark at least one correct and one wrong outcome"
    )
    tab = CategoricalPolicy.tabular(4, n_correct=2)
    assert tab.correct.tolist() == [True, True, False, False] and np.array_equal(tab.A, np.eye(4))
    assert CategoricalPolicy.tabular(3).correct.tolist() == [True, False, False]
    rand = CategoricalPolicy.random(5, 2, np.random.default_rng(0), n_correct=2)
    assert rand.correct.tolist() == [True, True, False, False, False]
    assert CategoricalPolicy.random(4, 2, np.random.default_rng(0)).correct.tolist() == [True, False, False, False]


def test_a_sequence_policys_arrays_and_their_refusals():
    vocab, dim = 2, 3  # length 2
    n_prefixes = 1 + vocab  # the empty prefix and the first tokens
    correct = np.array([True, False, False, True])
    policy = SequencePolicy(
        np.zeros((n_prefixes, vocab, dim)).tolist(), np.zeros((n_prefixes, vocab)).tolist(), 2, correct
    )
    assert isinstance(policy.W, np.ndarray) and policy.W.dtype == float and policy.b.dtype == float
    assert policy.correct.tolist() == correct.tolist()
    assert (
        _refused(SequencePolicy, np.zeros((3, 2)), np.zeros((3, 2)), 2, correct)
        == "W must have 3 axes, got shape (3, 2)"
    )
    assert (
        _refused(SequencePolicy, np.zeros((3, 2, 3)), np.zeros(3), 2, correct) == "b must have 2 axes, got shape (3,)"
    )
    assert _refused(SequencePolicy, np.zeros((1, 1, 3)), np.zeros((1, 1)), 1, np.array([True])) == (
        "W must have a vocabulary axis of size >= 2, got shape (1, 1, 3)"
    )
    for length_bad in (0, 1.0, True):
        with pytest.raises(ValueError, match=r"^length must be an integer >= 1"):
            SequencePolicy(np.zeros((3, 2, 3)), np.zeros((3, 2)), length_bad, correct)
    shape = "W must be [3, 2, d] and b [3, 2] for length 2, got W (3, 2, 3) and b (2, 2)"
    assert _refused(SequencePolicy, np.zeros((3, 2, 3)), np.zeros((2, 2)), 2, correct) == shape
    assert _refused(SequencePolicy, np.zeros((4, 2, 3)), np.zeros((4, 2)), 2, correct).startswith(
        "W must be [3, 2, d] and b [3, 2] for length 2, got W (4, 2, 3)"
    )
    one = SequencePolicy(np.zeros((1, 3, 2)), np.zeros((1, 3)), 1, np.array([True, False, False]))
    assert one.prefix_probs(np.zeros(2)).tolist() == [1.0]
    # random: a sequence is correct when its tokens sum to 0 modulo the vocabulary
    rand = SequencePolicy.random(3, 2, 2, np.random.default_rng(0))
    seqs = list(itertools.product(range(3), repeat=2))
    assert rand.correct.tolist() == [sum(s) % 3 == 0 for s in seqs]


def test_the_theta_checks_and_the_success_fisher_at_the_edges():
    policy = CategoricalPolicy.tabular(3)
    assert _refused(policy.check_theta, [0.0, np.nan, 0.0]) == "theta must be finite, got NaN or inf"
    assert _refused(policy.check_theta, [0.0, 0.0]) == "theta must have shape [..., 3], got (2,)"
    # a point mass on the correct outcome (p = 1 in floating point): no F_succ
    assert _refused(policy.success_fisher, [800.0, 0.0, 0.0]) == (
        "theta gives success probability 1.0: F_succ needs 0 < p < 1"
    )
    assert _refused(policy.success_fisher, [-800.0, 0.0, 0.0]) == (
        "theta gives success probability 0.0: F_succ needs 0 < p < 1"
    )
    assert policy.success_fisher([0.0, 0.0, 0.0]).shape == (3, 3)


def test_the_grpo_formulas_inputs_and_batches():
    assert _refused(grpo.grpo_weight_limit, 1.0) == "p must lie strictly inside (0, 1) for the large-G limit"
    assert _refused(grpo.grpo_weight_limit, 0.0) == "p must lie strictly inside (0, 1) for the large-G limit"
    assert _refused(grpo.grpo_weight_limit, 1.5) == "p must lie in [0, 1], got values in [1.5, 1.5]"
    assert float(grpo.grpo_weight_limit(0.2)) == pytest.approx(1 / np.sqrt(0.16))
    assert grpo.group_advantages([1.0, 0.0]).tolist() == [1.0, -1.0]  # a group of 2 is a group
    assert _refused(grpo.grpo_prompt_weight, 0.5, 1) == "group_size must be an integer >= 2, got 1"
    assert _refused(grpo.grpo_prompt_weight, 0.5, 2.0) == "group_size must be an integer >= 2, got 2.0"
    probs = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    dz = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]])
    batched = grpo.entropy_change_first_order(probs, dz)
    assert batched.shape == (2,)
    for i in range(2):
        log_pi = np.log(probs[i])
        cov = np.sum(probs[i] * log_pi * dz[i]) - np.sum(probs[i] * log_pi) * np.sum(probs[i] * dz[i])
        assert batched[i] == pytest.approx(-cov)
    assert _refused(grpo.entropy_change_first_order, np.array([0.5, 0.5, 0.0]), np.zeros(3)) == (
        "probs must be strictly positive (a softmax policy) for log pi"
    )
    assert _refused(grpo.entropy_change_first_order, np.array([0.5, 0.6]), np.zeros(2)).startswith("probs ")


def test_the_coverage_formulas_refusals():
    assert _refused(coverage.solvability, np.zeros((2, 3)), np.zeros((3, 3))) == (
        "model and reference counts must cover the same prompts, got (2, 3) and (3, 3)"
    )
    assert _refused(coverage.distinct_correct, ["a", "b"], [True]) == (
        "answers and correct must have one entry per sample: 2 != 1"
    )


def test_the_lemmas_edges():
    assert lemmas.lemma1_prediction(0.0, 0.1, 4) == 0.0  # a zero Fisher trace is a trace
    assert lemmas.validity_parameter(0.0, 0.1) == 0.0
    assert float(lemmas.mean_pass_at_k([0.5], 2)) == pytest.approx(0.75)  # one prompt
    # Proposition 1 with every quantity exact in binary: K sqrt(eps / 2) = 1 x sqrt(0.25) = 0.5
    assert not bool(lemmas.prop1_assumption(0.75, 0.25, 0.5, 1))  # a gap equal to the margin is not above it
    assert bool(lemmas.prop1_assumption(0.875, 0.25, 0.5, 1))
    assert not bool(lemmas.prop1_conclusion(0.5, 0.75, 0.25, 0.5, 1))  # the floor 0.25 equals J_0: not above it
    assert bool(lemmas.prop1_conclusion(0.5, 0.875, 0.25, 0.5, 1))


def test_the_lemma_1_estimate_is_assembled_from_antithetic_pairs():
    """E[JSpol_N] from R antithetic pairs (eps, -eps): the pair means' mean and standard error (ddof 1, over R), the
    residual against the second-order Q of the same noise; the prediction from tr I (F_succ only when asked)."""
    policy = CategoricalPolicy.random(4, 3, np.random.default_rng(1))
    theta = np.array([0.2, -0.1, 0.3])
    est = population.lemma1_monte_carlo(policy, theta, 0.3, 3, 5, np.random.default_rng(4))
    eps = np.random.default_rng(4).standard_normal((5, 3, 3))
    pair = 0.5 * (
        population.population_jspol(policy, theta, 0.3, eps) + population.population_jspol(policy, theta, 0.3, -eps)
    )
    q = population.quadratic_form(policy.fisher(theta), 0.3, eps)
    assert est.measured == pytest.approx(pair.mean())
    assert est.stderr == pytest.approx(pair.std(ddof=1) / np.sqrt(5))
    assert est.residual == pytest.approx((pair - q).mean())
    assert est.residual_stderr == pytest.approx((pair - q).std(ddof=1) / np.sqrt(5))
    assert (est.n, est.draws, est.sigma) == (3, 5, 0.3)
    assert est.predicted == pytest.approx(lemmas.lemma1_prediction(np.trace(policy.fisher(theta)), 0.3, 3))
    two = population.lemma1_monte_carlo(policy, theta, 0.3, 3, 2, np.random.default_rng(4))
    assert two.draws == 2
    assert _refused(population.lemma1_monte_carlo, policy, theta, 0.3, 3, 1, np.random.default_rng(4)) == (
        "draws must be >= 2, got 1"
    )
    # one population of N members as an [N, d] array; sigma must be positive
    assert population.population_jspol(policy, theta, 0.3, eps[0]).shape == ()
    assert (
        _refused(population.population_jspol, policy, theta, 0.0, eps[0])
        == "sigma must be a finite number > 0, got 0.0"
    )
    assert population.population_jspol(policy, theta, 0.3, eps[0]) == pytest.approx(
        float(population.population_jspol(policy, theta, 0.3, eps[:1])[0])
    )


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def test_the_policies_probabilities_by_hand_with_biases_and_over_a_batch_of_thetas():
    """A sequence policy of length 2 over 2 tokens: P(y1 y2) = softmax(W_0 theta + b_0)[y1] softmax(W_{1 + y1} theta +
    b_{1 + y1})[y2] (prefix 0 the empty one, then the first tokens); a categorical one: softmax(A theta + b). Each
    row of a batch of thetas is its own distribution."""
    rng = np.random.default_rng(5)
    W, b = rng.normal(size=(3, 2, 2)), rng.normal(size=(3, 2))
    seq = SequencePolicy(W, b, 2, np.array([True, False, False, True]))
    thetas = rng.normal(size=(2, 2))
    got = seq.probs(thetas)
    for row, theta in enumerate(thetas):
        first = _softmax(W[0] @ theta + b[0])
        want = [first[y1] * _softmax(W[1 + y1] @ theta + b[1 + y1])[y2] for y1 in range(2) for y2 in range(2)]
        assert got[row] == pytest.approx(want)
    A, c = rng.normal(size=(4, 2)), rng.normal(size=4)
    cat = CategoricalPolicy(A, c, np.array([True, False, False, False]))
    probs = cat.probs(thetas)
    for row, theta in enumerate(thetas):
        assert probs[row] == pytest.approx(_softmax(A @ theta + c))
    assert _refused(cat.score, thetas[0], -1) == "y must hold outcome indices in [0, 4), got -1"
    assert _refused(cat.score, thetas[0], 4) == "y must hold outcome indices in [0, 4), got 4"
    assert _refused(CategoricalPolicy, np.eye(3, 2), np.zeros(2), np.array([True, False, False])) == (
        "b must have shape (3,) to match A (3, 2), got (2,)"
    )


def test_a_categorical_policys_log_probabilities_over_a_batch_of_thetas():
    rng = np.random.default_rng(6)
    A, c = rng.normal(size=(4, 2)), rng.normal(size=4)
    cat = CategoricalPolicy(A, c, np.array([True, False, False, False]))
    thetas = rng.normal(size=(3, 2))
    got = cat.log_probs(thetas)
    for row, theta in enumerate(thetas):
        assert got[row] == pytest.approx(np.log(_softmax(A @ theta + c)))
