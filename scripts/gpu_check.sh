#!/usr/bin/env bash
# The prepared GPU check (issue 15), for a machine with one CUDA GPU, about 8 minutes:
#   1. the tests marked `gpu` (tests/llm/test_gpu.py), at most 200 s
#   2. benchmarks/bench_gpu.py at the Qwen2.5-0.5B and 1.5B shapes (random init), at most 270 s
#      (a size not finished by then is marked so in the JSON; the sizes done are kept)
# and one JSON with both: gpu_check.json, or the path given as $1. Fails at once, exit code 2, without CUDA.
#
#   bash scripts/gpu_check.sh [OUT.json]
#
# From a fresh clone it makes .venv (as scripts/setup.sh does) and, only when they are missing there,
# installs the toolkit with the upstream `vllm` (CUDA build from PyPI: pip install -e ".[test,ray,vllm]").
# Set PYTHON to use another interpreter as it is.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu_check.json}
if [ -n "${PYTHON:-}" ]; then
  PY=$PYTHON
else
  [ -x .venv/bin/python ] || python3 -m venv .venv
  PY=.venv/bin/python
fi
export PYTHONPATH=$PWD
no_cuda() { echo "gpu_check.sh: no CUDA on this machine ($1); nothing measured" >&2; exit 2; }
# fail fast, before installing anything, where there is no GPU
if "$PY" -c "import torch" >/dev/null 2>&1; then
  "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" || \
    [ -n "$(command -v nvidia-smi)" ] || no_cuda "torch.cuda.is_available() is False and no nvidia-smi"
elif [ -z "$(command -v nvidia-smi)" ]; then
  no_cuda "no nvidia-smi"
fi
if ! "$PY" -c "import torch, transformers, pytest, vllm" >/dev/null 2>&1; then
  echo "gpu_check.sh: installing the toolkit with the upstream vllm into $PY's environment" >&2
  "$PY" -m pip install -q -e ".[test,ray,vllm]" || { echo "gpu_check.sh: install failed" >&2; exit 2; }
fi
"$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" || \
  no_cuda "torch $("$PY" -c 'import torch; print(torch.__version__)'): torch.cuda.is_available() is False"
"$PY" -c "import torch; print('gpu:', torch.cuda.get_device_name(0), '| torch', torch.__version__)"

TESTS_LOG=$(mktemp)
timeout 200 "$PY" -m pytest -q -m gpu tests/llm/test_gpu.py -p no:cacheprovider 2>&1 | tee "$TESTS_LOG"
tests_rc=${PIPESTATUS[0]}
BENCH_JSON=$(mktemp --suffix .json)
timeout 270 "$PY" benchmarks/bench_gpu.py --out "$BENCH_JSON"
bench_rc=$?
"$PY" - "$OUT" "$BENCH_JSON" "$TESTS_LOG" "$tests_rc" "$bench_rc" <<'PYEOF'
import json, sys
out, bench, log, tests_rc, bench_rc = sys.argv[1:]
try:
    report = json.load(open(bench))
except (OSError, ValueError):
    report = {"error": "bench_gpu.py wrote no JSON"}
lines = [l for l in open(log).read().splitlines() if l.strip()]
report["gpu_tests"] = {"exit_code": int(tests_rc), "summary": lines[-1] if lines else ""}
report["bench_exit_code"] = int(bench_rc)
json.dump(report, open(out, "w"), indent=1)
print(f"wrote {out}: gpu tests exit {tests_rc} ({report['gpu_tests']['summary']}), benchmark exit {bench_rc}")
PYEOF
[ "$tests_rc" = 0 ] && [ "$bench_rc" = 0 ]
