"""ES noise regenerated from seeds, the iteration plan (seeds, directions, signs), fitness standardization,
and the update rebuilt from seeds and z."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from escov.llm.config import NOISE_TABLE_SIZE
from escov.llm.es.algorithm import ESConfig, standardize
from escov.llm.es.noise import combined_noise, noise
from escov.llm.es.plan import IterationPlan
from escov.llm.rollout import derive_seed


def test_noise_is_regenerated_exactly_from_its_seed():
    a = noise(7, 3, "model.layers.0.mlp.up_proj.weight", torch.Size([16, 8]))
    b = noise(7, 3, "model.layers.0.mlp.up_proj.weight", torch.Size([16, 8]))
    assert torch.equal(a, b)


def test_equal_shaped_tensors_get_independent_noise():
    """The known bug: one generator re-seeded per tensor gives equal-shaped layers identical noise."""
    shape = torch.Size([64, 64])
    a = noise(7, 0, "model.layers.0.self_attn.q_proj.weight", shape).reshape(-1)
    b = noise(7, 0, "model.layers.1.self_attn.q_proj.weight", shape).reshape(-1)
    c = noise(7, 1, "model.layers.0.self_attn.q_proj.weight", shape).reshape(-1)
    d = noise(8, 0, "model.layers.0.self_attn.q_proj.weight", shape).reshape(-1)
    for other in (b, c, d):
        corr = float(torch.corrcoef(torch.stack([a, other]))[0, 1])
        assert abs(corr) < 5 / 64  # 5 standard errors of a correlation of 4096 independent pairs


def test_chunked_noise_is_standard_normal():
    x = noise(1, 0, "w", torch.Size([200_003]), chunk=4096).double()
    assert abs(float(x.mean())) < 5 / 200_003**0.5
    assert abs(float(x.std()) - 1) < 0.01
    # chunking is part of the definition: the same chunk size reproduces the same values
    assert torch.equal(noise(1, 0, "w", torch.Size([1000]), chunk=7), noise(1, 0, "w", torch.Size([1000]), chunk=7))


def test_noise_is_read_from_one_table_at_hashed_places():
    """Each slice of a tensor's noise is a run of the process's table (drawn once, fixed seed), at the
    place the hash of (seed, direction, name, slice) gives; the slices of one tensor are not copies."""
    from escov.llm.es.noise import NOISE_TABLE_SEED, noise_table

    table = noise_table()
    assert table is noise_table() and table.numel() == NOISE_TABLE_SIZE
    assert torch.equal(table, torch.randn(NOISE_TABLE_SIZE, generator=torch.Generator().manual_seed(NOISE_TABLE_SEED)))
    eps = noise(3, 5, "w", torch.Size([2500]), chunk=1000).reshape(-1)
    slices = [eps[0:1000], eps[1000:2000], eps[2000:2500]]
    for j, part in enumerate(slices):
        place = derive_seed(3, 5, "w", j) % (NOISE_TABLE_SIZE - len(part) + 1)
        assert torch.equal(part, table[place : place + len(part)])
    corr = float(torch.corrcoef(torch.stack([slices[0], slices[1]]))[0, 1])
    assert abs(corr) < 5 / 1000**0.5
    for numel in (999, 1000):  # one slice (up to the chunk): slice 0's place, a view of the table
        place = derive_seed(3, 5, "w", 0) % (NOISE_TABLE_SIZE - numel + 1)
        one = noise(3, 5, "w", torch.Size([numel]), chunk=1000)
        assert torch.equal(one, table[place : place + numel])


@pytest.mark.parametrize("chunk", [0, NOISE_TABLE_SIZE + 1, 2.5, True])
def test_a_noise_chunk_outside_the_table_is_refused_in_one_line(chunk):
    with pytest.raises(ValueError, match=rf"es.noise_chunk must be an integer in \[1, {NOISE_TABLE_SIZE}\]"):
        ESConfig(noise_chunk=chunk).validate()
    with pytest.raises(ValueError, match="es.noise_chunk"):
        noise(0, 0, "w", torch.Size([4]), chunk=chunk)


@given(st.floats(-10, 10, allow_nan=False), st.integers(2, 64))
def test_all_equal_rewards_give_exactly_zero(value, n):
    for zscore in (True, False):
        z = standardize(np.full(n, value), zscore)
        assert np.all(z == 0.0)


@settings(max_examples=50)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=40).filter(lambda r: max(r) - min(r) > 1e-3))
def test_standardized_rewards_have_mean_zero_and_population_std_one(rewards):
    r = np.array(rewards)
    z = standardize(r)
    assert abs(z.mean()) < 1e-9
    expected = (r - r.mean()) / (np.sqrt(np.mean((r - r.mean()) ** 2)) + 1e-8)  # ddof 0, as the paper
    np.testing.assert_allclose(z, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(standardize(r, zscore=False), r - r.mean(), atol=1e-15)


@pytest.mark.parametrize("antithetic", [False, True])
def test_update_rebuilt_from_seeds_equals_the_explicit_member_sum(antithetic):
    """alpha/N sum_i z_i eps_i, member by member in float64, against the folded per-direction sum."""
    n, shape = 6, torch.Size([5, 3])
    plan = IterationPlan.derive(4, 2, sigma=0.1, population_size=n, antithetic=antithetic)
    z = standardize(np.array([0.1, 0.9, 0.4, 0.4, 0.0, 1.0]))
    explicit = torch.zeros(shape, dtype=torch.float64)
    for m in range(n):  # the direction and sign of member m written out here, not read from the plan
        d, sign = (m // 2, (-1.0) ** m) if antithetic else (m, 1.0)
        explicit += z[m] * sign * noise(plan.noise_seed, d, "w", shape).double()
    update = plan.update(z, alpha=0.3)
    assert update.scale == 0.3 / n and len(update.coefficients) == (n // 2 if antithetic else n)
    folded = combined_noise(update.noise_seed, "w", shape, update.coefficients)
    torch.testing.assert_close(folded.double(), explicit, rtol=1e-6, atol=1e-6)


def test_the_plan_holds_each_members_direction_sign_and_own_rollout_seed():
    plan = IterationPlan.derive(3, 5, sigma=0.02, population_size=4, antithetic=True)
    assert [(m.direction, m.sign) for m in plan.members] == [(0, 1.0), (0, -1.0), (1, 1.0), (1, -1.0)]
    assert plan.noise_seed == derive_seed(3, 5, "es-noise") and plan.sigma == 0.02 and plan.step == 5
    rollout = derive_seed(3, 5, "es-rollout")
    assert [m.rollout_seed for m in plan.members] == [derive_seed(rollout, m, "member") for m in range(4)]
    assert len({m.rollout_seed for m in plan.members}) == 4  # sampled members draw independently
    plain = IterationPlan.derive(3, 5, sigma=0.02, population_size=3, antithetic=False)
    assert [(m.direction, m.sign) for m in plain.members] == [(0, 1.0), (1, 1.0), (2, 1.0)]
    part = plan.subset([3, 1])
    assert part.members == (plan.members[3], plan.members[1]) and part.noise_seed == plan.noise_seed
    assert IterationPlan.derive(3, 6, sigma=0.02, population_size=4, antithetic=True).noise_seed != plan.noise_seed


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(population_size=1), "population_size"),
        (dict(population_size=5, antithetic=True), "even"),
        (dict(sigma=0.0), "sigma"),
        (dict(alpha=float("nan")), "alpha"),
        (dict(member_samples=4), "greedy"),
        (dict(member_temperature=-1.0), "member_temperature"),
        (dict(param_pattern="("), "param_pattern"),
    ],
)
def test_bad_es_settings_are_named(bad, match):
    with pytest.raises(ValueError, match=match):
        ESConfig(**bad).validate()


@pytest.mark.parametrize(
    "antithetic, indices", [(False, [0, 1, 2, 3]), (True, [0, 1, 2, 3]), (True, [1, 3]), (False, [2])]
)
@pytest.mark.parametrize("shape", [(5, 3), (7,)])
def test_members_filled_together_equal_each_filled_alone(antithetic, indices, shape):
    """fill_members (one buffer, one add, when the members share a sign) gives fill_member's bits, and
    both give (theta + s sigma eps_d)^T; the odd antithetic members alone all have s = -1."""
    from escov.llm.es.noise import PopulationNoise

    plan = IterationPlan.derive(5, 2, sigma=0.1, population_size=4, antithetic=antithetic).subset(indices)
    theta = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    pop = PopulationNoise(chunk=4)
    together = torch.empty((len(indices), *shape[::-1]))
    pop.fill_members(plan, plan.members, "w", theta, out=together)
    for row, member in zip(together, plan.members):
        alone = torch.empty(shape[::-1])
        pop.fill_member(plan, member, "w", theta, out=alone)
        assert torch.equal(row, alone)
        expected = theta + member.sign * 0.1 * noise(plan.noise_seed, member.direction, "w", torch.Size(shape), chunk=4)
        torch.testing.assert_close(row, expected.T if len(shape) == 2 else expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("rank", [1, 2])
@pytest.mark.parametrize("antithetic", [False, True])
def test_low_rank_members_and_updates_equal_their_factors_product(antithetic, rank):
    """Low rank r: E_d = A_d B_d^T / sqrt(r), A_d and B_d the noise of "NAME/lowrank-A" [out, r] and
    "NAME/lowrank-B" [in, r]. A member's weights are (theta + s sigma E_d)^T, and the update's
    sum_d c_d E_d (zero coefficients skipped, all zero: a zero matrix) equals the sum over directions."""
    from escov.llm.es.noise import PopulationNoise

    shape, sigma = (5, 3), 0.1
    plan = IterationPlan.derive(9, 1, sigma=sigma, population_size=4, antithetic=antithetic)
    theta = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    pop = PopulationNoise(rank=rank, chunk=4)

    def e_of(d):
        a = noise(plan.noise_seed, d, "w/lowrank-A", torch.Size((5, rank)), chunk=4)
        b = noise(plan.noise_seed, d, "w/lowrank-B", torch.Size((3, rank)), chunk=4)
        return (a @ b.T) / rank**0.5

    for member in plan.members:
        out = torch.empty(shape[::-1])
        pop.fill_member(plan, member, "w", theta, out=out)
        torch.testing.assert_close(out, (theta + member.sign * sigma * e_of(member.direction)).T, rtol=0, atol=1e-6)
        torch.testing.assert_close(pop.direction(plan.noise_seed, member.direction, "w", shape), e_of(member.direction))
    together = torch.empty((len(plan.members), *shape[::-1]))
    pop.fill_members(plan, plan.members, "w", theta, out=together)
    assert all(
        torch.allclose(row, (theta + m.sign * sigma * e_of(m.direction)).T, atol=1e-6)
        for row, m in zip(together, plan.members)
    )
    coef = np.array([0.5, 0.0, -2.0, 1.0])  # a zero and a one: neither may be skipped for the other
    torch.testing.assert_close(
        pop.combined(plan.noise_seed, "w", shape, coef), 0.5 * e_of(0) - 2.0 * e_of(2) + e_of(3), rtol=0, atol=1e-6
    )
    assert torch.equal(pop.combined(plan.noise_seed, "w", shape, np.zeros(3)), torch.zeros(shape))
    vector = torch.randn(4)  # a vector is never low rank: its noise is read as in full rank
    torch.testing.assert_close(
        pop.direction(plan.noise_seed, 1, "b", (4,)), noise(plan.noise_seed, 1, "b", torch.Size((4,)), chunk=4)
    )
    out = torch.empty(4)
    pop.fill_member(plan, plan.members[0], "b", vector, out=out)
    torch.testing.assert_close(
        out,
        vector
        + plan.members[0].sign
        * sigma
        * noise(plan.noise_seed, plan.members[0].direction, "b", torch.Size((4,)), chunk=4),
    )


def test_kept_draws_are_the_runs_kept_within_the_budget_and_forgotten_for_a_new_seed():
    """Runs of several slices (copies, 4 bytes an entry) are kept while the bytes kept stay within the
    budget (a run that would exceed it is returned, not kept); a new seed forgets the last one's runs."""
    from escov.llm.es.noise import KeptDraws, noise_run

    kept = KeptDraws(budget_bytes=4 * (10 + 6))
    first = kept.get(3, 0, "w", 10, 4)
    assert torch.equal(first, noise_run(3, 0, "w", 10, 4)) and kept.get(3, 0, "w", 10, 4) is first
    assert kept.used_bytes == 40
    second = kept.get(3, 1, "w", 6, 4)  # fills the budget exactly: kept
    assert torch.equal(second, noise_run(3, 1, "w", 6, 4)) and kept.get(3, 1, "w", 6, 4) is second
    assert kept.used_bytes == 64 and set(kept.runs) == {(0, "w", 10), (1, "w", 6)}
    over = kept.get(3, 2, "w", 5, 4)  # one entry too many: returned, not kept
    assert torch.equal(over, noise_run(3, 2, "w", 5, 4)) and kept.get(3, 2, "w", 5, 4) is not over
    assert kept.used_bytes == 64 and (2, "w", 5) not in kept.runs
    fresh = kept.get(4, 0, "w", 10, 4)  # a new seed: the last seed's runs are forgotten
    assert (
        torch.equal(fresh, noise_run(4, 0, "w", 10, 4)) and set(kept.runs) == {(0, "w", 10)} and kept.used_bytes == 40
    )
    from escov.llm.es.noise import PopulationNoise

    pop = PopulationNoise(chunk=4, keep_bytes=1000)  # a population keeps its runs through KeptDraws
    run = pop.run(3, 0, "w", 10)
    assert pop.run(3, 0, "w", 10) is run and torch.equal(run, noise_run(3, 0, "w", 10, 4))
    assert PopulationNoise(chunk=4).kept is None


@pytest.mark.parametrize("keep_bytes", [0, 10_000])
def test_a_full_rank_update_is_the_coefficient_weighted_sum_of_the_directions(keep_bytes):
    """sum_d c_d eps_d rebuilt from the seeds, kept runs or not, equals the sum of each direction's noise."""
    from escov.llm.es.noise import PopulationNoise

    pop = PopulationNoise(chunk=4, keep_bytes=keep_bytes)
    coef = np.array([0.5, 0.0, -2.0, 1.0])
    for shape in ((5, 3), (7,)):
        expected = sum(float(c) * noise(11, d, "w", torch.Size(shape), chunk=4) for d, c in enumerate(coef))
        torch.testing.assert_close(pop.combined(11, "w", shape, coef), expected, rtol=0, atol=1e-6)
        torch.testing.assert_close(
            combined_noise(11, "w", torch.Size(shape), coef, chunk=4), expected, rtol=0, atol=1e-6
        )


def test_a_noise_rank_is_checked_against_the_smallest_side_of_every_matrix():
    from escov.llm.es.noise import check_rank

    shapes = {"a.weight": (100, 48), "b.weight": (64, 32), "a.bias": (64,)}  # the narrowest is not first by name
    for rank in (0, 1, 32):
        check_rank(rank, shapes)  # full rank, and low ranks up to min(out, in) of the narrowest matrix
    with pytest.raises(ValueError) as err:
        check_rank(33, shapes)
    assert str(err.value) == (
        "noise_rank 33 is larger than parameter b.weight of shape (64, 32) allows (at most min(out, in) = 32)"
    )
    for bad in (-1, True, 2.0, "2"):
        with pytest.raises(ValueError) as err:
            check_rank(bad, shapes)
        assert str(err.value) == f"noise_rank must be an integer >= 0 (0 = full rank), got {bad!r}"
    check_rank(0, {"a.bias": (64,)})
    with pytest.raises(ValueError) as err:
        check_rank(1, {"a.bias": (64,)})
    assert (
        str(err.value) == "noise_rank > 0 needs at least one perturbed weight matrix; the parameter selection has none"
    )
