"""What a run was made from, so that a resume or a report can refuse what changed.

A run directory's inputs.json (written by llm/train.py, read and written through llm/rundir/) records:

    code             {"commit", "modified", "diff_sha256", "version"}: the git commit of the source tree when
                     escov runs from a git checkout (modified: tracked files differ from the commit, with the
                     sha256 of that difference), else the installed package's version
    settings_sha256  sha256 of config.json's settings, less the free ones (out, device), the schedule and the
                     path settings (their files are hashed instead)
    inputs           one record per path setting in use (model, data, test_data; each reward function as
                     reward_function[0], reward_function[1], ...):
                     {"given": the path as typed, "path": the absolute path it resolved to,
                      "from_run": that path relative to the run directory, "sha256": the content hash}

Content hashes: a file's bytes; a folder's files (names relative to it, then bytes, in name order); the
base model's weight files (*.safetensors, else *.bin), and under "files" each other file of its folder that
loading reads ({name: sha256}: config.json, generation_config.json, the tokenizer files, a chat template; every
top-level file but weights and documentation, model_files); the reward function's source file (module:function:
the file the module imports from), and under "imports" each module it brings in from outside the Python
installation ({module: {"path", "from_run", "sha256"}}; llm/reward_imports.py says which). A reward named by a
package path ('pkg.mod:function') is pinned to the content of the file it resolved to: a resume from a folder
where pkg.mod is another file is refused. config.json stores the resolved absolute paths, so `--resume` works from
any folder; a moved run directory finds each input at its absolute path, else at the same place relative to
the run directory (a project folder moved as a whole). A resume refuses an input whose hash changed, in one
line naming the file and the two hash prefixes; a change of code version is allowed, printed and recorded
in config_history.jsonl with the step the run continues from.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from escov.llm import reward_imports, rundir
from escov.llm.rundir import CONFIG, CONFIG_HISTORY, MANIFEST, NOT_COMPARED, PATH_SETTINGS, RunDirError
from escov.llm.tasks import user_modules

SHORT = 12  # hex digits of a hash shown in messages
CHUNK = 1 << 20


# ----------------------------------------------------------------------------- hashes


def _update_with_file(digest, path: Path) -> None:
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            digest.update(block)


def content_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes, or of a folder's files (each name relative to the folder, then its bytes,
    in name order)."""
    path = Path(path)
    digest = hashlib.sha256()
    if path.is_dir():
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(f.relative_to(path).as_posix().encode() + b"\0")
            _update_with_file(digest, f)
    else:
        _update_with_file(digest, path)
    return digest.hexdigest()


def weight_files(model_dir: str | Path) -> list[Path]:
    """A model folder's weight files: *.safetensors, else *.bin, in name order."""
    model_dir = Path(model_dir)
    return sorted(model_dir.glob("*.safetensors")) or sorted(model_dir.glob("*.bin"))


def weights_sha256(model_dir: str | Path) -> str:
    """sha256 of a model folder's weight files (names, then bytes, in name order)."""
    digest = hashlib.sha256()
    for f in weight_files(model_dir):
        digest.update(f.name.encode() + b"\0")
        _update_with_file(digest, f)
    return digest.hexdigest()


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".msgpack", ".onnx")


def model_files(model_dir: str | Path) -> list[Path]:
    """The files of a model folder that loading reads besides its weights: every top-level file except weight
    files (WEIGHT_SUFFIXES) and documentation (*.md, LICENSE*, dot files), in name order."""
    return sorted(
        f
        for f in Path(model_dir).iterdir()
        if f.is_file()
        and f.suffix not in WEIGHT_SUFFIXES
        and f.suffix != ".md"
        and not f.name.startswith((".", "LICENSE"))
    )


def tensors_sha256(weights: dict) -> str:
    """sha256 of named tensors (name, dtype, shape, then bytes, in name order): the run's final weights."""
    import torch

    digest = hashlib.sha256()
    for name in sorted(weights):
        t = weights[name].detach().cpu().contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}\0".encode())
        digest.update(t.view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def settings_sha256(config: dict) -> str:
    """sha256 of a config.json's settings that fix what a run computes: all but the free settings, the
    path settings (hashed by content) and the schedule (derived from the settings)."""
    kept = {k: v for k, v in config.items() if k not in NOT_COMPARED + ("schedule",)}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


# ----------------------------------------------------------------------------- the code version


def code_version() -> dict:
    """{"commit", "modified", "diff_sha256", "version"} of the escov source running now: the git commit when
    the source tree is a git checkout (its top level holds the llm/ folder this module is in), else None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("escov")
    except PackageNotFoundError:
        installed = "unknown"
    record = {"commit": None, "modified": False, "diff_sha256": None, "version": installed}
    root = Path(__file__).resolve().parents[1]

    def git(*args) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.decode(errors="replace") if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or Path(top.strip()).resolve() != root:
        return record
    commit = (git("rev-parse", "HEAD") or "").strip() or None
    diff = git("diff", "HEAD", "--binary") if commit else None
    record |= {
        "commit": commit,
        "modified": bool(diff),
        "diff_sha256": hashlib.sha256(diff.encode()).hexdigest() if diff else None,
    }
    return record


def describe_code(code: dict | None) -> str:
    """'commit 1a2b3c4d5e6f (modified)', or 'version 0.1.0' outside a git checkout."""
    if not code:
        return "unknown code"
    if code.get("commit"):
        modified = (
            f" (modified, diff {code['diff_sha256'][:8]})" if code.get("modified") and code.get("diff_sha256") else ""
        )
        return f"commit {code['commit'][:SHORT]}{modified}"
    return f"version {code.get('version')}"


# ----------------------------------------------------------------------------- the inputs


def reward_source(spec: str) -> Path | None:
    """The source file of a reward function 'file.py:function' or 'module:function', found as the task
    finds it when it imports the function (llm/tasks/user_modules.py; None when the module has no file,
    e.g. a built-in)."""
    module, _, _ = spec.rpartition(":")
    try:
        return user_modules.source_file(module)
    except ValueError as err:
        raise ValueError(f"reward_function {spec!r}: {err} (give 'path/to/file.py:function')") from None


def _resolved(name: str, value: str) -> tuple[str, Path | None]:
    """(the setting's value with an absolute path, the file or folder whose content is hashed)."""
    if name != "reward_function":
        path = Path(value).resolve()
        return (str(path), path) if path.exists() else (value, None)  # a missing file: the task's loader names it
    module, _, function = value.rpartition(":")
    try:
        source = reward_source(value)
    except ValueError:  # not importable: the task names it when it loads the function
        source = None
    if source is None or not source.is_file():  # no file (a built-in module, a missing file.py): the task names it
        return value, None
    source = source.resolve()
    if module.endswith(".py") or "." not in module and source.suffix == ".py" and source.name != "__init__.py":
        return f"{source}:{function}", source  # a file, or a top-level module: named by its file from now on
    return value, source  # a module inside a package stays an import path (its file is still hashed)


def _sha256(name: str, path: Path) -> str:
    return weights_sha256(path) if name == "model" else content_sha256(path)


def _extra(name: str, value: str, path: Path, run_dir: Path) -> dict:
    """What an input's record holds besides its hash: a model's other files read on loading ("files"), a reward
    source's imported modules ("imports")."""
    if name == "model" and path.is_dir():
        return {"files": {f.name: content_sha256(f) for f in model_files(path)}}
    if name == "reward_function":
        module = value.rpartition(":")[0]
        found = reward_imports.imported_files(path, "" if module.endswith(".py") else module)
        return {
            "imports": {
                m: {"path": str(f), "from_run": os.path.relpath(f, run_dir), "sha256": content_sha256(f)}
                for m, f in found.items()
            }
        }
    return {}


def _entries(name: str, value) -> list[tuple[str, str]]:
    """(record name, path as given) for each path a setting holds: reward_function holds several, recorded
    as reward_function[0], reward_function[1], ...; the others one (or none when empty)."""
    if name == "reward_function":
        return [(f"{name}[{i}]", spec) for i, spec in enumerate(value or ())]
    return [(name, value)] if value else []


def take_inputs(cfg, run_dir: str | Path) -> dict:
    """The inputs record of a run starting now: each path setting in use is made absolute in `cfg` (paths
    as typed are relative to the working folder) and hashed."""
    run_dir = Path(run_dir).resolve()
    inputs = {}
    for name in PATH_SETTINGS:
        values = []
        for key, given in _entries(name, getattr(cfg, name)):
            value, path = _resolved(name, given)
            values.append(value)
            inputs[key] = {
                "given": given,
                "path": None if path is None else str(path),
                "from_run": None if path is None else os.path.relpath(path, run_dir),
                "sha256": None if path is None else _sha256(name, path),
            }
            inputs[key] |= {} if path is None else _extra(name, value, path, run_dir)
        if values:
            setattr(cfg, name, tuple(values) if name == "reward_function" else values[0])
    return inputs


def manifest(cfg, inputs: dict, config: dict, given: dict | None = None) -> dict:
    """inputs.json's content: the code running now, the settings' hash and the inputs (`given`: the
    paths as first typed, kept across resumes)."""
    for name, typed in (given or {}).items():
        if name in inputs:
            inputs[name]["given"] = typed
    return {"code": code_version(), "settings_sha256": settings_sha256(config), "inputs": inputs}


def _locate(run_dir: Path, name: str, record: dict) -> Path:
    """Where a recorded input is now: its absolute path, else the same place relative to the run directory;
    RunDirError naming both when neither exists."""
    candidates = [Path(record["path"]), run_dir / record["from_run"]]
    for path in candidates:
        if path.exists():
            return path.resolve()
    raise RunDirError(
        f"{run_dir / MANIFEST}: {name} {record['given']!r} is missing: not at {candidates[0]} nor at "
        f"{os.path.normpath(candidates[1])} (relative to the run directory); put it back to resume"
    )


def check_inputs(run_dir: str | Path, cfg, recorded: dict) -> None:
    """Before a resume: find each recorded input (absolute path, else relative to the run directory), point
    cfg's setting at it, and refuse (RunDirError, one line) an input whose content hash differs from the
    recorded one, or a path setting set or cleared since the run started."""
    run_dir = Path(run_dir)
    for name in PATH_SETTINGS:
        entries = _entries(name, getattr(cfg, name))
        keys = [k for k in recorded if k == name or k.startswith(f"{name}[")]
        if len(entries) != len(keys):
            was = [recorded[k]["given"] for k in keys]
            raise RunDirError(
                f"{run_dir / CONFIG}: setting {name} is {getattr(cfg, name)!r} but the run ran with "
                f"{was[0] if len(was) == 1 else was or 'none'!r}; a resumed run keeps its inputs "
                "(restore it, or start a new run)"
            )
        values = []
        for key, now in entries:
            record = recorded[key]
            if record["path"] is None:  # a reward module without a source file: only its name is compared
                if now != record["given"]:
                    raise RunDirError(f"{run_dir / CONFIG}: {name} is {now!r} but the run ran with {record['given']!r}")
                values.append(now)
                continue
            module = now.rpartition(":")[0] if name == "reward_function" else ""
            by_name = bool(module) and not module.endswith(".py")  # imported by its name: pinned to its content
            path = _imported_now(run_dir, key, now, record) if by_name else _locate(run_dir, name, record)
            digest = _sha256(name, path)
            if digest != record["sha256"] and by_name and path != Path(record["path"]).resolve():
                raise RunDirError(
                    f"{path}: {key} {now!r} now imports this file, not the one the run used "
                    f"({record['path']}; sha256 {record['sha256'][:SHORT]} -> {digest[:SHORT]}); "
                    "resume from the folder the run was started from (a resumed run keeps its inputs)"
                )
            if digest != record["sha256"]:
                what = {"model": "base model weights", "reward_function": "reward function source"}.get(
                    name, f"{name} file"
                )
                raise RunDirError(
                    f"{path}: {what} changed since the run started (sha256 {record['sha256'][:SHORT]} "
                    f"-> {digest[:SHORT]}); a resumed run keeps its inputs (restore it, or start a new "
                    "run)"
                )
            _check_extra(run_dir, key, "" if not by_name else module, path, record)
            if name == "reward_function":
                module, _, function = now.rpartition(":")
                values.append(f"{path}:{function}" if module.endswith(".py") else now)
            else:
                values.append(str(path))
        if values:
            setattr(cfg, name, tuple(values) if name == "reward_function" else values[0])


def _imported_now(run_dir: Path, key: str, spec: str, record: dict) -> Path:
    """The file a reward named by its import path ('pkg.mod:function') imports now; RunDirError when none."""
    try:
        source = reward_source(spec)
    except ValueError as err:
        source, why = None, str(err)
    else:
        why = "no source file"
    if source is None or not source.is_file():
        raise RunDirError(
            f"{run_dir / CONFIG}: {key} {spec!r} cannot be imported now ({why}); the run used "
            f"{record['path']}: resume from the folder the run was started from"
        )
    return source.resolve()


def _check_extra(run_dir: Path, key: str, module: str, path: Path, record: dict) -> None:
    """The base model's other files and a reward source's imported modules against their record (a record
    written before they were recorded has none: nothing to compare); RunDirError naming the first that differs."""
    keep = "a resumed run keeps its inputs (restore it, or start a new run)"
    if "files" in record and path.is_dir():
        now = {f.name: content_sha256(f) for f in model_files(path)}
        for name in sorted(set(now) | set(record["files"])):
            was, digest = record["files"].get(name), now.get(name)
            if was != digest:
                change = (
                    "added"
                    if was is None
                    else "removed"
                    if digest is None
                    else f"changed (sha256 {was[:SHORT]} -> {digest[:SHORT]})"
                )
                raise RunDirError(f"{path / name}: base model file {change} since the run started; {keep}")
    if "imports" in record:
        now = reward_imports.imported_files(path, module)
        for name in sorted(set(now) | set(record["imports"])):
            was = record["imports"].get(name)
            if name not in now:
                raise RunDirError(
                    f"{path}: {key} imports module {name}, which is not found now (the run used {was['path']}); {keep}"
                )
            digest = content_sha256(now[name])
            if was is None:
                raise RunDirError(
                    f"{now[name]}: module {name}, imported by {key} ({path.name}), was not among its "
                    f"imports when the run started; {keep}"
                )
            if digest != was["sha256"]:
                raise RunDirError(
                    f"{now[name]}: module {name}, imported by {key} ({path.name}), changed since the "
                    f"run started (sha256 {was['sha256'][:SHORT]} -> {digest[:SHORT]}); {keep}"
                )


def check_settings_hash(run_dir: str | Path, allow_change: bool) -> dict | None:
    """Before a resume: inputs.json's record, after checking that config.json's settings hash to the
    recorded one where config_history.jsonl (which names a changed setting) is missing: RunDirError unless
    allow_change. A missing inputs.json is refused when the run's checkpoints were written by code that
    records one (it was deleted), and noted for a run from before inputs.json (None: nothing to compare)."""
    run_dir = Path(run_dir)
    recorded = rundir.read_manifest(run_dir)
    if recorded is None:
        steps, _ = rundir.checkpoint_steps(run_dir)
        if steps:
            try:
                state = rundir.read_json(rundir.checkpoint_dir(run_dir, steps[0]) / rundir.TRAINER_STATE)
                stamped = isinstance(state, dict) and "settings_sha256" in state
            except RunDirError:
                stamped = False  # a damaged checkpoint: resume_point sets it aside
            if stamped:
                raise RunDirError(
                    f"{run_dir / MANIFEST}: missing, but checkpoint step-{steps[0]} was written by a run "
                    "that records its inputs there; restore it to resume (or start a new run)"
                )
        if steps or (run_dir / rundir.METRICS).exists():
            print(
                f"note: {run_dir / MANIFEST} is missing (a run from before runs recorded their inputs): its code, "
                "data, reward and model cannot be compared with the run's; recorded from now on",
                file=sys.stderr,
            )
        return None
    if not rundir.config_history(run_dir):
        now, was = settings_sha256(rundir.read_config(run_dir)), recorded["settings_sha256"]
        if now != was and not allow_change:
            raise RunDirError(
                f"{run_dir / CONFIG}: settings differ from those the run ran with (sha256 {was[:SHORT]} "
                f"in {MANIFEST}, now {now[:SHORT]}) and {CONFIG_HISTORY}, which names them, is missing; "
                "restore config.json, or pass --allow_config_change true to continue with the new "
                "settings"
            )
    return recorded
