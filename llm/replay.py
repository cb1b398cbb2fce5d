"""`python -m escov.llm replay RUN --step S --out DIR`: the weights of an ES run at step S rebuilt from its base
model and its replay log (replay.jsonl, llm/replay_log.py), bit for bit.

    theta_start   the ES phase's starting weights: the base model (a phase from step 0), or the run's checkpoint
                  at the phase's start (an ES phase after GRPO); their perturbed parameters' SHA-256 must equal
                  the log's PhaseStart record (else: the base differs from the one the run trained)
    theta_t       theta_{t-1} + (alpha / N) sum_d c_d E_d for t = start + 1 .. S, with the run's own arithmetic
                  (llm/es/center.py MasterCenter.apply, its noise settings, device and threads); after each
                  step the center's SHA-256 must equal the log's record of that step
    DIR           a checkpoint's layout (llm/rundir.py save_checkpoint: model.safetensors in fp32, the base's
                  config and tokenizer files, trainer_state.json); its weights' SHA-256 is compared with the
                  run's checkpoints/step-S when that exists, and with eval.json's final weights at the last step

So a run that keeps only replay.jsonl (and its base) keeps every ES checkpoint. Any failure is one line naming
the file and the step. The paper's in-place bf16 arithmetic (es.inplace_bf16) is not rebuilt.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from escov.llm import replay_log, rundir
from escov.llm.rundir import RunDirError


def _phase_records(records: list[dict], step: int, where: Path) -> tuple[dict, list[dict]]:
    """(the PhaseStart of the ES phase holding step `step`, its ESUpdate records of steps start + 1 .. step)."""
    last = max((r["step"] for r in records if "step" in r), default=0)
    starts = [i for i, r in enumerate(records) if "start_step" in r and r["start_step"] <= step]
    if not starts:
        raise RunDirError(f"{where}: no ES phase starts at or before step {step}")
    first = starts[-1]
    begin = records[first]["start_step"]
    updates = [r for r in records[first + 1 :] if "step" in r and r["step"] <= step]
    if step > last:
        raise RunDirError(f"{where}: the log ends at step {last} (cut off, or the run has not reached step {step})")
    if [r["step"] for r in updates] != list(range(begin + 1, step + 1)):
        got = [r["step"] for r in updates]
        raise RunDirError(
            f"{where}: step {step} lies outside the ES phase starting at step {begin}, or the log lacks "
            f"some of its updates (steps {begin + 1}-{step} expected, {len(got)} found)"
        )
    return records[first], updates


def update_from(record: dict):
    """The llm.es.plan.Update an ESUpdate record of replay.jsonl holds (0-based step, as ES numbers its
    iterations)."""
    from escov.llm.es.plan import Update

    return Update(
        record["step"] - 1,
        record["noise_seed"],
        tuple(float(c) for c in record["coefficients"]),
        float(record["alpha"]),
        record["population_size"],
    )


def rebuild(run: Path, step: int, model: Path | None = None) -> tuple[dict, Path]:
    """(every weight of the run at ES step `step` as fp32 CPU tensors, the base model folder), each step's
    center checked against the log. model: where the base model is now (default: the run's config)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from escov.llm.config import load_config
    from escov.llm.drift import SavedWeights
    from escov.llm.es.algorithm import select_parameters
    from escov.llm.es.center import MasterCenter
    from escov.llm.es.factory import population_noise
    from escov.llm.es.members import weight_hash

    run = Path(run)
    cfg = load_config(run)
    if cfg.es.inplace_bf16:
        raise ValueError(f"{run}: es.inplace_bf16 runs keep no fp32 center; replay rebuilds fp32-master ES only")
    if cfg.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"{run}: the run trained on {cfg.device} (its noise is drawn there); this machine has no CUDA")
    where = run / replay_log.REPLAY
    start, updates = _phase_records(replay_log.read_records(run), step, where)
    base = Path(model) if model is not None else Path(cfg.model)
    if not base.is_dir():
        raise ValueError(f"base model {base} is not a folder (give --model where the run's base model is now)")
    torch.set_num_threads(cfg.threads)
    with torch.device("meta"):  # names and shapes without reading any weight
        skeleton = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(base))
    shapes = {n: p.shape for n, p in skeleton.named_parameters()}
    es_names = select_parameters(skeleton.named_parameters(), cfg.es.param_pattern)
    if start["start_step"] == 0:
        saved = SavedWeights(base)
        weights = {n: saved[n] for n in shapes}
    else:
        weights = rundir.load_checkpoint(rundir.checkpoint_dir(run, start["start_step"]), shapes, False)[0]
    device = torch.device(cfg.device)
    center = MasterCenter(
        {n: weights[n].to(device, torch.float32, copy=True) for n in es_names},
        population_noise(cfg.es, cfg.population, device),
        None,
    )
    if weight_hash(center.master) != start["center_sha256"]:
        origin = base if start["start_step"] == 0 else rundir.checkpoint_dir(run, start["start_step"])
        raise ValueError(
            f"{origin}: its weights differ from those the run started ES from at step "
            f"{start['start_step']} (SHA-256 of the perturbed parameters, {where})"
        )
    for record in updates:
        center.apply(update_from(record))
        if weight_hash(center.master) != record["center_sha256"]:
            raise ValueError(
                f"{where}: step {record['step']}: the rebuilt center's SHA-256 differs from the log's "
                "(other code, torch build or threads than the run's?)"
            )
    return weights | {n: t.cpu() for n, t in center.master.items()}, base


def write_model(out: Path, base: Path, step: int, weights: dict, state: dict) -> Path:
    """DIR in a checkpoint's layout (rundir.save_checkpoint, written beside DIR and renamed into place)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {out}: exists and is not an empty folder")
    scratch = out.parent / f".tmp-replay-{out.name}-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        written = rundir.save_checkpoint(scratch, base, step, weights, state, None)
        if out.exists():
            out.rmdir()
        os.replace(written, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def compare(run: Path, step: int, sha: str, shapes: dict) -> list[str]:
    """What the rebuilt weights (tensors_sha256 `sha`) were compared with: the run's checkpoint of the step and, at
    the run's last step, eval.json's final weights; ValueError naming the file on a difference."""
    from escov.llm.fingerprints import tensors_sha256

    checked = []
    path = rundir.checkpoint_dir(run, step)
    if (path / rundir.TRAINER_STATE).exists():
        if tensors_sha256(rundir.load_checkpoint(path, shapes, False)[0]) != sha:
            raise ValueError(f"{path / rundir.WEIGHTS}: differs from the weights rebuilt from {replay_log.REPLAY}")
        checked.append(str(path / rundir.WEIGHTS))
    final = ((rundir.read_eval(run) or {}).get("fingerprint") or {}).get("final_weights_sha256")
    if final and step == max((r["step"] for r in rundir.read_steps(run)), default=-1):
        if final != sha:
            raise ValueError(
                f"{run / rundir.EVAL}: final_weights_sha256 differs from the rebuilt weights of step {step}"
            )
        checked.append(f"{run / rundir.EVAL} final_weights_sha256")
    return checked


def add_arguments(parser) -> None:
    parser.add_argument("run_dir", type=Path, help="an ES run directory of `python -m escov.llm train`")
    parser.add_argument("--step", type=int, required=True, help="the ES step whose weights are rebuilt")
    parser.add_argument("--out", type=Path, required=True, help="the folder written (a checkpoint's layout)")
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help="where the run's base model is now (default: the path its config.json records)",
    )


def run_command(args) -> int:
    from escov.llm.fingerprints import tensors_sha256

    if args.step < 0:
        raise ValueError(f"--step must be >= 0, got {args.step}")
    weights, base = rebuild(args.run_dir, args.step, args.model)
    sha = tensors_sha256(weights)
    checked = compare(args.run_dir, args.step, sha, {n: t.shape for n, t in weights.items()})
    manifest = rundir.read_manifest(args.run_dir) or {}
    state = {"elapsed": 0.0} | ({"settings_sha256": manifest["settings_sha256"]} if manifest else {})
    write_model(args.out, base, args.step, weights, state)
    print(
        f"step {args.step} rebuilt from {base} and {replay_log.REPLAY}: weights sha256 {sha[:16]}, written to "
        f"{args.out}; equal to {', '.join(checked) if checked else 'no stored copy (none kept)'}"
    )
    return 0
