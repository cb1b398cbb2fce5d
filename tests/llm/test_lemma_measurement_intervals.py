"""Every standard error and interval of llm/lemma_measurements.py on synthetic data with a known truth: coverage near
95% AND width as the closed form says (an interval too wide is as wrong as one too narrow), at a small and a large
population, so that an error growing with the population size shows; then the aggregate intervals of a real
measure_population (tiny model, HF engine) recomputed from its per-prompt records."""

import math

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

from escov.llm.lemma_measurements import (
    Z95,
    _mean_ci,
    center_scores,
    jssucc_estimates,
    lemma2_estimates,
    mean_and_se,
    measure_population,
    normal_ci,
    pooled_mean,
    population_direction,
    population_samples,
    stratified_mean,
)
from escov.llm.rollout import derive_seed

REPS = 2000


@pytest.mark.parametrize("members, m", [(2, 30), (16, 5)])
def test_the_stratified_standard_error_is_the_spread_of_the_stratified_mean(members, m):
    """terms[j, s] ~ N(mu_j, sd_j^2), m per member: the mean of the N m terms has variance sum_j sd_j^2 / (N^2 m)."""
    rng = np.random.default_rng(members)
    mu = rng.normal(0, 3, size=members)  # member means far apart: pooling them would inflate the error
    sd = rng.uniform(0.5, 2.0, size=members)
    truth, true_var = mu.mean(), float((sd**2).sum() / (members**2 * m))
    covered, se_sq = 0, []
    for _ in range(REPS):
        mean, se = stratified_mean(mu[:, None] + sd[:, None] * rng.normal(size=(members, m)))
        covered += abs(mean - truth) <= Z95 * se
        se_sq.append(se**2)
    assert 0.93 <= covered / REPS <= 0.97
    assert np.mean(se_sq) / true_var == pytest.approx(1.0, abs=0.05)  # unbiased for the variance: the width


def test_a_single_sample_per_member_has_no_standard_error():
    assert math.isnan(stratified_mean(np.ones((4, 1)))[1])


@pytest.mark.parametrize("n", [5, 40])
def test_the_mean_over_prompts_has_the_normal_interval_of_its_standard_error(n):
    rng = np.random.default_rng(n)
    covered, half_sq = 0, []
    for _ in range(REPS):
        ci = _mean_ci(7.0 + 2.0 * rng.normal(size=n))
        covered += ci["ci95"][0] <= 7.0 <= ci["ci95"][1]
        assert ci["mean"] == pytest.approx(sum(ci["ci95"]) / 2)
        half_sq.append(((ci["ci95"][1] - ci["ci95"][0]) / 2 / Z95) ** 2)
    # a z interval on n - 1 degrees of freedom: t's coverage is 95%, z's a little less at n = 5 (P(|t_4| < 1.96))
    expected = {5: 0.8787, 40: 0.9429}[n]
    assert covered / REPS == pytest.approx(expected, abs=0.02)
    assert np.mean(half_sq) * n / 4.0 == pytest.approx(1.0, abs=0.05)  # E se^2 = sigma^2 / n
    assert _mean_ci(np.array([3.0])) == {"mean": 3.0, "ci95": None}


@pytest.mark.parametrize("prompts", [2, 20])
def test_the_mean_over_prompts_of_stratified_estimates_covers_their_mean_with_the_width_of_its_spread(prompts):
    """P prompts, each a stratified draw (N = 4 members, m = 6 samples; member means and spreads differ by prompt):
    the pooled mean of the per-prompt estimates has variance sum_i var_i / P^2 (var_i = sum_j sd_ij^2 / (N^2 m));
    its interval covers the mean of the prompts' true values 95% of the time, and its squared standard error
    averages to that variance (a factor growing with P, too wide or too narrow, shows at P = 20)."""
    rng = np.random.default_rng(prompts)
    members, m = 4, 6
    mu = rng.normal(0, 2, size=(prompts, members))
    sd = rng.uniform(0.3, 1.5, size=(prompts, members))
    truth = mu.mean()
    true_var = float((sd**2).sum() / (members**2 * m) / prompts**2)
    covered, se_sq = 0, []
    for _ in range(REPS):
        draws = [
            stratified_mean(mu[i, :, None] + sd[i, :, None] * rng.normal(size=(members, m))) for i in range(prompts)
        ]
        mean, se = pooled_mean([d[0] for d in draws], [d[1] for d in draws])
        lo, hi = normal_ci(mean, se)
        assert mean == pytest.approx(np.mean([d[0] for d in draws])) and hi - lo == pytest.approx(2 * Z95 * se)
        covered += lo <= truth <= hi
        se_sq.append(se**2)
    assert 0.93 <= covered / REPS <= 0.97
    assert np.mean(se_sq) / true_var == pytest.approx(1.0, abs=0.05)


def test_a_mean_and_its_standard_error_by_hand():
    # 1, 2, 6: mean 3, sample variance ((-2)^2 + (-1)^2 + 3^2) / 2 = 7, se sqrt(7 / 3)
    assert mean_and_se(np.array([1.0, 2.0, 6.0])) == pytest.approx((3.0, math.sqrt(7 / 3)))
    assert mean_and_se(np.array([1.0, 4.0])) == pytest.approx((2.5, 1.5))  # two values: s = 3 / sqrt(2)
    mean, se = mean_and_se(np.array([4.0]))
    assert mean == 4.0 and math.isnan(se)
    assert normal_ci(1.0, 0.5) == pytest.approx([1.0 - 0.5 * 1.959963984540054, 1.0 + 0.5 * 1.959963984540054])
    # two estimates 1 and 3 with se 0.3 and 0.4: mean 2, se sqrt(0.09 + 0.16) / 2 = 0.25
    assert pooled_mean([1.0, 3.0], [0.3, 0.4]) == pytest.approx((2.0, 0.25))


def _even_code_sum(prompts, completions, **kwargs):
    return [float(sum(map(ord, c)) % 2 == 0) for c in completions]


def test_measure_populations_aggregate_intervals_follow_from_its_per_prompt_records(tiny_model_dir, one_torch_thread):
    """jspol: the mean over P prompts of independent per-prompt estimates, se = sqrt(sum se_i^2) / P; fisher_trace
    and validity: the normal interval of the per-prompt values' spread; both centred on the per-prompt mean."""
    from escov.llm.engines.hf import HFEngine
    from escov.llm.tasks import get_task

    engine = HFEngine(tiny_model_dir, dtype=torch.float32)
    scorer = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    # correct: a completion whose characters' code points sum to an even number, about half of them (the tiny model
    # never solves Countdown; with every sample wrong each prompt's permutation null is 0 whatever its seed)
    task = get_task("countdown", reward_function=_even_code_sum, correct_reward="total")
    center = {n: p.detach().float().clone() for n, p in scorer.named_parameters()}
    m = measure_population(
        engine=engine,
        scorer=scorer,
        task=task,
        problems=task.problems("test", 3, seed=0),
        encode=engine.prompt_token_ids,
        pad_id=engine.tokenizer.pad_token_id,
        center=center,
        sigma=1e-2,
        members=3,
        samples=3,
        center_samples=3,
        temperature=1.0,
        max_new_tokens=4,
        seed=0,
        step=3,
    )
    rows = m["per_prompt"]
    problems = task.problems("test", 3, seed=0)
    assert [r["problem"] for r in rows] == m["probe_problems"] == [p.id for p in problems]
    # the members' samples again (the same seeds): each prompt's JSsucc, its permutation null drawn from the seed of
    # (seed, step, prompt index), so that prompts with the same outcomes get nulls of their own
    _, correct, _ = population_samples(
        engine=engine,
        scorer=scorer,
        task=task,
        problems=problems,
        encode=engine.prompt_token_ids,
        pad_id=engine.tokenizer.pad_token_id,
        center=center,
        sigma=1e-2,
        members=3,
        samples=3,
        temperature=1.0,
        max_new_tokens=4,
        seed=0,
        step=3,
    )
    mixed = [i for i in range(len(problems)) if 0 < correct[i].mean() < 1]
    assert mixed  # a prompt with outcomes that a permutation null can shuffle: its null depends on the seed
    for i, r in enumerate(rows):
        assert r["jssucc"] == jssucc_estimates(correct[i], seed=derive_seed(0, 3, "population-perm", i))
        if i in mixed:
            assert r["jssucc"] != jssucc_estimates(correct[i], seed=derive_seed(0, 4, "population-perm", i))
        assert r["member_success"] == pytest.approx(correct[i].mean(axis=1).tolist())
    # the center's samples again (the same seed): each prompt's Fisher trace is the mean of its squared score norms,
    # its standard error their spread over sqrt(center_samples)
    sq, center_correct = center_scores(
        engine=engine,
        scorer=scorer,
        task=task,
        problems=task.problems("test", 3, seed=0),
        encode=engine.prompt_token_ids,
        pad_id=engine.tokenizer.pad_token_id,
        center=center,
        samples=3,
        temperature=1.0,
        max_new_tokens=4,
        seed=0,
        step=3,
    )
    # the center's completions are their own draw, from the seed of (seed, step, "population-center"): a rollout
    # drawn here with that seed gives the same squared score norms (score_sq_norms on its completions)
    from escov.llm.lemma_measurements import score_sq_norms
    from escov.llm.rollout import rollout

    drawn = rollout(
        engine,
        task,
        problems,
        n=3,
        temperature=1.0,
        max_new_tokens=4,
        seed=derive_seed(0, 3, "population-center"),
        step=3,
    )
    params = [dict(scorer.named_parameters())[n] for n in center]
    own = score_sq_norms(
        scorer,
        params,
        [engine.prompt_token_ids(p.prompt) for p in problems for _ in range(3)],
        [drawn.completions[i][s].token_ids for i in range(3) for s in range(3)],
        1.0,
        engine.tokenizer.pad_token_id,
    )
    np.testing.assert_allclose(sq.ravel(), own, rtol=1e-9)
    for i, r in enumerate(rows):  # Lemma 2 from each prompt's member and center outcomes, K = 2 and N
        assert r["center_success"] == pytest.approx(center_correct[i].mean())
        assert r["lemma2"] == lemma2_estimates(correct[i], center_correct[i], [2, 3])
    assert {k: m[k] for k in ("step", "sigma", "members", "samples_per_member", "center_samples", "temperature")} == {
        "step": 3,
        "sigma": 1e-2,
        "members": 3,
        "samples_per_member": 3,
        "center_samples": 3,
        "temperature": 1.0,
    }
    # the aggregates: means over the prompts
    assert m["jssucc"] == pytest.approx({k: np.mean([r["jssucc"][k] for r in rows]) for k in rows[0]["jssucc"]})
    assert m["lemma2"]["K"] == [2, 3]
    for key in ("distinct_members_pass", "same_policy_pass", "center_pass_at_k"):
        assert m["lemma2"][key] == pytest.approx(np.mean([r["lemma2"][key] for r in rows], axis=0).tolist())
    assert m["lemma2"]["direct_one_from_each"] == pytest.approx(
        np.mean([r["lemma2"]["direct_one_from_each"] for r in rows])
    )
    for r, row in zip(rows, sq):
        assert r["fisher_trace"] == pytest.approx(row.mean())
        assert r["fisher_trace_se"] == pytest.approx(np.std(row, ddof=1) / math.sqrt(3))
    js = [r["jspol"] for r in rows]
    half = Z95 * math.sqrt(sum(r["jspol_se"] ** 2 for r in rows)) / 3
    assert m["jspol"]["ci95"] == pytest.approx([np.mean(js) - half, np.mean(js) + half])
    assert m["jspol"]["mean"] == pytest.approx(np.mean(js)) and m["jspol"]["per_prompt"] == js
    assert all(r["jspol_se"] > 0 for r in rows)
    for key, values in (
        ("fisher_trace", [r["fisher_trace"] for r in rows]),
        ("validity", [r["validity_measured"] for r in rows]),
    ):
        got = m[key] if key == "fisher_trace" else m[key]["measured"]
        h = Z95 * float(np.std(values, ddof=1)) / math.sqrt(3)
        assert got["mean"] == pytest.approx(np.mean(values))
        assert got["ci95"] == pytest.approx([np.mean(values) - h, np.mean(values) + h])
    for r in rows:  # Lemma 1's prediction: (sigma^2 / 2)(1 - 1/N) tr I_x
        assert r["lemma1_prediction"] == pytest.approx(0.5 * 1e-4 * (1 - 1 / 3) * r["fisher_trace"])
        assert r["validity_predicted"] == pytest.approx(0.5 * 1e-4 * r["fisher_trace"])
        assert r["fisher_trace_se"] > 0
    assert m["lemma1_prediction"] == pytest.approx(np.mean([r["lemma1_prediction"] for r in rows]))
    assert m["validity"]["predicted"] == pytest.approx(np.mean([r["validity_predicted"] for r in rows]))


def test_lemma_2_is_measured_at_two_four_and_every_member_unless_told(tiny_model_dir, one_torch_thread):
    """K defaults to 2, 4 and N (those in 1..N); given K's outside 1..N are dropped."""
    from escov.llm.engines.hf import HFEngine
    from escov.llm.tasks import get_task

    engine = HFEngine(tiny_model_dir, dtype=torch.float32)
    scorer = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    task = get_task("countdown")
    center = {n: p.detach().float().clone() for n, p in scorer.named_parameters()}
    common = dict(
        engine=engine,
        scorer=scorer,
        task=task,
        problems=task.problems("test", 1, seed=0),
        encode=engine.prompt_token_ids,
        pad_id=engine.tokenizer.pad_token_id,
        center=center,
        sigma=1e-2,
        samples=1,
        center_samples=2,
        temperature=1.0,
        max_new_tokens=2,
        seed=0,
        step=0,
    )
    for members, ks, expected in ((5, None, [2, 4, 5]), (3, None, [2, 3]), (5, [0, 1, 5, 6], [1, 5])):
        m = measure_population(members=members, ks=ks, **common)
        assert m["lemma2"]["K"] == expected and m["per_prompt"][0]["lemma2"]["K"] == expected
        assert m["per_prompt"][0]["fisher_trace_se"] > 0  # two center samples: a spread
        # the center's Pass@K from its 2 samples: none beyond K = 2
        assert [v is None for v in m["lemma2"]["center_pass_at_k"]] == [k > 2 for k in expected]
    # one center sample: no spread, so no standard error (null in probe.json), nor an interval from one prompt
    one = measure_population(members=2, **(common | {"center_samples": 1}))
    assert one["per_prompt"][0]["fisher_trace_se"] is None and one["fisher_trace"]["ci95"] is None


def test_a_populations_directions_are_the_es_noise_of_its_seed_and_step_one_per_member():
    """eps_j of the population of (seed, step): llm.es.noise's entries for seed derive_seed(seed, step,
    "population-noise"), direction j, each parameter's name and shape; another step or member draws others."""
    from escov.llm.es.noise import noise

    center = {"a.weight": torch.zeros(3, 4), "b.bias": torch.zeros(5)}
    eps = population_direction(center, seed=7, step=2, member=1)
    noise_seed = derive_seed(7, 2, "population-noise")
    for name, value in center.items():
        assert torch.equal(eps[name], noise(noise_seed, 1, name, value.shape))
        assert eps[name].shape == value.shape
    for other in (population_direction(center, 7, 3, 1), population_direction(center, 7, 2, 2)):
        assert all(not torch.equal(eps[n], other[n]) for n in center)
    assert all(torch.equal(eps[n], population_direction(center, 7, 2, 1)[n]) for n in center)
