"""The claim registry (theory/claims.py): one record per claim, each decided by exactly one rule, and
no other path to a claim's verdict anywhere in the toolkit."""

import ast
import itertools
import math
from pathlib import Path

from escov.theory import decisions
from escov.theory.claims import BY_ID, CLAIM_IDS, CLAIMS, RATIO_FACTOR
from escov.theory.claims import Test as ClaimTest
from escov.theory.decisions import DECISIONS, IDENTITY, INCONCLUSIVE

ROOT = Path(__file__).resolve().parents[2]
ENDS = (-math.inf, -50.0, -0.5, -0.03, -0.02, -0.01, 0.0, 0.005, 0.02, 0.05, 0.5, 10.0, 30.0, 50.0, 100.0, math.inf)


def _rule(test: ClaimTest, lo: float, hi: float) -> str:
    """The rule of theory.decisions the test's kind names, applied by hand (the independent side)."""
    if test.kind == "identity":
        return IDENTITY
    if math.isinf(lo) or math.isinf(hi):
        return INCONCLUSIVE
    if test.kind == "directional":
        return decisions.directional(lo - test.threshold, hi - test.threshold, test.sign)
    if test.kind == "equivalence":
        return decisions.equivalence(lo, hi, test.margin)
    return decisions.ratio(lo, hi, *test.paper_range, RATIO_FACTOR)


def test_every_claim_is_one_record_with_a_test_that_decides_by_its_kinds_rule():
    assert len(set(CLAIM_IDS)) == len(CLAIMS)  # ids are unique
    for claim in CLAIMS:
        for test in {id(t): t for t in (claim.test, claim.simulate_test, *dict(claim.parts).values())}.values():
            for lo, hi in itertools.combinations_with_replacement(ENDS, 2):
                if test.kind == "ratio" and lo <= 0:
                    continue  # a ratio's interval is positive (drift_ratio maps a non-positive end to -inf)
                verdict = test.decide(lo, hi)
                assert verdict == _rule(test, lo, hi), (claim.id, test, lo, hi)
                assert verdict in DECISIONS
        assert claim.test.describe(), claim.id
        assert bool(claim.pass_at_k) <= claim.real, f"{claim.id}: a Pass@k to read needs a real-run check"
        assert claim.analogue is None or claim.simulate is not None, (
            f"{claim.id}: an analogue's test without an analogue"
        )


def test_the_pass_at_k_each_end_of_training_claim_reads():
    assert {c.id: c.pass_at_k for c in CLAIMS if c.pass_at_k} == {
        "grpo_raises_pass1": (1,),
        "es_improves_over_base": (1, 16, 32),
        "es_passk_above_grpo": (16, 32),
        "grpo_passk_below_base": (16, 32),
        "schedules_pareto": (32,),
    }


def _calls_and_defs(path: Path) -> tuple[set[str], set[str]]:
    tree = ast.parse(path.read_text())
    calls = {
        n.func.id if isinstance(n.func, ast.Name) else n.func.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))
    }
    defs = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return calls, defs


def test_a_claims_verdict_has_one_path_its_tests_decide():
    """Outside theory/claims.py no library module defines a `decide` or applies a claim rule of
    theory.decisions itself (directional, equivalence, ratio): every level decides a claim through
    its record's Test.decide."""
    rules = {"directional", "equivalence", "ratio"}
    offenders = []
    for level in ("theory", "simulate", "llm", "paper_checks"):
        for path in sorted((ROOT / level).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel in ("theory/claims.py", "theory/decisions.py"):
                continue
            calls, defs = _calls_and_defs(path)
            if calls & rules or "decide" in defs:
                offenders.append((rel, sorted(calls & rules), "decide" in defs))
    assert offenders == []
    calls, defs = _calls_and_defs(ROOT / "theory" / "claims.py")
    assert "decide" in defs and rules <= calls


def test_claims_quoting_table_2_say_it_is_the_six_task_average():
    """A claim's paper numbers from Table 2 (Qwen2.5-1.5B's base 41.0/75.4/80.2 and the rest) are the average over six
    tasks; the claim's text says so wherever it quotes them, and so does every effect size taken from them."""
    from escov.theory import paper
    from escov.theory.claims import T2

    triples = [
        "/".join(f"{v:.1f}" for v in values)
        for by_method in paper.TABLE2_EASY.values()
        for values in by_method.values()
    ]
    quoting = [c for c in CLAIMS if any(t in c.paper for t in triples)]
    assert {c.id for c in quoting} >= {"grpo_raises_pass1", "es_improves_over_base"}
    for c in quoting:
        assert T2 in c.paper, c.id
    assert (
        T2 in BY_ID["matched_passk_above_grpo"].test.paper_effect and T2 in BY_ID["grpo_raises_pass1"].test.paper_effect
    )


def test_a_tests_unit_is_its_own_name_when_given_even_empty_else_points_at_unit_100():
    assert ClaimTest("directional").printed_unit == " pts"
    assert ClaimTest("directional", unit=1.0).printed_unit == ""
    assert ClaimTest("directional", unit_name="%").printed_unit == "%"
    assert ClaimTest("directional", unit_name="").printed_unit == ""  # given empty at unit 100: no unit written
    assert ClaimTest("equivalence", margin=0.1, unit_name="").describe() == "equivalence: |difference| < 10"
