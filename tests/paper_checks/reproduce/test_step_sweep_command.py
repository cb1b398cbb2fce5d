"""`python -m escov.paper_checks sweep` in this process (paper_checks/cli.py main): the command runs the sweep
(run_sweep; its runs and choice: tests/paper_checks/reproduce/test_step_sweep.py) with --steps (default: the answer
budget's), --problems (default 64) and --jobs, prints sweep.md and the files written, and exits 1 when no pair of
step sizes could be chosen; run_sweep is a stand-in here that writes sweep.md, since the command's sizes are the
published sweep's."""

import pytest

from escov.paper_checks.cli import main
from escov.paper_checks.reproduce import step_sweep


@pytest.mark.parametrize(
    "flags, steps, problems, jobs, chosen, code",
    [
        ([], None, 64, 2, None, 1),
        (["--steps", "8", "--problems", "16", "--jobs", "1"], 8, 16, 1, "a pair", 0),
    ],
)
def test_the_command_runs_the_sweep_prints_its_table_and_fails_without_a_choice(
    tmp_path, capsys, monkeypatch, flags, steps, problems, jobs, chosen, code
):
    calls = []

    def stand_in(model, out, **kw):
        calls.append((model, out, kw))
        out.mkdir(parents=True)
        (out / "sweep.md").write_text("| the sweep's table |\n", encoding="utf-8")
        return chosen

    monkeypatch.setattr(step_sweep, "run_sweep", stand_in)
    out = tmp_path / "sweep"
    assert main(["sweep", "--model", str(tmp_path / "base"), "--out", str(out), *flags]) == code
    assert calls == [(tmp_path / "base", out, {"jobs": jobs, "steps": steps, "problems": problems})]
    assert capsys.readouterr().out == (
        f"| the sweep's table |\n\nwrote {out / 'sweep.json'}, {out / 'sweep.md'} and {out / 'sweep.png'}\n"
    )


def test_a_base_that_is_no_model_is_refused_in_one_line(tmp_path, capsys):
    assert main(["sweep", "--model", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"error: --model {tmp_path}: not a model directory (no config.json)\n"
