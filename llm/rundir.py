"""The run directory of `python -m escov.llm train`: the one module that writes and reads it.

The run directory is the interface between `llm` (train.py writes it, resume reads it back) and
`paper_checks` (rundir.py reads it). Its files and their records:

    config.json          the resolved TrainConfig (llm/config.py) plus "schedule" (llm/schedules.py describe)
    metrics.jsonl        one StepMetrics record per line, in step order
    eval.json            EvalFile: Evaluation records (base, base_greedy, final, final_greedy,
                         heldout.base, heldout.final), update_analysis, thresholded (Thresholded records)
    probe.json           {"measurements": [ProbeMeasurement, ...]}: the Lemma 1 probe of the center
                         (llm/lemma_measurements.py); runs written before it had this name call it
                         population.json, which is read when probe.json is absent
    curve.json           {"points": [CurvePoint, ...]}: checkpoints evaluated along training (llm/curve.py)
    config_history.jsonl the settings the run started with, then one record per change a resume was
                         allowed to make ({"config", "changed", "from_step"}); config.json must match the last
                         (a change of code version is recorded there too, as the setting "code")
    inputs.json          what the run was made from (llm/fingerprints.py): code version, the settings' hash,
                         and each input's path as typed, absolute and relative to the run, with its sha256
    run.lock             {"pid", "host", "since"} of the one process writing the directory, held with flock
    completions.jsonl    one KeptCompletion per line: a bounded sample of prompts, completions and their
                         rewards at each evaluation (and every completions_every steps)
    tensorboard/         TensorBoard event files when report_to = "tensorboard" (llm/tracking.py)
    checkpoints/step-N/  save_pretrained layout: model.safetensors (fp32), the base model's config and
                         tokenizer files, trainer_state.json (TrainerState), optimizer.pt inside a GRPO phase

The records are TypedDicts: their annotations are the schema, and `check_record` checks a dict
against one (every required key present, of its type). JSON files are written atomically (a
temporary file, then a rename), so a kill leaves the old file or the new one, never half of one;
only metrics.jsonl is appended to, and its last line may be cut off by a kill.

One process writes a run directory at a time (WriterLock); a resume keeps the settings the run
started with (check_settings_fixed) and needs every metrics row up to its checkpoint
(rows_missing_through); readers check a directory's integrity (integrity_problems). A write that
fails (a full disk) is a RunDirError naming the file (`writing`).

Non-finite numbers never reach a JSON file: writing NaN or +-Infinity anywhere in a record raises
NonFiniteError naming the file and the field (the run stops; the value is not replaced by null).
Reading: a damaged file (not UTF-8, not JSON, a record of the wrong shape) raises RunDirError
naming the file and the line, record or field. The `read_*` functions given `problems=` read
partial runs (paper_checks does): damage is reported there and the damaged part skipped, and
records may lack fields (a check that needs one reports missing data), but a field that is
present must still have its type.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import socket
import sys
import time
import typing
from pathlib import Path
from typing import Any, TypedDict
from escov.theory.errors import NonFiniteError

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
ADAPTER = "adapter.safetensors"  # GRPO with use_peft: the LoRA adapters inside a phase (llm/grpo_lora.py)
CHECKPOINT_NAME = re.compile(r"step-(\d+)")
MANIFEST = "inputs.json"


class RunDirError(ValueError):
    """A run-directory file that cannot be used; the message names the file (and the line or field)."""


# ----------------------------------------------------------------------------- the records

class _StepMetricsCore(TypedDict):
    step: int                      # 1-based: the row written after step `step`
    phase: str                     # es | grpo
    reward_mean: float             # ES: mean member fitness; GRPO: mean rollout reward
    center_reward_mean: float      # mean reward of samples from the center
    pass_at_1: float
    no_correct_share: float        # share of batch prompts with no correct sample
    entropy: float                 # mean token entropy of the center's samples (nats)
    drift_rel: float               # ||theta - theta_0|| / ||theta_0|| after the update
    drift_layers: dict             # the same per layer group
    step_seconds: float
    tokens_per_s: float
    wall_seconds: float


class StepMetrics(_StepMetricsCore, total=False):
    """One line of metrics.jsonl: the policy that made step `step`'s samples (drift: after its update);
    the es_* fields in ES steps, the grpo_* fields in GRPO steps."""
    es_reward_std: float
    es_rewards: list               # the N member rewards
    es_update_norm: float
    es_weight_share: float         # share of the step's time spent writing weights
    grading_timeouts: int          # answers graded wrong at the math grader's safety net in this process
    grpo_loss: float
    grpo_kl: float
    grpo_clip_fraction: float
    grpo_grad_norm: float
    # what the reward does on the step's samples (ES: the center's step_samples; GRPO: the rollouts; llm/reward_stats.py)
    reward_std: float
    rewards: dict                  # reward function name -> {"mean", "std", "applied"} (reward functions only)
    reward_zero_std_share: float
    mean_response_tokens: float
    by_data_source: dict           # data_source -> {"reward_mean", "reward_std", "pass_at_1", "prompts"}
    es_zero_update: bool           # ES: every member's reward was equal, so the update was zero
    # ES on Ray actors (llm/es/traffic.py): bytes to and from one actor in the step (the first step after the actors
    # start, of a run, a resume or an ES phase, includes the weights and train pool each actor starts from)
    actor_bytes: float             # mean over the actors of bytes to + from
    actor_bytes_to: float
    actor_bytes_from: float
    actor_bytes_max: float         # the largest one actor's to + from


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
    pass_at_k: dict                # str(k) -> rate
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
    grading_timeouts: int          # answers graded wrong at the math grader's wall-clock safety net
    correct_threshold: float
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
    fingerprint: dict              # {"settings_sha256", "inputs": {name: sha256}, "final_weights_sha256"}
    base: Evaluation
    base_greedy: Evaluation
    final: Evaluation
    final_greedy: Evaluation
    heldout: dict                  # "base" / "final" -> Evaluation
    update_analysis: dict          # llm/drift.py update_analysis
    thresholded: list              # Thresholded records


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


class KeptCompletion(TypedDict):
    """One line of completions.jsonl: a completion the run sampled, with its reward."""
    step: int                      # the training step the policy had taken (0: the base model)
    source: str                    # eval/<label> (base, base_greedy, final, ...) or train (a training batch)
    prompt: str                    # the prompt's text (chat messages: their contents joined by a blank line)
    completion: str
    reward: float


class _TrainerStateCore(TypedDict):
    step: int
    elapsed: float                 # seconds of training before the checkpoint


class TrainerState(_TrainerStateCore, total=False):
    settings_sha256: str           # the settings the checkpoint was trained with (llm/fingerprints.py settings_sha256)


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


# ----------------------------------------------------------------------------- JSON without NaN

def check_finite(data: Any, where: str, path: str = "") -> None:
    """NonFiniteError naming `where` and the field when data holds a NaN or an infinity anywhere."""
    if isinstance(data, float) and not math.isfinite(data):

        raise NonFiniteError(f"{where}: field {path or '(top level)'} is {data}; non-finite values are never written")
    if isinstance(data, dict):
        for key, value in data.items():
            check_finite(value, where, f"{path}.{key}" if path else str(key))
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            check_finite(value, where, f"{path}[{i}]")


def dumps(data: Any, where: str, **kw) -> str:
    """JSON text of data; NonFiniteError (naming where and the field) instead of NaN / Infinity."""
    check_finite(data, where)
    return json.dumps(data, allow_nan=False, **kw)


def write_json(path: Path, data: Any) -> None:
    """Write data as JSON atomically (a temporary file, then a rename)."""
    path = Path(path)
    text = dumps(data, str(path), indent=1)
    tmp = path.with_name(path.name + ".tmp")
    with writing(path):
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)


def read_text(path: Path) -> str:
    """The UTF-8 text of a file; RunDirError naming it when it cannot be read or is not UTF-8."""
    try:
        return Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise RunDirError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise RunDirError(f"{path}: cannot be read ({err.strerror})") from None


def read_json(path: Path, allow_non_finite: bool = False) -> Any:
    """The JSON value of a file; RunDirError naming the file (and the line) when it is damaged or
    holds NaN / Infinity (unless allow_non_finite: files of other levels, e.g. simulate summaries)."""
    try:
        return json.loads(read_text(path), parse_constant=None if allow_non_finite else _no_constant)
    except json.JSONDecodeError as err:
        raise RunDirError(f"{path}: not valid JSON ({err.msg} at line {err.lineno})") from None
    except ValueError as err:
        if isinstance(err, RunDirError):
            raise
        raise RunDirError(f"{path}: {err}") from None


def _no_constant(name: str):
    raise ValueError(f"holds {name}, which JSON does not allow")


def _report_or_raise(err: RunDirError, problems: list[str] | None) -> None:
    if problems is None:
        raise err
    problems.append(str(err))


# ----------------------------------------------------------------------------- the files

def write_config(run: Path, config: dict, from_step: int = 0) -> None:
    """config.json, and config_history.jsonl's record of the settings when they are new (record_settings;
    from_step: the checkpoint the run continues from)."""
    write_json(Path(run) / CONFIG, config)
    record_settings(run, config, from_step)


def read_manifest(run: Path) -> dict | None:
    """inputs.json (llm/fingerprints.py), or None when missing; RunDirError when damaged."""
    path = Path(run) / MANIFEST
    if not path.exists():
        return None
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), dict) \
            or not isinstance(data.get("settings_sha256"), str):
        raise RunDirError(f"{path}: expected a record with 'code', 'settings_sha256' and 'inputs'")
    return data


def write_manifest(run: Path, data: dict) -> None:
    write_json(Path(run) / MANIFEST, data)


def read_config(run: Path) -> dict:
    """config.json as a dict; RunDirError when it is missing, damaged or not a JSON object."""
    path = Path(run) / CONFIG
    if not path.is_file():
        raise RunDirError(f"{path}: missing (not a run directory)")
    data = read_json(path)
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: expected a JSON object of settings, got {type(data).__name__}")
    return data


def append_step(run: Path, row: StepMetrics) -> None:
    """Append one StepMetrics record to metrics.jsonl (flushed to disk)."""
    path = Path(run) / METRICS
    check_record(StepMetrics, row, f"{path}: step {row.get('step')}")
    line = dumps(row, f"{path}: step {row['step']}")
    with writing(path), open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_steps(run: Path, problems: list[str] | None = None) -> list[StepMetrics]:
    """The rows of metrics.jsonl ([] when it is missing). A last line without its newline (cut off by a
    kill) is dropped; any other damaged line raises RunDirError naming the file and line, or with
    `problems` is reported there and skipped."""
    return _read_jsonl(Path(run) / METRICS, StepMetrics, problems)


def _read_jsonl(path: Path, record, problems: list[str] | None) -> list:
    """The records of a JSON-lines file (read_steps tells the rules)."""
    if not path.exists():
        if problems is not None:
            problems.append(f"{path}: missing")
        return []
    try:
        text = read_text(path)
    except RunDirError as err:
        _report_or_raise(err, problems)
        return []
    lines = text.split("\n")
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        cut_off = number == len(lines)  # no newline after it: the write was interrupted
        try:
            rows.append(check_record(record, json.loads(line, parse_constant=_no_constant), f"{path}: line {number}",
                                     complete=problems is None))
        except (ValueError, RunDirError) as err:
            if cut_off:
                if problems is not None:
                    problems.append(f"{path}: last line cut off; that row is skipped")
                continue
            where = f"{path}: line {number}"
            reason = str(err) if isinstance(err, RunDirError) else f"{where}: not a JSON record"
            _report_or_raise(RunDirError(reason), problems)
    return rows


def _rewrite_jsonl(path: Path, rows: list) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with writing(path):
        tmp.write_text("".join(dumps(r, str(path)) + "\n" for r in rows), encoding="utf-8")
        os.replace(tmp, path)


def keep_steps(run: Path, step: int) -> None:
    """Rewrite metrics.jsonl with the rows of steps <= step (what a checkpoint being resumed had seen)."""
    path = Path(run) / METRICS
    if path.exists():
        _rewrite_jsonl(path, [r for r in read_steps(run) if r["step"] <= step])


def append_completions(run: Path, records: list[KeptCompletion]) -> None:
    """Append KeptCompletion records to completions.jsonl (flushed to disk)."""
    path = Path(run) / COMPLETIONS
    lines = []
    for record in records:
        where = f"{path}: step {record.get('step')} {record.get('source')}"
        check_record(KeptCompletion, record, where)
        lines.append(dumps(record, where) + "\n")
    with writing(path), open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(lines))
        fh.flush()
        os.fsync(fh.fileno())


def read_completions(run: Path, problems: list[str] | None = None) -> list[KeptCompletion]:
    """The records of completions.jsonl ([] when it is missing; damage as in read_steps)."""
    return _read_jsonl(Path(run) / COMPLETIONS, KeptCompletion, problems)


def keep_completions(run: Path, step: int, drop_sources: tuple[str, ...] = ()) -> None:
    """Rewrite completions.jsonl without the records after `step` and those of `drop_sources`
    (a resumed run measures them again)."""
    path = Path(run) / COMPLETIONS
    if path.exists():
        _rewrite_jsonl(path, [r for r in read_completions(run) if r["step"] <= step and r["source"] not in drop_sources])


def read_eval(run: Path, problems: list[str] | None = None) -> EvalFile | None:
    """eval.json (None when missing); RunDirError, or a report in `problems`, when damaged."""
    path = Path(run) / EVAL
    if not path.exists():
        if problems is not None:
            problems.append(f"{path}: missing")
        return None
    try:
        return check_eval_file(read_json(path), str(path), complete=problems is None)
    except RunDirError as err:
        _report_or_raise(err, problems)
        return None


def write_eval(run: Path, data: EvalFile) -> None:
    path = Path(run) / EVAL
    write_json(path, check_eval_file(data, str(path)))


def _read_record_list(path: Path, key: str, record, problems: list[str] | None) -> dict | None:
    """A JSON object whose `key` holds a list of `record`s (None when the file is missing). With
    `problems`, a damaged record is reported and skipped, a damaged file reported and None returned."""
    if not path.exists():
        return None
    try:
        data = read_json(path)
        if not isinstance(data, dict) or not isinstance(data.get(key), list):
            raise RunDirError(f"{path}: expected {{\"{key}\": [...]}}")
    except RunDirError as err:
        _report_or_raise(err, problems)
        return None
    kept = []
    for i, item in enumerate(data[key]):
        try:
            kept.append(check_record(record, item, f"{path}: {key}[{i}]", complete=problems is None))
        except RunDirError as err:
            _report_or_raise(err, problems)
    return data | {key: kept}


def probe_path(run: Path) -> Path:
    """probe.json, or population.json in a run directory written before probe.json had its name."""
    path = Path(run) / PROBE
    legacy = Path(run) / LEGACY_PROBE
    return legacy if not path.exists() and legacy.exists() else path


def read_probe(run: Path, problems: list[str] | None = None) -> dict | None:
    """The Lemma 1 probe measurements ({"measurements": [...]}; None when missing). With `problems`, a
    damaged measurement is reported and skipped, a damaged file reported and None returned."""
    return _read_record_list(probe_path(run), "measurements", ProbeMeasurement, problems)


def record_probe(run: Path, measurement: ProbeMeasurement) -> None:
    """Add (or replace) the measurement of its step in probe.json (an older run's population.json
    measurements carried over)."""
    path = Path(run) / PROBE
    check_record(ProbeMeasurement, measurement, f"{path}: step {measurement.get('step')}")
    data = read_probe(run) or {"measurements": []}
    data["measurements"] = [m for m in data["measurements"] if m["step"] != measurement["step"]] + [measurement]
    write_json(path, data)


def keep_probe(run: Path, step: int) -> None:
    """Keep the measurements of steps <= step."""
    data = read_probe(run)
    if data is not None:
        write_json(probe_path(run), data | {"measurements": [m for m in data["measurements"] if m["step"] <= step]})


def read_curve(run: Path, problems: list[str] | None = None) -> list[CurvePoint] | None:
    """curve.json's points in step order (None when missing). With `problems`, a damaged point is
    reported and skipped, a damaged file reported and None returned."""
    data = _read_record_list(Path(run) / CURVE, "points", CurvePoint, problems)
    return None if data is None else sorted(data["points"], key=lambda p: p["step"])


def record_curve_point(run: Path, point: CurvePoint) -> None:
    """Add (or replace) the curve point of its step in curve.json."""
    path = Path(run) / CURVE
    check_record(CurvePoint, point, f"{path}: step {point.get('step')}")
    kept = [p for p in read_curve(run) or [] if p["step"] != point["step"]]
    write_json(path, {"points": sorted(kept + [point], key=lambda p: p["step"])})


def keep_curve(run: Path, steps) -> None:
    """Keep the curve points of these steps only (a curve's current layout; llm/curve.py)."""
    steps = set(steps)
    points = read_curve(run)
    if points is not None:
        write_json(Path(run) / CURVE, {"points": [p for p in points if p["step"] in steps]})


# ----------------------------------------------------------------------------- checkpoints

def checkpoint_dir(run: Path, step: int) -> Path:
    return Path(run) / CHECKPOINTS / f"step-{step}"


def checkpoint_steps(run: Path) -> tuple[list[int], list[Path]]:
    """(steps of the complete checkpoints, newest first; folders under checkpoints/ that are not
    step-N checkpoints: stray or set aside). A checkpoint is complete once its trainer_state.json exists
    (it is written last, and the folder is renamed into place)."""
    steps, other = [], []
    root = Path(run) / CHECKPOINTS
    for p in sorted(root.iterdir()) if root.is_dir() else []:
        m = CHECKPOINT_NAME.fullmatch(p.name)
        if m and p.is_dir():
            if (p / TRAINER_STATE).exists():
                steps.append(int(m.group(1)))
        elif not p.name.startswith(".tmp-"):
            other.append(p)
    return sorted(steps, reverse=True), other


def save_checkpoint(run: Path, model_dir: Path, step: int, weights: dict, state: TrainerState,
                    optimizer_state: dict | None, adapter: dict | None = None) -> Path:
    """checkpoints/step-N/: fp32 weights in save_pretrained layout with the base model's config and
    tokenizer files, the trainer state (+ optimizer state, + LoRA adapters); atomic (a temporary folder,
    then a rename). An existing complete checkpoint of that step is kept (it holds the same weights). A disk
    with less free space than the checkpoint needs is a RunDirError naming it and both sizes, before anything
    is written; a write that fails leaves no temporary folder behind."""
    final = checkpoint_dir(run, step)
    if (final / TRAINER_STATE).exists():
        return final
    tmp = Path(run) / CHECKPOINTS / f".tmp-step-{step}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _write_checkpoint(tmp, final, model_dir, step, weights, state, optimizer_state, adapter)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # a full disk is not left full of half a checkpoint
        raise
    return final


def _write_checkpoint(tmp: Path, final: Path, model_dir: Path, step: int, weights: dict, state: TrainerState,
                      optimizer_state: dict | None, adapter: dict | None = None) -> None:
    import torch
    from safetensors.torch import save_file

    needed = checkpoint_bytes(model_dir, weights, optimizer_state) + sum(t.numel() * 4 for t in (adapter or {}).values())
    with writing(tmp, needed=needed):
        tmp.mkdir(parents=True)
        for f in Path(model_dir).iterdir():  # config, generation config, tokenizer files of the base model
            if f.is_file() and not f.name.startswith("model") and f.suffix != ".bin":
                shutil.copy2(f, tmp / f.name)
        model_cfg = read_json(tmp / "config.json")
        model_cfg["torch_dtype" if "torch_dtype" in model_cfg else "dtype"] = "float32"
        write_json(tmp / "config.json", model_cfg)
        save_file({n: w.detach().float().contiguous() for n, w in weights.items()}, str(tmp / WEIGHTS),
                  metadata={"format": "pt"})
        if optimizer_state is not None:
            torch.save(optimizer_state, tmp / OPTIMIZER)
        if adapter is not None:
            save_file({n: t.detach().float().contiguous() for n, t in adapter.items()}, str(tmp / ADAPTER))
        write_json(tmp / TRAINER_STATE, check_record(TrainerState, state | {"step": step}, str(tmp / TRAINER_STATE)))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)


def load_checkpoint(path: Path, shapes: dict, with_optimizer: bool) -> tuple[dict, TrainerState, dict | None]:
    """(fp32 weights by name, trainer state, optimizer state or None) of checkpoints/step-N, every
    part checked: the state is a TrainerState of step N, the weights hold every name in `shapes`
    with that shape and finite values, optimizer.pt (when asked for) is a torch optimizer state
    dict loaded with weights_only=True. RunDirError naming the file otherwise."""
    import torch
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    state = check_record(TrainerState, read_json(path / TRAINER_STATE), str(path / TRAINER_STATE))
    if state["step"] != int(CHECKPOINT_NAME.fullmatch(path.name).group(1)):
        raise RunDirError(f"{path / TRAINER_STATE}: step {state['step']} does not match the folder name")
    weights_file = path / WEIGHTS
    try:
        with safe_open(weights_file, "pt") as fh:
            stored = set(fh.keys())
            weights = {}
            for name, shape in shapes.items():
                key = name if name in stored else "model.embed_tokens.weight" if name == "lm_head.weight" else name
                if key not in stored:
                    raise RunDirError(f"{weights_file}: lacks the weight {name}")
                tensor = fh.get_tensor(key).float()
                if tuple(tensor.shape) != tuple(shape):
                    raise RunDirError(f"{weights_file}: weight {name} has shape {tuple(tensor.shape)}, expected {tuple(shape)}")
                if not torch.isfinite(tensor).all():
                    raise RunDirError(f"{weights_file}: weight {name} holds non-finite values")
                weights[name] = tensor
    except (SafetensorError, OSError) as err:
        raise RunDirError(f"{weights_file}: not a readable safetensors file ({err})") from None
    optimizer_state = None
    if with_optimizer:
        opt_file = path / OPTIMIZER
        if not opt_file.is_file():
            raise RunDirError(f"{opt_file}: missing (the checkpoint lies inside a GRPO phase)")
        try:
            optimizer_state = torch.load(opt_file, weights_only=True)
        except Exception as err:  # torch.load raises many kinds (UnpicklingError, RuntimeError, EOFError, ...)
            raise RunDirError(f"{opt_file}: not a torch optimizer state ({type(err).__name__}: {str(err).splitlines()[0][:120]})") from None
        if not isinstance(optimizer_state, dict) or set(optimizer_state) != {"state", "param_groups"}:
            raise RunDirError(f"{opt_file}: not a torch optimizer state dict (expected keys 'state' and 'param_groups')")
    return weights, state, optimizer_state


def load_adapter(path: Path) -> dict:
    """The LoRA adapters of checkpoints/step-N (adapter.safetensors), finite; RunDirError naming the file otherwise."""
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    file = Path(path) / ADAPTER
    try:
        adapter = load_file(str(file))
    except (SafetensorError, OSError) as err:
        raise RunDirError(f"{file}: not a readable safetensors file ({err})") from None
    bad = next((n for n, t in adapter.items() if not torch.isfinite(t).all()), None)
    if bad is not None:
        raise RunDirError(f"{file}: adapter {bad} holds non-finite values")
    return adapter


def set_aside(path: Path) -> Path:
    """Rename a damaged checkpoint folder step-N to step-N.damaged (replacing an older one), so that
    it is neither resumed from nor mistaken for a complete checkpoint when step N is written again."""
    target = path.with_name(path.name + ".damaged")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(path, target)
    return target


# ----------------------------------------------------------------------------- one writer at a time

LOCK = "run.lock"


class RunDirBusy(RunDirError):
    """Another live process holds the run directory's lock."""


class WriterLock:
    """The run directory's lock: `run.lock`, held with an exclusive flock(2) by the one process that
    writes the directory, and holding that process's {"pid", "host", "since"} for the message a second
    writer gets. The kernel releases a flock when its holder dies (kill -9 included), so a crashed run's
    lock file is stale by construction: the next writer takes it over and names the dead holder.
    The file stays after the run, emptied (removing it would let a second writer lock a file no longer there)."""

    def __init__(self, run: Path):
        self.path = Path(run) / LOCK
        self.fd: int | None = None

    def acquire(self) -> dict | None:
        """Take the lock; returns the stale holder's record (a run that died holding it) or None.
        RunDirBusy (one line naming the holder) when a live process holds it."""
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = lock_holder(self.path) or {}
            raise RunDirBusy(f"{self.path}: the run directory is in use by pid {holder.get('pid', '?')} on "
                             f"{holder.get('host', '?')} (since {holder.get('since', '?')}); one run writes a "
                             "directory at a time") from None
        stale = lock_holder(self.path)
        me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        self.fd = fd
        return stale

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)  # an empty lock file: released cleanly (a crash leaves the holder's record)
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None

    def __enter__(self) -> "WriterLock":
        stale = self.acquire()
        if stale:
            print(f"note: {self.path} was left by pid {stale.get('pid')} on {stale.get('host')}, which no longer "
                  "holds it (a crashed run); taken over", file=sys.stderr)
        return self

    def __exit__(self, *exc) -> None:
        if is_empty(self.path.parent):  # a run that stopped before writing anything leaves nothing behind
            self.path.unlink(missing_ok=True)
        self.release()


def lock_holder(path: Path) -> dict | None:
    """The {"pid", "host", "since"} record in a lock file, or None when it is empty or unreadable."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def in_use(run: Path) -> dict | None:
    """The holder's record when a live process holds `run`'s lock now (a run in progress), else None."""
    import fcntl

    path = Path(run) / LOCK
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return lock_holder(path) or {}
    finally:
        os.close(fd)
    return None


def is_empty(run: Path) -> bool:
    """True when `run` holds nothing but its lock file (a directory a new run may start in)."""
    return not any(p.name != LOCK for p in Path(run).iterdir())


# ----------------------------------------------------------------------------- the settings a run started with

CONFIG_HISTORY = "config_history.jsonl"
FREE_SETTINGS = ("out", "device")  # may differ on resume: the directory's place, and the device (--device)
# absolute paths in config.json, compared by their content's hash (inputs.json), not by their text: they move with the run
PATH_SETTINGS = ("model", "data", "test_data", "reward_function")
NOT_COMPARED = FREE_SETTINGS + PATH_SETTINGS


def flat_settings(config: dict, prefix: str = "") -> dict[str, Any]:
    """{"es.sigma": 0.01, ...}: a nested config as dotted setting names (the names of the flags)."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat |= flat_settings(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def config_history(run: Path) -> list[dict]:
    """The records of config_history.jsonl ([] when missing): {"config", "changed", "from_step"}, one
    per change of settings, the first the settings the run started with."""
    path = Path(run) / CONFIG_HISTORY
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        try:
            record = json.loads(line, parse_constant=_no_constant)
        except ValueError:
            raise RunDirError(f"{path}: line {number}: not a JSON record") from None
        if not isinstance(record, dict) or not isinstance(record.get("config"), dict):
            raise RunDirError(f"{path}: line {number}: expected a record with a 'config' object")
        records.append(record)
    return records


def setting_changes(recorded: dict, current: dict, ignore: tuple[str, ...] = ()) -> list[tuple[str, Any, Any]]:
    """(setting, recorded value, current value) for each dotted setting that differs, sorted by name;
    a setting present on one side only counts as changed (its missing value is None)."""
    a, b = flat_settings(json.loads(json.dumps(recorded))), flat_settings(json.loads(json.dumps(current)))
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b))
            if k not in ignore and not k.startswith("schedule.") and a.get(k) != b.get(k)]


def check_settings_fixed(run: Path, allow_change: bool) -> list[tuple[str, Any, Any]]:
    """Before a resume: config.json against the settings recorded when the run started (or last changed
    with allow_change). An edited setting raises RunDirError naming it, unless allow_change; returns the
    changes (recorded by write_config when the resumed run writes config.json)."""
    history = config_history(run)
    if not history:  # a run directory from before config_history.jsonl: nothing to compare with
        return []
    changes = setting_changes(history[-1]["config"], read_config(run), ignore=NOT_COMPARED)
    if changes and not allow_change:
        name, was, now = changes[0]
        more = f" (and {len(changes) - 1} more)" if len(changes) > 1 else ""
        raise RunDirError(f"{Path(run) / CONFIG}: setting {name} is {json.dumps(now)} but the run ran with "
                          f"{json.dumps(was)}{more}; a resumed run keeps its settings (restore it, or pass "
                          f"--allow_config_change true to continue with the new value, recorded in {CONFIG_HISTORY})")
    return changes


def record_settings(run: Path, config: dict, from_step: int = 0) -> None:
    """Append `config` to config_history.jsonl when its compared settings differ from the last record (the
    first record is the settings a run starts with), with the changed settings and the step of the
    checkpoint the run continues from."""
    history = config_history(run)
    changes = setting_changes(history[-1]["config"], config, ignore=NOT_COMPARED) if history else []
    if history and not changes:
        return
    _append_history(run, {"config": config, "changed": [{"setting": k, "was": a, "now": b} for k, a, b in changes],
                          "from_step": from_step if history else 0})


def record_code_change(run: Path, config: dict, was: str, now: str, from_step: int) -> None:
    """Record in config_history.jsonl that the run continues from checkpoint `from_step` with other code."""
    _append_history(run, {"config": config, "changed": [{"setting": "code", "was": was, "now": now}],
                          "from_step": from_step})


def _append_history(run: Path, record: dict) -> None:
    path = Path(run) / CONFIG_HISTORY
    line = dumps(record, str(path))  # before the file is opened: a refused record leaves no empty history behind
    with writing(path), open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


# ----------------------------------------------------------------------------- integrity (what a reader checks)

def step_problems(steps: list[int], through: int | None = None) -> list[str]:
    """What is wrong with a run's metrics rows, by their step numbers in file order: steps out of order,
    repeated, or missing from 1..max (or 1..through when given); [] when they are exactly 1, 2, ..., n."""
    problems = []
    repeated = sorted({s for s in steps if steps.count(s) > 1})
    if repeated:
        problems.append(f"steps written more than once: {_ranges(repeated)}")
    if any(b < a for a, b in zip(steps, steps[1:])) and not repeated:
        problems.append("steps out of order")
    last = max(steps, default=0) if through is None else through
    missing = sorted(set(range(1, last + 1)) - set(steps))
    if missing:
        problems.append(f"steps missing: {_ranges(missing)}")
    return problems


def _ranges(steps: list[int]) -> str:
    """'1-3, 5' for [1, 2, 3, 5]."""
    parts, start = [], None
    for i, s in enumerate(steps):
        if start is None:
            start = s
        if i + 1 == len(steps) or steps[i + 1] != s + 1:
            parts.append(f"{start}-{s}" if s != start else f"{s}")
            start = None
    return ", ".join(parts)


def integrity_problems(run: Path, config: dict, rows: list[dict], finished: bool) -> list[str]:
    """What makes a run directory's data untrustworthy, each naming the file: metrics rows not exactly
    steps 1..n (n = the run's total steps when it finished), config.json differing from the settings
    recorded in config_history.jsonl (edited by hand), settings changed mid-run, a writer still at work."""
    run = Path(run)
    problems = []
    total = (config.get("schedule") or {}).get("total_steps") if isinstance(config.get("schedule"), dict) else None
    steps = [r["step"] for r in rows if isinstance(r.get("step"), int)]
    through = total if finished and isinstance(total, int) else None
    problems += [f"{run / METRICS}: {p}" for p in step_problems(steps, through)]
    if isinstance(total, int) and steps and max(steps) > total:
        problems.append(f"{run / METRICS}: steps beyond the run's {total}")
    try:
        history = config_history(run)
    except RunDirError as err:
        return problems + [str(err)]
    if history:
        changes = setting_changes(history[-1]["config"], config, ignore=NOT_COMPARED)
        if changes:
            problems.append(f"{run / CONFIG}: differs from the settings the run ran with (edited by hand?): "
                            + ", ".join(f"{k} {json.dumps(a)} -> {json.dumps(b)}" for k, a, b in changes))
        for record in history[1:]:
            named = ", ".join(f"{c['setting']} {json.dumps(c['was'])} -> {json.dumps(c['now'])}" for c in record["changed"]
                              if c["setting"] not in NOT_COMPARED)
            if named:
                problems.append(f"{run / CONFIG_HISTORY}: settings changed mid-run after step {record['from_step']}: {named}")
    holder = in_use(run)
    if holder is not None:
        problems.append(f"{run / LOCK}: a run is still writing this directory (pid {holder.get('pid', '?')} on "
                        f"{holder.get('host', '?')})")
    return problems


def rows_missing_through(run: Path, step: int) -> str | None:
    """Whether metrics.jsonl holds the rows of steps 1..step exactly once each (what resuming from
    checkpoint `step` needs; later rows are dropped by keep_steps): None, or what is wrong."""
    rows = [r for r in read_steps(run) if r["step"] <= step]
    problems = step_problems([r["step"] for r in rows], through=step)
    return "; ".join(problems) or None


# ----------------------------------------------------------------------------- a full disk

@contextlib.contextmanager
def writing(path: Path, needed: int | None = None):
    """Turn an OSError while writing `path` (a full disk: ENOSPC, a quota, a read-only file system)
    into a RunDirError naming the file, so that it ends a run in one line rather than a traceback.
    With `needed` (bytes the write takes): refused before it starts when the disk has less free, and
    any error of the write (safetensors and torch raise their own types) on a disk left with less than
    that is a full disk; both messages name the space needed and the space free."""
    if needed is not None and free_bytes(path) < needed:
        raise RunDirError(f"{path}: cannot be written: {_space(needed, free_bytes(path))}")
    try:
        yield
    except RunDirError:
        raise
    except OSError as err:
        full = needed is not None and free_bytes(path) < needed
        space = f"; {_space(needed, free_bytes(path))}" if full else ""
        raise RunDirError(f"{path}: cannot be written ({err.strerror or err}){space}") from None
    except Exception as err:
        if needed is None or free_bytes(path) >= needed:
            raise
        space = _space(needed, free_bytes(path))
        raise RunDirError(f"{path}: cannot be written ({type(err).__name__}); {space}") from None


def free_bytes(path: Path) -> int:
    """Free bytes on the disk that holds path (or the nearest folder above it that exists)."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def _space(needed: int, free: int) -> str:
    return f"it needs {needed / 2**20:.1f} MB free on its disk, which has {free / 2**20:.1f} MB"


def checkpoint_bytes(model_dir: Path, weights: dict, optimizer_state: dict | None) -> int:
    """The bytes a checkpoint takes (about): fp32 weights, the optimizer's tensors, the base model's
    config and tokenizer files, and 64 KB for the rest (headers, trainer_state.json)."""
    import torch

    tensors = sum(w.numel() * 4 for w in weights.values())
    if optimizer_state is not None:
        tensors += sum(v.numel() * v.element_size() for state in optimizer_state.get("state", {}).values()
                       for v in state.values() if isinstance(v, torch.Tensor))
    files = sum(f.stat().st_size for f in Path(model_dir).iterdir()
                if f.is_file() and not f.name.startswith("model") and f.suffix != ".bin")
    return tensors + files + 2**16
