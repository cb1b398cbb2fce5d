"""scripts/gpu_check.sh tried on the CPU: the dry run (every part "not measurable: no CUDA", exit code 2,
the JSON written), the interpreter it chooses without $PYTHON, a Python without torch, a part's figures kept
across a SIGKILL, and (slow) parts cut by their time budgets in a 70 s check (the JSON still written, later parts
"not run") and the CPU stand-in running every part: figures with reward spread at the real vocabulary, the Ray test
passing, vLLM in place "not measurable"."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"
PARTS = [
    "gpu_tests_hf",
    "hf_qwen2.5-0.5b",
    "hf_qwen2.5-1.5b",
    "gpu_tests_ray",
    "gpu_tests_vllm",
    "vllm_qwen2.5-0.5b",
    "vllm_qwen2.5-1.5b",
]
STANDIN_PARTS = ["gpu_tests_hf", "hf_tiny", "gpu_tests_ray", "gpu_tests_vllm", "vllm_tiny"]
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="the dry run is what a machine without CUDA gets")


def run_check(tmp_path, env_changes: dict, timeout: float = 300):
    """(exit code, the JSON, stderr) of `bash scripts/gpu_check.sh OUT` with the environment changed."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "ESCOV_GPU_STANDIN", "GPU_CHECK_BUDGET_S")}
    env.update(env_changes)
    out = tmp_path / "check.json"
    done = subprocess.run(["bash", str(SCRIPT), str(out)], capture_output=True, text=True, timeout=timeout, env=env)
    assert out.exists(), f"no JSON written; exit {done.returncode}: {done.stderr[-2000:]}"
    return done.returncode, json.loads(out.read_text()), done.stderr


def path_with_python3(tmp_path, python: str) -> str:
    """A PATH whose python3 is `python` (and nothing else the check could pick)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "python3"  # not a symlink: a venv's python finds its packages by the path it was run by
    wrapper.write_text(f'#!/bin/sh\nexec "{python}" "$@"\n')
    wrapper.chmod(0o755)
    return f"{bin_dir}:/usr/bin:/bin"


@no_cuda
def test_the_dry_run_on_a_cpu_names_every_part_not_measurable_and_exits_2(tmp_path):
    code, report, stderr = run_check(tmp_path, {"PATH": path_with_python3(tmp_path, sys.executable)})
    assert code == 2 and report["exit"]["code"] == 2 and report["exit"]["reason"].startswith("no CUDA")
    assert list(report["parts"]) == PARTS
    for name, entry in report["parts"].items():
        assert entry["status"] == "not measurable" and entry["why"].startswith("no CUDA"), name
    versions = report["versions"]
    assert versions["torch"] == torch.__version__ and versions["torch_build"].startswith("CPU build")
    assert versions["cuda_available"] is False
    import transformers

    assert versions["transformers"] == transformers.__version__
    for module in ("vllm", "ray"):  # None exactly when not installed here
        try:
            __import__(module)
            installed = True
        except ImportError:
            installed = False
        assert (versions[module] is not None) == installed, module
    # with no CUDA build anywhere, the first candidate with torch: the repository's .venv (as after
    # scripts/setup.sh), else the python3 on PATH
    repo_venv = ROOT / ".venv" / "bin" / "python"
    has_torch = repo_venv.exists() and subprocess.run([str(repo_venv), "-c", "import torch"]).returncode == 0
    expected = ".venv/bin/python" if has_torch else "python3"
    assert "CPU build" in report["interpreter"]["chosen"] and report["interpreter"]["chosen"].startswith(expected)
    assert report["offline"] == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PIP_NO_INDEX": "1"}
    assert report["install"] is None and report["finished_utc"] and "not measurable" in stderr


def test_a_python_without_torch_gets_a_json_saying_so(tmp_path):
    bare = getattr(sys, "_base_executable", "")
    probe = subprocess.run([bare, "-c", "import torch"], capture_output=True) if bare else None
    if probe is None or probe.returncode == 0:
        pytest.skip("no Python without torch on this machine")
    code, report, _ = run_check(tmp_path, {"PYTHON": bare})
    assert code == 2 and report["versions"]["torch"] is None
    assert "torch" in report["exit"]["reason"] and "not importable" in report["exit"]["reason"]
    assert all(entry["status"] == "not measurable" for entry in report["parts"].values())


@pytest.mark.slow  # a whole check under a 70 s budget (29 s on 2 idle cores); a part killed midway is tested below
@no_cuda
def test_parts_over_their_budget_are_killed_and_the_json_keeps_every_part(tmp_path):
    # a 70 s check: the probe takes some seconds, the first parts get 10 and 14 s (too little for either on a
    # loaded CPU), the Ray test's 7 s share is under the minimum: cut, then not run. A part killed midway is
    # checked on its own below (test_a_part_killed_midway_keeps_the_figures_it_measured)
    code, report, _ = run_check(
        tmp_path, {"PYTHON": sys.executable, "ESCOV_GPU_STANDIN": "cpu", "GPU_CHECK_BUDGET_S": "70"}
    )
    parts = report["parts"]
    assert code == 1 and report["exit"]["code"] == 1 and list(parts) == STANDIN_PARTS
    # gpu_tests_hf's 10 s: killed on a loaded machine, finished on an idle fast one (seen: 'ok' at load 0)
    assert parts["gpu_tests_hf"]["status"] in ("time limit", "ok")
    if parts["gpu_tests_hf"]["status"] == "ok":
        assert parts["gpu_tests_hf"]["exit_code"] == 0
    killed = [name for name in ("gpu_tests_hf", "hf_tiny") if parts[name]["status"] == "time limit"]
    for name in killed:
        assert parts[name]["exit_code"] is None and "killed" in parts[name]["why"] and "log_tail" in parts[name]
    # hf_tiny's 14 s: killed on a slow machine, finished on a fast one, not started after a slow probe;
    # whichever happened, the JSON says it with the part's own fields
    tiny = parts["hf_tiny"]
    if tiny["status"] == "ok":
        assert tiny["exit_code"] == 0 and tiny["figures"]["hf_generate_s"] > 0
    elif tiny["status"] == "time limit":
        assert "figures" in tiny
    else:
        assert tiny == {"status": "not run", "why": "the check's budget (70 s) was spent"}
    assert parts["gpu_tests_ray"] == {"status": "not run", "why": "the check's budget (70 s) was spent"}
    assert parts["vllm_tiny"]["status"] == "not measurable"  # in place needs CUDA, stand-in or not
    assert report["standin"].startswith("cpu")


def test_a_part_killed_midway_keeps_the_figures_it_measured(tmp_path):
    result = tmp_path / "part.json"
    part = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_gpu.py"),
            "hf",
            "--size",
            "tiny",
            "--device",
            "cpu",
            "--work",
            str(tmp_path / "models"),
            "--result",
            str(result),
            "--members",
            "2",
            "--prompts",
            "1",
            "--new-tokens",
            "4",
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 600
        while "hf_generate_s" not in read_figures(result) and part.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        part.kill()  # SIGKILL: nothing runs after it, so what is in the file was written as measured
        part.wait()
    figures = read_figures(result)
    assert figures["members"] == 2 and figures["vocab_size"] == 151936 and figures["hf_generate_s"] > 0


def read_figures(path: Path) -> dict:
    try:
        return json.loads(path.read_text())["figures"]
    except FileNotFoundError:  # not written yet (it is replaced whole, never caught half written)
        return {}


@pytest.mark.slow
def test_the_cpu_standin_runs_every_part_with_figures_that_mean_something(tmp_path):
    code, report, stderr = run_check(
        tmp_path, {"PYTHON": sys.executable, "ESCOV_GPU_STANDIN": "cpu", "GPU_CHECK_BUDGET_S": "3000"}, timeout=3600
    )
    parts = report["parts"]
    assert parts["gpu_tests_hf"]["status"] == "ok"
    assert parts["gpu_tests_hf"]["tests"] == {"passed": 1, "skipped": 1, "deselected": 2}  # CUDA noise: skipped
    assert parts["gpu_tests_ray"]["status"] == "ok" and parts["gpu_tests_ray"]["tests"] == {
        "passed": 1,
        "deselected": 3,
    }
    assert parts["vllm_tiny"]["status"] == "not measurable" and "needs CUDA" in parts["vllm_tiny"]["why"]
    hf = parts["hf_tiny"]
    assert hf["status"] == "ok", hf.get("traceback_tail")
    figures = hf["figures"]
    assert figures["vocab_size"] == 151936  # the real vocabulary: the reward below has spread there
    for prefix in ("es_hf_one_by_one", "es_hf_batched"):
        assert figures[f"{prefix}_reward_spread"] > 0 and not figures[f"{prefix}_degenerate"]
        assert 0 < figures[f"{prefix}_update_s"] and 0 < figures[f"{prefix}_weight_s"] < figures[f"{prefix}_s"]
    assert figures["grpo_step_s"] > figures["grpo_generate_s"] > 0
    assert code == 0, stderr[-2000:]
