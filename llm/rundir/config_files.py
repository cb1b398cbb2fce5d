"""The settings a run started with: config.json, and config_history.jsonl's record of the first settings and
of each change a resume was allowed to make (check_settings_fixed refuses any other)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from escov.llm.rundir.disk import writing
from escov.llm.rundir.jsonio import _no_constant, dumps, read_json, read_text, write_json
from escov.llm.rundir.records import CONFIG, RunDirError

CONFIG_HISTORY = "config_history.jsonl"
FREE_SETTINGS = ("out", "device")  # may differ on resume: the directory's place, and the device (--device)
# absolute paths in config.json, compared by their content's hash (inputs.json), not by their text: they move with
# the run
PATH_SETTINGS = ("model", "data", "test_data", "reward_function")
NOT_COMPARED = FREE_SETTINGS + PATH_SETTINGS


def write_config(run: Path, config: dict, from_step: int = 0) -> None:
    """config.json, and config_history.jsonl's record of the settings when they are new (record_settings;
    from_step: the checkpoint the run continues from)."""
    write_json(Path(run) / CONFIG, config)
    record_settings(run, config, from_step)


def read_config(run: Path) -> dict:
    """config.json as a dict; RunDirError when it is missing, damaged or not a JSON object."""
    path = Path(run) / CONFIG
    if not path.is_file():
        raise RunDirError(f"{path}: missing (not a run directory)")
    data = read_json(path)
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: expected a JSON object of settings, got {type(data).__name__}")
    return data


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
    text = read_text(path)
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line, parse_constant=_no_constant)
        except ValueError:
            if number == len(lines) and not text.endswith("\n"):
                break  # the last record, cut off by a kill while it was written: never written (_drop_cut_line)
            raise RunDirError(f"{path}: line {number}: not a JSON record") from None
        if not isinstance(record, dict) or not isinstance(record.get("config"), dict):
            raise RunDirError(f"{path}: line {number}: expected a record with a 'config' object")
        records.append(record)
    return records


def setting_changes(recorded: dict, current: dict, ignore: tuple[str, ...] = ()) -> list[tuple[str, Any, Any]]:
    """(setting, recorded value, current value) for each dotted setting that differs, sorted by name;
    a setting present on one side only counts as changed (its missing value is None)."""
    a, b = flat_settings(json.loads(json.dumps(recorded))), flat_settings(json.loads(json.dumps(current)))
    return [
        (k, a.get(k), b.get(k))
        for k in sorted(set(a) | set(b))
        if k not in ignore and not k.startswith("schedule.") and a.get(k) != b.get(k)
    ]


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
        raise RunDirError(
            f"{Path(run) / CONFIG}: setting {name} is {json.dumps(now)} but the run ran with "
            f"{json.dumps(was)}{more}; a resumed run keeps its settings (restore it, or pass "
            f"--allow_config_change true to continue with the new value, recorded in {CONFIG_HISTORY})"
        )
    return changes


def record_settings(run: Path, config: dict, from_step: int = 0) -> None:
    """Append `config` to config_history.jsonl when its compared settings differ from the last record (the
    first record is the settings a run starts with), with the changed settings and the step of the
    checkpoint the run continues from."""
    history = config_history(run)
    _drop_cut_line(Path(run) / CONFIG_HISTORY)
    changes = setting_changes(history[-1]["config"], config, ignore=NOT_COMPARED) if history else []
    if history and not changes:
        return
    _append_history(
        run,
        {
            "config": config,
            "changed": [{"setting": k, "was": a, "now": b} for k, a, b in changes],
            "from_step": from_step if history else 0,
        },
    )


def record_code_change(run: Path, config: dict, was: str, now: str, from_step: int) -> None:
    """Record in config_history.jsonl that the run continues from checkpoint `from_step` with other code."""
    _append_history(
        run, {"config": config, "changed": [{"setting": "code", "was": was, "now": now}], "from_step": from_step}
    )


def _drop_cut_line(path: Path) -> None:
    """Remove a last line without its newline from config_history.jsonl: a record a kill cut off while it was
    written (config_history skips it), so that the next record starts a line of its own."""
    text = read_text(path) if path.exists() else ""
    if text and not text.endswith("\n"):
        with writing(path):
            path.write_text(text[: text.rfind("\n") + 1], encoding="utf-8")


def _append_history(run: Path, record: dict) -> None:
    path = Path(run) / CONFIG_HISTORY
    line = dumps(record, str(path))  # before the file is opened: a refused record leaves no empty history behind
    _drop_cut_line(path)
    with writing(path), open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())
