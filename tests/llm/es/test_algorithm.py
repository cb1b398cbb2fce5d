"""ES on a real HFEngine with the tiny model: exact perturb/restore, the update rebuilt from seeds and
z, parameter subsets, the null control, and the residue of the paper's in-place bf16 arithmetic."""

import time
import warnings

import numpy as np
import pytest
import torch

from escov.llm.engines.hf import HFEngine
from escov.llm.es import ESConfig, make_es, select_parameters
from escov.llm.es.noise import noise
from escov.llm.rollout import derive_seed
from escov.llm.tasks import get_task
from tests.llm.tasks_for_tests import CountdownScoredBy, digit_share_task

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _es(engine, task, **kw):
    cfg = ESConfig(**{"population_size": 4, "sigma": 1e-2, "alpha": 1e-2} | kw)
    cfg.validate()
    names = select_parameters(engine.model.named_parameters(), cfg.param_pattern)
    master = (
        None
        if cfg.inplace_bf16
        else {n: p.detach().float().clone() for n, p in engine.model.named_parameters() if n in names}
    )
    return make_es(cfg, engine, task, names, master, max_new_tokens=6, seed=3)


def _live(engine):
    return {n: p.detach().clone() for n, p in engine.model.named_parameters()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_member_weights_and_exact_restore(tiny_model_dir, dtype):
    engine = HFEngine(tiny_model_dir, dtype=dtype)
    es = _es(engine, get_task("countdown"), antithetic=True)
    before = _live(engine)
    plan = es.plan(5)
    for m in (2, 3):
        member = plan.members[m]
        es.center.perturb(plan, member)
        d, sign = 1, (1.0 if m == 2 else -1.0)  # antithetic: members 2 and 3 are the pair +eps_1, -eps_1
        assert (member.direction, member.sign) == (d, sign)
        for n, p in engine.model.named_parameters():
            expected = (es.center.master[n] + sign * 1e-2 * noise(plan.noise_seed, d, n, p.shape)).to(dtype)
            assert torch.equal(p.detach(), expected), n
        es.center.restore(plan, member)
        for n, p in engine.model.named_parameters():
            assert torch.equal(p.detach(), before[n]), f"restore left residue in {n}"


def test_update_equals_alpha_over_n_sum_z_eps_rebuilt_independently(tiny_model_dir):
    """theta' = theta + alpha/N sum_m z_m eps_m with z standardized here from the member rewards;
    a dense reward (digit share) makes the members differ, so z and the update are not zero."""
    engine = HFEngine(tiny_model_dir)
    task = digit_share_task()
    es = _es(engine, task, member_temperature=1.0, member_samples=2)
    old = {n: t.clone() for n, t in es.center.master.items()}
    t0 = time.perf_counter()
    out = es.step(task.problems("train", 4, seed=0), step=0)
    wall = time.perf_counter() - t0
    # 4 members x 4 prompts x 2 samples, each of 1 to 6 new tokens; the times are parts of the call's time
    assert isinstance(out.n_tokens, int) and 4 * 4 * 2 <= out.n_tokens <= 4 * 4 * 2 * 6
    assert 0 < out.weight_seconds <= out.seconds <= wall
    assert np.ptp(out.rewards) > 0, "members that all score the same give z = 0: the test would compare zero with zero"
    z = (out.rewards - out.rewards.mean()) / (out.rewards.std() + 1e-8)
    np.testing.assert_allclose(out.z, z, rtol=0, atol=1e-12)
    it_seed = derive_seed(3, 0, "es-noise")
    moved = 0.0
    for n, theta in es.center.master.items():
        expected = old[n].double() + sum(1e-2 / 4 * z[m] * noise(it_seed, m, n, theta.shape).double() for m in range(4))
        torch.testing.assert_close(theta.double(), expected, rtol=0, atol=1e-6)
        assert torch.equal(dict(engine.model.named_parameters())[n].detach(), theta)  # the engine holds the new center
        moved = max(moved, float((expected - old[n].double()).abs().max()))
    assert moved > 1e-4  # well above the tolerance: a wrong sign or scale cannot pass
    # the reported norm is ||theta' - theta|| over every perturbed tensor (several of them), and the center knows
    # it was written
    assert len(es.center.master) > 1 and es.center.modified is True
    moved_sq = sum(float(((theta.double() - old[n].double()) ** 2).sum()) for n, theta in es.center.master.items())
    assert out.update_norm == pytest.approx(moved_sq**0.5, rel=1e-5)


def test_all_equal_rewards_give_a_zero_update(tiny_model_dir):
    engine = HFEngine(tiny_model_dir)
    task = CountdownScoredBy("constant", lambda completion: 0.1)
    es = _es(engine, task)
    before = _live(engine)
    out = es.step(task.problems("train", 3, seed=0), step=0)
    assert np.all(out.z == 0) and out.update_norm == 0.0 and np.allclose(out.rewards, 0.1)
    assert all(torch.equal(p.detach(), before[n]) for n, p in engine.model.named_parameters())


def test_a_steps_weight_time_is_the_members_and_the_updates(tiny_model_dir):
    """ESStep.weight_seconds = the members' time on weights (perturb, restore) + the update's: with members
    that report 1000 s on weights (their real time plus 1000), the step reports more than 1000 s, and less
    than 1000 s plus the whole step."""
    engine = HFEngine(tiny_model_dir)
    task = CountdownScoredBy("constant", lambda completion: 0.1)
    es = _es(engine, task)
    members_rewards = es.members.rewards

    def members_reporting_1000_more(plan, problems):
        rewards, tokens, weight_s = members_rewards(plan, problems)
        return rewards, tokens, weight_s + 1000.0

    es.members.rewards = members_reporting_1000_more
    out = es.step(task.problems("train", 2, seed=0), step=0)
    assert 1000.0 < out.weight_seconds < 1000.0 + out.seconds


def test_parameter_subset_leaves_other_parameters_untouched(tiny_model_dir):
    engine = HFEngine(tiny_model_dir)
    task = digit_share_task()
    es = _es(engine, task, param_pattern=r"norm", member_temperature=1.0, member_samples=2, sigma=0.3)
    assert es.center.names and all("norm" in n for n in es.center.names)
    before = _live(engine)
    out = es.step(task.problems("train", 3, seed=0), step=0)
    assert np.ptp(out.rewards) > 0 and out.update_norm > 0, "a zero update would leave every parameter untouched"
    for n, p in engine.model.named_parameters():
        assert torch.equal(p.detach(), before[n]) == ("norm" not in n), n
    with pytest.raises(ValueError, match=r"es\.param_pattern 'no_such_layer' matches no parameter name"):
        select_parameters(engine.model.named_parameters(), "no_such_layer")


def test_center_weights_are_a_copy_unless_asked_for_the_master_itself(tiny_model_dir):
    """copy=True: fp32 tensors the next update does not change; copy=False: the fp32 master's own storage."""
    es = _es(HFEngine(tiny_model_dir), get_task("countdown"))
    copied, shared = es.center_weights(), es.center_weights(copy=False)
    for n, theta in es.center.master.items():
        assert shared[n].data_ptr() == theta.data_ptr()
        assert copied[n].data_ptr() != theta.data_ptr() and torch.equal(copied[n], theta)


def test_null_control_ignores_rewards_and_skips_steps_without_signal(tiny_model_dir):
    """The null's z are random numbers fixed by (seed, step), whatever the rewards; on a step where real
    ES would not update (all rewards equal) the null does not update either."""
    es = _es(HFEngine(tiny_model_dir), get_task("countdown"), null_control=True)
    z = es.fitness(np.array([0.0, 1.0, 0.1, 0.0]), step=5)
    np.testing.assert_array_equal(z, es.fitness(np.array([3.0, -1.0, 0.5, 0.2]), step=5))
    assert abs(z.mean()) < 1e-12 and z.std() > 0.5 and z.any()
    assert not np.array_equal(z, es.fitness(np.array([0.0, 1.0, 0.1, 0.0]), step=6))
    assert np.all(es.fitness(np.full(4, 0.1), step=5) == 0)
    # the stream is the run's (seed 3, step 5, "es-null"): z-scored standard normals drawn from it
    from escov.llm.es.algorithm import standardize

    np.testing.assert_array_equal(
        z, standardize(np.random.default_rng(derive_seed(3, 5, "es-null")).standard_normal(4))
    )
    task = CountdownScoredBy("constant", lambda completion: 0.1)
    es = _es(HFEngine(tiny_model_dir), task, null_control=True)
    assert es.step(task.problems("train", 2, seed=0), step=5).update_norm == 0.0
    # a whole step draws the stream of its own step number
    task = digit_share_task()
    es = _es(HFEngine(tiny_model_dir), task, null_control=True, member_temperature=1.0, member_samples=2)
    out = es.step(task.problems("train", 3, seed=0), step=6)
    assert np.ptp(out.rewards) > 0, "equal rewards skip the null's step: z = 0 whatever the stream"
    np.testing.assert_array_equal(
        out.z, standardize(np.random.default_rng(derive_seed(3, 6, "es-null")).standard_normal(4))
    )


def test_inplace_bf16_leaves_rounding_residue_the_master_does_not(tiny_model_dir):
    """The paper's code: add sigma eps to bf16 weights, then subtract it; bf16 rounding does not undo."""
    engine = HFEngine(tiny_model_dir, dtype=torch.bfloat16)
    es = _es(engine, get_task("countdown"), inplace_bf16=True, sigma=1.5e-3)
    before = _live(engine)
    plan = es.plan(7)
    es.center.perturb(plan, plan.members[0])
    es.center.restore(plan, plan.members[0])
    changed = sum(int((p.detach() != before[n]).sum()) for n, p in engine.model.named_parameters())
    total = sum(p.numel() for p in engine.model.parameters())
    assert 0 < changed < total  # some, not all, entries moved by one bf16 rounding step


def within_a_bf16_rounding(got: torch.Tensor, exact: torch.Tensor, added: torch.Tensor | float = 0.0) -> bool:
    """Every entry of bf16 `got` within one bf16 step (2^-7 relative) of `exact`, plus one of `added` (the term
    added, itself rounded to bf16 before the add: near a cancellation its rounding is all that is left)."""
    bf16 = torch.finfo(torch.bfloat16)
    step = bf16.eps * (exact.abs() + torch.as_tensor(added).abs()).clamp_min(bf16.tiny)
    return bool(((got.float() - exact).abs() <= step).all())


def test_inplace_bf16_members_and_restore_are_the_papers_bf16_arithmetic(tiny_model_dir):
    """Member m of an antithetic pair: every bf16 weight w <- w + s sigma E_d, rounded to bf16 (torch's bf16 kernels
    round in ways of their own, so within one bf16 step of the exact value); restore subtracts the same noise,
    leaving at most a rounding step of residue."""
    engine = HFEngine(tiny_model_dir, dtype=torch.bfloat16)
    sigma = 1e-2
    es = _es(engine, get_task("countdown"), inplace_bf16=True, sigma=sigma, antithetic=True)
    plan = es.plan(7)
    for m in (2, 3):
        member, before = plan.members[m], _live(engine)
        assert (member.direction, member.sign) == (1, 1.0 if m == 2 else -1.0)
        es.center.perturb(plan, member)
        eps = {n: noise(plan.noise_seed, 1, n, p.shape) for n, p in engine.model.named_parameters()}
        perturbed = _live(engine)
        for n in eps:
            assert within_a_bf16_rounding(
                perturbed[n], before[n].float() + member.sign * sigma * eps[n], sigma * eps[n]
            ), n
        es.center.restore(plan, member)
        for n, p in engine.model.named_parameters():
            assert within_a_bf16_rounding(
                p.detach(), perturbed[n].float() - member.sign * sigma * eps[n], sigma * eps[n]
            ), n
            assert within_a_bf16_rounding(p.detach(), before[n].float(), 2 * sigma * eps[n]), n


def test_inplace_bf16_update_adds_each_direction_in_turn_and_reports_its_norm(tiny_model_dir):
    """apply: w <- w + (alpha / N) c_d E_d for each direction with c_d != 0, each add rounded to bf16 (within one
    bf16 step per add of the exact sum); the returned norm is ||w_after - w_before|| of the bf16 tensors; a zero
    direction adds nothing; a non-finite weight is named with its step. The center is never exact again."""
    from escov.llm.es.plan import Update
    from escov.llm.rollout import NonFiniteError

    engine = HFEngine(tiny_model_dir, dtype=torch.bfloat16)
    es = _es(engine, get_task("countdown"), inplace_bf16=True, sigma=1e-2)
    assert not es.state_is_intact()  # in place in bf16 the center is never restored exactly
    assert es.center.modified is False
    before = _live(engine)
    update = Update(step=4, noise_seed=11, coefficients=(1.5, 0.0, -0.5, 2.0), alpha=0.04, population_size=4)
    norm = es.center.apply(update)
    assert es.center.modified is True
    after = _live(engine)
    assert norm == pytest.approx(
        sum(float(((after[n].float() - before[n].float()) ** 2).sum()) for n in after) ** 0.5, rel=1e-6
    )
    for n in after:
        added = [0.04 / 4 * c * noise(11, d, n, after[n].shape) for d, c in enumerate(update.coefficients) if c != 0.0]
        exact = before[n].float() + sum(added)
        bound = torch.finfo(torch.bfloat16).eps * (before[n].float().abs() + sum(a.abs() for a in added)) * len(added)
        assert ((after[n].float() - exact).abs() <= bound).all(), n
    assert norm > 0.05  # far above the rounding: a wrong scale, sign or direction cannot pass
    still = _live(engine)
    es.center.begin()
    assert es.center.apply(Update(5, 11, (0.0, 0.0), 0.04, 4)) == 0.0
    assert es.center.modified is False  # a zero update writes nothing
    assert all(torch.equal(still[n], t) for n, t in _live(engine).items())
    with pytest.raises(NonFiniteError, match=r"step 6: weight model\.embed_tokens\.weight is not finite"):
        es.center.apply(Update(6, 11, (1.0,), 3e38, 1))


def test_a_master_update_stopped_partway_leaves_the_state_marked_not_intact(tiny_model_dir):
    """The fp32 master is intact until a tensor is written: an update that fails on the second tensor has
    written the first, and the trainer must then not checkpoint it as the pre-step center."""
    from escov.llm.es.plan import Update
    from escov.llm.rollout import NonFiniteError

    engine = HFEngine(tiny_model_dir)
    es = _es(engine, get_task("countdown"))
    assert es.state_is_intact() and es.center.modified is False  # nothing written since it was built
    names = es.center.names
    es.center.begin()
    assert es.state_is_intact() and es.center.modified is False
    es.center.master[names[1]][0, 0] = float("inf")  # the second tensor's update cannot be finite
    with pytest.raises(NonFiniteError, match=f"step 2: weight {names[1]} is not finite"):
        es.center.apply(Update(2, 11, (1.0,), 0.01, 1))
    assert not es.state_is_intact()
    es.center.begin()  # the next iteration starts with nothing written
    assert es.state_is_intact()


def test_fitness_is_computed_in_float64_without_warnings_and_z_scores_by_default(tiny_model_dir):
    """float32 rewards near the float32 limit are summed in float64 (their mean exists: all equal, z = 0, no
    error); a spread that overflows even float64 is a NonFiniteError, raised without a RuntimeWarning first;
    standardize z-scores unless told not to: (R - mean) / (population std + 1e-8)."""
    from escov.llm.es.algorithm import standardize
    from escov.llm.rollout import NonFiniteError

    es = _es(HFEngine(tiny_model_dir), get_task("countdown"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(es.fitness(np.array([3e38, 3e38], dtype=np.float32), 0), [0.0, 0.0])
        with pytest.raises(NonFiniteError, match="step 4: member mean rewards overflow") as raised:
            es.fitness(np.array([1e308, -1e308] + list(range(1, 9))), 4)
    assert str(raised.value).endswith("[1e+308, -1e+308, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]")  # the first 8 only
    r = np.array([1.0, 2.0, 6.0])
    np.testing.assert_allclose(standardize(r), (r - 3.0) / (np.sqrt(14 / 3) + 1e-8), rtol=1e-12)
    np.testing.assert_allclose(standardize(r, zscore=False), r - 3.0, rtol=1e-12)


def test_a_plans_seeds_follow_the_documented_derivation():
    """Iteration `step` of run seed S: noise seed H(S, step, "es-noise"); member m samples from
    H(H(S, step, "es-rollout"), m, "member"), H = llm.rollout.derive_seed: one stream per member, per step
    and per run."""
    from escov.llm.es.plan import IterationPlan

    plan = IterationPlan.derive(7, 3, sigma=0.01, population_size=4, antithetic=False)
    assert plan.noise_seed == derive_seed(7, 3, "es-noise")
    rollout = derive_seed(7, 3, "es-rollout")
    assert [m.rollout_seed for m in plan.members] == [derive_seed(rollout, m, "member") for m in range(4)]
    seeds = {
        m.rollout_seed
        for s in (3, 4)
        for run in (7, 8)
        for m in IterationPlan.derive(run, s, sigma=0.01, population_size=4, antithetic=False).members
    }
    assert len(seeds) == 16  # distinct across members, steps and runs


@pytest.mark.parametrize("antithetic", [False, True])
def test_a_plans_update_sums_signed_fitness_per_direction(antithetic):
    """c_d = sum over the members of direction d of s_m z_m: z itself for one-point ES; z_{2d} - z_{2d+1} for
    antithetic pairs; one coefficient per direction, none more."""
    from escov.llm.es.plan import IterationPlan

    plan = IterationPlan.derive(5, 2, sigma=0.1, population_size=6, antithetic=antithetic)
    z = np.array([0.5, -1.25, 2.0, 0.75, -0.5, 1.5])
    expected = (0.5 + 1.25, 2.0 - 0.75, -0.5 - 1.5) if antithetic else tuple(z)
    update = plan.update(z, alpha=0.2)
    assert update.coefficients == tuple(float(c) for c in expected)  # exact: every sum here is exact in binary
    assert (update.alpha, update.population_size, update.scale) == (0.2, 6, 0.2 / 6)
    with pytest.raises(ValueError, match="z has 5 entries for 6 members"):
        plan.update(z[:5], alpha=0.2)


def test_a_plans_subset_is_the_same_iteration_for_the_members_named():
    from escov.llm.es.plan import IterationPlan

    plan = IterationPlan.derive(5, 2, sigma=0.1, population_size=6, antithetic=True)
    part = plan.subset([4, 1])
    assert (
        (part.step, part.noise_seed, part.sigma)
        == (plan.step, plan.noise_seed, plan.sigma)
        == (2, plan.noise_seed, 0.1)
    )
    assert part.members == (plan.members[4], plan.members[1])
    update = part.update(np.array([1.0, -1.0]), alpha=0.5)
    assert (update.step, update.noise_seed, update.alpha, update.population_size) == (2, plan.noise_seed, 0.5, 2)


def test_centered_rewards_times_center_scale(tiny_model_dir):
    """zscore off: z = (R - mean R) * center_scale (the step size rescaled to the z-scored update norm)."""
    r = np.array([0.0, 1.0, 0.1, 0.3])
    es = _es(HFEngine(tiny_model_dir), get_task("countdown"), zscore=False, center_scale=4.0)
    np.testing.assert_allclose(es.fitness(r, step=0), 4.0 * (r - r.mean()))
    with pytest.raises(ValueError, match="center_scale"):
        ESConfig(center_scale=2.0).validate()
    with pytest.raises(ValueError, match="center_scale"):
        ESConfig(zscore=False, center_scale=0.0).validate()


# ----------------------------------------------------------------------------- settings that act together


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("inplace_bf16", [False, True])
def test_the_engines_dtype_and_in_place_perturbation_together_decide_the_restore_residue(
    tiny_model_dir, dtype, inplace_bf16
):
    """Perturb then restore, for every member of an iteration: with the fp32 master the engine gets its weights
    back bit for bit in either dtype; in place, the residue is within two roundings of the engine's dtype
    (the paper's bf16 leaves some, fp32 far less: at most 2^-23 relative against bf16's 2^-7)."""
    engine = HFEngine(tiny_model_dir, dtype=dtype)
    es = _es(engine, get_task("countdown"), inplace_bf16=inplace_bf16, sigma=1e-2)
    before = _live(engine)
    plan = es.plan(2)
    for member in plan.members:
        es.center.perturb(plan, member)
        es.center.restore(plan, member)
    residue = {n: (p.detach().float() - before[n].float()).abs() for n, p in engine.model.named_parameters()}
    assert all(p.dtype == dtype for p in engine.model.parameters())
    if not inplace_bf16:
        assert all(float(r.max()) == 0.0 for r in residue.values())
        return
    eps = torch.finfo(dtype).eps
    for n, r in residue.items():
        size = before[n].float().abs() + 1e-2 * 4  # |w| + sigma |E| with |E| < 4 (the noise table's normals)
        assert (r <= 2 * len(plan.members) * eps * size + torch.finfo(dtype).tiny).all(), n
    if dtype == torch.bfloat16:
        assert sum(int((r > 0).sum()) for r in residue.values()) > 0  # the paper's bf16 does not undo its adds


@pytest.mark.parametrize("zscore", [True, False])
def test_the_seed_and_the_reward_standardisation_together_decide_the_update(tiny_model_dir, zscore):
    """Rewards R and 3 R + 1 on the same run seed: z-scored fitness gives the same update (standardisation
    removes the scale and shift), centered fitness an update 3 times as long in the same direction; another
    run seed draws other noise, so another update."""
    steps, noise_seeds = {}, {}
    for seed, scale in ((3, 1.0), (3, 3.0), (4, 1.0)):
        engine = HFEngine(tiny_model_dir)
        task = CountdownScoredBy("scaled", lambda c, a=scale: a * digit_share_task().reward(c) + (a - 1) / 2)
        cfg = ESConfig(
            population_size=4, sigma=1e-2, alpha=1e-2, zscore=zscore, member_temperature=1.0, member_samples=2
        )
        names = [n for n, _ in engine.model.named_parameters()]
        master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
        es = make_es(cfg, engine, task, names, master, max_new_tokens=6, seed=seed)
        before = {n: t.clone() for n, t in master.items()}
        out = es.step(task.problems("train", 4, seed=0), step=0)
        assert np.ptp(out.rewards) > 0, "members that all score the same would test nothing"
        steps[(seed, scale)] = {n: es.center.master[n] - before[n] for n in names}
        noise_seeds[(seed, scale)] = es.plan(0).noise_seed
    same, scaled, other = steps[(3, 1.0)], steps[(3, 3.0)], steps[(4, 1.0)]
    assert noise_seeds[(3, 1.0)] == noise_seeds[(3, 3.0)] != noise_seeds[(4, 1.0)]  # the run seed draws the noise
    factor = 1.0 if zscore else 3.0
    for n in same:
        torch.testing.assert_close(scaled[n], factor * same[n], rtol=1e-4, atol=1e-6)  # fp32 rounding of theta + delta
    assert not all(torch.allclose(other[n], same[n], atol=1e-6) for n in same)


def test_a_steps_generated_tokens_are_the_members_and_the_centers_samples():
    """ESStep.generated_tokens (the tokens train.py counts for the step): the members' n_tokens, plus the center's
    samples' where the step drew them."""
    from types import SimpleNamespace

    from escov.llm.es.algorithm import ESStep

    step = ESStep(np.zeros(2), np.zeros(2), 0.0, 100, 0.0, 0.0)
    assert step.generated_tokens == 100
    step.center = SimpleNamespace(n_tokens=20)
    assert step.generated_tokens == 120
