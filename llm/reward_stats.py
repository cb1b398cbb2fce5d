"""What the reward does on a batch of [prompt][sample] completions: the statistics every training step
(metrics.jsonl) and every evaluation (eval.json, `llm eval`) report, named as TRL logs them.

    reward_mean, reward_std        the total (weighted) reward over all completions (population std)
    rewards/<name>/mean, .../std   each reward function's own rewards over the completions it applies to
                                   (None entries left out, as TRL's nanmean); .../applied: the share it applies to
    reward_zero_std_share          share of prompts whose samples all got the same total reward (TRL's
                                   frac_reward_zero_std: GRPO learns nothing from such a group)
    mean_response_tokens           mean completion length in tokens
    pass_at_1                      share of completions that are correct (llm/tasks/base.py correct_of)
    by_data_source/<source>/...    reward_mean, reward_std, pass_at_1 and prompts of each `data_source`
                                   value, when the data has that column (verl's)

A function that applies to no completion of the batch has mean and std null (JSON has no NaN).
"""

from __future__ import annotations

import numpy as np

from escov.llm.tasks.base import Problem

DATA_SOURCE = "data_source"  # verl's column naming where a record comes from


def data_sources(problems: list[Problem]) -> list[str] | None:
    """Each problem's data_source (a string column of its record), or None when no problem has one."""
    sources = [
        problem.meta.get("columns", {}).get(DATA_SOURCE) if isinstance(problem.meta.get("columns"), dict) else None
        for problem in problems
    ]
    if not any(isinstance(s, str) for s in sources):
        return None
    return [s if isinstance(s, str) else "(none)" for s in sources]


def _mean_std(values: np.ndarray) -> dict:
    kept = values[~np.isnan(values)]
    if not kept.size:
        return {"mean": None, "std": None}
    return {"mean": float(kept.mean()), "std": float(kept.std())}


def reward_stats(
    rewards: np.ndarray, parts: dict, lengths: np.ndarray, problems: list[Problem], correct: np.ndarray
) -> dict:
    """The statistics of the module docstring for rewards, parts' arrays, lengths and correct (bool, as the
    task decided: llm/tasks/base.py correct_of) of shape [prompt, sample]."""
    rewards, correct = np.asarray(rewards, dtype=float), np.asarray(correct, dtype=bool)
    out = {"reward_mean": float(rewards.mean()), "reward_std": float(rewards.std())}
    if parts:
        out["rewards"] = {
            name: _mean_std(np.asarray(v, dtype=float).ravel())
            | {"applied": float(np.mean(~np.isnan(np.asarray(v, dtype=float))))}
            for name, v in parts.items()
        }
    out["reward_zero_std_share"] = float(np.mean(rewards.max(axis=1) == rewards.min(axis=1)))
    out["mean_response_tokens"] = float(np.mean(lengths))
    sources = data_sources(problems)
    if sources is not None:
        out["by_data_source"] = {}
        for source in sorted(set(sources)):
            rows = np.array([s == source for s in sources])
            r = rewards[rows]
            out["by_data_source"][source] = {
                "reward_mean": float(r.mean()),
                "reward_std": float(r.std()),
                "pass_at_1": float(np.mean(correct[rows])),
                "prompts": int(rows.sum()),
            }
    return out


def summary_line(stats: dict) -> str:
    """One line: total reward mean +- std, each function's mean, zero-spread share, completion length."""
    parts = [f"reward {stats['reward_mean']:.3f} +- {stats['reward_std']:.3f}"]
    for name, s in stats.get("rewards", {}).items():
        parts.append(f"{name} {'n/a' if s['mean'] is None else format(s['mean'], '.3f')}")
    parts.append(f"zero-spread prompts {stats['reward_zero_std_share']:.2f}")
    parts.append(f"length {stats['mean_response_tokens']:.1f} tokens")
    line = "  ".join(parts)
    for source, s in stats.get("by_data_source", {}).items():
        line += f"\n    {source}: reward {s['reward_mean']:.3f}  pass@1 {s['pass_at_1']:.3f} ({s['prompts']} prompts)"
    return line


def change_line(base: dict, final: dict) -> str:
    """One line, base -> final: total reward mean, each function's mean, completion length (n/a where unknown)."""

    def num(stats: dict, *path) -> str:
        for key in path:
            stats = stats.get(key) if isinstance(stats, dict) else None
        return "n/a" if stats is None else f"{stats:.3f}"

    parts = [f"reward {num(base, 'reward_mean')} -> {num(final, 'reward_mean')}"]
    for name in final.get("rewards", {}):
        parts.append(f"{name} {num(base, 'rewards', name, 'mean')} -> {num(final, 'rewards', name, 'mean')}")
    parts.append(f"length {num(base, 'mean_response_tokens')} -> {num(final, 'mean_response_tokens')} tokens")
    return "  ".join(parts)
