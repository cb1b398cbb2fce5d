"""The named checks of `python -m escov.theory` (escov.theory.checks) can come out the other way: each group is run
with one formula it checks replaced by a wrong one of the kind a slip produces (a factor dropped, an exponent off by
one, a bound on the wrong side), and the items that check that formula must then fail, while they hold with the
right formula. A check that passes whatever the formula says would be no check."""

import numpy as np
import pytest

import escov.theory.grpo
import escov.theory.population
from escov.theory import lemmas, metrics
from escov.theory.checks import cross_prompt, dpi, grpo, lemma1, lemma2, lemma3, prop1, shared_metrics


def _failing(items: list[dict], prefix: str) -> list[str]:
    """Names of the counted items under `prefix` that do not hold (regime items never count)."""
    named = [it for it in items if it["name"].startswith(prefix) and "regime" not in it]
    assert named, f"no counted item named {prefix}*"
    return [it["name"] for it in named if not it["holds"]]


# (module whose name is replaced, name, wrong formula, the group's function, the items that must fail)
WRONG = [
    (
        escov.theory.population,
        "lemma1_prediction",
        lambda trace, sigma, n: 0.5 * sigma**2 * trace,  # (1 - 1/N) dropped
        lemma1.sigma_scan,
        "lemma1/sigma/",
    ),
    (
        lemma2,
        "same_policy_pass",
        lambda p: 1 - (1 - p.mean(-1)) ** (p.shape[-1] - 1),  # N - 1 draws
        lemma2.inequality_and_exact_gap,
        "lemma2/exact_gap_expansion",
    ),
    (
        lemma2,
        "population_pass",
        lambda p: lemmas.same_policy_pass(p) - 0.01,  # below the single policy's
        lemma2.inequality_and_exact_gap,
        "lemma2/p_pop_ge_p_same",
    ),
    (
        lemma2,
        "distinct_members_pass",
        lambda p, k: lemmas.distinct_members_pass(p, k - 1) if k > 1 else lemmas.distinct_members_pass(p, k),
        lemma2.monte_carlo,
        "lemma2/k_of_n/distinct_members_monte_carlo/",
    ),
    (
        lemma2,
        "mixture_pass",
        lambda p, k: lemmas.distinct_members_pass(p, k),  # the mixture read as distinct members
        lemma2.monte_carlo,
        "lemma2/k_of_n/mixture_no_gain/",
    ),
    (
        lemma2,
        "lemma2_gap_local",
        lambda p: lemmas.lemma2_gap_local(p) * (p.shape[-1] - 1) / p.shape[-1],  # N - 1 for N: 12.5% at N = 8
        lemma2.local_form,
        "lemma2/local_form/",
    ),
    (
        lemma3,
        "es_update_prediction",
        lambda z, p, alpha, sigma: alpha * sigma * lemmas.population_cov(z, p),  # alpha sigma for alpha / sigma
        lemma3.es_update,
        "lemma3/es_update/",
    ),
    (
        lemma3,
        "es_update_prediction",
        # the sample covariance (ddof 1) for the population's: a 3% slip at N = 32
        lambda z, p, alpha, sigma: lemmas.es_update_prediction(z, p, alpha, sigma) * z.shape[-1] / (z.shape[-1] - 1),
        lemma3.es_update,
        "lemma3/es_update/",
    ),
    (
        lemma3,
        "lemma3_covariance",
        lambda w, p: lemmas.population_cov(w, p),  # the factor N dropped
        lemma3.covariance_identity,
        "lemma3/covariance_identity",
    ),
    (
        prop1,
        "pass_k_difference",
        lambda p, q, k: lemmas.pass_k_difference(p, q, k + 1),
        prop1.transfer_bound_checks,
        "prop1/difference_exact",
    ),
    *[
        (
            prop1,
            "transfer_bounds",
            lambda p, q, k: (
                lemmas.transfer_bounds(p, q, k)[1],
                *lemmas.transfer_bounds(p, q, k)[1:],
            ),  # upper as lower
            prop1.transfer_bound_checks,
            "prop1/bound_lower",
        ),
        (
            prop1,
            "transfer_bounds",
            lambda p, q, k: (lemmas.transfer_bounds(p, q, k)[0], lemmas.transfer_bounds(p, q, k)[0], k * abs(p - q)),
            prop1.transfer_bound_checks,
            "prop1/bound_upper",
        ),
    ],
    (
        prop1,
        "pinsker_bound",
        lambda p, q: np.sqrt(metrics.bernoulli_kl(p, q) / 8.0),
        prop1.transfer_bound_checks,
        "prop1/pinsker",
    ),
    (
        dpi,
        "binary_entropy",
        lambda p: 3.0 * metrics.binary_entropy(p),
        dpi.js_chain,
        "dpi/jssucc_le_jspol",
    ),
    (
        dpi,
        "generalized_js_batch",
        lambda probs: 10.0 * metrics.generalized_js_batch(probs),
        dpi.js_chain,
        "dpi/jspol_le_log_n",
    ),
    (
        grpo,
        "grpo_weight_limit",
        lambda p: 1.0 / np.sqrt(p),  # (1 - p) dropped
        grpo.weight_limit,
        "grpo/weight_limit/",
    ),
    (
        grpo,
        "entropy_change_first_order",
        lambda probs, dz: -escov.theory.grpo.entropy_change_first_order(probs, dz),  # the sign of the covariance
        grpo.entropy_change,
        "grpo/entropy_change/",
    ),
    (
        cross_prompt,
        "pass_at_k_from_p",
        lambda p, k: metrics.pass_at_k_from_p(p, k) - 0.05,
        cross_prompt.jensen,
        "cross_prompt/jensen/",
    ),
    (
        grpo,
        "grpo_prompt_weight",
        lambda *args, **kwargs: 1.1 * escov.theory.grpo.grpo_prompt_weight(*args, **kwargs),
        grpo.weight_exact,
        "grpo/weight_exact_enumeration/",
    ),
    (
        grpo,
        "grpo_prompt_weight",
        lambda *args, **kwargs: 1.1 * escov.theory.grpo.grpo_prompt_weight(*args, **kwargs),
        grpo.weight_monte_carlo,
        "grpo/weight_monte_carlo/",
    ),
    (
        shared_metrics,
        "maj_at_k",
        lambda answers, correct, k, **kw: metrics.maj_at_k(answers, correct, min(k + 1, len(answers)), **kw),
        shared_metrics.maj_checks,
        "metrics/maj_at_k_subsets",
    ),
    (
        shared_metrics,
        "pass_at_k",
        lambda n, c, k: metrics.pass_at_k(n, c, max(k - 1, 1)),
        shared_metrics.pass_at_k_checks,
        "metrics/pass_at_k_brute_force",
    ),
    (
        cross_prompt,
        "mean_pass_at_k",
        lambda p, k: lemmas.mean_pass_at_k(p, k) + 0.01,
        cross_prompt.zero_prompts,
        "cross_prompt/zero_prompts/",
    ),
    # slips sized between each check's own tolerance and a tolerance ten times as loose (a loosened check passes them)
    (
        lemma2,
        "population_pass",
        lambda p: lemmas.population_pass(p) + 0.01,  # 100 standard errors off, 6% of the sampling spread
        lemma2.monte_carlo,
        "lemma2/p_pop_monte_carlo",
    ),
    (
        grpo,
        "grpo_prompt_weight",
        lambda *args, **kwargs: 1.03 * escov.theory.grpo.grpo_prompt_weight(*args, **kwargs),  # 13 standard errors
        grpo.weight_monte_carlo,
        "grpo/weight_monte_carlo/",
    ),
    (
        grpo,
        "entropy_change_first_order",
        # 1%: over 2 t at the smallest step (0.001), under 20 t at every claimed one
        lambda probs, dz: 1.01 * escov.theory.grpo.entropy_change_first_order(probs, dz),
        grpo.entropy_change,
        "grpo/entropy_change/",
    ),
    (
        dpi,
        "binary_entropy",
        lambda p: 1.05 * metrics.binary_entropy(p),
        dpi.js_chain,
        "dpi/jssucc_le_jspol",
    ),
    # a strict comparison met with equality, and a proposition whose assumption no population meets
    (
        lemma2,
        "distinct_members_pass",
        lambda p, k: lemmas.mixture_pass(p, k),
        lemma2.monte_carlo,
        "lemma2/k_of_n/distinct_beats_same/",
    ),
    (
        prop1,
        "prop1_assumption",
        lambda *args: np.zeros_like(np.asarray(args[0]), dtype=bool),
        prop1.proposition,
        "prop1/proposition/",
    ),
]


@pytest.mark.parametrize(
    "module, name, wrong, check, prefix", WRONG, ids=[f"{case[0].__name__.split('.')[-1]}.{case[1]}" for case in WRONG]
)
def test_a_check_fails_when_the_formula_it_checks_is_wrong(monkeypatch, module, name, wrong, check, prefix):
    right = check(np.random.default_rng(3))
    assert _failing(right, prefix) == []
    monkeypatch.setattr(module, name, wrong)
    assert _failing(check(np.random.default_rng(3)), prefix) != []


def test_lemma3s_update_is_claimed_only_up_to_its_step_limit():
    """Each ES-update item beyond sigma + alpha = es_claimed carries a regime (it never counts), each within it none;
    the checked steps include both."""
    items = lemma3.es_update(np.random.default_rng(3))
    beyond = []
    for it in items:
        sigma, alpha = (float(part.split("=")[1]) for part in it["name"].rsplit("/", 1)[1].split(","))
        beyond.append(sigma + alpha > lemma3.CFG.es_claimed)
        assert ("regime" in it) == beyond[-1], it["name"]
    assert any(beyond) and not all(beyond)
