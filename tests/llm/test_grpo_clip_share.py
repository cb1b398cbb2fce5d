"""The GRPO clip statistic (llm/grpo.py clipped_share_sum) under a non-default epsilon_high: a token counts as
clipped when its ratio lies outside [1 - epsilon, 1 + epsilon_high] (the range the loss clamps to; TRL's
epsilon_low / epsilon_high), counted by hand on ratios placed on either side of each bound."""

import torch

from escov.llm.grpo import clipped_share_sum
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
