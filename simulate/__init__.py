"""Cheap ES-vs-GRPO bandit analogues of the paper's experiments (numpy only)."""
