"""ES noise regenerated from seeds, fitness standardization, and the update rebuilt from seeds and z."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from llm.es.algorithm import ESConfig, direction_coefficients, standardize
from llm.es.noise import combined_noise, member_direction, noise


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
    assert abs(float(x.mean())) < 5 / 200_003 ** 0.5
    assert abs(float(x.std()) - 1) < 0.01
    # chunking is part of the definition: the same chunk size reproduces the same values
    assert torch.equal(noise(1, 0, "w", torch.Size([1000]), chunk=7), noise(1, 0, "w", torch.Size([1000]), chunk=7))


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
    n, seed, shape = 6, 11, torch.Size([5, 3])
    z = standardize(np.array([0.1, 0.9, 0.4, 0.4, 0.0, 1.0]))
    explicit = torch.zeros(shape, dtype=torch.float64)
    for m in range(n):
        d, sign = member_direction(m, antithetic)
        explicit += z[m] * sign * noise(seed, d, "w", shape).double()
    folded = combined_noise(seed, "w", shape, direction_coefficients(z, antithetic))
    torch.testing.assert_close(folded.double(), explicit, rtol=1e-6, atol=1e-6)


def test_antithetic_pairs_share_a_direction_with_opposite_signs():
    assert [member_direction(m, True) for m in range(4)] == [(0, 1.0), (0, -1.0), (1, 1.0), (1, -1.0)]
    assert [member_direction(m, False) for m in range(3)] == [(0, 1.0), (1, 1.0), (2, 1.0)]


@pytest.mark.parametrize("bad, match", [
    (dict(population_size=1), "population_size"), (dict(population_size=5, antithetic=True), "even"),
    (dict(sigma=0.0), "sigma"), (dict(alpha=float("nan")), "alpha"), (dict(member_samples=4), "greedy"),
    (dict(member_temperature=-1.0), "member_temperature"), (dict(param_pattern="("), "param_pattern")])
def test_bad_es_settings_are_named(bad, match):
    with pytest.raises(ValueError, match=match):
        ESConfig(**bad).validate()
