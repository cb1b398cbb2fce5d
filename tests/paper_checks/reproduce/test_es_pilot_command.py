"""`python -m escov.paper_checks es-pilot` in this process (paper_checks/cli.py main): the command runs the ES pilot
(run_es_pilot; its runs and record: tests/paper_checks/reproduce/test_es_pilot.py) with the answer budget, --jobs and
the settings named in --settings (all when empty), and prints the record's table; a stand-in here (the command's sizes
are the published pilot's), then the real one refusing inputs in one line."""

import pytest

from escov.paper_checks.cli import main
from escov.paper_checks.reproduce import es_pilot
from escov.paper_checks.reproduce.budgets import BUDGETS


@pytest.mark.parametrize(
    "flags, settings, jobs, only",
    [
        ([], (), 2, False),
        (["--settings", "es,es-sampled,", "--jobs", "1"], ("es", "es-sampled"), 1, False),
        (["--settings", "es", "--only"], ("es",), 2, True),
    ],
)
def test_the_command_runs_the_named_settings_and_prints_the_table(
    tmp_path, capsys, monkeypatch, flags, settings, jobs, only
):
    calls = []

    def stand_in(model, control, out, budget, **kw):
        calls.append((model, control, out, budget, kw))
        return {"the": "record"}

    monkeypatch.setattr(es_pilot, "run_es_pilot", stand_in)
    monkeypatch.setattr(es_pilot, "render", lambda record: f"table of {record['the']}")
    out, control = tmp_path / "pilot", tmp_path / "control.json"
    assert main(["es-pilot", "--model", str(tmp_path), "--control", str(control), "--out", str(out), *flags]) == 0
    assert calls == [(tmp_path, control, out, BUDGETS["answer"], {"jobs": jobs, "settings": settings, "only": only})]
    assert capsys.readouterr().out == f"table of record\nwrote {out / 'es_pilot.json'}, es_pilot.md and es_pilot.png\n"


def test_inputs_that_are_not_there_are_refused_in_one_line(tmp_path, tiny_model_dir, capsys):
    assert main(["es-pilot", "--model", str(tmp_path), "--control", "c.json", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == f"error: --model {tmp_path}: not a model directory (no config.json)\n"
    missing = tmp_path / "control.json"
    assert main(["es-pilot", "--model", str(tiny_model_dir), "--control", str(missing), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"error: --control {missing}: no such file (the premise control's control.json)\n"
    )
