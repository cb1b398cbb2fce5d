"""Shared fixtures: the tiny test model (trained once per run of the suite), a random tiny Qwen2 (built
once per run), one vLLM engine per test process, one torch thread for the modules that ask for it, and the
figures a test saves.

The suite runs in parallel (pytest-xdist): `pytest -q` starts one test process (worker) per CPU available,
and sends each test file whole to one worker (`--dist loadfile`), so a module's fixtures are built once.
`pytest -n 0` (or `-p no:xdist`) runs everything in this process, as a single test is best run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock
from hypothesis import settings

# Compiled modules are kept (__pycache__, ignored by git) even where the environment sets PYTHONDONTWRITEBYTECODE:
# without them each worker, and each fresh Python process a test starts (the command lines, the runs killed and
# resumed), compiles every escov module from its source again, and pytest rewrites every test file's asserts again
# (10 s of each worker's collection).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# no timing assertions: hypothesis's default 200 ms deadline per example fails tests on a loaded CPU
settings.register_profile("escov", deadline=None)
settings.load_profile("escov")


# A folder holding the "test" preset already pretrained
# (`python -m escov.llm pretrain --preset test --seed 0 --threads 1`),
# used instead of pretraining one: scripts/mutation.py sets it, because each mutant's tests run in a session of
# their own, and mutmut's time limit per mutant counts the tests' calls, not the session's fixtures
TEST_MODEL_ENV = "ESCOV_TEST_MODEL"


# ---- parallel runs (pytest-xdist) ----
@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config):
    """Parallel by default: `-n auto --dist loadfile` unless the command line chose a worker count, and
    never in a worker, nor in a pytest that a test started (both see PYTEST_XDIST_WORKER): workers of
    workers would multiply."""
    if (
        config.pluginmanager.hasplugin("xdist")
        and config.option.numprocesses is None
        and "PYTEST_XDIST_WORKER" not in os.environ
    ):
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            config.option.dist = "loadfile"
            config.option.loadscopereorder = False  # hand out files in the order below, not by their test counts
    return (yield)


# ---- the order in which files reach the workers ----
# A worker takes the next file when it finishes one, so the run ends when the last file handed out ends: the
# costliest files go first (longest processing time first), and the cheap ones fill in at the end. The costs
# are seconds per file, measured with `pytest --durations=0` and summed by scripts/test_file_costs.py; a file
# not listed costs 0 and keeps its place. Only the order depends on them.
FILE_COSTS = Path(__file__).with_name("file_costs.txt")


def file_costs(table: Path = FILE_COSTS) -> dict[str, float]:
    """{test file relative to tests/: seconds} from `table` (lines "SECONDS PATH"; none when it is absent)."""
    if not table.is_file():
        return {}
    rows = (line.split() for line in table.read_text().splitlines() if line.strip() and not line.startswith("#"))
    return {path: float(seconds) for seconds, path in rows}


def costliest_files_first(items: list, costs: dict[str, float]) -> None:
    """Sort `items` in place by their file's cost, highest first; a file's tests stay together and in order. When
    the first two files both need the tiny model, the costliest file that does not goes second: the first worker
    builds the model (about 20 s), and the second would only wait for it."""
    here = Path(__file__).parent
    order: dict[Path, int] = {}
    needs_model: dict[Path, bool] = {}
    for item in items:
        order.setdefault(item.path, len(order))
        needs_model[item.path] = needs_model.get(item.path, False) or "tiny_model_dir" in item.fixturenames

    def cost(path: Path) -> float:
        return costs.get(path.relative_to(here).as_posix(), 0.0) if path.is_relative_to(here) else 0.0

    files = sorted(order, key=lambda path: (-cost(path), order[path]))
    if len(files) > 2 and needs_model[files[0]] and needs_model[files[1]]:
        free = next((path for path in files[2:] if not needs_model[path]), None)
        if free is not None:
            files.remove(free)
            files.insert(1, free)
    place = {path: i for i, path in enumerate(files)}
    items.sort(key=lambda item: place[item.path])


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: unknown when it is not loaded
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per CPU this process may run on (PYTEST_XDIST_AUTO_NUM_WORKERS overrides)."""
    given = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    return int(given) if given else len(os.sched_getaffinity(0))


def pytest_configure(config):
    """In a worker: a fair share of the CPUs for torch (N workers with all CPUs each would oversubscribe them),
    also for the processes a test starts."""
    workers = config.workerinput["workercount"] if hasattr(config, "workerinput") else 1
    if workers > 1:
        threads = max(1, len(os.sched_getaffinity(0)) // workers)
        os.environ["OMP_NUM_THREADS"] = str(threads)
        import torch

        torch.set_num_threads(threads)


def built_once(config, tmp_path_factory, name, build):
    """The folder `build(folder)` fills, built once for all the suite's workers (the first to ask builds it
    under a file lock, the others wait and reuse it) or, without workers, once in this process."""
    if not hasattr(config, "workerinput"):  # not an xdist worker
        return build(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every worker of this run
    done = shared / f"{name}.json"  # written once the build finished
    with FileLock(str(shared / f"{name}.lock")):
        if done.is_file():
            return Path(json.loads(done.read_text())["path"])
        folder = build(shared / name)
        done.write_text(json.dumps({"path": str(folder)}))
        return folder


def _pretrain_test_preset(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    # in a fresh process: a process that has started an in-process vLLM engine trains to other weights
    subprocess.run(
        [
            sys.executable,
            "-m",
            "escov.llm",
            "pretrain",
            "--preset",
            "test",
            "--seed",
            "0",
            "--threads",
            "1",
            "--out",
            str(out),
            "--no-progress",
        ],
        check=True,
        capture_output=True,
        timeout=1800,
    )
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(pytestconfig, tmp_path_factory):
    """A directory with the "test" preset of llm.tinymodel, trained (seconds) once per run of the suite, in a
    process of its own (`python -m escov.llm pretrain --preset test --seed 0 --threads 1`).

    It learns the prompt/answer formats but rarely a correct answer. Treat it as read-only.
    """
    given = os.environ.get(TEST_MODEL_ENV)
    if given:
        return Path(given)
    return built_once(pytestconfig, tmp_path_factory, "tiny_model", _pretrain_test_preset)


@pytest.fixture(scope="session")
def random_qwen2_dir(pytestconfig, tmp_path_factory):
    """A randomly initialized tiny Qwen2 (llm.random_models), built once per run of the suite. Read-only."""
    from escov.llm.random_models import save_random_model

    return built_once(
        pytestconfig, tmp_path_factory, "random_qwen2", lambda out: save_random_model(out, "qwen2", "tiny")
    )


@pytest.fixture(scope="session")
def vllm_engine(tiny_model_dir):
    """One in-process VLLMEngine on the tiny model per test process, eager (no torch.compile): it starts in
    ~11 s where compiling takes ~35 s more here (over a minute with an empty compile cache). vLLM's default,
    compiled, is the engine tests/llm/es/test_vllm_lora.py starts: its member-by-member run there writes
    every member's weights into the compiled model and must score as the LoRA members do.

    Skips when vllm is not installed. A test that changes its weights must restore them.
    """
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed")
    import torch

    from escov.llm.engines.vllm_engine import VLLMEngine

    engine = VLLMEngine(tiny_model_dir, dtype=torch.float32, seed=0, enforce_eager=True)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models run fastest on one thread, the more so on a shared CPU. A module asks for it with
    `pytestmark = pytest.mark.usefixtures("one_torch_thread")`; the previous count comes back after it."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def figures(monkeypatch):
    """Every matplotlib figure saved while the test runs (saved as usual, and kept for inspection)."""
    from matplotlib.figure import Figure

    saved = []
    original = Figure.savefig

    def savefig(fig, *args, **kwargs):
        saved.append(fig)
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return saved


# ---- after collection: the files' order (above), and the `gpu` marker (issue 15): skipped cleanly where CUDA is
# not available, unless the CPU stand-in (ESCOV_GPU_STANDIN=cpu, llm/gpu_standin.py) runs them on the CPU ----
def pytest_collection_modifyitems(config, items):
    costliest_files_first(items, file_costs())
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    import torch

    from escov.llm import gpu_standin

    if torch.cuda.is_available() or gpu_standin.active():
        return
    skip = pytest.mark.skip(reason="needs CUDA (torch.cuda.is_available() is False); run scripts/gpu_check.sh on a GPU")
    for item in gpu_items:
        item.add_marker(skip)
