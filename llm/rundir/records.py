"""The run directory's file names and its records: TypedDicts whose annotations are the schema, and
check_record, which checks a dict against one (every required key present, of its type)."""

from __future__ import annotations

import re
import typing
from typing import Any, TypedDict

CONFIG = "config.json"
METRICS = "metrics.jsonl"
EVAL = "eval.json"
PROBE = "probe.json"
LEGACY_PROBE = "population.json"  # the probe file's name in run directories written before probe.json
CURVE = "curve.json"
COMPLETIONS = "completions.jsonl"
CHECKPOINTS = "checkpoints"
TRAINER_STATE = "trainer_state.json"
WEIGHTS = "model.safetensors"
OPTIMIZER = "optimizer.pt"
ADAPTER = "adapter"  # GRPO with use_peft: the LoRA adapters inside a phase, a PEFT adapter folder (llm/grpo_lora.py)
ADAPTER_CONFIG, ADAPTER_WEIGHTS = "adapter_config.json", "adapter_model.safetensors"  # peft's file names
LEGACY_ADAPTER = "adapter.safetensors"  # the adapters of checkpoints written before the adapter folder
CHECKPOINT_NAME = re.compile(r"step-(\d+)")
MANIFEST = "inputs.json"


class RunDirError(ValueError):
    """A run-directory file that cannot be used; the message names the file (and the line or field)."""


# ----------------------------------------------------------------------------- the records


class _StepMetricsCore(TypedDict):
    step: int  # 1-based: the row written after step `step`
    phase: str  # es | grpo
    reward_mean: float  # ES: mean member fitness; GRPO: mean rollout reward
    center_reward_mean: float  # mean reward of samples from the center
    pass_at_1: float
    no_correct_share: float  # share of batch prompts with no correct sample
    entropy: float  # mean token entropy of the center's samples (nats)
    drift_rel: float  # ||theta - theta_0|| / ||theta_0|| after the update
    drift_layers: dict  # the same per layer group
    step_seconds: float
    tokens_per_s: float
    wall_seconds: float


class StepMetrics(_StepMetricsCore, total=False):
    """One line of metrics.jsonl: the policy that made step `step`'s samples (drift: after its update);
    the es_* fields in ES steps, the grpo_* fields in GRPO steps."""

    es_reward_std: float
    es_rewards: list  # the N member rewards
    es_update_norm: float
    es_weight_share: float  # share of the step's time spent writing weights
    grading_timeouts: int  # answers graded wrong at the math grader's safety net in this process
    grpo_loss: float
    grpo_kl: float
    grpo_clip_fraction: float
    grpo_clip_low_share: float  # tokens whose lower clip binds (ratio < 1 - epsilon, A < 0): TRL's clip_ratio/low
    grpo_clip_high_share: float  # ... upper clip (ratio > 1 + epsilon_high, A > 0): TRL's clip_ratio/high
    grpo_grad_norm: float
    learning_rate: float  # GRPO: the learning rate of the step's last optimizer step (after the schedule)
    truncated_share: float  # share of the step's samples cut at max_completion_length
    validation: dict  # eval_steps: the test problems' evaluation after this step (llm/train.py)
    grpo_variants: dict  # the GRPO variants' statistics (llm/grpo.py GRPOStep.variants; docs/training.md)
    # what the reward does on the step's samples (ES: the center's step_samples; GRPO: the rollouts;
    # llm/reward_stats.py)
    reward_std: float
    rewards: dict  # reward function name -> {"mean", "std", "applied"} (reward functions only)
    reward_zero_std_share: float
    mean_response_tokens: float
    by_data_source: dict  # data_source -> {"reward_mean", "reward_std", "pass_at_1", "prompts"}
    es_zero_update: bool  # ES: every member's reward was equal, so the update was zero
    # ES on Ray actors (llm/es/traffic.py): bytes to and from one actor in the step (the first step after the actors
    # start, of a run, a resume or an ES phase, includes the weights and train pool each actor starts from)
    actor_bytes: float  # mean over the actors of bytes to + from
    actor_bytes_to: float
    actor_bytes_from: float
    actor_bytes_max: float  # the largest one actor's to + from


TIMING_KEYS = ("step_seconds", "wall_seconds", "tokens_per_s", "es_weight_share")  # differ between equal runs


class _EvaluationCore(TypedDict):
    task: str
    num_problems: int
    n: int
    ks: list
    temperature: float
    top_p: float
    max_new_tokens: int
    seed: int
    pass_at_k: dict  # str(k) -> rate
    maj_at_k: dict
    mean_token_entropy: float
    mean_response_tokens: float
    truncated_fraction: float
    solved_fraction: float
    distinct_correct_answers: float
    distinct_correct_texts: float
    seconds: float
    per_problem: list


class Evaluation(_EvaluationCore, total=False):
    """One llm.evaluate.evaluate result (see that module's docstring for the metrics); runs written before
    grading_timeouts or the reward's statistics (llm/reward_stats.py) were recorded lack them."""

    grading_timeouts: int  # answers graded wrong at the math grader's wall-clock safety net
    correct_threshold: float
    correct: str  # the rule: "reward >= 1", or with reward functions "accuracy >= 1", "total >= 0.9"
    total_reaches_threshold_not_correct: int
    reward_mean: float
    reward_std: float
    rewards: dict
    reward_zero_std_share: float
    by_data_source: dict


class Thresholded(TypedDict):
    keep_percent: float
    sparsity_percent: float
    pass_at_1: float


class EvalFile(TypedDict, total=False):
    fingerprint: dict  # {"settings_sha256", "inputs": {name: sha256}, "final_weights_sha256"}
    base_fingerprint: dict  # the same, written with the base evaluation and kept (llm/witnesses.py)
    base: Evaluation
    base_greedy: Evaluation
    final: Evaluation
    final_greedy: Evaluation
    heldout: dict  # "base" / "final" -> Evaluation
    update_analysis: dict  # llm/drift.py update_analysis
    thresholded: list  # Thresholded records


class ProbeMeasurement(TypedDict):
    """One llm.lemma_measurements.measure_population result."""

    step: int
    sigma: float
    members: int
    jspol: dict
    jssucc: dict
    fisher_trace: dict
    lemma1_prediction: float
    validity: dict
    lemma2: dict
    per_prompt: list


class _CurvePointCore(TypedDict):
    step: int
    sampled: Evaluation
    greedy: Evaluation


class CurvePoint(_CurvePointCore, total=False):
    """One checkpoint evaluated along training (llm/curve.py): `sampled` at the curve's temperature
    with its samples per prompt, `greedy` at temperature 0 (one sample), on the same prompts: the test
    prompts, or (split "train") prompts of the training split, for choosing settings without the test set."""

    split: str  # "test" when absent
    source: str  # "eval.json base" / "eval.json final": the run's own evaluation of that model, same settings
    fingerprint: dict  # {"settings_sha256", "weights_sha256"}: the run's settings, the weight files measured


class KeptCompletion(TypedDict):
    """One line of completions.jsonl: a completion the run sampled, with its reward."""

    step: int  # the training step the policy had taken (0: the base model)
    source: str  # eval/<label> (base, base_greedy, final, ...) or train (a training batch)
    prompt: str  # the prompt's text (chat messages: their contents joined by a blank line)
    completion: str
    reward: float


class _TrainerStateCore(TypedDict):
    step: int
    elapsed: float  # seconds of training before the checkpoint


class TrainerState(_TrainerStateCore, total=False):
    settings_sha256: str  # the settings the checkpoint was trained with (llm/fingerprints.py settings_sha256)


_RUNTIME_TYPES = {int: int, float: (int, float), str: str, dict: dict, list: list, bool: bool}


def check_record(kind: type, data: Any, where: str, complete: bool = True) -> dict:
    """data itself when it is a dict whose fields have kind's types and (complete) that holds all of
    kind's required fields; RunDirError naming `where` and the field otherwise."""
    if not isinstance(data, dict):
        raise RunDirError(f"{where}: expected a JSON object ({kind.__name__}), got {type(data).__name__}")
    hints = typing.get_type_hints(kind)
    for key, hint in hints.items():
        if key not in data:
            if complete and key in kind.__required_keys__:
                raise RunDirError(f"{where}: {kind.__name__} lacks the field {key!r}")
            continue
        typ = hint
        runtime = _RUNTIME_TYPES.get(typ)
        if runtime is None:  # a nested record
            check_record(typ, data[key], f"{where}: {key}", complete)
            continue
        value = data[key]
        if isinstance(value, bool) and typ is not bool or not isinstance(value, runtime):
            raise RunDirError(f"{where}: field {key!r} must be {typ.__name__}, got {value!r:.60}")
    return data


def check_eval_file(data: Any, where: str, complete: bool = True) -> dict:
    """An eval.json: its evaluations (nested records of EvalFile), held-out evaluations and
    thresholded records checked."""
    check_record(EvalFile, data, where, complete)
    for part, value in data.get("heldout", {}).items():
        check_record(Evaluation, value, f"{where}: heldout.{part}", complete)
    for i, value in enumerate(data.get("thresholded", [])):
        check_record(Thresholded, value, f"{where}: thresholded[{i}]", complete)
    return data
