"""Properties of ES's iteration plan (llm/es/plan.py) and of its centre arithmetic (llm/es/center.py),
stated with hypothesis over seeds, steps, population sizes, fitness vectors and dtypes:

- the plan: one noise seed per (run seed, step); each direction d used by its members with the same
  noise seed, once with sign +1 (plain) or as an antithetic pair with signs +1 and -1, which sum to 0
  so a fitness shared by the whole population moves nothing; every member its own rollout seed;
- the update: c_d = sum of s_m z_m over the members of direction d (computed here member by member),
  linear in z, and the same when the population is split into blocks (as Ray actors split it) and
  their coefficients added; scale alpha / N;
- the centre: perturb then restore gives the centre back, bit for bit with the fp32 master, and in
  place within the rounding of the weights' dtype (two roundings of |w| + sigma |E|).
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from escov.llm.es.center import InPlaceBF16, MasterCenter
from escov.llm.es.noise import PopulationNoise
from escov.llm.es.plan import IterationPlan
from escov.llm.rollout import derive_seed

FAST = settings(max_examples=40, deadline=None)
SEEDS = st.integers(0, 2**31 - 1)
STEPS = st.integers(0, 10_000)


@st.composite
def plans(draw):
    """(run seed, step, population size, antithetic, plan): N even with antithetic pairs."""
    run_seed, step, antithetic = draw(SEEDS), draw(STEPS), draw(st.booleans())
    n = draw(st.integers(1, 12)) * 2 if antithetic else draw(st.integers(2, 16))
    sigma = draw(st.floats(1e-4, 1.0))
    return (
        run_seed,
        step,
        n,
        antithetic,
        IterationPlan.derive(run_seed, step, sigma=sigma, population_size=n, antithetic=antithetic),
    )


def fitness(n):
    return st.lists(st.floats(-3, 3, allow_nan=False), min_size=n, max_size=n).map(np.array)


@FAST
@given(plans())
def test_each_direction_is_one_member_or_a_pair_of_opposite_signs_on_the_iterations_noise_seed(drawn):
    run_seed, step, n, antithetic, plan = drawn
    assert plan.noise_seed == derive_seed(run_seed, step, "es-noise") and plan.step == step
    assert [m.index for m in plan.members] == list(range(n))
    by_direction: dict[int, list[float]] = {}
    for m in plan.members:
        by_direction.setdefault(m.direction, []).append(m.sign)
    assert sorted(by_direction) == list(range(n // 2 if antithetic else n))  # directions 0..D-1, none skipped
    for signs in by_direction.values():
        assert signs == ([1.0, -1.0] if antithetic else [1.0])
    assert len({m.rollout_seed for m in plan.members}) == n  # every member samples on its own seed
    other_step = IterationPlan.derive(run_seed, step + 1, sigma=plan.sigma, population_size=n, antithetic=antithetic)
    assert other_step.noise_seed != plan.noise_seed


@FAST
@given(plans(), st.data(), st.floats(1e-4, 1.0))
def test_the_update_coefficients_are_the_signed_fitness_summed_per_direction(drawn, data, alpha):
    _, _, n, antithetic, plan = drawn
    z = data.draw(fitness(n))
    update = plan.update(z, alpha)
    by_hand = [z[2 * d] - z[2 * d + 1] for d in range(n // 2)] if antithetic else list(z)
    np.testing.assert_allclose(update.coefficients, by_hand, rtol=0, atol=1e-12)
    assert update.scale == alpha / n and update.population_size == n and update.noise_seed == plan.noise_seed
    shifted = plan.update(z + 1.5, alpha).coefficients  # a fitness shared by all members
    np.testing.assert_allclose(
        np.subtract(shifted, update.coefficients), np.zeros(n // 2) if antithetic else np.full(n, 1.5), atol=1e-12
    )
    doubled = plan.update(2 * z, alpha).coefficients  # linear in z
    np.testing.assert_allclose(doubled, 2 * np.asarray(update.coefficients), atol=1e-12)


@FAST
@given(plans(), st.data())
def test_blocks_of_the_population_add_up_to_the_whole_update(drawn, data):
    """Members split into blocks in any order (as Ray actors evaluate them): the blocks' coefficients,
    padded to the directions, add up to the whole population's."""
    _, _, n, _, plan = drawn
    z = data.draw(fitness(n))
    order = data.draw(st.permutations(range(n)))
    cut = data.draw(st.integers(1, n - 1))
    total = np.zeros(len(plan.update(z, 1.0).coefficients))
    for block in (order[:cut], order[cut:]):
        part = plan.subset(list(block)).update(z[list(block)], 1.0).coefficients
        total[: len(part)] += part
    np.testing.assert_allclose(total, plan.update(z, 1.0).coefficients, atol=1e-12)


SHAPES = st.sampled_from([(3,), (4, 3), (2, 5)])


def weights_of(shapes, seed, dtype):
    gen = torch.Generator().manual_seed(seed)
    return {f"w{i}": torch.randn(s, generator=gen).to(dtype) for i, s in enumerate(shapes)}


@FAST
@given(plans(), st.lists(SHAPES, min_size=1, max_size=3), st.integers(0, 2**16), st.integers(0, 2))
def test_the_master_centre_perturbs_to_theta_plus_s_sigma_e_and_restores_bit_for_bit(drawn, shapes, seed, rank):
    _, _, n, _, plan = drawn
    master = weights_of(shapes, seed, torch.float32)
    before = {k: v.clone() for k, v in master.items()}
    model: dict[str, torch.Tensor] = {}
    noise = PopulationNoise(rank=rank, chunk=4)
    center = MasterCenter(master, noise, lambda items: model.update((k, v.clone()) for k, v in items))
    member = plan.members[seed % n]
    center.perturb(plan, member)
    for name, theta in before.items():
        e = noise.direction(plan.noise_seed, member.direction, name, theta.shape)
        torch.testing.assert_close(model[name], theta + member.sign * plan.sigma * e, rtol=0, atol=0)
    center.restore(plan, member)
    assert all(torch.equal(model[k], before[k]) and torch.equal(master[k], before[k]) for k in before)


@FAST
@given(
    plans(),
    st.lists(SHAPES, min_size=1, max_size=3),
    st.integers(0, 2**16),
    st.sampled_from([torch.bfloat16, torch.float16, torch.float32]),
)
def test_in_place_perturb_then_restore_is_the_identity_up_to_the_dtypes_rounding(drawn, shapes, seed, dtype):
    """w + s sigma E - s sigma E, each add rounded to the dtype: off by at most two roundings of
    |w| + sigma |E| (each at most u times the value, the unit roundoff u = 2^-8 for bf16, 2^-11 for fp16,
    2^-24 for fp32; E itself is rounded to the dtype first, which both adds share)."""
    _, _, n, _, plan = drawn
    live = weights_of(shapes, seed, dtype)
    before = {k: v.clone() for k, v in live.items()}
    noise = PopulationNoise(chunk=4)
    center = InPlaceBF16(live, noise)
    member = plan.members[seed % n]
    center.perturb(plan, member)
    center.restore(plan, member)
    half_ulp = torch.finfo(dtype).eps / 2
    for name, w0 in before.items():
        e = noise.direction(plan.noise_seed, member.direction, name, w0.shape)
        size = w0.float().abs() + plan.sigma * e.abs()
        bound = 2 * half_ulp * size * (1 + half_ulp) ** 2 + torch.finfo(dtype).tiny  # E's and w's roundings inside
        assert live[name].dtype == dtype
        assert ((live[name].float() - w0.float()).abs() <= bound).all(), name
