"""`paper_checks report` over real runs whose eval_ks differ: reported on the ks they share, the run lacking a k named.
The runs train and the report is built in this process, through the same mains as `python -m escov.llm` and
`python -m escov.paper_checks` (nothing here compares numbers with another process)."""

import json

import pytest

from escov.llm.cli import main as llm_main
from escov.paper_checks.cli import main as paper_checks_main

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # the runs' --threads 1; the count comes back after


def _run(model_dir, out, ks, samples):
    assert (
        llm_main(
            [
                "train",
                "--algo",
                "grpo",
                "--model",
                str(model_dir),
                "--out",
                str(out),
                "--steps",
                "1",
                "--batch_size",
                "2",
                "--train_pool",
                "4",
                "--threads",
                "1",
                "--max_completion_length",
                "4",
                "--probe",
                "false",
                "--eval_problems",
                "2",
                "--eval_samples",
                str(samples),
                "--eval_ks",
                ks,
                "--heldout_task",
                "",
                "--threshold_keep",
                "50",
                "--grpo.num_generations",
                "2",
                "--no-progress",
            ]
        )
        == 0
    )


def test_report_over_runs_with_different_eval_ks(tiny_model_dir, tmp_path):
    _run(tiny_model_dir, tmp_path / "a", "1,4", 4)
    _run(tiny_model_dir, tmp_path / "b", "1,2", 2)
    assert (
        paper_checks_main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "report")]) == 0
    )
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    problems = " ".join(report["input_problems"])
    assert "run a lacks Pass@k for k = 2" in problems and "run b lacks Pass@k for k = 4" in problems, problems
    assert "lacks Pass@k" in (tmp_path / "report" / "REPORT.md").read_text()
    assert "passk_curves" in report["plots"]
