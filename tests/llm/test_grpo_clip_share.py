"""The GRPO clip statistic (llm/grpo.py clipped_share_sum) under a non-default epsilon_high: a token counts as
clipped when its ratio lies outside [1 - epsilon, 1 + epsilon_high] (the range the loss clamps to; TRL's
epsilon_low / epsilon_high), counted by hand on ratios placed on either side of each bound."""

import torch

from escov.llm.grpo import clip_region_sums, clipped_share_sum
from escov.llm.settings.grpo_config import GRPOConfig

RATIO = torch.tensor([[0.70, 0.79, 0.85, 1.10, 1.25, 1.27, 1.30, 1.50]])


def test_the_upper_bound_is_epsilon_high_and_the_lower_epsilon():
    cfg = GRPOConfig(epsilon=0.2, epsilon_high=0.28)
    mask = torch.ones_like(RATIO)
    # below 0.8: 0.70, 0.79; above 1.28: 1.30, 1.50; 1.25 and 1.27 lie inside the wider upper range
    assert clipped_share_sum(RATIO, mask, cfg) == 4
    mask[0, 0] = 0  # a padding token is never counted
    assert clipped_share_sum(RATIO, mask, cfg) == 3


def test_without_epsilon_high_the_range_is_symmetric():
    cfg = GRPOConfig(epsilon=0.2)
    # above 1.2: 1.25, 1.27, 1.30, 1.50; below 0.8: 0.70, 0.79
    assert clipped_share_sum(RATIO, torch.ones_like(RATIO), cfg) == 6
    narrow = GRPOConfig(epsilon=0.1, epsilon_high=0.4)
    # below 0.9: 0.70, 0.79, 0.85; above 1.4: 1.50
    assert clipped_share_sum(RATIO, torch.ones_like(RATIO), narrow) == 4


# exact binary fractions: 1 - epsilon = 0.75 and 1 + epsilon_high = 1.5 are representable, so a ratio on a bound is on
# it in float32 too; the bounds are open (a ratio on a bound is inside the range), as TRL's `coef_1 < 1 - epsilon_low`
# and `coef_1 > 1 + epsilon_high`
BOUNDS = GRPOConfig(epsilon=0.25, epsilon_high=0.5)
ON_BOUNDS = torch.tensor([[0.5, 0.75, 0.875, 1.25, 1.5, 1.75]])


def test_a_ratio_on_a_bound_is_not_clipped():
    # outside [0.75, 1.5]: 0.5 and 1.75; 0.75 and 1.5 lie on the bounds; 1.25 lies inside (epsilon alone would clip it)
    assert clipped_share_sum(ON_BOUNDS, torch.ones_like(ON_BOUNDS), BOUNDS) == 2
    symmetric = GRPOConfig(epsilon=0.25)  # [0.75, 1.25]: 1.25 on the bound, 1.5 and 1.75 above
    assert clipped_share_sum(ON_BOUNDS, torch.ones_like(ON_BOUNDS), symmetric) == 3


def test_the_clip_regions_count_each_bound_with_the_sign_of_its_advantage():
    """TRL's clip_ratio/low: ratio < 1 - epsilon with A < 0; /high: ratio > 1 + epsilon_high with A > 0. Three
    completions (A = -1, 0, +2) of the same six ratios, counted by hand."""
    ratio = ON_BOUNDS.repeat(3, 1)
    adv = torch.tensor([-1.0, 0.0, 2.0])
    mask = torch.ones_like(ratio)
    # A < 0 (row 0): 0.5 alone is below 0.75 (0.75 itself is on the bound); A = 0 (row 1): neither;
    # A > 0 (row 2): 1.75 alone is above 1.5
    assert clip_region_sums(ratio, adv, mask, BOUNDS) == (1.0, 1.0)
    # epsilon_high = 0 means epsilon: above 1.25 are 1.5 and 1.75
    assert clip_region_sums(ratio, adv, mask, GRPOConfig(epsilon=0.25)) == (1.0, 2.0)
    # a lower bound of 0.875 (epsilon 0.125) with the upper 1.5: below it 0.5 and 0.75
    assert clip_region_sums(ratio, adv, mask, GRPOConfig(epsilon=0.125, epsilon_high=0.5)) == (2.0, 1.0)
    # the sign decides: the same ratios with every advantage negated count 0.5 in row 2 and 1.75 in row 0
    assert clip_region_sums(ratio, -adv, mask, BOUNDS) == (1.0, 1.0)
    # padding is never counted: masking the first and last token of every row leaves nothing outside the range
    mask[:, 0] = 0
    mask[:, -1] = 0
    assert clip_region_sums(ratio, adv, mask, BOUNDS) == (0.0, 0.0)
    many = torch.full((2, 3), 0.5)  # two completions, all below: A < 0 on both, 6 tokens low
    assert clip_region_sums(many, torch.tensor([-1.0, -3.0]), torch.ones_like(many), BOUNDS) == (6.0, 0.0)
    high_only = torch.full((2, 3), 2.0)
    assert clip_region_sums(high_only, torch.tensor([0.5, 1.0]), torch.ones_like(high_only), BOUNDS) == (0.0, 6.0)
