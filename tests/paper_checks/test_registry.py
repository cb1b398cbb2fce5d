"""Each real-run check registers on its claim (paper_checks/registry.py): a claim that needs one and has
none, a claim with two, or a check on a claim the registry does not hold stops the import with a
one-line error naming the claim. Registries here are built fresh; the real one is never edited."""

import dataclasses
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from escov.paper_checks.real_checks import REAL_CHECKS
from escov.paper_checks.registry import CheckRegistry
from escov.paper_checks.report import collect, real_verdict
from escov.paper_checks.verdict import MISSING
from escov.theory.claims import BY_ID, CLAIMS, Claim, RegistryError
from escov.theory.claims import Test as ClaimTest
from tests.paper_checks.test_paper_checks_verdicts import make_run

A = Claim("claim_a", "a holds", "none", ClaimTest("directional"))
B = Claim("claim_b", "b holds", "none", ClaimTest("directional"))
SHOWN = Claim("claim_shown", "an identity", "none", ClaimTest("identity"), real=False)


def _one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


def test_a_complete_registry_maps_each_claim_to_its_check_in_the_registrys_order():
    registry = CheckRegistry((A, SHOWN, B))

    @registry.registers("claim_b")
    def check_b(ev):
        return "b"

    @registry.registers("claim_a")
    def check_a(ev):
        return "a"

    assert registry.complete() == {"claim_a": check_a, "claim_b": check_b}
    assert check_a(None) == "a"  # the decorator returns the function unchanged


def test_a_claim_left_without_its_check_is_refused_by_name():
    registry = CheckRegistry((A, B))
    registry.registers("claim_a")(lambda ev: None)
    with pytest.raises(RegistryError) as err:
        registry.complete()
    assert "'claim_b'" in _one_line(err) and "'claim_a'" not in str(err.value)


def test_a_claim_with_two_checks_is_refused_by_name():
    registry = CheckRegistry((A, B))

    @registry.registers("claim_a")
    def first(ev):
        return None

    with pytest.raises(RegistryError) as err:

        @registry.registers("claim_a")
        def second(ev):
            return None

    assert "'claim_a'" in _one_line(err) and "first" in str(err.value) and "second" in str(err.value)


@pytest.mark.parametrize("claim_id, says", [("claim_c", "does not hold"), ("claim_shown", "real=False")])
def test_a_check_on_a_claim_without_one_in_the_registry_is_refused(claim_id, says):
    registry = CheckRegistry((A, SHOWN))
    with pytest.raises(RegistryError) as err:
        registry.registers(claim_id)(lambda ev: None)
    assert f"'{claim_id}'" in _one_line(err) and says in str(err.value)


def test_an_incomplete_registry_stops_the_import_of_its_module(tmp_path):
    """A module that registers its checks and completes at import, as paper_checks.real_checks does."""
    (tmp_path / "checks_module.py").write_text(
        textwrap.dedent("""
        from escov.paper_checks.registry import CheckRegistry
        from escov.theory.claims import Claim, Test as ClaimTest
        registry = CheckRegistry(
            (Claim("kept", "s", "p", ClaimTest("directional")), Claim("forgotten", "s", "p", ClaimTest("directional")))
        )

        @registry.registers("kept")
        def kept(ev):
            return None

        CHECKS = registry.complete()
    """)
    )
    done = subprocess.run([sys.executable, "-c", "import checks_module"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("escov.theory.claims.RegistryError: claim 'forgotten' needs a real-run check"), last


def test_the_real_registry_holds_one_check_per_claim_that_needs_one():
    assert list(REAL_CHECKS) == [c.id for c in CLAIMS if c.real]


def test_the_report_asks_the_runs_for_the_pass_at_k_of_the_record(tmp_path):
    """real_verdict reads the Pass@k a claim needs from its record: the same runs are missing data for
    a record that asks for Pass@64 and decided for the record as registered."""
    p = np.random.default_rng(0).uniform(0.05, 0.5, 40)
    ev = collect([make_run(tmp_path, f"es{s}", "es", s, p, np.minimum(p + 0.2, 1)) for s in range(3)])
    record = BY_ID["es_improves_over_base"]
    assert real_verdict(record, ev).status != MISSING
    wider = dataclasses.replace(record, pass_at_k=(1, 16, 32, 64))
    v = real_verdict(wider, ev)
    assert v.status == MISSING and "needs Pass@64" in v.note and "Pass@16" not in v.note
