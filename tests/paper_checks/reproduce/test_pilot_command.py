"""`python -m escov.paper_checks pilot` in this process (paper_checks/cli.py main): the command runs the pilot
(run_pilot; its runs and record: tests/paper_checks/reproduce/test_plan_and_pilot_runs.py) on seeds 200, 201, ... as
many as --seeds, with --budget and --jobs, and prints the record's design and detectable effect; run_pilot is a
stand-in here returning the published pilot's record (results/pilot/pilot.json), since the command's sizes are the
published pilot's."""

import json
from pathlib import Path

import pytest

from escov.paper_checks.cli import main
from escov.paper_checks.design import plan_text
from escov.paper_checks.reproduce import pilot

PUBLISHED = json.loads((Path(__file__).resolve().parents[3] / "results" / "pilot" / "pilot.json").read_text())


@pytest.mark.parametrize(
    "flags, seeds, budget, jobs",
    [
        ([], (200, 201, 202, 203), "answer", 2),
        (["--seeds", "2", "--budget", "answer-diffuse", "--jobs", "1"], (200, 201), "answer-diffuse", 1),
    ],
)
def test_the_command_runs_the_pilot_on_its_seeds_and_prints_the_detectable_effect(
    tmp_path, capsys, monkeypatch, flags, seeds, budget, jobs
):
    calls = []
    monkeypatch.setattr(pilot, "run_pilot", lambda model, out, **kw: calls.append((model, out, kw)) or PUBLISHED)
    out = tmp_path / "pilot"
    assert main(["pilot", "--model", str(tmp_path / "base"), "--out", str(out), *flags]) == 0
    assert calls == [(tmp_path / "base", out, {"budget_name": budget, "seeds": seeds, "jobs": jobs})]
    # the published record: 4 seeds x 64 prompts x 64 samples over Pass@1 0.344-0.648, 0.76 points detectable
    assert capsys.readouterr().out.splitlines() == [
        "pilot: 4 seeds x 64 training-split prompts x 64 samples; Pass@32 at matched Pass@1 over 0.344-0.648: "
        "detectable at 80% power 0.76 pts",
        plan_text(PUBLISHED["plan"]),
        f"wrote {out / 'pilot.json'}",
    ]
