"""The report states where ES trains against Lemma 1's regime: its members' measured divergence s at the training
sigma, from the main ES runs' probes, or "not measured"."""

from __future__ import annotations

import json

import numpy as np
import pytest

from escov.paper_checks.report import build_report
from tests.paper_checks.test_paper_checks_verdicts import make_run


@pytest.fixture
def p_base():
    return np.random.default_rng(0).uniform(0.02, 0.5, 40)


def test_the_report_states_es_regime_from_the_members_measured_divergence(tmp_path, p_base):
    """ES's regime line: the members' measured s at the training sigma (median, range, how many inside s <= 0.05),
    from the main ES runs' probes; without probes, "not measured"."""
    from escov.theory.paper import LEMMA1_S_LIMIT

    dirs = [
        make_run(tmp_path, f"es{seed}", "es", seed, p_base, p_base, lemma1_ratio=1.0, s_measured=s)
        for seed, s in ((0, 0.01), (1, 0.3), (2, 1.7))
    ]
    for run in dirs:
        config = json.loads((run / "config.json").read_text())
        (run / "config.json").write_text(json.dumps(config | {"temperature": 1.0}))
    probe = json.loads((dirs[0] / "population.json").read_text())  # a measurement at another sigma: not the regime
    probe["measurements"].append(probe["measurements"][0] | {"sigma": 0.01, "validity": {"measured": {"mean": 5.0}}})
    (dirs[0] / "population.json").write_text(json.dumps(probe))
    dirs.append(make_run(tmp_path, "grpo0", "grpo", 0, p_base, p_base))
    report = build_report(dirs, tmp_path / "report")
    regime = report["es_regime"]
    assert regime["s"] == [0.01, 0.3, 1.7] and regime["s_median"] == 0.3 and regime["inside"] == 1
    text = (tmp_path / "report" / "REPORT.md").read_text()
    assert (
        f"at the training sigma 0.001 (sequences sampled at T = 1.0): median 0.3, range 0.01-1.7 over 3 measurements "
        f"of 3 runs (steps 10-10); 1 of 3 inside Lemma 1's regime s <= {LEMMA1_S_LIMIT}"
    ) in text
    # no probe: not measured, said in words
    bare = build_report(
        [make_run(tmp_path / "bare", f"{a}0", a, 0, p_base, p_base) for a in ("es", "grpo")], tmp_path / "bare-report"
    )
    assert bare["es_regime"]["measured"] is False
    assert "at the training sigma: not measured" in (tmp_path / "bare-report" / "REPORT.md").read_text()
