"""The suite's parallel defaults (tests/conftest.py): `pytest -q` runs one worker per CPU, each test file whole
on one worker, the costliest files (tests/file_costs.txt) first, a shared folder is built once for all workers,
and `-n 0` runs in one process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")
FILE_COSTS = Path(__file__).with_name("file_costs.txt")
ROOT = Path(__file__).resolve().parents[1]

# appended to a copy of the suite's conftest: a folder built once (each build adds a line to builds.txt),
# and each test writes which worker ran it
PROBE = """

@pytest.fixture(scope="session")
def probe_dir(pytestconfig, tmp_path_factory):
    def build(out):
        out.mkdir(parents=True, exist_ok=True)
        with open(os.environ["PROBE_LOG"] + "/builds.txt", "a") as log:
            log.write(os.environ.get("PYTEST_XDIST_WORKER", "master") + "\\n")
        return out
    return built_once(pytestconfig, tmp_path_factory, "probe", build)
"""

TEST_FILE = """
import os, time

def test_{i}_{j}(probe_dir):
    assert probe_dir.is_dir()
    time.sleep(0.3)  # long enough that one worker cannot take every file before the other starts
    with open(os.environ["PROBE_LOG"] + "/ran.txt", "a") as log:
        log.write("test_file_{i} " + os.environ.get("PYTEST_XDIST_WORKER", "master") + "\\n")
"""


def _run_probe_suite(tmp_path: Path, *args: str, costs: str | None = None) -> tuple[list[str], dict[str, set[str]]]:
    """Run a 6-file suite with the suite's conftest (and `costs` as its cost table); (the builds of the shared
    folder, file -> workers). The files each worker ran, in order, are in tmp_path/log/ran.txt."""
    suite, log = tmp_path / "suite", tmp_path / "log"
    (suite / "tests").mkdir(parents=True)
    log.mkdir()
    (suite / "tests" / "conftest.py").write_text(CONFTEST.read_text() + PROBE)
    if costs is not None:
        (suite / "tests" / FILE_COSTS.name).write_text(costs)
    for i in range(6):
        (suite / "tests" / f"test_file_{i}.py").write_text("".join(TEST_FILE.format(i=i, j=j) for j in range(3)))
    # this test may itself run in a worker: the probe suite must not read that as being started by a test
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env.update(PROBE_LOG=str(log), PYTEST_XDIST_AUTO_NUM_WORKERS="2")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(suite),
            "--basetemp",
            str(tmp_path / "base"),
            *args,
            "tests",
        ],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "18 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    workers: dict[str, set[str]] = {}
    for line in (log / "ran.txt").read_text().splitlines():
        name, worker = line.split()
        workers.setdefault(name, set()).add(worker)
    return (log / "builds.txt").read_text().split(), workers


@pytest.mark.slow  # a pytest of probe files in a fresh process (7 s); the order in process: the tests below
def test_the_default_run_uses_the_workers_sends_each_file_to_one_costliest_first_and_builds_shared_folders_once(
    tmp_path,
):
    """Every file has 3 tests, so xdist alone would hand them out in file order (0, 1, ...); with a cost table the
    two costliest files listed (5 and 4) are the first file of each worker, and a file not listed costs nothing."""
    builds, workers = _run_probe_suite(
        tmp_path, costs="# seconds path\n9.5 test_file_5.py\n8 test_file_4.py\n0.5 test_file_0.py\n"
    )
    assert len(builds) == 1 and builds[0].startswith("gw"), builds
    assert all(len(ran_on) == 1 for ran_on in workers.values()), workers  # each file on one worker
    assert set().union(*workers.values()) == {"gw0", "gw1"}, workers  # both workers ran files
    first_of: dict[str, str] = {}
    for line in (tmp_path / "log" / "ran.txt").read_text().splitlines():
        name, worker = line.split()
        first_of.setdefault(worker, name)
    assert sorted(first_of.values()) == ["test_file_4", "test_file_5"], first_of


@pytest.mark.slow  # a pytest of probe files in a fresh process (7 s)
def test_n_0_runs_everything_in_one_process(tmp_path):
    builds, workers = _run_probe_suite(tmp_path, "-n", "0")
    assert builds == ["master"] and set().union(*workers.values()) == {"master"}


def test_every_file_of_the_cost_table_is_a_test_file_of_the_suite():
    """A renamed or deleted file would silently lose its place at the front."""
    from tests.conftest import file_costs

    costs = file_costs()
    assert len(costs) >= 10 and all(seconds > 0 for seconds in costs.values())
    missing = [path for path in costs if not (FILE_COSTS.parent / path).is_file()]
    assert not missing, f"{FILE_COSTS}: not test files: {missing} (rerun scripts/test_file_costs.py)"


def test_the_cost_script_sums_setup_call_and_teardown_per_file(tmp_path):
    log = tmp_path / "durations.log"
    log.write_text(
        "============ slowest durations ============\n"
        "12.50s call     tests/llm/test_a.py::test_one[x-1]\n"
        "4.00s setup    tests/llm/test_a.py::test_one[x-1]\n"
        "2.25s call     tests/test_b.py::test_two\n"
        "1.00s teardown tests/test_b.py::test_two\n"
        "1.00s call     tests/test_c.py::test_three\n"
        "(12 durations < 0.005s hidden.  Use -vv to show these durations.)\n"
    )
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "test_file_costs.py"), str(log)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if not line.startswith("#")]
    assert rows == [["16.5", "llm/test_a.py"], ["3.2", "test_b.py"]]  # test_c.py: under 3 s, left to its place
    missing = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "test_file_costs.py"), str(tmp_path / "no.log")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no.log" in missing.stderr


def test_while_the_first_file_builds_the_tiny_model_the_second_is_the_costliest_that_needs_none():
    """costliest_files_first on collected items (a path and the fixtures each test uses): by cost, except that the
    costliest file without tiny_model_dir moves up to second when the two costliest both need it."""
    from types import SimpleNamespace

    from tests.conftest import costliest_files_first

    here = CONFTEST.parent

    def items(*spec):
        return [
            SimpleNamespace(path=here / name, fixturenames=fixtures, name=f"{name}::{i}")
            for name, count, fixtures in spec
            for i in range(count)
        ]

    def files(ordered):
        return list(dict.fromkeys(item.path.name for item in ordered))

    costs = {"a.py": 90.0, "b.py": 80.0, "c.py": 70.0, "d.py": 60.0}
    model, free = ["tiny_model_dir", "tmp_path"], ["tmp_path"]
    collected = items(("d.py", 1, free), ("c.py", 2, free), ("b.py", 2, model), ("a.py", 3, model), ("e.py", 1, free))
    costliest_files_first(collected, costs)
    assert files(collected) == ["a.py", "c.py", "b.py", "d.py", "e.py"]
    assert [item.name for item in collected[:3]] == ["a.py::0", "a.py::1", "a.py::2"]  # a file's tests in their order
    plain = items(("e.py", 1, free), ("b.py", 1, free), ("a.py", 1, model), ("c.py", 1, model))
    costliest_files_first(plain, costs)
    assert files(plain) == ["a.py", "b.py", "c.py", "e.py"]  # the second needs no model: the costs' order
    every = items(("b.py", 1, model), ("a.py", 1, model), ("c.py", 1, model))
    costliest_files_first(every, costs)
    assert files(every) == ["a.py", "b.py", "c.py"]  # no file without the model: the costs' order
