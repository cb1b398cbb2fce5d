"""`python -m escov.llm eval` in this process (llm/evaluate.py run_command through llm/cli.py main): eval.json's
Pass@k recomputed here from its per-problem counts by the binomial formula, its prompts the task's first test
problems drawn with seed 0 (a run's test prompts), and an existing eval.json refused without --overwrite."""

import json
import math

import pytest

from escov.llm.cli import main
from escov.llm.tasks import get_task

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_eval_writes_pass_at_k_that_its_counts_give_on_the_runs_test_prompts(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "eval"
    argv = [
        "eval",
        "--model",
        str(tiny_model_dir),
        "--task",
        "countdown3",
        "--eval_problems",
        "3",
        "--eval_samples",
        "4",
        "--eval_ks",
        "1,2,4",
        "--max_completion_length",
        "6",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(argv) == 0
    result = json.loads((out / "eval.json").read_text())
    ids = [p.id for p in get_task("countdown3").problems("test", 3, seed=0)]
    assert [r["id"] for r in result["per_problem"]] == ids and result["n"] == 4 and result["num_problems"] == 3
    counts = [r["correct"] for r in result["per_problem"]]
    for k in (1, 2, 4):
        want = sum(1 - math.comb(4 - c, k) / math.comb(4, k) for c in counts) / 3
        assert result["pass_at_k"][str(k)] == pytest.approx(want, abs=1e-12)
    assert result["solved_fraction"] == pytest.approx(sum(c > 0 for c in counts) / 3)
    assert f"wrote {out / 'eval.json'}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2 and "--overwrite" in capsys.readouterr().err
