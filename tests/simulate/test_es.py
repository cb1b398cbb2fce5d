"""ES: the update's expectation against the smoothed gradient, z-scoring, two-point, null, bf16."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import norm

from escov.simulate.bandit import TaskShape, make_task, sample
from escov.simulate.bf16 import perturb_restore_bf16, round_to_bf16
from escov.simulate.es import ESConfig, es_step, standardize

# One parameter, four prompts, three paths: greedy reward F(theta) is a step function of theta.
TINY = TaskShape(
    n_prompts=4,
    n_paths=3,
    n_correct=1,
    rare_share=0.0,
    n_tempting=1,
    tempting_share=1.0,
    base_pass1=0.45,
    difficulty_concentration=20,
    feature_dim=1,
)
ALL_REWARDED = TaskShape(
    n_prompts=5,
    n_paths=4,
    n_correct=1,
    rare_share=0.0,
    n_tempting=1,
    formatted_share=1.0,
    format_bonus=1.0,
    feature_dim=3,
)


def smoothed_gradient(task, theta: float, sigma: float) -> float:
    """d/dtheta of F_sigma(theta) = E_u F(theta + sigma u), by quadrature on a grid and central differences."""
    u = np.linspace(-8, 8, 16001)
    w = norm.pdf(u) * (u[1] - u[0])

    def greedy_reward(th):
        logits = task.logits(np.asarray(th).reshape(1, -1, 1))[0]  # (M, P, V)
        return task.reward[0][np.arange(task.n_prompts), logits.argmax(-1)].mean(-1)

    def f_sigma(th):
        return (greedy_reward(th + sigma * u) * w).sum()

    h = 1e-2
    return (f_sigma(theta + h) - f_sigma(theta - h)) / (2 * h)


@pytest.mark.parametrize("antithetic", [False, True])
def test_update_expectation_is_alpha_sigma_times_smoothed_gradient(antithetic):
    reps, sigma, lr = 400, 0.7, 1.0
    task = make_task(TINY, [5] * reps)  # identical instances: the seed axis holds replicates
    cfg = ESConfig(population_size=100, sigma=sigma, alpha=lr, zscore=False, antithetic=antithetic)
    theta, _ = es_step(task, task.theta0, cfg, np.random.default_rng(0))
    updates = (theta - task.theta0)[:, 0]
    # centered rewards: E[(1/N) sum (R_i - mean R) eps_i] = (1 - 1/N) E[R eps] (R_j does not depend on eps_i, i != j)
    expected = (1 - 1 / 100) * lr * sigma * smoothed_gradient(make_task(TINY, [5]), task.theta0[0, 0], sigma)
    assert abs(expected) > 0.1  # the check is not vacuous
    assert abs(updates.mean() - expected) < 4 * updates.std() / np.sqrt(reps)


def test_two_point_members_come_in_mirrored_pairs():
    task = make_task(TaskShape(n_prompts=6, feature_dim=4), 2)
    cfg = ESConfig(population_size=8, antithetic=True)
    _, info = es_step(task, task.theta0, cfg, np.random.default_rng(0))
    centre = task.logits(task.theta0)[:, None]
    lg = info["member_logits"]
    np.testing.assert_allclose(lg[:, :4] + lg[:, 4:], np.broadcast_to(2 * centre, lg[:, 4:].shape), atol=1e-10)


def test_zscored_update_is_zero_when_all_rewards_are_equal():
    task = make_task(ALL_REWARDED, 3)
    for member_temperature in (0.0, 1.0):  # greedy, sampled
        theta, info = es_step(
            task, task.theta0, ESConfig(member_temperature=member_temperature), np.random.default_rng(0)
        )
        np.testing.assert_array_equal(theta, task.theta0)
        assert np.all(info["fitness"] == 1.0)


def test_null_control_moves_without_reward_signal_and_skips_steps_without_one():
    task = make_task(TaskShape(n_prompts=16, feature_dim=8), 3)
    theta, info = es_step(task, task.theta0, ESConfig(null_control=True), np.random.default_rng(0))
    assert np.all(np.ptp(info["fitness"], axis=1) > 0)  # every seed has a reward spread
    assert np.all(np.linalg.norm(theta - task.theta0, axis=1) > 0)
    np.testing.assert_allclose(info["z"].mean(1), 0, atol=1e-12)
    np.testing.assert_allclose(info["z"].std(1), 1, atol=1e-6)
    flat = make_task(ALL_REWARDED, 3)  # real ES would not update here, so neither does the null
    theta, info = es_step(flat, flat.theta0, ESConfig(null_control=True), np.random.default_rng(0))
    np.testing.assert_array_equal(theta, flat.theta0)


def test_centered_rewards_times_center_scale():
    task = make_task(TaskShape(n_prompts=16, feature_dim=8), 2)
    _, info = es_step(task, task.theta0, ESConfig(zscore=False, center_scale=4.0), np.random.default_rng(0))
    f = info["fitness"]
    np.testing.assert_allclose(info["z"], 4.0 * (f - f.mean(1, keepdims=True)))
    with pytest.raises(ValueError, match="center_scale"):
        ESConfig(center_scale=2.0)


def test_standardize_is_population_zscore():
    r = np.array([[1.0, 2.0, 4.0]])
    np.testing.assert_allclose(standardize(r), (r - r.mean()) / (r.std(ddof=0) + 1e-8))


def test_greedy_fitness_is_the_mean_reward_of_argmax_paths():
    task = make_task(TaskShape(n_prompts=7, feature_dim=3), 1)
    _, info = es_step(task, task.theta0, ESConfig(population_size=4), np.random.default_rng(0))
    lg = info["member_logits"][0]  # (N, P, V)
    expected = np.array([task.reward[0][np.arange(7), lg[i].argmax(-1)].mean() for i in range(4)])
    np.testing.assert_allclose(info["fitness"][0], expected)


def test_round_to_bf16_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.normal(size=2000) * 10.0 ** rng.integers(-6, 6, size=2000),
            # exact ties between two bfloat16 neighbours (low 16 bits 0x8000), both parities
            (np.arange(1, 200, dtype=np.uint32) << 16 | 0x3F800000 | 0x8000).view(np.float32),
            [0.0, -0.0, 1.0, -2.5, 3.0e38, np.inf, -np.inf],
        ]
    ).astype(np.float32)
    ours = round_to_bf16(x)
    ref = torch.from_numpy(x).to(torch.bfloat16).to(torch.float32).numpy()
    np.testing.assert_array_equal(ours, ref)
    assert np.isnan(round_to_bf16(np.array([np.nan], np.float32)))[0]
    # every NaN stays NaN, whatever its payload (the rounding carry would turn 0x7FFFFFFF into -0.0)
    payloads = np.array([0x7FC00000, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F800001], dtype=np.uint32).view(np.float32)
    assert np.isnan(round_to_bf16(payloads)).all()


def test_perturb_restore_residue_is_bounded_and_zero_for_exact_steps():
    rng = np.random.default_rng(0)
    theta = round_to_bf16(rng.normal(size=(2, 50)))
    exact_steps = round_to_bf16(np.ldexp(1.0, -3) * np.ones((2, 4, 50)))  # powers of two: exact in bf16
    members, restored = perturb_restore_bf16(np.full((2, 50), 1.0, np.float32), exact_steps)
    np.testing.assert_array_equal(restored, 1.0)
    np.testing.assert_array_equal(members, 1.125)
    steps = 0.3 * rng.normal(size=(2, 16, 50))
    members, restored = perturb_restore_bf16(theta, steps)
    assert np.all(round_to_bf16(members) == members) and np.all(round_to_bf16(restored) == restored)
    # each add and subtract rounds by at most half a spacing of the larger operand (|w| + |s| < 8 here)
    assert np.max(np.abs(restored - theta)) <= 2 * 16 * 0.5 * 2.0 ** (3 - 7)
    assert np.any(restored != theta)  # residue is there


def test_bf16_step_leaves_bf16_weights():
    task = make_task(TaskShape(n_prompts=6, feature_dim=8, theta0_offset=3.0), 2)
    theta0 = round_to_bf16(task.theta0)
    theta, _ = es_step(task, theta0, ESConfig(inplace_bf16=True, population_size=4), np.random.default_rng(0))
    np.testing.assert_array_equal(round_to_bf16(theta), theta)
    assert np.any(theta != theta0)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"sigma": 0.0}, "sigma"),
        ({"sigma": -1.0}, "sigma"),
        ({"population_size": 1}, "population_size"),
        ({"population_size": 7, "antithetic": True}, "population_size"),
        ({"member_samples": 4}, "member_samples"),  # greedy members take one rollout per prompt
        ({"alpha": float("nan")}, "alpha"),
        ({"member_temperature": -1.0}, "member_temperature"),
        ({"member_temperature": 1.0, "member_samples": 0}, "member_samples"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_es_hyperparameters_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        replace(ESConfig(), **kwargs)


def test_sampled_members_draw_their_paths_at_the_member_temperature():
    """member_fitness with sampled rollouts: each member's mean reward over many samples is the expected reward
    under softmax(logits / member_temperature), averaged over the batch prompts (within 4 standard errors)."""
    from escov.simulate.bandit import softmax
    from escov.simulate.es import member_fitness

    task = make_task(TaskShape(n_prompts=3, n_paths=8), 1)
    rng = np.random.default_rng(2)
    logits = rng.normal(0.0, 2.0, (1, 2, task.n_prompts, task.n_paths))
    batch = np.array([0, 2])
    for temperature in (0.3, 2.0):
        cfg = ESConfig(population_size=2, member_temperature=temperature, member_samples=20_000)
        got = member_fitness(task, logits, batch, cfg, np.random.default_rng(3))
        probs = softmax(logits[:, :, batch], temperature)
        expected = (probs * task.reward[:, None, batch]).sum(-1).mean(-1)
        se = np.sqrt((probs * task.reward[:, None, batch] ** 2).sum(-1).mean(-1) / (20_000 * len(batch)))
        assert np.all(np.abs(got - expected) < 4 * se + 1e-12), (temperature, got, expected)
        other = (softmax(logits[:, :, batch], 1.0) * task.reward[:, None, batch]).sum(-1).mean(-1)
        assert np.any(np.abs(other - expected) > 8 * se)  # the temperature matters here


def test_an_es_step_counts_each_members_samples_in_its_responses_and_flops():
    from escov.theory.budget import es_flops

    cfg = ESConfig(population_size=4, member_temperature=1.0, member_samples=3)
    assert cfg.responses_per_step(5) == 4 * 5 * 3
    assert cfg.flops_per_step(5) == es_flops(4, 3) * 5 == 2 * 4 * 3 * 5


def test_the_update_is_alpha_over_n_times_the_sum_of_z_weighted_noise():
    """theta_new - theta = (alpha / N) sum_i z_i eps_i exactly, eps_i redrawn here from the step's generator (its
    batch draw first, then the noise)."""
    task = make_task(TaskShape(n_prompts=6, feature_dim=4), 2)
    cfg = ESConfig(population_size=6, alpha=0.3)
    theta, info = es_step(task, task.theta0, cfg, np.random.default_rng(7))
    rng = np.random.default_rng(7)
    rng.choice(task.n_prompts, size=task.n_prompts, replace=False)
    eps = rng.standard_normal((task.n_seeds, 6, task.dim))
    expected = 0.3 / 6 * np.einsum("sn,snd->sd", info["z"], eps)
    np.testing.assert_allclose(theta - task.theta0, expected, rtol=1e-12, atol=1e-15)


def _reference_es_step(task, theta, cfg, rng):
    """One ES step written out by seed and member from the module docstring's rule (z-scored with eps 1e-8 over the
    members, centred and scaled, or the null control's random z where a seed's members differ in fitness), drawing
    from rng in the step's order: the batch, the noise, the members' samples, the null control's z."""
    S, d, N, P = task.n_seeds, task.dim, cfg.population_size, task.n_prompts
    B = P if cfg.batch_size is None else min(cfg.batch_size, P)
    batch = np.sort(rng.choice(P, size=B, replace=False))
    eps = rng.standard_normal((S, N, d))
    if cfg.antithetic:
        eps[:, N // 2 :] = -eps[:, : N // 2]
    if cfg.inplace_bf16:
        members, theta = perturb_restore_bf16(theta, cfg.sigma * eps)
    else:
        members = theta[:, None, :] + cfg.sigma * eps
    logits = task.logits(members)[:, :, batch]  # (S, N, B, V)
    if cfg.member_temperature == 0:
        paths = logits.argmax(-1)[..., None]
    else:
        e = np.exp(logits / cfg.member_temperature)
        paths = sample(rng, e / e.sum(-1, keepdims=True), cfg.member_samples)
    fitness = np.array(
        [[np.mean([task.reward[s, batch[b], paths[s, i, b]] for b in range(B)]) for i in range(N)] for s in range(S)]
    )
    noise = rng.standard_normal((S, N)) if cfg.null_control else None
    z = np.zeros((S, N))
    for s in range(S):
        f = fitness[s]
        if cfg.null_control:
            u = noise[s]
            z[s] = (u - u.mean()) / (u.std() + 1e-8) if f.max() > f.min() else 0.0
        elif cfg.zscore:
            z[s] = (f - f.mean()) / (f.std() + 1e-8) if f.max() > f.min() else 0.0
        else:
            z[s] = (f - f.mean()) * cfg.center_scale
    new = theta + cfg.alpha / N * np.array([sum(z[s, i] * eps[s, i] for i in range(N)) for s in range(S)])
    return (round_to_bf16(new) if cfg.inplace_bf16 else new), fitness, z, batch


@pytest.mark.parametrize(
    "settings",
    [
        dict(batch_size=2),
        dict(batch_size=3, member_temperature=0.8, member_samples=3, antithetic=True),
        dict(batch_size=9, zscore=False, center_scale=2.5, sigma=0.9),
        dict(null_control=True, sigma=0.9),
        dict(batch_size=4, inplace_bf16=True),
    ],
)
def test_an_es_step_is_the_docstrings_update_written_out_by_seed_and_member(settings):
    """Two seeds, the second rewarded nowhere (so its members never differ and a rule applied across seeds shows),
    a batch of some of the 5 prompts (or all, when larger), greedy or sampled members: theta, fitness, z, the batch
    and the counts against the reference, step after step."""
    task = make_task(TaskShape(n_prompts=5, n_paths=4, n_correct=2, n_tempting=1, format_bonus=0.1, feature_dim=6), 2)
    task.reward[1] = 0.0
    cfg = ESConfig(population_size=6, alpha=0.4, **({"sigma": 1.5} | settings))
    theta = expected = round_to_bf16(task.theta0) if cfg.inplace_bf16 else task.theta0.copy()
    rng, rng_ref = np.random.default_rng(11), np.random.default_rng(11)
    batch_size = min(settings.get("batch_size") or 5, 5)
    signal = 0
    for _ in range(6):
        theta, info = es_step(task, theta, cfg, rng)
        expected, fitness, z, batch = _reference_es_step(task, expected, cfg, rng_ref)
        np.testing.assert_allclose(theta, expected, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(info["fitness"], fitness, rtol=1e-12)
        np.testing.assert_allclose(info["z"], z, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(info["batch"], batch)
        assert len(set(batch.tolist())) == batch_size
        assert info["responses"] == 6 * batch_size * cfg.member_samples
        assert info["flops"] == 2 * 6 * cfg.member_samples * batch_size
        assert np.all(info["z"][1] == 0)
        signal += np.any(info["z"][0] != 0)
    assert signal > 0 and not np.allclose(theta[0], task.theta0[0])
