"""Measurements runs share: the base evaluation and the step-0 probe depend only on the base model and some
settings, so runs from the same base (e.g. ES and GRPO of one seed) can measure them once and keep them in a
shared folder under a key of those settings and the base model's weights (llm.train.train's `shared`)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from escov.llm import rundir
from escov.llm.config import TrainConfig

# the settings the base evaluation and the step-0 probe depend on (besides the model's weights)
_RUN_KEYS = (
    "engine",
    "dtype",
    "device",
    "threads",
    "task",
    "data",
    "test_data",
    "data_split",
    "data_fields",
    "prompt_style",
    "reward",
    "format_reward",
    "seed",
    "max_completion_length",
    "es.inplace_bf16",
)
REWARD_KEYS = ("reward_function", "reward_weights", "correct_reward")
BASE_EVAL_KEYS = _RUN_KEYS + (
    "eval_problems",
    "eval_samples",
    "eval_ks",
    "eval_temperature",
    "heldout_task",
    "heldout_problems",
    "completions_kept",
)
PROBE_KEYS = _RUN_KEYS + (
    "probe_prompts",
    "probe_members",
    "probe_samples",
    "probe_center_samples",
    "temperature",
    "es.sigma",
    "es.param_pattern",
)


def measurement_key(cfg: TrainConfig, keys: tuple[str, ...]) -> str:
    """sha256 (first 16 hex digits) of the named settings and of the base model's weight files: runs
    from the same base with these settings measure the same thing at step 0."""
    flat = cfg.to_dict()
    values = {k: (flat[k.split(".")[0]][k.split(".")[1]] if "." in k else flat.get(k)) for k in keys}
    # the reward functions score every measurement; keyed only when given, so the keys of runs without them
    # (every paper task) stay as they were
    values |= {k: flat[k] for k in REWARD_KEYS if flat.get(k)}
    if "eval_problems" in keys and flat.get("eval_solutions"):  # which test problems; keyed only when set, as above
        values["eval_solutions"] = flat["eval_solutions"]
    if "eval_problems" in keys and flat.get("eval_skip"):
        values["eval_skip"] = flat["eval_skip"]
    if flat.get("correct_threshold", 1.0) != 1.0:
        values["correct_threshold"] = flat["correct_threshold"]
    digest = hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode())
    for f in sorted(Path(cfg.model).glob("*.safetensors")):
        digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def shared_measurement(shared: Path | None, kind: str, key: str, measure) -> dict:
    """measure(), or what an earlier run stored for (kind, key) in the folder `shared` (None: no sharing);
    stored there once measured."""
    if shared is None:
        return measure()
    path = Path(shared) / f"{kind}-{key}.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    value = measure()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}")  # runs of one pool may store the same key at once
    rundir.write_json(tmp, value)
    os.replace(tmp, path)
    return value
