"""Training curves with a known truth: per-prompt success rates from a Beta family, where Pass@k at
every Pass@1 has a closed form.

A frontier is (concentration c, never-solved share z). At a mean rate m over the solvable prompts a
prompt is never solved with probability z, else its success rate is p ~ Beta(m c, (1 - m) c), so

    Pass@1 = (1 - z) m,    Pass@k = (1 - z) (1 - B(m c, (1 - m) c + k) / B(m c, (1 - m) c))

since E (1 - p)^k = B(a, b + k) / B(a, b) for p ~ Beta(a, b). A larger c concentrates the rates (more
prompts partly solved): a higher Pass@k at the same Pass@1. This closed form is the truth the
matched reading is checked against; it shares nothing with the code under test.

Prompts: u_i ~ U(0, 1), drawn once per replication and shared by every run (the shared test prompts);
prompt i is never solved when u_i < z, else p_i is the (u_i - z) / (1 - z) quantile of the Beta at the
run's current m, so each curve point holds a sample of the family and prompts keep their order of
difficulty as training moves m. Correct counts ~ Binomial(n, p_i), written as curve.json points.

Trajectories: a run's population Pass@1 after each step, from `fast` (rises quickly, then slowly: the
first answer run's GRPO, 13 to 30 points in 5 of 40 steps) or `slow` (a straight line: its ES), with
per-seed variation in speed and end point.

Layouts: OLD_CHECKPOINTS (the first answer run's: every 5 of 40 steps, each a curve point; GRPO's
first measured point past the top of the compared range) or PLANNED_CHECKPOINTS (the answer budget's
now: each of the first 10 steps, then every 5, the curve laid out by llm.curve.layout).

    python tests/paper_checks/known_frontier.py [--replications 200]

prints, per layout and reading, the mean matched ES - GRPO difference with no real difference, how
often a part's interval lies above zero and the claim holds, the bias control, and the power at a
real gap of about 3 points.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaln
from scipy.stats import beta as beta_dist

N_SAMPLES, PROMPTS, SEEDS, STEPS = 32, 64, 8, 40
OLD_CHECKPOINTS = list(range(5, STEPS + 1, 5))
PLANNED_CHECKPOINTS = [s for s in range(1, STEPS + 1) if s <= 10 or s % 5 == 0]
GAP_CONCENTRATION = 3.85  # ES's frontier for a real gap: about +3 points of Pass@16 and Pass@32 in the range
BASE = 0.134  # the first answer run's base Pass@1
CONCENTRATION, NEVER = 3.0, 0.11  # base Pass@16 / @32 of 0.54 / 0.63, 11% of prompts never solved


def exact_pass_at(k: int, pass1, c: float = CONCENTRATION, z: float = NEVER):
    """Pass@k of the family at population Pass@1 `pass1` (closed form)."""
    m = np.asarray(pass1, dtype=float) / (1 - z)
    a, b = m * c, (1 - m) * c
    return (1 - z) * (1 - np.exp(betaln(a, b + k) - betaln(a, b)))


def rates(u: np.ndarray, pass1: float, c: float = CONCENTRATION, z: float = NEVER) -> np.ndarray:
    """Per-prompt success rates at population Pass@1 `pass1` (quantile coupling on u)."""
    m = pass1 / (1 - z)
    q = np.clip((u - z) / (1 - z), 0.0, 1.0)
    return np.where(u < z, 0.0, beta_dist.ppf(q, m * c, (1 - m) * c))


def fast(rng=None, end: float = 0.59, tau: float = 11.5) -> np.ndarray:
    """(STEPS + 1,) population Pass@1: BASE + (end - BASE)(1 - exp(-t / tau)) / (1 - exp(-STEPS / tau)),
    end and tau varied per seed (rng; None: not varied)."""
    if rng is not None:
        end, tau = end + rng.normal(0, 0.03), tau * np.exp(rng.normal(0, 0.15))
    t = np.arange(STEPS + 1)
    return BASE + (end - BASE) * (1 - np.exp(-t / tau)) / (1 - np.exp(-STEPS / tau))


def slow(rng=None, end: float = 0.32) -> np.ndarray:
    """(STEPS + 1,) population Pass@1 rising in a straight line from BASE to `end` (varied per seed by rng)."""
    end = end if rng is None else end + rng.normal(0, 0.02)
    return BASE + (end - BASE) * np.arange(STEPS + 1) / STEPS


class Run:
    """One simulated run: measures curve points (curve.json records) at any step on demand."""

    def __init__(
        self,
        trajectory: np.ndarray,
        u: np.ndarray,
        rng,
        c: float = CONCENTRATION,
        z: float = NEVER,
        samples: int = N_SAMPLES,
    ):
        self.trajectory, self.u, self.rng, self.c, self.z, self.samples = trajectory, u, rng, c, z, samples
        self.points: dict[int, dict] = {}

    def point(self, step: int) -> dict:
        if step not in self.points:
            counts = self.rng.binomial(self.samples, rates(self.u, self.trajectory[step], self.c, self.z))
            self.points[step] = {
                "step": step,
                "greedy": {"pass_at_k": {"1": 0.0}},
                "sampled": {
                    "n": self.samples,
                    "pass_at_k": {"1": float(counts.mean() / self.samples)},
                    "mean_token_entropy": 1.0,
                    "per_problem": [{"id": f"p{i}", "correct": int(c)} for i, c in enumerate(counts)],
                },
            }
        return self.points[step]

    def pass1_at(self, step: int) -> float:
        return self.point(step)["sampled"]["pass_at_k"]["1"]

    def curve(self, steps) -> list[dict]:
        return [self.point(s) for s in sorted(steps)]


def replication(rep: int, planned: bool, es_concentration: float = CONCENTRATION) -> tuple[list, list]:
    """ES (slow) and GRPO (fast) Curves of SEEDS seeds on PROMPTS shared prompts; ES's frontier may differ."""
    from escov.llm.curve import curve_steps, layout
    from escov.paper_checks.matched import curve_of

    rng = np.random.default_rng(rep)
    u = rng.uniform(size=PROMPTS)
    es, grpo = [], []
    for seed in range(SEEDS):
        for runs, trajectory, c in ((es, slow(rng), es_concentration), (grpo, fast(rng), CONCENTRATION)):
            run = Run(trajectory, u, rng, c)
            steps = layout(PLANNED_CHECKPOINTS, run.pass1_at) if planned else curve_steps(OLD_CHECKPOINTS, 8)
            runs.append(curve_of(run.curve(steps), seed))
    return es, grpo


def _rates(replications: int, planned: bool, resolution: float, es_concentration: float = CONCENTRATION) -> str:
    from escov.paper_checks.matched import matched_difference
    from escov.theory.claims import BY_ID
    from escov.theory.decisions import HOLDS, combine

    test = BY_ID["matched_passk_above_grpo"].test
    compared, holds, above, means, bias, points = 0, 0, {16: 0, 32: 0}, {16: [], 32: []}, {16: [], 32: []}, []
    for rep in range(replications):
        es, grpo = replication(rep, planned, es_concentration)
        result = {k: matched_difference(es, grpo, f"pass@{k}", resolution=resolution) for k in (16, 32)}
        points.append(np.mean(result[16][1]["points_in_range_b"]))
        if any(d is None for d, _ in result.values()):
            continue
        compared += 1
        holds += combine([test.decide(d.lo, d.hi) for d, _ in result.values()]) == HOLDS
        for k, (d, info) in result.items():
            above[k] += d.lo > 0
            means[k].append(100 * d.mean)
            bias[k].append(100 * info["bias"]["estimate"]["mean"])
    parts = (
        "; ".join(
            f"@{k}: mean {np.mean(means[k]):+.2f} pts, interval above 0 in {above[k]}/{compared}, "
            f"bias control {np.mean(bias[k]):+.2f} pts"
            for k in (16, 32)
        )
        if compared
        else "nothing compared"
    )
    return (
        f"compared in {compared}/{replications}, claim holds in {holds}/{compared}; {parts}; "
        f"GRPO measured points in range {np.mean(points):.1f} per run"
    )


if __name__ == "__main__":
    import argparse

    from escov.theory.matched import RESOLUTION

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=200)
    args = parser.parse_args()
    r = args.replications
    print("no real difference, old layout, no support rule:", _rates(r, False, 1.0))
    print("no real difference, old layout, support rule:   ", _rates(r, False, RESOLUTION))
    print("no real difference, planned layout, support rule:", _rates(r, True, RESOLUTION))
    print("real gap (~3 pts), planned layout, support rule: ", _rates(r, True, RESOLUTION, GAP_CONCENTRATION))
    print("real gap (~3 pts), old layout, no support rule:  ", _rates(r, False, 1.0, GAP_CONCENTRATION))
