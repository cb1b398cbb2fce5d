"""Verdicts of the two cheap levels: the theory checks and the simulate experiments.

theory: every `python -m escov.theory` item whose name starts with the claim's prefix, regime items
(where an approximation is known to break) left out; the claim holds when every item holds.
simulate: the verdict of the experiment the claim names on its entry with the claim's id, in the
words every level uses (theory.decisions.DECISIONS): simulate decides with the claim's own test
(theory.claims) over seeds. An experiment in the summary without the claim's entry, or with an entry
that decides nothing, is a registry bug (RegistryError), not missing data.
"""

from __future__ import annotations

from escov.paper_checks.evidence import Evidence
from escov.paper_checks.verdict import FAILS, HOLDS, MISSING, NOT_TESTABLE, Verdict
from escov.theory.checks import GROUPS
from escov.theory.claims import Claim, RegistryError
from escov.theory.decisions import DECISIONS


def theory_verdict(claim: Claim, ev: Evidence) -> Verdict:
    if claim.theory is None:
        return Verdict(claim.id, NOT_TESTABLE, "n/a", note="an empirical claim: the toy theory says nothing about it")
    if claim.theory.rstrip("/") not in GROUPS:
        raise RegistryError(
            f"claim {claim.id!r} reads theory checks {claim.theory}*, but theory has no such group "
            f"(groups: {list(GROUPS)})"
        )
    if ev.theory is None:
        return Verdict(claim.id, MISSING, "n/a", note="no theory results (python -m escov.theory --json)")
    items = [i for i in ev.theory if i["name"].startswith(claim.theory) and not i.get("regime")]
    if not items:
        return Verdict(claim.id, MISSING, "n/a", note=f"no theory check named {claim.theory}*")
    failed = [i["name"] for i in items if not i["holds"]]
    regimes = sum(1 for i in ev.theory if i["name"].startswith(claim.theory) and i.get("regime"))
    return Verdict(
        claim.id,
        FAILS if failed else HOLDS,
        f"{len(items) - len(failed)}/{len(items)} checks hold",
        evidence={"failed": failed, "regime_items": regimes},
        note=f"{regimes} items outside the approximation's range not counted" if regimes else "",
    )


def simulate_verdict(claim: Claim, ev: Evidence) -> Verdict:
    if claim.simulate is None:
        return Verdict(
            claim.id,
            NOT_TESTABLE,
            "n/a",
            note="no bandit analogue of this exact statement (see the simulate experiments for related ones)",
        )
    if ev.simulate is None:
        return Verdict(claim.id, MISSING, "n/a", note="no simulate summary (python -m escov.simulate all)")
    experiment = claim.simulate
    summary = ev.simulate.get(experiment)
    if summary is None:
        return Verdict(claim.id, MISSING, "n/a", note=f"simulate experiment {experiment} missing from the summary")
    matches = [c for c in summary.get("claims", []) if c.get("id") == claim.id]
    if not matches:
        raise RegistryError(
            f"claim {claim.id!r} reads simulate's {experiment}/{claim.id}, which {experiment} does not "
            f"write (its claims: {[c.get('id') for c in summary.get('claims', [])]})"
        )
    c = matches[0]
    if c["verdict"] not in DECISIONS:
        raise RegistryError(
            f"simulate's {experiment}/{claim.id} says {c['verdict']!r} for a claim; a claim's entry "
            f"carries a decision ({', '.join(DECISIONS)})"
        )
    return Verdict(
        claim.id,
        c["verdict"],
        f"{c['claim']}: {c['why']}"[:500],
        evidence={"verdict": c["verdict"]},
        plots=[summary["plot"]] if summary.get("plot") else [],
        test=c.get("test", ""),
        design=f"{summary['settings']['seeds']} seeds" if "seeds" in summary.get("settings", {}) else "",
    )
