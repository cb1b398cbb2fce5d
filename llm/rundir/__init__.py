"""The run directory of `python -m escov.llm train`: the one package that writes and reads it.

Its modules (every name is importable from escov.llm.rundir itself):

    records.py       the file names; the records (TypedDicts: StepMetrics, Evaluation, EvalFile, ...) and check_record
    jsonio.py        JSON without NaN (dumps, write_json atomic) and damaged files named (read_text, read_json)
    disk.py          a full disk: `writing` turns a failed write into one RunDirError naming the file
    files.py         inputs.json, metrics.jsonl, completions.jsonl, eval.json, probe.json, curve.json: read, write, keep
    config_files.py  config.json and config_history.jsonl: the settings a run started with and each allowed change
    checkpoints.py   checkpoints/step-N/: save (space checked first), load with every part checked, set aside
    lock.py          run.lock: one writer at a time (WriterLock, in_use)
    integrity.py     what a reader checks: metrics rows exactly 1..n, config.json as the run ran it, no writer at work

The run directory is the interface between `llm` (train.py writes it, resume reads it back) and
`paper_checks` (rundir.py reads it). Its files and their records:

    config.json          the resolved TrainConfig (llm/settings/) plus "schedule" (llm/schedules.py describe)
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

from escov.llm.rundir.checkpoints import (
    checkpoint_bytes,
    checkpoint_dir,
    checkpoint_steps,
    load_adapter,
    load_checkpoint,
    save_checkpoint,
    set_aside,
)
from escov.llm.rundir.config_files import (
    CONFIG_HISTORY,
    FREE_SETTINGS,
    NOT_COMPARED,
    PATH_SETTINGS,
    check_settings_fixed,
    config_history,
    flat_settings,
    read_config,
    record_code_change,
    record_settings,
    setting_changes,
    write_config,
)
from escov.llm.rundir.disk import free_bytes, writing
from escov.llm.rundir.files import (
    append_completions,
    append_step,
    keep_completions,
    keep_curve,
    keep_probe,
    keep_steps,
    probe_path,
    read_completions,
    read_curve,
    read_eval,
    read_manifest,
    read_probe,
    read_steps,
    record_curve_point,
    record_probe,
    write_eval,
    write_manifest,
)
from escov.llm.rundir.integrity import grading_timeouts, integrity_problems, rows_missing_through, step_problems
from escov.llm.rundir.jsonio import MAX_FILE_BYTES, check_finite, dumps, read_json, read_text, write_json
from escov.llm.rundir.lock import LOCK, RunDirBusy, WriterLock, in_use, is_empty, lock_holder
from escov.llm.rundir.records import (
    ADAPTER,
    CHECKPOINT_NAME,
    CHECKPOINTS,
    COMPLETIONS,
    CONFIG,
    CURVE,
    EVAL,
    LEGACY_PROBE,
    MANIFEST,
    METRICS,
    OPTIMIZER,
    PROBE,
    TIMING_KEYS,
    TRAINER_STATE,
    WEIGHTS,
    CurvePoint,
    EvalFile,
    Evaluation,
    KeptCompletion,
    ProbeMeasurement,
    RunDirError,
    StepMetrics,
    Thresholded,
    TrainerState,
    check_eval_file,
    check_record,
)

__all__ = [
    "ADAPTER",
    "CHECKPOINTS",
    "CHECKPOINT_NAME",
    "COMPLETIONS",
    "CONFIG",
    "CONFIG_HISTORY",
    "CURVE",
    "CurvePoint",
    "EVAL",
    "EvalFile",
    "Evaluation",
    "FREE_SETTINGS",
    "KeptCompletion",
    "LEGACY_PROBE",
    "LOCK",
    "MANIFEST",
    "METRICS",
    "NOT_COMPARED",
    "OPTIMIZER",
    "PATH_SETTINGS",
    "PROBE",
    "ProbeMeasurement",
    "RunDirBusy",
    "RunDirError",
    "StepMetrics",
    "TIMING_KEYS",
    "TRAINER_STATE",
    "Thresholded",
    "TrainerState",
    "WEIGHTS",
    "WriterLock",
    "append_completions",
    "append_step",
    "check_eval_file",
    "check_finite",
    "check_record",
    "check_settings_fixed",
    "checkpoint_bytes",
    "checkpoint_dir",
    "checkpoint_steps",
    "config_history",
    "dumps",
    "grading_timeouts",
    "MAX_FILE_BYTES",
    "flat_settings",
    "free_bytes",
    "in_use",
    "integrity_problems",
    "is_empty",
    "keep_completions",
    "keep_curve",
    "keep_probe",
    "keep_steps",
    "load_adapter",
    "load_checkpoint",
    "lock_holder",
    "probe_path",
    "read_completions",
    "read_config",
    "read_curve",
    "read_eval",
    "read_json",
    "read_manifest",
    "read_probe",
    "read_steps",
    "read_text",
    "record_code_change",
    "record_curve_point",
    "record_probe",
    "record_settings",
    "rows_missing_through",
    "save_checkpoint",
    "set_aside",
    "setting_changes",
    "step_problems",
    "write_config",
    "write_eval",
    "write_json",
    "write_manifest",
    "writing",
]
