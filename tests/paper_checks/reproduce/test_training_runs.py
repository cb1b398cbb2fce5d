"""reproduce's runs in parallel processes: the same run directories as one after the other, and a
rerun does nothing that is already done."""

import pytest

from escov.llm import rundir
from escov.paper_checks.reproduce.training_runs import run_all

pytestmark = pytest.mark.slow

RUN = dict(
    steps=4,
    batch_size=2,
    train_pool=8,
    threads=1,
    max_completion_length=6,
    checkpoint_every=2,
    step_samples=2,
    probe_prompts=1,
    probe_members=2,
    probe_samples=2,
    probe_center_samples=2,
    eval_problems=2,
    eval_samples=2,
    eval_ks=(1,),
    heldout_task="",
    threshold_keep=(50.0,),
    task="countdown3",
    es={"population_size": 4, "sigma": 0.02, "alpha": 0.01},
    grpo={"num_generations": 4, "learning_rate": 3e-3},
)
CURVE = {"points": 8, "samples": 32, "temperature": 0.6}


def _steps(run):
    return [{k: v for k, v in r.items() if k not in rundir.TIMING_KEYS} for r in rundir.read_steps(run)]


def test_parallel_runs_equal_sequential_ones(tiny_model_dir, tmp_path):
    runs = {f"{algo}-s0": RUN | {"algo": algo, "model": str(tiny_model_dir), "seed": 0} for algo in ("es", "grpo")}
    logged = []
    run_all(runs, tmp_path / "par", CURVE, 2, logged.append)
    run_all(runs, tmp_path / "seq", CURVE, 1, logged.append)
    for name in runs:
        assert _steps(tmp_path / "par" / name) == _steps(tmp_path / "seq" / name)
        par, seq = (rundir.read_curve(tmp_path / d / name) for d in ("par", "seq"))
        assert [p["step"] for p in par] == [p["step"] for p in seq] and par[0]["step"] == 0 and len(par) >= 3
        assert [p["sampled"]["per_problem"] for p in par] == [p["sampled"]["per_problem"] for p in seq]
    before = len(logged)
    run_all(runs, tmp_path / "par", CURVE, 2, logged.append)  # everything done: nothing to run, nothing logged
    assert len(logged) == before
