"""scripts/measure_bases.py: the per-prompt histogram's bins against hand counts, and one small real
measurement of the tiny test model (its record, table row and plot, reused when nothing changed)."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("measure_bases", ROOT / "scripts" / "measure_bases.py")
measure_bases = importlib.util.module_from_spec(spec)
spec.loader.exec_module(measure_bases)


def test_histogram_bins_by_hand():
    # n = 64: 0 -> none; 1 and 8 -> (0, 1/8]; 9 and 16 -> (1/8, 1/4]; 17, 32 -> (1/4, 1/2]; 33 -> (1/2, 3/4];
    # 49 and 64 -> (3/4, 1]; the bin edges themselves belong to the lower bin
    correct = [0, 0, 1, 8, 9, 16, 17, 32, 33, 49, 64, 48]
    assert measure_bases.histogram(correct, 64) == [c / 12 for c in (2, 2, 2, 2, 2, 2)]
    assert measure_bases.histogram([32], 32) == [0, 0, 0, 0, 0, 1.0]
    with pytest.raises(ValueError, match="correct counts must lie in"):
        measure_bases.histogram([65], 64)


def test_summary_counts_no_correct_and_half_or_more():
    per_problem = [{"correct": c} for c in (0, 0, 5, 16, 32, 40, 64, 1)]
    s = measure_bases.summary({"n": 64, "per_problem": per_problem, "pass_at_k": {"1": 0.3, "16": 0.7, "32": 0.75}})
    assert s["no_correct"] == 2 / 8 and s["half_or_more"] == 3 / 8 and s["pass_at_k"][32] == 0.75


def test_a_small_measurement_of_the_test_model(tiny_model_dir, tmp_path):
    out = tmp_path / "measured"
    code = measure_bases.main(
        [f"tiny={tiny_model_dir}", "--out", str(out), "--tasks", "countdown3", "--problems", "4", "--samples", "32"]
    )
    assert code == 0 and (out / "histograms.png").stat().st_size > 0
    record = json.loads((out / "tiny" / "countdown3.json").read_text())
    assert record["num_problems"] == 4 and record["n"] == 32 and record["temperature"] == 0.6
    # the task's validation problems (where a base is chosen), its first 4; never the test problems
    from escov.llm.tasks import get_task

    task = get_task("countdown3")
    ids = [p["id"] for p in record["per_problem"]]
    assert ids == [p.id for p in task.problems("validation", 4, seed=0)] and record["settings"]["split"] == "validation"
    assert not set(ids) & {p.id for p in task.problems("test", 4, seed=0)}
    assert record["settings"]["weights"] == measure_bases.weights_digest(Path(tiny_model_dir))
    assert "| tiny | countdown3 | " in (out / "bases.md").read_text()
    # a second call with the same weights and settings reuses the record; other settings measure again
    before = (out / "tiny" / "countdown3.json").stat().st_mtime_ns
    measure_bases.main(
        [f"tiny={tiny_model_dir}", "--out", str(out), "--tasks", "countdown3", "--problems", "4", "--samples", "32"]
    )
    assert (out / "tiny" / "countdown3.json").stat().st_mtime_ns == before
    measure_bases.main(
        [f"tiny={tiny_model_dir}", "--out", str(out), "--tasks", "countdown3", "--problems", "3", "--samples", "32"]
    )
    assert json.loads((out / "tiny" / "countdown3.json").read_text())["num_problems"] == 3
