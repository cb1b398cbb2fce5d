"""The gaps mutation testing found (docs/mutation.md), each closed by a property rather than a copy of
the implementation: the last of several \\boxed{} answers is graded; a Countdown answer that uses one
number twice in place of another scores as a wrong answer under every reward convention; each decision
and combination rule at, just inside and just outside each boundary, with its mirror symmetry; runs
evaluated on other prompt ids are never compared, and the difference computed when they are the same
equals its value computed by hand."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from escov.llm.tasks import countdown
from escov.llm.tasks.math_grader import grade, last_boxed
from escov.paper_checks.real_checks import diff_between, diff_vs_base
from escov.paper_checks.rundir import Run
from escov.theory.decisions import FAILS, HOLDS, INCONCLUSIVE, combine, directional, equivalence, ratio

EPS = 1e-9


# ----------------------------------------------------------------------------- the math grader reads the last \boxed{}

@pytest.mark.parametrize("first, last", [("41", "7"), ("7", "41")])
def test_the_last_boxed_answer_is_graded_whatever_comes_before_it(first, last):
    completion = rf"first try \boxed{{{first}}}, on reflection \boxed{{{last}}}"
    assert last_boxed(completion) == last
    assert grade("41", completion).correct == (last == "41")
    assert grade("41", completion).correct == grade("41", rf"\boxed{{{last}}}").correct  # only the last one counts


# ----------------------------------------------------------------------------- Countdown: a number used twice in place of another

NUMBERS, TARGET = [2, 4, 3], 11            # 2 * 4 + 3 = 11
GOOD, TWICE, WRONG = "2*4+3", "4+4+3", "2+4+3"   # TWICE: 11 too, with 4 in place of 2; WRONG: 9


def _framed(answer: str, reward: str) -> str:
    return f" thinking </think>\n<answer>{answer}</answer>" if reward == "es-at-scale-countdown" else answer


@pytest.mark.parametrize("reward, style", [("escov", "plain"), ("es-at-scale-countdown", "paper")])
def test_a_number_used_twice_in_place_of_another_scores_as_a_wrong_answer(reward, style):
    def reward_of(answer):
        return countdown.score(_framed(answer, reward), NUMBERS, TARGET, style=style, reward=reward)
    assert eval_free_value(TWICE) == eval_free_value(GOOD) == TARGET  # the same value, so only the numbers differ
    assert reward_of(TWICE) == reward_of(WRONG)                       # the same format, no answer credit
    assert reward_of(GOOD) - reward_of(WRONG) == pytest.approx(1.0)   # the answer's credit is exactly 1


def eval_free_value(expression: str) -> int:
    """The value of a sum / product of small integers, computed here by hand (no eval)."""
    return sum(int(np.prod([int(f) for f in term.split("*")])) for term in expression.split("+"))


@pytest.mark.parametrize("reward, style", [("escov", "plain"), ("es-at-scale-countdown", "paper")])
@pytest.mark.parametrize("malformed", ["2*4+", "(2*4+3", "2 4 3", "2*/4+3", "+", "()"])
def test_a_malformed_expression_scores_as_a_wrong_answer(reward, style, malformed):
    """Text from the answer's own characters that is no expression gets no answer credit (the format's only)."""
    def reward_of(answer):
        return countdown.score(_framed(answer, reward), NUMBERS, TARGET, style=style, reward=reward)
    assert reward_of(malformed) == reward_of(WRONG) < reward_of(GOOD)


def simplest_by_search(low: Fraction, high: Fraction) -> Fraction:
    """The fraction of smallest denominator in [low, high], by trying denominators 1, 2, ... in turn
    (the smallest numerator n/d >= low is the only candidate of each denominator)."""
    for d in itertools.count(1):
        n = math.ceil(low * d)
        if Fraction(n, d) <= high:
            return Fraction(n, d)


def test_the_simplest_fraction_between_two_bounds_equals_a_search():
    rng = np.random.default_rng(0)
    cases = [(Fraction(3), Fraction(3)), (Fraction(3), Fraction(7, 2)), (Fraction(23, 10), Fraction(5, 2)),
             (Fraction(5, 2), Fraction(3)), (Fraction(-7, 3), Fraction(-2)), (Fraction(1, 3), Fraction(1, 3))]
    for _ in range(400):
        low = Fraction(int(rng.integers(-500, 500)), int(rng.integers(1, 60)))
        cases.append((low, low + Fraction(int(rng.integers(0, 40)), int(rng.integers(1, 400)))))
    for low, high in cases:
        assert countdown._simplest_between(low, high) == simplest_by_search(low, high), (low, high)


# ----------------------------------------------------------------------------- combine: all parts hold, any fails

@pytest.mark.parametrize("parts", [p for n in range(1, 4) for p in itertools.product((HOLDS, FAILS, INCONCLUSIVE), repeat=n)])
def test_combine_holds_only_when_every_part_holds_and_fails_when_any_part_fails(parts):
    expected = HOLDS if set(parts) == {HOLDS} else FAILS if FAILS in parts else INCONCLUSIVE
    assert combine(list(parts)) == expected
    assert combine(list(reversed(parts))) == expected  # the order of the parts does not matter


def test_combine_of_no_parts_is_inconclusive():
    assert combine([]) == INCONCLUSIVE


# ----------------------------------------------------------------------------- each rule at, inside and outside each boundary

M = 0.1


@pytest.mark.parametrize("lo, hi, expected", [
    (-M + EPS, M - EPS, HOLDS),            # just inside both margins
    (-M, M - EPS, INCONCLUSIVE),           # at the lower margin
    (-M + EPS, M, INCONCLUSIVE),           # at the upper margin
    (-M - EPS, M - EPS, INCONCLUSIVE),     # just outside below
    (-M + EPS, M + EPS, INCONCLUSIVE),     # just outside above
    (M, M + 1, FAILS), (M - EPS, M + 1, INCONCLUSIVE),          # wholly above the margin, at and just inside it
    (-M - 1, -M, FAILS), (-M - 1, -M + EPS, INCONCLUSIVE),      # wholly below, at and just inside
    (-M - 1, M + 1, INCONCLUSIVE),         # wider than the band
])
def test_equivalence_at_each_margin_and_its_mirror(lo, hi, expected):
    assert equivalence(lo, hi, M) == expected
    assert equivalence(-hi, -lo, M) == expected  # the rule is symmetric about 0


@pytest.mark.parametrize("lo, hi, expected", [
    (EPS, 1, HOLDS), (0, 1, INCONCLUSIVE), (-EPS, 1, INCONCLUSIVE),
    (-1, -EPS, FAILS), (-1, 0, INCONCLUSIVE), (-1, EPS, INCONCLUSIVE),
])
def test_directional_at_zero_on_both_sides_and_its_mirror(lo, hi, expected):
    assert directional(lo, hi, 1) == expected
    assert directional(-hi, -lo, -1) == expected  # a decrease claimed of -x is an increase claimed of x


@pytest.mark.parametrize("lo, hi, expected", [  # paper range [2, 3] within a factor 2: band (1, 6)
    (1 + EPS, 6 - EPS, HOLDS), (1, 5, INCONCLUSIVE), (2, 6, INCONCLUSIVE), (1 - EPS, 5, INCONCLUSIVE),
    (6, 7, FAILS), (6 - EPS, 7, INCONCLUSIVE), (0.5, 1, FAILS), (0.5, 1 + EPS, INCONCLUSIVE),
])
def test_ratio_at_each_end_of_the_band_and_its_reciprocal(lo, hi, expected):
    assert ratio(lo, hi, 2, 3, 2) == expected
    assert ratio(1 / hi, 1 / lo, 1 / 3, 1 / 2, 2) == expected  # the ratio read the other way round


# ----------------------------------------------------------------------------- runs compared only on the same prompt ids

N = 4


def _run(seed: int, algo: str, base: list[int], final: list[int], ids=None) -> Run:
    ids = ids or [f"p{i}" for i in range(len(base))]

    def ev(counts):
        return {"n": N, "ks": [1], "pass_at_k": {"1": float(np.mean(counts)) / N},
                "per_problem": [{"id": i, "correct": c} for i, c in zip(ids, counts)]}
    return Run(path=Path(f"{algo}{seed}"), config={"algo": algo, "seed": seed}, eval={"base": ev(base), "final": ev(final)})


def test_a_difference_over_runs_on_the_same_prompts_equals_its_value_by_hand():
    runs = [_run(0, "es", [0, 1, 2], [1, 1, 4]), _run(1, "es", [1, 1, 1], [2, 3, 1])]
    by_hand = np.mean([(1 - 0) / N, 0, (4 - 2) / N, 1 / N, 2 / N, 0])  # Pass@1 = correct / n, per seed and prompt
    assert diff_vs_base(runs, 1).mean == pytest.approx(by_hand)
    other = [_run(0, "grpo", [0, 0, 0], [0, 1, 0]), _run(1, "grpo", [0, 0, 0], [1, 1, 1])]
    by_hand = np.mean([(1 - 0) / N, (1 - 1) / N, (4 - 0) / N, (2 - 1) / N, (3 - 1) / N, (1 - 1) / N])  # finals, by seed
    assert diff_between(runs, other, 1).mean == pytest.approx(by_hand)
    assert diff_between(other, runs, 1).mean == pytest.approx(-by_hand)  # antisymmetric


def test_runs_evaluated_on_other_prompt_ids_are_never_compared():
    same = _run(0, "es", [0, 1, 2], [1, 1, 4])
    moved = _run(1, "es", [1, 1, 1], [2, 3, 1], ids=["p0", "p1", "q9"])
    assert diff_vs_base([same, moved], 1) is None
    assert diff_vs_base([moved, same], 1) is None
    grpo_moved = _run(0, "grpo", [0, 0, 0], [0, 1, 0], ids=["p0", "p1", "q9"])
    assert diff_between([same], [grpo_moved], 1) is None and diff_between([grpo_moved], [same], 1) is None
    mixed = _run(0, "es", [0, 1, 2], [1, 1, 4])
    mixed.eval["final"]["per_problem"][2]["id"] = "q9"  # final on other prompts than its own base
    assert diff_vs_base([mixed], 1) is None


# ----------------------------------------------------------------------------- over_seeds: its record at every size

def test_over_seeds_records_one_seed_none_and_two_seeds_by_hand():
    from escov.theory.decisions import over_seeds

    inf = float("inf")
    one = over_seeds([0.4, float("nan")])  # a non-finite value is left out
    assert one == {"mean": 0.4, "lo": -inf, "hi": inf, "se": inf, "df": 0.0, "seeds": 1, "detectable": inf}
    with pytest.raises(ValueError, match="at least one finite value"):
        over_seeds([float("nan")])
    two = over_seeds([1, 3])  # mean 2, sample sd sqrt(2), se 1, df 1: t(0.975, 1) = 12.7062047
    assert set(two) == set(one) and two["seeds"] == 2 and two["df"] == 1.0
    assert two["mean"] == 2.0 and two["se"] == pytest.approx(1.0)
    assert (two["lo"], two["hi"]) == pytest.approx((2 - 12.7062047, 2 + 12.7062047))
