"""`paper_checks report` over real runs whose eval_ks differ: reported on the ks they share, the run lacking a k named."""
import json
import os
import subprocess
import sys


def _run(model_dir, out, ks, samples):
    args = [sys.executable, "-m", "escov.llm", "train", "--algo", "grpo", "--model", str(model_dir), "--out", str(out),
            "--steps", "1", "--batch_size", "2", "--train_pool", "4", "--threads", "1", "--max_completion_length", "4",
            "--probe", "false", "--eval_problems", "2", "--eval_samples", str(samples), "--eval_ks", ks,
            "--heldout_task", "", "--threshold_keep", "50", "--grpo.num_generations", "2"]
    done = subprocess.run(args, env=os.environ | {"OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_report_over_runs_with_different_eval_ks(tiny_model_dir, tmp_path):
    _run(tiny_model_dir, tmp_path / "a", "1,4", 4)
    _run(tiny_model_dir, tmp_path / "b", "1,2", 2)
    done = subprocess.run([sys.executable, "-m", "escov.paper_checks", "report", str(tmp_path / "a"), str(tmp_path / "b"),
                           "--out", str(tmp_path / "report")], capture_output=True, text=True, timeout=300,
                          env=os.environ | {"OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    problems = " ".join(report["input_problems"])
    assert "run a lacks Pass@k for k = 2" in problems and "run b lacks Pass@k for k = 4" in problems, problems
    assert "lacks Pass@k" in (tmp_path / "report" / "REPORT.md").read_text()
    assert "passk_curves" in report["plots"]
