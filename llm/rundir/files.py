"""The run's records on disk: inputs.json, metrics.jsonl, completions.jsonl, eval.json, probe.json and
curve.json, each written and read here (damage named, or with `problems=` reported and skipped)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from escov.llm.rundir.disk import writing
from escov.llm.rundir.jsonio import _no_constant, _report_or_raise, dumps, read_json, read_text, write_json
from escov.llm.rundir.records import (
    COMPLETIONS,
    CURVE,
    EVAL,
    LEGACY_PROBE,
    MANIFEST,
    METRICS,
    PROBE,
    CurvePoint,
    EvalFile,
    KeptCompletion,
    ProbeMeasurement,
    RunDirError,
    StepMetrics,
    check_eval_file,
    check_record,
)


def read_manifest(run: Path) -> dict | None:
    """inputs.json (llm/fingerprints.py), or None when missing; RunDirError when damaged."""
    path = Path(run) / MANIFEST
    if not path.exists():
        return None
    data = read_json(path)
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("inputs"), dict)
        or not isinstance(data.get("settings_sha256"), str)
    ):
        raise RunDirError(f"{path}: expected a record with 'code', 'settings_sha256' and 'inputs'")
    return data


def write_manifest(run: Path, data: dict) -> None:
    write_json(Path(run) / MANIFEST, data)


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
            rows.append(
                check_record(
                    record,
                    json.loads(line, parse_constant=_no_constant),
                    f"{path}: line {number}",
                    complete=problems is None,
                )
            )
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
        _rewrite_jsonl(
            path, [r for r in read_completions(run) if r["step"] <= step and r["source"] not in drop_sources]
        )


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
            raise RunDirError(f'{path}: expected {{"{key}": [...]}}')
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
