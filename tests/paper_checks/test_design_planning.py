"""Planning a design (paper_checks/design.py): variance components recovered from data with known components,
the planned detectable difference checked against the power seeds_by_prompts actually has on synthetic designs
whose true mean is that difference, and the fewest seeds for a target found exactly."""
import numpy as np
import pytest

from escov.paper_checks.design import Components, planned_detectable, seeds_by_prompts, seeds_needed, variance_components

TRUE = {"seed": 4e-4, "prompt": 1e-4, "residual": 2e-3}


def draw(rng, seeds, prompts, mean=0.0, seed=TRUE["seed"], prompt=TRUE["prompt"], residual=TRUE["residual"]):
    return (mean + rng.normal(0, seed ** 0.5, (seeds, 1)) + rng.normal(0, prompt ** 0.5, (1, prompts))
            + rng.normal(0, residual ** 0.5, (seeds, prompts)))


def test_components_are_recovered_on_average():
    rng = np.random.default_rng(1)
    est = np.array([[getattr(variance_components(draw(rng, 20, 100)), k) for k in TRUE] for _ in range(300)])
    # each estimate is unbiased before truncation at 0 (never reached here): the mean of 300 within 4 standard errors
    for j, k in enumerate(TRUE):
        se = est[:, j].std(ddof=1) / len(est) ** 0.5
        assert abs(est[:, j].mean() - TRUE[k]) < 4 * se, (k, est[:, j].mean(), TRUE[k])


def test_components_of_a_hand_computed_array():
    y = np.array([[1.0, 2.0, 6.0], [3.0, 4.0, 5.0]])
    # rows 3, 4; columns 2, 3, 5.5; grand 3.5; residuals y - row - col + grand:
    # [[-0.5, -0.5, 1.0], [0.5, 0.5, -1.0]] -> sum of squares 3.0 over (2-1)(3-1) = 2 df
    c = variance_components(y)
    assert c.residual == pytest.approx(1.5)
    assert c.seed == pytest.approx(max(0.0, (3 * 0.5 - 1.5) / 3))          # MS_seed = 3 x Var(3, 4) = 1.5
    assert c.prompt == pytest.approx((2 * np.var([2, 3, 5.5], ddof=1) - 1.5) / 2)
    shares = c.shares()
    assert sum(shares.values()) == pytest.approx(1.0) and shares["seeds"] == 0.0
    with pytest.raises(ValueError, match="at least 2 of each"):
        variance_components([[1.0, 2.0]])


@pytest.mark.parametrize("seeds, prompts", [(3, 32), (6, 64), (12, 128)])
def test_the_planned_detectable_difference_is_found_80_percent_of_the_time(seeds, prompts):
    """A true mean equal to the planned detectable difference is declared nonzero (the interval excludes 0) in
    about 80% of 400 synthetic designs: 0.72-0.88 is about 4 binomial standard errors."""
    rng = np.random.default_rng(seeds)
    c = Components(**TRUE, seeds=8, prompts=64)
    d = planned_detectable(c, seeds, prompts)
    found = np.mean([(lambda e: e.lo > 0 or e.hi < 0)(seeds_by_prompts(draw(rng, seeds, prompts, mean=d), 32, n_boot=300, seed=i))
                     for i in range(400)])
    assert 0.72 <= found <= 0.88, (d, found)
    # and a true mean of zero is declared nonzero about 5% of the time, never near 80%
    false = np.mean([(lambda e: e.lo > 0 or e.hi < 0)(seeds_by_prompts(draw(rng, seeds, prompts), 32, n_boot=300, seed=i))
                     for i in range(200)])
    assert false <= 0.12


def test_seeds_needed_is_the_first_design_that_reaches_the_target():
    c = Components(**TRUE, seeds=8, prompts=64)
    n = seeds_needed(c, 0.02, 64)
    assert planned_detectable(c, n, 64) <= 0.02 < planned_detectable(c, n - 1, 64)
    assert seeds_needed(c, 0.02, 256) < n   # more prompts, fewer seeds
    # the prompt component alone sets a floor no number of seeds goes below
    floor_bound = 2.8 * (TRUE["prompt"] / 64) ** 0.5
    assert seeds_needed(c, 0.9 * floor_bound, 64) is None
    assert planned_detectable(Components(0.0, 0.0, 0.0, 2, 2), 4, 4) == 0.0
