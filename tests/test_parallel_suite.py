"""The suite's parallel defaults (tests/conftest.py): `pytest -q` runs one worker per CPU, each test file whole
on one worker, a shared folder is built once for all workers, and `-n 0` runs in one process."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")

# appended to a copy of the suite's conftest: a folder built once (each build adds a line to builds.txt),
# and each test writes which worker ran it
PROBE = '''

@pytest.fixture(scope="session")
def probe_dir(pytestconfig, tmp_path_factory):
    def build(out):
        out.mkdir(parents=True, exist_ok=True)
        with open(os.environ["PROBE_LOG"] + "/builds.txt", "a") as log:
            log.write(os.environ.get("PYTEST_XDIST_WORKER", "master") + "\\n")
        return out
    return built_once(pytestconfig, tmp_path_factory, "probe", build)
'''

TEST_FILE = '''
import os, time

def test_{i}_{j}(probe_dir):
    assert probe_dir.is_dir()
    time.sleep(0.3)  # long enough that one worker cannot take every file before the other starts
    with open(os.environ["PROBE_LOG"] + "/ran.txt", "a") as log:
        log.write("test_file_{i} " + os.environ.get("PYTEST_XDIST_WORKER", "master") + "\\n")
'''


def _run_probe_suite(tmp_path: Path, *args: str) -> tuple[list[str], dict[str, set[str]]]:
    """Run a 6-file suite with the suite's conftest; (the builds of the shared folder, file -> workers)."""
    suite, log = tmp_path / "suite", tmp_path / "log"
    (suite / "tests").mkdir(parents=True)
    log.mkdir()
    (suite / "tests" / "conftest.py").write_text(CONFTEST.read_text() + PROBE)
    for i in range(6):
        (suite / "tests" / f"test_file_{i}.py").write_text("".join(TEST_FILE.format(i=i, j=j) for j in range(3)))
    # this test may itself run in a worker: the probe suite must not read that as being started by a test
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env.update(PROBE_LOG=str(log), PYTEST_XDIST_AUTO_NUM_WORKERS="2")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(suite),
                           "--basetemp", str(tmp_path / "base"), *args, "tests"],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "18 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    workers: dict[str, set[str]] = {}
    for line in (log / "ran.txt").read_text().splitlines():
        name, worker = line.split()
        workers.setdefault(name, set()).add(worker)
    return (log / "builds.txt").read_text().split(), workers


def test_the_default_run_uses_the_workers_sends_each_file_to_one_and_builds_shared_folders_once(tmp_path):
    builds, workers = _run_probe_suite(tmp_path)
    assert len(builds) == 1 and builds[0].startswith("gw"), builds
    assert all(len(ran_on) == 1 for ran_on in workers.values()), workers  # each file on one worker
    assert set().union(*workers.values()) == {"gw0", "gw1"}, workers  # both workers ran files


def test_n_0_runs_everything_in_one_process(tmp_path):
    builds, workers = _run_probe_suite(tmp_path, "-n", "0")
    assert builds == ["master"] and set().union(*workers.values()) == {"master"}
