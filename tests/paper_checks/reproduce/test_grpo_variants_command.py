"""`python -m escov.paper_checks grpo-variants` in this process (paper_checks/cli.py main): the command runs the arm
(grpo_variants.run; its selection and record: tests/paper_checks/reproduce/test_grpo_variants_arm.py) on the candidates
named in --candidates (all when empty; an unknown name refused in one line), with the answer budget and --jobs, and
prints the record's section; a stand-in here (the command's sizes are the answer's)."""

import pytest

from escov.paper_checks.cli import main
from escov.paper_checks.reproduce import grpo_variants
from escov.paper_checks.reproduce.budgets import BUDGETS
from escov.paper_checks.reproduce.reproduction import PREMISE_DIR, REPORT_DIR


@pytest.mark.parametrize(
    "flags, candidates, jobs",
    [
        ([], None, 2),
        (
            ["--candidates", "entropy-bonus,forking-tokens", "--jobs", "1"],
            {"entropy-bonus": {"entropy_coef": 0.01}, "forking-tokens": {"top_entropy_quantile": 0.2}},
            1,
        ),
    ],
)
def test_the_command_runs_the_named_candidates_and_prints_the_section(
    tmp_path, capsys, monkeypatch, flags, candidates, jobs
):
    calls = []

    def stand_in(answer, budget, **kw):
        calls.append((answer, budget, kw))
        return {"the": "record"}

    monkeypatch.setattr(grpo_variants, "run", stand_in)
    monkeypatch.setattr(grpo_variants, "render", lambda rec: ["## section", f"of {rec['the']}"])
    assert main(["grpo-variants", "--answer", str(tmp_path), *flags]) == 0
    expected = {
        "premise_dir": PREMISE_DIR,
        "report_dir": REPORT_DIR,
        "candidates": candidates,
        "jobs": jobs,
        "selection_only": False,
    }
    assert calls == [(tmp_path, BUDGETS["answer"], expected)]
    out = tmp_path / "grpo-variants" / "grpo_variants.json"
    assert capsys.readouterr().out == f"## section\nof record\nwrote {out}\n"


def test_an_unknown_candidate_is_refused_naming_the_known_ones(tmp_path, capsys):
    assert main(["grpo-variants", "--answer", str(tmp_path), "--candidates", "entropy-bonus,nope,also"]) == 2
    known = list(grpo_variants.CANDIDATES)
    assert capsys.readouterr().err == f"error: --candidates: unknown ['also', 'nope']; known: {known}\n"


def test_selection_only_stops_after_the_selection_and_names_its_file(tmp_path, capsys, monkeypatch):
    calls = []

    def stand_in(answer, budget, **kw):
        calls.append(kw["selection_only"])
        return {"selection": {"chosen": "gspo"}}

    monkeypatch.setattr(grpo_variants, "run", stand_in)
    assert main(["grpo-variants", "--answer", str(tmp_path), "--selection-only"]) == 0
    out = tmp_path / "grpo-variants" / "selection.json"
    assert calls == [True]
    assert capsys.readouterr().out == f"selection on validation prompts: chosen gspo\nwrote {out}\n"
