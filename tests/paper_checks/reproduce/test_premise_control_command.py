"""`python -m escov.paper_checks premise-control` in this process (paper_checks/cli.py main): the command runs the
control (run_control, whose own runs and record tests/paper_checks/reproduce/test_premise_control.py checks in
process; here a stand-in that writes control.md, since the command's sizes are the published control's: 128 prompts
x 128 samples per point) on seeds 300, 301, ... as many as --seeds, at 300 steps unless --steps, with the answer
budget's settings, and prints the control's text and the files it wrote."""

from pathlib import Path

import pytest

from escov.paper_checks.cli import main
from escov.paper_checks.reproduce import premise_control
from escov.paper_checks.reproduce.budgets import BUDGETS


@pytest.fixture
def controls(monkeypatch):
    calls = []

    def stand_in(model, out, budget, **kw):
        calls.append((model, out, budget, kw))
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "control.md").write_text("# the control's text\n", encoding="utf-8")
        return {}

    monkeypatch.setattr(premise_control, "run_control", stand_in)
    return calls


@pytest.mark.parametrize(
    "flags, seeds, steps, jobs",
    [
        ([], (300, 301, 302), 300, 2),
        (["--seeds", "1", "--steps", "5", "--jobs", "3"], (300,), 5, 3),
        (["--seeds", "4"], (300, 301, 302, 303), 300, 2),
    ],
)
def test_the_command_runs_the_control_on_its_seeds_and_prints_its_text(
    tmp_path, capsys, controls, flags, seeds, steps, jobs
):
    out = tmp_path / "control"
    assert main(["premise-control", "--model", str(tmp_path / "base"), "--out", str(out), *flags]) == 0
    assert controls == [(tmp_path / "base", out, BUDGETS["answer"], {"jobs": jobs, "seeds": seeds, "steps": steps})]
    assert capsys.readouterr().out == f"# the control's text\n\nwrote {out / 'control.json'} and {out / 'control.md'}\n"


def test_a_base_that_is_no_model_is_refused_in_one_line(tmp_path, capsys):
    """The real control, in process: a folder without a model is named before anything is trained."""
    assert main(["premise-control", "--model", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and str(tmp_path) in err[0]
