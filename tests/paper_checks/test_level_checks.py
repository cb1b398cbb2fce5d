"""The two cheap levels' verdicts by hand (paper_checks/level_checks.py): a theory claim holds when every counted
check under its prefix holds (regime items, where an approximation is known to break, never count, and only the
claim's own are told), and fails when any one does not; simulate's verdict is its experiment's entry for the claim,
with the seeds it ran."""

from escov.paper_checks.evidence import Evidence
from escov.paper_checks.level_checks import simulate_verdict, theory_verdict
from escov.paper_checks.verdict import FAILS, HOLDS
from escov.theory.claims import BY_ID

LEMMA2 = BY_ID["lemma2"]  # reads the theory checks lemma2/*


def _item(name, holds, regime=None):
    return {"name": name, "holds": holds} | ({"regime": regime} if regime else {})


def test_a_theory_claim_holds_only_when_every_counted_check_holds():
    items = [
        _item("lemma2/a", True),
        _item("lemma2/b", True),
        _item("lemma2/local/r=0.1", False, regime="r > 0.03"),  # outside the claimed range: not counted
        _item("lemma1/x", False),  # another claim's
        _item("lemma1/sigma/big", False, regime="s large"),
    ]
    v = theory_verdict(LEMMA2, Evidence(theory=items))
    assert (v.status, v.ours) == (HOLDS, "2/2 checks hold")
    assert v.evidence == {"failed": [], "regime_items": 1}
    assert v.note == "1 items outside the approximation's range not counted"
    one_fails = items + [_item("lemma2/c", False)]
    v = theory_verdict(LEMMA2, Evidence(theory=one_fails))
    assert (v.status, v.ours, v.evidence["failed"]) == (FAILS, "2/3 checks hold", ["lemma2/c"])
    assert theory_verdict(LEMMA2, Evidence(theory=items[:2])).note == ""


def test_simulates_verdict_is_its_experiments_entry_with_the_seeds_it_ran():
    claim = BY_ID["lemma2"]
    entry = {"id": "lemma2", "verdict": HOLDS, "claim": "P_pop >= P_same", "why": "all 4 seeds", "test": "t"}
    summary = {claim.simulate: {"claims": [entry], "settings": {"seeds": 4}, "plot": "p.png"}}
    v = simulate_verdict(claim, Evidence(simulate=summary))
    assert (v.status, v.ours, v.design) == (HOLDS, "P_pop >= P_same: all 4 seeds", "4 seeds")
    assert (v.plots, v.test) == (["p.png"], "t")
    no_seeds = {claim.simulate: {"claims": [entry], "settings": {}}}
    assert simulate_verdict(claim, Evidence(simulate=no_seeds)).design == ""
