"""An escov run directory read by the analyzer, with its eval.json written by the real writer
(llm.evaluate.evaluate on a real engine, llm.rundir.write_json): the counts it reads are evaluate()'s
per-problem counts, and its Pass@k is evaluate()'s own (both the estimator of theory.metrics)."""

import json

import pytest

from escov.llm.engines.hf import HFEngine
from escov.llm.evaluate import evaluate
from escov.llm.rundir import write_json
from escov.llm.tasks import get_task
from escov.llm.tasks.base import Problem, Task
from escov.paper_checks.coverage.measure import MeasureOptions, measure
from escov.paper_checks.coverage.sources import ReadOptions, load


class EvenLengthTask(Task):
    """Countdown prompts; a completion is correct when its length is even (some are, some are not)."""

    name = "even-length"

    def problems(self, split, n, seed):
        return get_task("countdown").problems(split, n, seed)

    def score(self, problem: Problem, completion: str) -> float:
        return float(len(completion) % 2 == 0)

    def answer(self, problem, completion):
        return completion[:2] or None


@pytest.fixture(scope="module")
def run_dir(random_qwen2_dir, tmp_path_factory):
    engine, task = HFEngine(random_qwen2_dir), EvenLengthTask()
    problems = task.problems("test", 12, seed=0)
    evals = {
        label: evaluate(
            engine, task, problems, n=8, ks=[1, 2, 8], temperature=t, max_new_tokens=6, seed=s, progress=False
        )
        for label, t, s in (("base", 1.0, 1), ("final", 0.5, 2))
    }
    run = tmp_path_factory.mktemp("run")
    write_json(run / "eval.json", evals)
    write_json(run / "config.json", {"algo": "grpo", "seed": 7})
    return run, evals


def test_counts_and_pass_at_k_are_evaluates(run_dir):
    run, evals = run_dir
    cov = load([str(run)], ReadOptions())
    assert sorted(cov.models) == ["base", "grpo"] and cov.models["grpo"].seeds == [7]
    report = measure(cov, MeasureOptions("base", replicates=100))
    for label, model in (("base", "base"), ("final", "grpo")):
        m = cov.models[model]
        assert dict(zip(m.prompt_ids, m.counts[0].tolist())) == {
            r["id"]: r["correct"] for r in evals[label]["per_problem"]
        }
        for k, value in evals[label]["pass_at_k"].items():
            assert report["models"][model]["pass_at_k"][k]["mean"] == pytest.approx(value, abs=1e-12)
    assert json.loads((run / "eval.json").read_text())["base"]["n"] == 8
