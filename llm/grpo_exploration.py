"""Two ways of keeping GRPO exploring that act on the rewards and advantages across steps, with the state they
keep over a GRPO phase (a dict of plain values, checkpointed with the optimizer state, so a resumed run goes on
exactly).

zero-success gating (`zero_success_gating`; after "Bayesian boundary gating", 2026): a prompt's group gets
    advantages only while the prompt was never solved (no correct completion) at an earlier step of the phase;
    once solved, its later groups get advantage 0. Training stays at the boundary of what the policy cannot yet
    do instead of sharpening what it already can.
outcome-based exploration (`outcome_bonus_coef` c; Song, Kempe, Munos 2025, "Outcome-based exploration for LLM
    reasoning", the historical UCB bonus): a completion whose final answer a (the task's vote) was seen n(x, a)
    times for its prompt x over the phase, this step's included, gets reward r + c / sqrt(n(x, a)) for its
    advantage (a rare answer earns more than a frequent one); a completion without an answer gets none. The
    recorded rewards and Pass@1 stay the verifier's.
"""

from __future__ import annotations

import numpy as np


def gate_solved(adv: np.ndarray, prompts: list[str], correct: np.ndarray, state: dict) -> tuple[np.ndarray, float]:
    """Advantages with the groups of prompts solved at earlier steps set to 0, and the share of groups so gated;
    then this step's solved prompts join state["solved"]."""
    solved = set(state.get("solved", ()))
    gated = np.array([p in solved for p in prompts])
    out = np.where(gated[:, None], 0.0, adv)
    state["solved"] = sorted(solved | {p for p, row in zip(prompts, correct) if row.any()})
    return out, float(gated.mean()) if len(prompts) else 0.0


def outcome_bonus(answers: list[list[str | None]], prompts: list[str], coef: float, state: dict) -> np.ndarray:
    """The [B, G] bonus c / sqrt(n(x, a)), after counting this step's answers into state["counts"]."""
    counts = state.setdefault("counts", {})
    for p, row in zip(prompts, answers):
        seen = counts.setdefault(p, {})
        for a in row:
            if a is not None:
                seen[a] = seen.get(a, 0) + 1
    return np.array(
        [[0.0 if a is None else coef / np.sqrt(counts[p][a]) for a in row] for p, row in zip(prompts, answers)],
        dtype=np.float64,
    )
