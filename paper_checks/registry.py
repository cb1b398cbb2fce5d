"""The real-run checks, each registered on the claim it decides (theory.claims): one check per claim
with real=True, none for any other.

    registry = CheckRegistry(CLAIMS)

    @registry.registers("drift_ratio")
    def drift_ratio(ev: Evidence, claim: Claim) -> Verdict: ...   # receives its claim record (REAL_CHECKS binds it)

    CHECKS = registry.complete()        # {claim id: check}, in the registry's order

`registers` refuses an id that names no claim, a claim that says it has no real-run check
(real=False), and a second check on one claim; `complete` refuses a claim with real=True that no
check registered on. Each refusal is a one-line RegistryError naming the claim; paper_checks.real_checks
registers and completes while it is imported, so a gap or a double stops the import.
"""

from __future__ import annotations

from typing import Callable

from escov.theory.claims import Claim, RegistryError


class CheckRegistry:
    def __init__(self, claims: tuple[Claim, ...]):
        self.claims = {c.id: c for c in claims}
        self.checks: dict[str, Callable] = {}

    def registers(self, claim_id: str) -> Callable[[Callable], Callable]:
        """Decorator: `check` is the real-run check of claim `claim_id` (the function is returned unchanged)."""

        def register(check: Callable) -> Callable:
            claim = self.claims.get(claim_id)
            if claim is None:
                raise RegistryError(
                    f"real-run check {check.__name__} registers on claim {claim_id!r}, which the "
                    f"claim registry (theory/claims.py) does not hold"
                )
            if not claim.real:
                raise RegistryError(
                    f"real-run check {check.__name__} registers on claim {claim_id!r}, whose record "
                    f"says real=False (theory/claims.py)"
                )
            if claim_id in self.checks:
                raise RegistryError(
                    f"claim {claim_id!r} has two real-run checks: {self.checks[claim_id].__name__} and {check.__name__}"
                )
            self.checks[claim_id] = check
            return check

        return register

    def complete(self) -> dict[str, Callable]:
        """{claim id: check} for every claim with real=True; RegistryError naming the first claim left without one."""
        for claim in self.claims.values():
            if claim.real and claim.id not in self.checks:
                raise RegistryError(
                    f"claim {claim.id!r} needs a real-run check (real=True in theory/claims.py), but "
                    f"none registers on it (registers({claim.id!r})(check) in paper_checks/real_checks/)"
                )
        return {cid: self.checks[cid] for cid in self.claims if cid in self.checks}
