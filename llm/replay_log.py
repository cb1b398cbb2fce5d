"""replay.jsonl, the ES replay log of a run directory: enough to rebuild the weights at any ES step from the
base model (`python -m escov.llm replay`, llm/replay.py), a few hundred bytes per iteration.

ES's center after step t is theta_t = theta_{t-1} + (alpha / N) sum_d c_d E_d(noise seed of t) with the noise
regenerated from its seed (llm/es/plan.py `Update`, llm/es/center.py), so the weights at step S are the
phase's starting weights plus the updates of its steps up to S. One JSON record per line:

    PhaseStart    {"start_step", "center_sha256"}: an ES phase starts at step start_step from the base model
                  (0) or from checkpoints/step-<start_step> (a phase after GRPO); center_sha256: SHA-256 of its
                  perturbed parameters (llm/es/members.py weight_hash), which a rebuild checks first
    ESUpdate      {"step", "noise_seed", "sigma", "alpha", "population_size", "coefficients", "center_sha256"}:
                  step `step` (1-based, as in metrics.jsonl) applied theta <- theta + (alpha / N) sum_d c_d E_d
                  with c_d = sum over the members m of direction d of s_m z_m (the standardized fitness z);
                  center_sha256: the center after it, which every rebuilt step must reproduce

Float values are written as JSON numbers, whose text gives back the same float64 bit for bit. Like
metrics.jsonl, the log is appended to line by line (flushed), a kill may cut its last line, and a resume
keeps the records up to its checkpoint (`keep_records`). Reading it loads no torch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TypedDict

from escov.llm import rundir
from escov.llm.rundir import RunDirError

REPLAY = "replay.jsonl"


class PhaseStart(TypedDict):
    start_step: int  # the step the ES phase starts after (0: from the base model)
    center_sha256: str  # its starting center's perturbed parameters (weight_hash)


class ESUpdate(TypedDict):
    step: int  # 1-based: the update of step `step`
    noise_seed: int  # E_d of the step are drawn from it (llm/es/noise.py)
    sigma: float  # the members' noise scale (not needed to apply the update; recorded for reading)
    alpha: float
    population_size: int  # N
    coefficients: list  # c_d, one per direction
    center_sha256: str  # the center after the update (weight_hash)


def append_record(run: Path, record: dict) -> None:
    """Append a PhaseStart or ESUpdate record to replay.jsonl (flushed to disk)."""
    path = Path(run) / REPLAY
    kind = PhaseStart if "start_step" in record else ESUpdate
    where = f"{path}: step {record.get('step', record.get('start_step'))}"
    line = rundir.dumps(rundir.check_record(kind, record, where), where)
    with rundir.writing(path), open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_records(run: Path) -> list[dict]:
    """The records of replay.jsonl, in order: RunDirError naming the file when it is missing, a line is damaged
    (a last line cut off by a kill is dropped) or a record is neither a PhaseStart nor an ESUpdate."""
    path = Path(run) / REPLAY
    if not path.is_file():
        raise RunDirError(f"{path}: missing (runs written before the replay log, or not an ES run, have none)")
    lines = rundir.read_text(path).split("\n")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or number == len(lines):  # the text after the last newline: empty, or cut off by a kill
            continue
        try:
            record = json.loads(line, parse_constant=_no_constant)
        except ValueError:
            raise RunDirError(f"{path}: line {number}: not a JSON record") from None
        kind = PhaseStart if isinstance(record, dict) and "start_step" in record else ESUpdate
        records.append(rundir.check_record(kind, record, f"{path}: line {number}"))
    return records


def _no_constant(name: str):
    raise ValueError(f"holds {name}")


def record_of(step: int, update, sigma: float, center_sha256: str) -> ESUpdate:
    """The ESUpdate record of step `step` (1-based) from the Update ES applied."""
    return {
        "step": step,
        "noise_seed": update.noise_seed,
        "sigma": float(sigma),
        "alpha": update.alpha,
        "population_size": update.population_size,
        "coefficients": list(update.coefficients),
        "center_sha256": center_sha256,
    }


def keep_records(run: Path, step: int) -> None:
    """Rewrite replay.jsonl with the records of steps <= step (what a checkpoint being resumed had seen)."""
    path = Path(run) / REPLAY
    if path.is_file():
        # a phase starting at the resumed step writes its PhaseStart again
        kept = [r for r in read_records(run) if (r["step"] <= step if "step" in r else r["start_step"] < step)]
        tmp = path.with_name(path.name + ".tmp")
        with rundir.writing(path):
            tmp.write_text("".join(rundir.dumps(r, str(path)) + "\n" for r in kept), encoding="utf-8")
            os.replace(tmp, path)
