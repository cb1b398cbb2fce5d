"""Token entropy at matched Pass@1 with prompts as a random effect (paper_checks/real_checks/at_matched.py
matched_entropy): curves whose points carry each prompt's entropy get the seeds x prompts interval; curves without
it keep the interval over seeds, labelled as such. On synthetic curves whose ES - GRPO entropy differs by prompt
(a prompt component shared by every seed) with a known mean over the prompt population, the seeds x prompts
interval covers it at about 95% and the seeds-only interval does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from escov.paper_checks.design import seeds_by_prompts
from escov.paper_checks.evidence import Evidence
from escov.paper_checks.real_checks import REAL_CHECKS
from escov.paper_checks.real_checks.at_matched import ENTROPY
from escov.paper_checks.rundir import Run
from escov.theory.decisions import over_seeds

SEEDS, PROMPTS, N, STEPS = 6, 48, 32, 5
TRUTH = 0.01  # ES - GRPO entropy over the prompt population


def _points(pass1: np.ndarray, entropy: np.ndarray, per_prompt: bool) -> list[dict]:
    """curve.json points: Pass@1 (T,) as equal correct counts on every prompt, per-prompt entropy (T, P)."""
    points = []
    for t, (m, h) in enumerate(zip(pass1, entropy)):
        rows = [{"id": f"p{i}", "correct": int(round(m * N))} for i in range(PROMPTS)]
        if per_prompt:
            rows = [r | {"mean_token_entropy": float(x)} for r, x in zip(rows, h)]
        points.append(
            {
                "step": 10 * t,
                "sampled": {
                    "n": N,
                    "pass_at_k": {"1": float(m)},
                    "mean_token_entropy": float(h.mean()),
                    "per_problem": rows,
                },
                "greedy": {"pass_at_k": {"1": float(m)}},
            }
        )
    return points


def _differences(rng, prompt_sd: float) -> np.ndarray:
    """ES - GRPO entropy per (seed, prompt): TRUTH + b_p + a_s + e_sp, b_p ~ N(0, prompt_sd^2) drawn once for the
    prompts (shared by every seed), a_s ~ N(0, 0.003^2), e_sp ~ N(0, 0.01^2)."""
    b = rng.normal(0, prompt_sd, PROMPTS)
    return TRUTH + b + rng.normal(0, 0.003, (SEEDS, 1)) + rng.normal(0, 0.01, (SEEDS, PROMPTS))


def _evidence(y: np.ndarray, per_prompt: bool) -> Evidence:
    """ES and GRPO on SEEDS seeds along the same Pass@1 path (0.2 to 0.5, measured every 7.5 points); GRPO's
    entropy is 1 - 0.2 Pass@1 on every prompt, ES's that plus y[s, p] at every point."""
    pass1 = np.linspace(0.2, 0.5, STEPS)
    runs = []
    for s in range(SEEDS):
        grpo = np.tile(1 - 0.2 * pass1[:, None], (1, PROMPTS))
        for algo, h in (("es", grpo + y[s]), ("grpo", grpo)):
            config = {"algo": algo, "model": "base", "seed": s, "es": {"population_size": 8}}
            runs.append(Run(path=Path(f"{algo}{s}"), config=config, curve=_points(pass1, h, per_prompt)))
    return Evidence(runs=runs)


def test_curves_with_per_prompt_entropy_get_the_seeds_by_prompts_interval():
    """The reading with per-prompt entropy is the seeds x prompts interval of the (seed, prompt) differences; without
    it, the interval over seeds of their per-seed means, labelled as seeds only."""
    y = _differences(np.random.default_rng(0), 0.02)
    with_prompts = REAL_CHECKS["matched_entropy"](_evidence(y, True))
    est = with_prompts.evidence[ENTROPY]
    assert est["design"] == f"{SEEDS} seeds x {PROMPTS} prompts x {N} samples"
    assert "an interval over seeds x prompts (prompts a random effect)" in with_prompts.note
    expected = seeds_by_prompts(y, N)
    assert (est["mean"], est["lo"], est["hi"]) == pytest.approx((expected.mean, expected.lo, expected.hi))
    old = REAL_CHECKS["matched_entropy"](_evidence(y, False))
    assert old.evidence[ENTROPY]["design"] == f"{SEEDS} seeds" and "an interval over seeds only" in old.note
    seeds = over_seeds(y.mean(1))
    assert (old.evidence[ENTROPY]["lo"], old.evidence[ENTROPY]["hi"]) == pytest.approx((seeds["lo"], seeds["hi"]))
    assert est["hi"] - est["lo"] > 1.2 * (seeds["hi"] - seeds["lo"])


@pytest.mark.parametrize("prompt_sd, seeds_only_covers", [(0.02, False), (0.0, True)])
def test_with_a_prompt_component_only_the_seeds_by_prompts_interval_covers(prompt_sd, seeds_only_covers):
    """600 designs, each with its own prompts: how often each interval (the two readings above) holds TRUTH. With
    prompt sd 0.02 the mean's prompt part (0.02^2 / 48) is about 3 times its seed part ((0.003^2 + 0.01^2 / 48) /
    6), which the seeds-only interval leaves out (expected coverage about 0.7); without a prompt component both
    cover."""
    rng = np.random.default_rng(1)
    designs = 600
    covered = {"seeds x prompts": 0, "seeds": 0}
    for _ in range(designs):
        y = _differences(rng, prompt_sd)
        both = seeds_by_prompts(y, N, n_boot=500, seed=int(rng.integers(1 << 30))).to_json()
        seeds = over_seeds(y.mean(1))
        covered["seeds x prompts"] += both["lo"] <= TRUTH <= both["hi"]
        covered["seeds"] += seeds["lo"] <= TRUTH <= seeds["hi"]
    coverage = {k: v / designs for k, v in covered.items()}
    assert coverage["seeds x prompts"] >= 0.93, coverage
    assert (coverage["seeds"] >= 0.92) if seeds_only_covers else (coverage["seeds"] <= 0.8), coverage
