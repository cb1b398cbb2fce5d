"""The key under which runs share their base evaluation and step-0 probe (llm/shared_measurements.py): two runs
get the same key exactly when the measurement cannot differ between them. Each setting the measurement reads is
changed alone and must change the key (a setting left out lets a run read another setting's measurement); each
setting it does not read is changed alone and must keep it (else runs that could share measure twice); the base
model's weight files are part of it. The lists below are written from what each measurement draws and scores
(llm/run_stages.py base_evaluation, llm/probe via train.py), not read from the module."""

from __future__ import annotations

import pytest

from escov.llm.config import TrainConfig
from escov.llm.shared_measurements import BASE_EVAL_KEYS, PROBE_KEYS, measurement_key

# settings of every step-0 measurement: what is sampled, from which model, scored how
RUN_SETTINGS = {
    "task": "countdown3",
    "seed": 1,
    "max_completion_length": 9,
    "prompt_style": "instruct",
    "format_reward": 0.1,
    "dtype": "bfloat16",
    "threads": 3,
    "device": "cpu",
    "reward": "es-at-scale-countdown",
    "engine": "vllm",
    "es_bf16": {"inplace_bf16": True},
}
# the base evaluation's own: its prompts, samples, temperature, k, the held-out task and the completions kept
EVAL_SETTINGS = {
    "eval_problems": 7,
    "eval_samples": 40,
    "eval_ks": (1, 2),
    "eval_temperature": 0.6,
    "heldout_task": "",
    "heldout_problems": 5,
    "completions_kept": 2,
    "eval_solutions": 3,
    "eval_skip": 8,
}
# the probe's own: its prompts, members, samples, temperature, sigma and which weights it perturbs
PROBE_SETTINGS = {
    "probe_prompts": 2,
    "probe_members": 4,
    "probe_samples": 3,
    "probe_center_samples": 5,
    "temperature": 0.7,
    "es": {"sigma": 0.03},
    "es_pattern": {"param_pattern": "mlp"},
}
# settings neither measurement reads (training only)
TRAINING_ONLY = {
    "algo": "grpo",
    "steps": 3,
    "batch_size": 4,
    "train_pool": 32,
    "checkpoint_every": 3,
    "step_samples": 2,
    "threshold_keep": (10.0,),
    "es": {"alpha": 0.5},
    "grpo": {"learning_rate": 0.3},
    "train_solutions": 3,
}


@pytest.fixture
def model_dir(tmp_path):
    folder = tmp_path / "base"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights of the base")
    return folder


def _key(model_dir, keys, base=None, **changed):
    settings = {"model": str(model_dir), "out": "run", "task": "countdown"} | (base or {})
    for name, value in changed.items():
        section = "es" if name.startswith("es_") else name
        settings[section] = value
    return measurement_key(TrainConfig.from_dict(settings), keys)


@pytest.mark.parametrize("name", list(RUN_SETTINGS) + list(EVAL_SETTINGS))
def test_each_setting_the_base_evaluation_reads_changes_its_key(model_dir, name):
    value = (RUN_SETTINGS | EVAL_SETTINGS)[name]
    assert _key(model_dir, BASE_EVAL_KEYS, **{name: value}) != _key(model_dir, BASE_EVAL_KEYS), name


@pytest.mark.parametrize("name", list(RUN_SETTINGS) + list(PROBE_SETTINGS))
def test_each_setting_the_probe_reads_changes_its_key(model_dir, name):
    value = (RUN_SETTINGS | PROBE_SETTINGS)[name]
    assert _key(model_dir, PROBE_KEYS, **{name: value}) != _key(model_dir, PROBE_KEYS), name


@pytest.mark.parametrize("name", list(TRAINING_ONLY) + list(PROBE_SETTINGS))
def test_a_setting_the_base_evaluation_does_not_read_keeps_its_key(model_dir, name):
    value = (TRAINING_ONLY | PROBE_SETTINGS)[name]
    assert _key(model_dir, BASE_EVAL_KEYS, **{name: value}) == _key(model_dir, BASE_EVAL_KEYS), name


@pytest.mark.parametrize("name", list(TRAINING_ONLY) + list(EVAL_SETTINGS))
def test_a_setting_the_probe_does_not_read_keeps_its_key(model_dir, name):
    value = (TRAINING_ONLY | EVAL_SETTINGS)[name]
    assert _key(model_dir, PROBE_KEYS, **{name: value}) == _key(model_dir, PROBE_KEYS), name


# with reward functions: which functions, their weights and what counts as correct score both measurements
WITH_FUNCTIONS = {"reward_function": ("r:a", "r:b"), "reward_weights": (1.0, 1.0), "correct_reward": "r:a"}
FUNCTION_SETTINGS = {
    "reward_function": ("r:a", "r:c"),
    "reward_weights": (1.0, 2.0),
    "correct_reward": "total",
    "correct_threshold": 0.5,
}


@pytest.mark.parametrize("name", list(FUNCTION_SETTINGS))
def test_each_reward_function_setting_changes_both_keys(model_dir, name):
    for keys in (BASE_EVAL_KEYS, PROBE_KEYS):
        changed = _key(model_dir, keys, WITH_FUNCTIONS, **{name: FUNCTION_SETTINGS[name]})
        assert changed != _key(model_dir, keys, WITH_FUNCTIONS), name


def test_the_base_models_weight_files_are_part_of_the_key(model_dir):
    before = {keys: _key(model_dir, keys) for keys in (BASE_EVAL_KEYS, PROBE_KEYS)}
    (model_dir / "config.json").write_text("{}")  # not weights: the key stays
    assert {keys: _key(model_dir, keys) for keys in before} == before
    (model_dir / "model.safetensors").write_bytes(b"weights of another base")
    assert all(_key(model_dir, keys) != before[keys] for keys in before)
    (model_dir / "model.safetensors").write_bytes(b"weights of the base")
    (model_dir / "model-00002.safetensors").write_bytes(b"a second shard")
    assert all(_key(model_dir, keys) != before[keys] for keys in before)


# on a user's data files: which files, how they split and which columns hold the prompt and the answer decide what
# both measurements draw
WITH_DATA = {"data": "train.jsonl", "test_data": "test.jsonl"}
DATA_SETTINGS = {
    "data": "other-train.jsonl",
    "test_data": "other-test.jsonl",
    "data_split": "first-100",
    "data_fields": "question=prompt",
}


@pytest.mark.parametrize("name", list(DATA_SETTINGS))
def test_each_data_file_setting_changes_both_keys(model_dir, name):
    for keys in (BASE_EVAL_KEYS, PROBE_KEYS):
        changed = _key(model_dir, keys, WITH_DATA, **{name: DATA_SETTINGS[name]})
        assert changed != _key(model_dir, keys, WITH_DATA), name
