"""The endpoints at GRPO's plateau (paper_checks/premise_plateau.py) on synthetic curves whose truth is set here.

Worlds: 16 prompts, 4 of them "lost" by GRPO (their success rate falls from 0.15 to 0) and 12 "kept" (rising from
0.02-0.45 to 0.25-0.98), so GRPO's Pass@32 on the lost quarter ends 1 below the base. GRPO loses them early (in its
first 4 steps, below every common Pass@1 level) or late (in its last 2 steps, above the highest level ES also
reaches). ES keeps every prompt (all rates rise), follows GRPO's own path (the same frontier), or rises slowly and
never reaches GRPO's plateau. Values read at a level are checked against an interpolation written here from the
counts (math.comb Pass@32), not against the module.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from escov.paper_checks.matched import Curve
from escov.paper_checks.premise_plateau import (
    ES_ABOVE,
    INCONCLUSIVE,
    MIN_FALL,
    NEVER_REACHES,
    NO_ADVANTAGE,
    NOT_READABLE,
    REACH_TOLERANCE,
    REACHES,
    crossing_step,
    es_plateau_outcome,
    grpo_plateau_pass1,
    plateau_endpoints,
    reaches,
    reading,
    residual_at_es_end_level,
)

N, STEPS, SEEDS = 64, 20, (0, 1, 2, 3)
LOST, KEPT = 4, 12


def pass32(c: int) -> float:
    return 1 - math.comb(N - c, 32) / math.comb(N, 32)


def make_curve(seed: int, counts, steps=None) -> Curve:
    c = np.asarray(counts, dtype=int)
    return Curve(
        seed=seed,
        steps=np.arange(len(c)) * 10 if steps is None else np.asarray(steps),
        pass1=c.mean(1) / N,
        counts=c,
        n=N,
        entropy=np.zeros(len(c)),
        greedy=np.zeros(len(c)),
        ids=tuple(f"p{i}" for i in range(c.shape[1])),
        distinct=(c > 0).astype(float),
    )


def rates(kind: str, r0: np.ndarray) -> np.ndarray:
    """(STEPS + 1, 16) success rates of one run; r0 the base rates (lost prompts first)."""
    t = np.arange(STEPS + 1)[:, None] / STEPS
    kept = r0[LOST:] + (np.linspace(0.25, 0.98, KEPT) - r0[LOST:]) * t
    lost = r0[:LOST] * np.ones_like(t)
    if kind == "grpo_early":
        lost = r0[:LOST] * np.clip(1 - t * STEPS / 4, 0, None)
    elif kind == "grpo_late":
        lost = r0[:LOST] * np.clip((STEPS - t * STEPS) / 2, 0, 1)
    elif kind == "es_keeps":
        lost = r0[:LOST] + (0.6 - r0[:LOST]) * t
    elif kind == "es_slow":
        kept = r0[LOST:] + 0.1 * t
    return np.hstack([lost, kept])


def curve_of(kind: str, seed: int, noise: int = 0) -> Curve:
    """A run's curve: rates to counts, with +-1 count of sampling noise (drawn from seed, kind and `noise`) where a
    prompt is solved."""
    rng = np.random.default_rng([seed, len(kind), noise])
    r0 = np.r_[np.full(LOST, 0.15), np.linspace(0.02, 0.45, KEPT)]
    counts = np.rint(rates(kind, r0) * N).astype(int)
    noise = rng.integers(-1, 2, size=counts.shape)
    return make_curve(seed, np.where(counts > 1, np.clip(counts + noise, 1, N), counts))


def runs(kind: str, seeds=SEEDS, noise: int = 0) -> list[Curve]:
    return [curve_of(kind, s, noise) for s in seeds]


def read_by_hand(c: Curve, level: float, values: np.ndarray) -> np.ndarray:
    """values (T, P) at the first segment whose Pass@1 spans level, interpolated linearly."""
    for t in range(len(c.pass1) - 1):
        a, b = c.pass1[t], c.pass1[t + 1]
        if min(a, b) <= level <= max(a, b):
            w = 0.0 if a == b else (level - a) / (b - a)
            return (1 - w) * values[t] + w * values[t + 1]
    raise AssertionError("never reached")


def p32(c: Curve) -> np.ndarray:
    return np.vectorize(pass32)(c.counts)


@pytest.mark.parametrize(
    "lo,hi,fall,want",
    [
        (0.01, 0.2, MIN_FALL - 1e-9, NOT_READABLE),  # however clear the difference, GRPO has not narrowed there
        (1e-6, 0.2, MIN_FALL, ES_ABOVE),
        (-0.05, 0.0299, 0.06, NO_ADVANTAGE),  # margin half the fall: 3 points
        (-0.05, 0.03, 0.06, INCONCLUSIVE),
        (0.0, 0.01, 0.06, NO_ADVANTAGE),
        (0.0, 0.0, 0.06, NO_ADVANTAGE),  # every value equal (Pass@32 at its ceiling on both sides): exact
    ],
)
def test_b_prime_reads_the_validity_condition_first_then_the_registered_test_then_half_grpos_fall(lo, hi, fall, want):
    assert reading({"lo": lo, "hi": hi}, fall) == want
    # the same runs on both sides: an identity, never read as evidence either way
    assert reading({"lo": lo, "hi": hi}, fall, identity=True) == (
        NOT_READABLE if want == NOT_READABLE else INCONCLUSIVE
    )


def test_es_that_keeps_every_prompt_where_grpo_has_lost_a_quarter_reads_es_above_with_the_fall_by_hand():
    es, grpo = runs("es_keeps"), runs("grpo_early")
    out = plateau_endpoints(es, grpo, None)
    b = out["es_at_grpo_plateau"]
    level = b["level"]
    # the highest Pass@1 every run reaches: the lowest of the runs' highest points, after GRPO has lost its 4 prompts
    assert level == pytest.approx(min(min(c.pass1.max() for c in es), min(g.pass1.max() for g in grpo)), abs=1e-12)
    assert level > 0.35
    fall = np.mean([p32(g)[0] - read_by_hand(g, level, p32(g)) for g in grpo])
    diff = np.mean([read_by_hand(e, level, p32(e)) - read_by_hand(g, level, p32(g)) for e, g in zip(es, grpo)])
    assert b["grpo_fall"]["mean"] == pytest.approx(fall, abs=1e-12) and 0.15 < fall < 0.25
    assert b["difference"]["mean"] == pytest.approx(diff, abs=1e-12) and b["difference"]["lo"] > 0
    assert b["margin"] == pytest.approx(fall / 2, abs=1e-12)
    assert b["reading"] == ES_ABOVE and b["es_reaches_grpo_plateau"] is True
    assert b["grpo_plateau_pass1"] == pytest.approx(np.mean([g.pass1[-1] for g in grpo]), abs=1e-12)
    # (d'): one distinct solution wherever a prompt is solved, so ES - GRPO at L* is the share GRPO has lost there
    distinct = np.mean(
        [read_by_hand(e, level, e.distinct) - read_by_hand(g, level, g.distinct) for e, g in zip(es, grpo)]
    )
    d = out["distinct_at_grpo_plateau"]
    assert d["mean"] == pytest.approx(distinct, abs=1e-12) == pytest.approx(0.25, abs=1e-12) and d["level"] == level
    f = out["es_plateau_outcome"]
    assert f["reached"] and f["finding"] == REACHES and "es_last_pass1" not in f


def test_es_on_grpos_own_frontier_reads_no_advantage_of_half_grpos_fall():
    out = plateau_endpoints(runs("grpo_early", noise=1), runs("grpo_early"), None)
    b = out["es_at_grpo_plateau"]
    assert b["grpo_fall"]["mean"] > MIN_FALL and abs(b["difference"]["mean"]) < 0.02
    assert b["difference"]["lo"] < b["difference"]["hi"]  # sampled: not the same runs, not a zero-width interval
    assert b["difference"]["hi"] < b["margin"] and b["reading"] == NO_ADVANTAGE


def test_es_that_keeps_on_half_its_seeds_is_inconclusive():
    es = runs("es_keeps", (0, 1)) + runs("grpo_early", (2, 3), noise=1)
    b = plateau_endpoints(es, runs("grpo_early"), None)["es_at_grpo_plateau"]
    assert b["difference"]["lo"] < 0 < b["margin"] < b["difference"]["hi"] and b["reading"] == INCONCLUSIVE


def test_grpo_that_narrows_only_above_the_common_level_is_not_readable_whatever_es_does():
    """The published answer's situation: GRPO loses a quarter of its prompts by its plateau, but only in its last two
    steps, above every level ES also reaches; (b') is then not read, and F is given with its interval."""
    grpo = runs("grpo_late")
    assert all((p32(g)[-1, :LOST] == 0).all() and (p32(g)[:-2, :LOST] > 0.99).all() for g in grpo)
    for es in (runs("es_keeps"), runs("grpo_late", noise=1)):
        b = plateau_endpoints(es, grpo, None)["es_at_grpo_plateau"]
        assert b["grpo_fall"]["mean"] < MIN_FALL and b["grpo_fall"]["lo"] <= b["grpo_fall"]["mean"]
        assert b["reading"] == NOT_READABLE


@pytest.mark.parametrize("kind", ["grpo_early", "grpo_late"])
def test_grpo_compared_with_itself_is_never_es_above(kind):
    grpo = runs(kind)
    b = plateau_endpoints(grpo, grpo, None)["es_at_grpo_plateau"]
    assert b["difference"]["mean"] == 0.0 and b["reading"] in (INCONCLUSIVE, NOT_READABLE)
    assert b["reading"] == (INCONCLUSIVE if kind == "grpo_early" else NOT_READABLE)


def test_es_that_never_reaches_grpos_plateau_is_the_finding_with_where_it_stands():
    es, grpo = runs("es_slow"), runs("grpo_early")
    end = {"mean": -0.01, "lo": -0.02, "hi": 0.0}
    out = plateau_endpoints(es, grpo, {"pass@32": end})
    f = out["es_plateau_outcome"]
    assert not f["reached"] and f["finding"] == NEVER_REACHES and set(f["crossing_step"].values()) == {None}
    # GRPO's own runs crossing the level less the tolerance (a run ending below the mean of last points by more
    # than the tolerance never crosses it)
    crossing_grpo = sum(g.pass1.max() >= f["grpo_plateau_pass1"] - REACH_TOLERANCE for g in grpo)
    assert f["grpo_runs_crossing"] == crossing_grpo and f["grpo_runs"] == 4 and crossing_grpo > 0
    assert f["tolerance"] == REACH_TOLERANCE == 0.02
    assert f["es_last_pass1"]["mean"] == pytest.approx(np.mean([c.counts[-1] for c in es]) / N, abs=1e-12)
    assert f["es_last_pass1"]["hi"] < f["grpo_plateau_pass1"] and f["cap"] == [10 * STEPS]
    assert f["still_rising"] == f["runs"] == 4 and f["pass32_minus_base"] == end
    assert out["es_at_grpo_plateau"]["es_reaches_grpo_plateau"] is False
    # flat over its last half: not rising, the same finding
    flat = [make_curve(c.seed, np.vstack([c.counts[:10], np.repeat(c.counts[10:11], STEPS - 9, 0)])) for c in es]
    f = es_plateau_outcome(flat, grpo_plateau_pass1(grpo), reaches(flat, grpo_plateau_pass1(grpo)["level"]), None)
    assert f["finding"] == NEVER_REACHES and f["still_rising"] == 0 and f["pass32_minus_base"] is None
    # falling back over its last third: the plateau rule is not met, yet the curve is not rising
    fell = [make_curve(c.seed, np.vstack([c.counts[:15], c.counts[14::-1][1:7]])) for c in es]
    f = es_plateau_outcome(fell, grpo_plateau_pass1(grpo), reaches(fell, grpo_plateau_pass1(grpo)["level"]), None)
    assert f["still_rising"] == 0 and not any(r["reached"] for r in f["plateau"].values())


def test_es_reaches_grpos_plateau_only_when_every_seed_crosses_it():
    grpo = runs("grpo_early")
    level = grpo_plateau_pass1(grpo)["level"]
    assert level == pytest.approx(np.mean([g.counts[-1].mean() / N for g in grpo]), abs=1e-12)
    # the last checkpoint, not the highest: a run that falls back from its peak is read where it ends
    peaked = [make_curve(g.seed, np.vstack([g.counts, g.counts[-5]])) for g in grpo]
    got = grpo_plateau_pass1(peaked)
    assert got["level"] == pytest.approx(np.mean([g.counts[-5].mean() / N for g in grpo]), abs=1e-12)
    assert got["level"] < level
    assert got["steps"] == [10 * (STEPS + 1)]
    mixed = runs("es_keeps", (0, 1, 2)) + runs("es_slow", (3,))
    got = reaches(mixed, level)
    assert not got["reached"] and got["crossing_step"]["seed 3"] is None
    assert all(got["crossing_step"][f"seed {s}"] is not None for s in (0, 1, 2))
    assert reaches(mixed[:3], level)["reached"] and not reaches([], level)["reached"]


def test_es_within_the_tolerance_below_grpos_plateau_reaches_it():
    """A run reaches GRPO's plateau level when it crosses level - REACH_TOLERANCE: a curve whose top is 1 point below
    the level reaches it (at the step where it crosses 2 points below), one whose top is 3 points below does not."""
    assert REACH_TOLERANCE == 0.02
    level = 32 / 64  # Pass@1 0.5
    near = make_curve(0, [[16, 16], [30, 30], [31, 31]], steps=[0, 10, 20])  # tops at 31/64
    assert near.pass1.max() == pytest.approx(level - 1 / 64) and level - 1 / 64 > level - REACH_TOLERANCE
    got = reaches([near], level)
    # 2 points below the level, 30.72 of 64 correct: between the steps at 30 and 31, 72% of the way
    assert got["reached"] and got["crossing_step"]["seed 0"] == pytest.approx(10 + 0.72 * 10, abs=1e-9)
    far = make_curve(1, [[16, 16], [29, 29]], steps=[0, 10])  # tops at 29/64, 3.1 points below the level
    assert not reaches([far], level)["reached"] and reaches([far], level)["crossing_step"] == {"seed 1": None}


def test_the_crossing_step_is_interpolated_between_measured_steps():
    c = make_curve(0, [[6, 6], [13, 13], [26, 26]], steps=[0, 10, 30])  # Pass@1 0.094, 0.203, 0.406
    assert crossing_step(c, 13 / 64) == 10.0
    assert crossing_step(c, 19.5 / 64) == pytest.approx(20.0, abs=1e-12)  # half way from 13 to 26 correct
    assert crossing_step(c, 0.5) is None


def test_the_residual_reads_each_grpo_seed_at_its_own_es_seeds_final_pass1_and_drops_the_seeds_it_never_reaches():
    """By hand. Seed 0: ES ends at Pass@1 40/128 = 0.3125, which GRPO crosses half way from 0.25 (16, 16 correct)
    to 0.375 (32, 16); seed 1: ES ends at 0.0625, below GRPO's base 0.125: dropped; seed 2: ES ends at 0.1875, half
    way along GRPO's first segment, from (8, 8) to (16, 16)."""
    es = [make_curve(0, [[8, 8], [16, 24]]), make_curve(1, [[8, 8], [4, 4]]), make_curve(2, [[8, 8], [12, 12]])]
    grpo = [
        make_curve(0, [[8, 8], [16, 16], [32, 16]]),
        make_curve(1, [[8, 8], [30, 30]]),
        make_curve(2, [[8, 8], [16, 16], [32, 32]]),
    ]
    got = residual_at_es_end_level(es, grpo)
    p = pass32
    by_hand = [
        p(16) - (p(16) + p(32)) / 2,
        p(24) - p(16),
        p(12) - (p(8) + p(16)) / 2,
        p(12) - (p(8) + p(16)) / 2,
    ]
    assert got["mean"] == pytest.approx(np.mean(by_hand), abs=1e-12)
    assert got["dropped_seeds"] == [1] and got["seeds"] == 2
    assert got["levels"] == {"seed 0": 0.3125, "seed 1": 0.0625, "seed 2": 0.1875}
    none = residual_at_es_end_level(es[1:2], grpo[1:2])
    assert none["dropped_seeds"] == [1] and "mean" not in none and "no GRPO seed" in none["reason"]


def test_without_two_es_runs_nothing_is_read():
    out = plateau_endpoints(runs("es_keeps", (0,)), runs("grpo_early"), None)
    assert (
        out["es_at_grpo_plateau"]["reading"] == NOT_READABLE
        and "fewer than 2 ES" in out["es_at_grpo_plateau"]["reason"]
    )
