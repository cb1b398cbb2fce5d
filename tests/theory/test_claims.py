"""The claim registry (theory/claims.py): one record per claim, each decided by exactly one rule, and
no other path to a claim's verdict anywhere in the toolkit."""
import ast
import itertools
import math
from pathlib import Path

from escov.theory import decisions
from escov.theory.claims import CLAIM_IDS, CLAIMS, RATIO_FACTOR
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
        for test in {id(t): t for t in (claim.test, claim.simulate_test)}.values():
            for lo, hi in itertools.combinations_with_replacement(ENDS, 2):
                if test.kind == "ratio" and lo <= 0:
                    continue  # a ratio's interval is positive (drift_ratio maps a non-positive end to -inf)
                verdict = test.decide(lo, hi)
                assert verdict == _rule(test, lo, hi), (claim.id, test, lo, hi)
                assert verdict in DECISIONS
        assert claim.test.describe(), claim.id
        assert bool(claim.pass_at_k) <= claim.real, f"{claim.id}: a Pass@k to read needs a real-run check"
        assert claim.analogue is None or claim.simulate is not None, f"{claim.id}: an analogue's test without an analogue"


def test_the_pass_at_k_each_end_of_training_claim_reads():
    assert {c.id: c.pass_at_k for c in CLAIMS if c.pass_at_k} == {
        "grpo_raises_pass1": (1,), "es_improves_over_base": (1, 16, 32), "es_passk_above_grpo": (16, 32),
        "grpo_passk_below_base": (16, 32), "schedules_pareto": (32,)}


def _calls_and_defs(path: Path) -> tuple[set[str], set[str]]:
    tree = ast.parse(path.read_text())
    calls = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))}
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
