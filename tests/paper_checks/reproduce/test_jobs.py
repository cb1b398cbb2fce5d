"""paper_checks/reproduce/jobs.py: a job starts only after the jobs it waits for (and can read their output),
a failure skips only its dependents, and the stage sums add up the jobs' own times."""

from pathlib import Path

import pytest

from escov.paper_checks.reproduce.jobs import Job, JobTime, check_order, run_jobs, stage_times


def _chain(tmp_path: Path) -> list[Job]:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    # b's argument is made from a's output, so b cannot be made before a has finished
    return [
        Job("a", "first", lambda: (Path.write_text, (a, "from a"))),
        Job("free", "other", lambda: (sum, (range(2_000_000),))),
        Job("b", "second", lambda: (Path.write_text, (b, a.read_text() + " then b")), after=("a",)),
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_jobs_run_after_what_they_wait_for(tmp_path, workers):
    logged = []
    times = run_jobs(_chain(tmp_path), workers, logged.append)
    assert (tmp_path / "b.txt").read_text() == "from a then b"
    assert times["b"].start >= times["a"].start + times["a"].seconds - 1e-3
    assert times["free"].result == sum(range(2_000_000))
    assert times["free"].cpu_seconds > 0
    assert sum("done:" in line for line in logged) == 3


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failure_skips_its_dependents_only_and_is_raised(tmp_path, workers):
    missing = tmp_path / "never-written.txt"
    jobs = [
        Job("broken", "s", lambda: (Path.read_text, (missing,))),
        Job("needs broken", "s", lambda: (Path.write_text, (tmp_path / "x.txt", "x")), after=("broken",)),
        Job("independent", "s", lambda: (Path.write_text, (tmp_path / "y.txt", "y"))),
    ]
    logged = []
    with pytest.raises(FileNotFoundError):
        run_jobs(jobs, workers, logged.append)
    assert (tmp_path / "y.txt").exists() and not (tmp_path / "x.txt").exists()
    assert any("needs broken skipped" in line for line in logged)


def test_order_is_checked():
    with pytest.raises(ValueError, match="waits for"):
        check_order([Job("b", "s", lambda: (sum, ([],)), after=("a",)), Job("a", "s", lambda: (sum, ([],)))])
    with pytest.raises(ValueError, match="twice"):
        check_order([Job("a", "s", lambda: (sum, ([],))), Job("a", "s", lambda: (sum, ([],)))])
    with pytest.raises(ValueError, match=r"^job 'a' waits for \['a'\], which are not listed before it$"):
        check_order([Job("a", "s", lambda: (sum, ([],)), after=("a",))])  # a job cannot wait for itself
    with pytest.raises(ValueError, match="^workers must be >= 1, got 0$"):
        run_jobs([Job("a", "s", lambda: (sum, ([],)))], 0, print)


def test_stage_sums():
    times = {
        "x": JobTime("runs", start=10.0, seconds=30.0, cpu_seconds=25.0),
        "y": JobTime("runs", start=20.0, seconds=50.0, cpu_seconds=45.0),
        "w": JobTime("runs", start=30.0, seconds=5.0, cpu_seconds=0.0),  # ends (35) before y does (70)
        "z": JobTime("pretrain", start=0.0, seconds=8.0, cpu_seconds=7.5),
    }
    stages = stage_times(times)
    assert list(stages) == ["pretrain", "runs"]  # in the order they started
    # runs: first start 10, last end 20 + 50 = 70
    assert stages["runs"] == {"span_seconds": 60.0, "job_seconds": 85.0, "cpu_seconds": 70.0, "jobs": 3}
    assert stages["pretrain"] == {"span_seconds": 8.0, "job_seconds": 8.0, "cpu_seconds": 7.5, "jobs": 1}


def test_the_small_budget_report_says_what_it_can_decide(tmp_path):
    import numpy as np

    from escov.paper_checks.report import build_report
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from tests.paper_checks.test_paper_checks_verdicts import (
        make_run,
    )  # a report needs at least one usable run directory

    run = make_run(tmp_path / "runs", "es-s0", "es", 0, np.full(8, 0.3), np.full(8, 0.3))
    build_report([run], tmp_path / "report", purpose=BUDGETS["small"].purpose)
    head = (tmp_path / "report" / "REPORT.md").read_text().split("## All claims")[0]
    assert "quick look" in head and "--budget answer" in head and "What would decide the rest" in head
    build_report([run], tmp_path / "plain")
    assert "What this reproduction can decide" not in (tmp_path / "plain" / "REPORT.md").read_text()


def test_a_full_reproduction_is_one_pool_with_its_dependencies(tmp_path):
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.plan import plan
    from escov.paper_checks.reproduce.reproduction import reproduction_jobs

    budget = BUDGETS["full"]
    jobs = reproduction_jobs(budget, tmp_path, None, progress=False)
    check_order(jobs)
    after = {j.name: j.after for j in jobs}
    runs = plan(budget, tmp_path / "base", tmp_path / "base-sweep")
    rescaled = {f"es-rescaled-s{s}" for s in budget.seeds}
    assert set(runs) | rescaled | {"pretrain base", "pretrain sweep base", "theory", "simulate", "Lemma 1 grid"} == set(
        after
    )
    assert after["es-rescaled-s1"] == ("es-s1",) and after["Lemma 1 grid"] == ("pretrain base",)
    assert after["theory"] == () and after["simulate"] == ()
    assert all(after[n] == ("pretrain sweep base",) for n in runs if n.startswith("sweep-other"))
    assert all(after[n] == ("pretrain base",) for n in runs if not n.startswith("sweep-other"))
    names = [j.name for j in jobs]  # what the rescaled runs wait for starts first
    assert names.index("es-s0") < names.index("grpo-s0") and names.index("Lemma 1 grid") < names.index("grpo-s0")


def test_the_quick_look_is_one_pool_of_its_base_theory_simulate_runs_and_grid(tmp_path):
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.plan import plan
    from escov.paper_checks.reproduce.reproduction import reproduction_jobs

    budget = BUDGETS["small"]
    jobs = reproduction_jobs(budget, tmp_path, None, progress=False)
    check_order(jobs)
    after = {j.name: j.after for j in jobs}
    runs = plan(budget, tmp_path / "base", None)
    assert set(runs) | {"pretrain base", "theory", "simulate", "Lemma 1 grid"} == set(after)
    assert all(after[n] == ("pretrain base",) for n in runs) and after["Lemma 1 grid"] == ("pretrain base",)


def test_pool_workers_get_one_blas_thread_unless_the_caller_set_it(monkeypatch):
    import os

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")  # the caller's own setting is kept
    jobs = [
        Job(var, "env", lambda var=var: (os.getenv, (var,)))
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    ]
    times = run_jobs(jobs, 2, lambda _: None)
    assert [times[v].result for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")] == ["1", "1", "3"]
    assert "OMP_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "3"  # the parent's is restored


def test_of_two_failures_the_first_is_raised_after_both_are_named(tmp_path):
    first, second = tmp_path / "first-missing.txt", tmp_path / "second-missing.txt"
    jobs = [Job("one", "s", lambda: (Path.read_text, (first,))), Job("two", "s", lambda: (Path.read_text, (second,)))]
    logged = []
    with pytest.raises(FileNotFoundError, match="first-missing"):
        run_jobs(jobs, 1, logged.append)
    assert [line.split(" failed")[0] for line in logged if " failed: " in line] == ["one", "two"]
