"""The design's p-value (paper_checks/design.py Estimate.p) agrees with its interval: p < 0.05 exactly when 0 lies
outside the 95% interval, on seeds x prompts arrays with effects around the detection boundary."""

import numpy as np

from escov.paper_checks.design import seeds_by_prompts


def test_p_below_005_exactly_when_the_design_interval_excludes_0_on_either_side():
    rng = np.random.default_rng(5)
    outside = {"above": 0, "below": 0, "containing": 0}
    for rep in range(150):
        s, p = int(rng.integers(2, 9)), int(rng.integers(4, 40))
        mu = rng.normal(0, 0.03)
        y = mu + rng.normal(0, 0.03, (s, 1)) + rng.normal(0, 0.05, (1, p)) + rng.normal(0, 0.05, (s, p))
        est = seeds_by_prompts(y, 64, seed=rep)
        assert (est.p() < 0.05) == (est.lo > 0 or est.hi < 0)
        assert (est.p(1) < 0.025) == (est.lo > 0) and (est.p(-1) < 0.025) == (est.hi < 0)
        outside["above" if est.lo > 0 else "below" if est.hi < 0 else "containing"] += 1
    assert min(outside.values()) >= 10  # both sides of the boundary were visited
    one = seeds_by_prompts(np.array([[0.5, 0.7, 0.6]]), 8)  # one seed: an infinite interval, p = 1
    assert one.p() == 1.0 and one.lo == float("-inf")
    flat = seeds_by_prompts(np.full((3, 4), 0.25), 8)  # every value the same: the mean is exact
    assert flat.p() == 0.0 and flat.lo == flat.hi == 0.25
