"""A run directory's records checked against their witnesses: records written at other times that say the same
thing, so that editing one record by hand (or several together) is caught by another.

    settings    config.json and config_history.jsonl (the settings the run continues with, and each change a resume
                was allowed to make, with the step it continued from) against each checkpoint's trainer_state.json
                `settings_sha256` (the settings it was trained with): checkpoint step-N was trained with the settings
                of the last history record whose from_step is below N. Editing config.json and the history's record
                together changes that record's hash, not the checkpoint's.
    inputs      inputs.json's content hashes (rewritten by every resume) against eval.json's `base_fingerprint`
                (written with the base evaluation, before any step, and kept): a data file changed with its new hash
                written into inputs.json disagrees with it; so does the settings hash of a base evaluation not made
                with the settings the run started with (a history record of step 0).

Records written by older code lack a witness (a checkpoint without settings_sha256, an eval.json without
base_fingerprint, no config_history.jsonl): nothing is compared then. `problems` lists each disagreement in one
line naming the file; a resume (llm/train.py) and `llm curve` refuse the first, a report (paper_checks) names them.
"""

from __future__ import annotations

from pathlib import Path

from escov.llm import rundir
from escov.llm.fingerprints import SHORT, settings_sha256
from escov.llm.rundir import RunDirError


def settings_of_step(history: list[dict], step: int) -> dict | None:
    """The history record whose settings trained step `step` (>= 1): the last one continued from a step below it."""
    before = [record for record in history if record.get("from_step", 0) < step]
    return before[-1] if before else None


def checkpoint_problems(run: Path, history: list[dict]) -> list[str]:
    """Each checkpoint whose trainer_state.json settings hash is not that of the settings its history gives it."""
    problems = []
    for step in sorted(rundir.checkpoint_steps(run)[0]):
        path = rundir.checkpoint_dir(run, step) / rundir.TRAINER_STATE
        try:
            stamped = rundir.read_json(path)
        except RunDirError:
            continue  # a damaged checkpoint: a resume sets it aside
        recorded = stamped.get("settings_sha256") if isinstance(stamped, dict) else None
        record = settings_of_step(history, step)
        if not recorded or record is None:
            continue
        expected = settings_sha256(record["config"])
        if recorded != expected:
            problems.append(
                f"{path}: checkpoint step-{step} was trained with settings sha256 {recorded[:SHORT]}, but "
                f"{rundir.CONFIG_HISTORY} gives the settings of step {step} as {expected[:SHORT]} "
                f"({rundir.CONFIG} and {rundir.CONFIG_HISTORY} edited by hand?); restore them"
            )
    return problems


def base_fingerprint(ev: dict | None) -> dict | None:
    """eval.json's record of what its base evaluation was made from (None when it has none)."""
    fingerprint = (ev or {}).get("base_fingerprint")
    return fingerprint if isinstance(fingerprint, dict) else None


def inputs_problems(run: Path, manifest: dict | None, history: list[dict], ev: dict | None) -> list[str]:
    """inputs.json's hashes, and the settings the run started with, against eval.json's base fingerprint."""
    fingerprint = base_fingerprint(ev)
    if fingerprint is None:
        return []
    problems = []
    made_from = fingerprint.get("inputs") if isinstance(fingerprint.get("inputs"), dict) else {}
    for name, record in sorted((manifest or {}).get("inputs", {}).items()):
        if name in made_from and made_from[name] != record.get("sha256"):
            problems.append(
                f"{run / rundir.MANIFEST}: {name} has sha256 {str(record.get('sha256'))[:SHORT]}, but "
                f"the base evaluation (eval.json base_fingerprint) was made from "
                f"{str(made_from[name])[:SHORT]} ({rundir.MANIFEST} edited by hand?)"
            )
    started = {settings_sha256(r["config"]) for r in history if r.get("from_step", 0) == 0}
    was = fingerprint.get("settings_sha256")
    if started and was and was not in started:
        problems.append(
            f"{run / rundir.EVAL}: the base evaluation was made with settings sha256 {was[:SHORT]}, not "
            f"those {rundir.CONFIG_HISTORY} says the run started with ({sorted(started)[0][:SHORT]}; "
            "edited by hand?)"
        )
    return problems


def problems(run: str | Path) -> list[str]:
    """Every disagreement between the run directory's records and their witnesses (see the module docstring);
    a record that cannot be read is left to its reader (which names it)."""
    run = Path(run)
    try:
        history = rundir.config_history(run)
    except RunDirError:
        history = []
    try:
        manifest = rundir.read_manifest(run)
        ev = rundir.read_eval(run, problems=[])
    except RunDirError:
        manifest, ev = None, None
    return checkpoint_problems(run, history) + inputs_problems(run, manifest, history, ev)


def check(run: str | Path) -> None:
    """RunDirError (the first disagreement, one line) when a record contradicts its witness."""
    found = problems(run)
    if found:
        raise RunDirError(found[0])
