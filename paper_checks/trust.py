"""What a report refuses to count: runs given twice, evaluations that contradict their run, counts that
contradict the Pass@k beside them.

    screen(runs) -> (the runs counted, the exclusions [{"what", "reason"}])

Duplicates (the later one given is left out, the first kept, unless the later holds more of the run: a final
evaluation, then more metrics rows, curve points, probe measurements; a partial copy given first is left out):
    the same directory given twice (the same resolved path);
    the same settings, seed and inputs as another run: config.json's settings hash (llm/fingerprints.py
        settings_sha256; seed included, out and device not) and inputs.json's content hashes (for a run
        from before inputs.json, the input paths in config.json): a copy of a run, or a rerun of it;
    the same final weights (eval.json's fingerprint) as another run whose weights moved (drift > 0 in its
        last metrics row; runs whose updates were all zero all end at the base weights, by construction).
An eval.json is left out (the run keeps its metrics and probe) when
    it has no fingerprint though the run records its inputs (inputs.json: code that writes both made it), so that
        nothing tells it from another run's;
    its fingerprint's (or its base evaluation's, base_fingerprint) settings hash is not one the run ran with
        (config.json or a config_history.jsonl record), or its input hashes are not inputs.json's;
    an evaluation's samples, temperature, ks, completion length or sampling seed are not what the run's
        settings give (any setting the run ran with): base/final at eval_samples and eval_temperature, the
        greedy ones at 1 sample and temperature 0, sampled with seed derive_seed(seed, "eval") mod 2^31
        (held-out: "heldout");
    an evaluation's per-problem counts do not give its Pass@k (theory.metrics.pass_at_k_counts).
A curve.json is left out when a point has no fingerprint though the run records its inputs, when a point's
fingerprint names settings the run never ran with, or (step 0) other weights than the base model's in inputs.json;
when a point's sampling seed (derive_seed(seed, step, "curve") mod 2^31) or
completion length contradicts the run's settings, or its counts do not give its Pass@k; a point whose source is
the run's own evaluation (llm/curve.py: "eval.json base" or "eval.json final") when it is not that evaluation.
Only fields that both sides hold are compared (run directories written by older code lack some).
"""

from __future__ import annotations

import json
import math

import numpy as np

from escov.llm import rundir
from escov.llm.fingerprints import SHORT, settings_sha256
from escov.llm.rundir import PATH_SETTINGS, RunDirError
from escov.paper_checks.rundir import Run
from escov.theory.metrics import pass_at_k_counts

TOLERANCE = 1e-9  # Pass@k recomputed from the counts and the value written beside them: the same float sum


def _eval_seed(seed: int, label: str) -> int:
    from escov.llm.seeds import derive_seed  # the rule llm/train.py samples its evaluations with

    return derive_seed(seed, label) % 2**31


def _curve_seed(seed: int, step: int) -> int:
    from escov.llm.seeds import derive_seed  # the rule llm/curve.py samples its points with

    return derive_seed(seed, step, "curve") % 2**31


def settings_ran_with(run: Run) -> list[dict]:
    """config.json and every settings record of config_history.jsonl (the settings of some part of the run)."""
    try:
        history = [record["config"] for record in rundir.config_history(run.path)]
    except RunDirError:
        history = []
    return [run.config] + history


def recorded_inputs(run: Run) -> dict | None:
    """{input name: sha256} of the run's inputs.json (None when it has none, or a damaged one)."""
    try:
        manifest = rundir.read_manifest(run.path)
    except RunDirError:
        return None
    return None if manifest is None else {name: record.get("sha256") for name, record in manifest["inputs"].items()}


def _inputs_key(run: Run) -> tuple:
    """The run's inputs: inputs.json's content hashes, or (a run without one) config.json's input paths."""
    recorded = recorded_inputs(run)
    if recorded is not None:
        return ("sha256",) + tuple(sorted(recorded.items()))
    return ("paths",) + tuple((name, json.dumps(run.config.get(name), sort_keys=True)) for name in PATH_SETTINGS)


def expected_evaluation(config: dict, part: str) -> dict:
    """What an evaluation of `part` (base, final, base_greedy, final_greedy, heldout.base, heldout.final)
    holds under these settings: the fields the settings fix (those the config has)."""
    greedy, heldout = part.endswith("_greedy"), part.startswith("heldout")
    out = {}
    if "eval_samples" in config:
        out["n"] = 1 if greedy else config["eval_samples"]
    if "eval_temperature" in config:
        out["temperature"] = 0.0 if greedy else config["eval_temperature"]
    if "eval_ks" in config:
        out["ks"] = [1] if greedy else list(config["eval_ks"])
    if "max_completion_length" in config:
        out["max_new_tokens"] = config["max_completion_length"]
    if isinstance(config.get("seed"), int):
        out["seed"] = _eval_seed(config["seed"], "heldout" if heldout else "eval")
    return out


def _evaluations(ev: dict) -> list[tuple[str, dict]]:
    parts = [(p, ev[p]) for p in ("base", "base_greedy", "final", "final_greedy") if isinstance(ev.get(p), dict)]
    return parts + [(f"heldout.{p}", e) for p, e in (ev.get("heldout") or {}).items() if isinstance(e, dict)]


def count_mismatch(evaluation: dict) -> str | None:
    """Where an evaluation's per-problem counts do not give its Pass@k: 'Pass@k written x, counts give y'."""
    rows, n = evaluation.get("per_problem"), evaluation.get("n")
    if not rows or not isinstance(n, int) or any(not isinstance(r.get("correct"), int) for r in rows):
        return None
    counts = np.array([r["correct"] for r in rows])
    if counts.min() < 0 or counts.max() > n:
        return f"per-problem counts outside 0..{n}"
    for k, written in (evaluation.get("pass_at_k") or {}).items():
        if str(k).isdigit() and 1 <= int(k) <= n and isinstance(written, (int, float)):
            given = float(pass_at_k_counts(n, counts, int(k)).mean())
            if not math.isfinite(written) or abs(given - written) > TOLERANCE:
                return f"Pass@{k} written {written:.6g}, its per-problem counts give {given:.6g}"
    return None


UNFINGERPRINTED = "has no fingerprint, though the run records its inputs ({}): nothing tells it from another run's"


def eval_contradiction(run: Run) -> str | None:
    """Why the run's eval.json cannot be its run's (None when nothing contradicts)."""
    ev, configs = run.eval, settings_ran_with(run)
    recorded = recorded_inputs(run)
    fingerprint = ev.get("fingerprint") if isinstance(ev.get("fingerprint"), dict) else None
    if recorded is not None and not (fingerprint or {}).get("settings_sha256"):
        return UNFINGERPRINTED.format(rundir.MANIFEST)
    for kind, record in (("", fingerprint), ("base evaluation ", ev.get("base_fingerprint"))):
        why = _fingerprint_contradiction(run, record if isinstance(record, dict) else None, configs, recorded)
        if why:
            return kind + why
    for part, evaluation in _evaluations(ev):
        expected = [expected_evaluation(c, part) for c in configs]
        if not any(all(evaluation.get(k, v) == v for k, v in e.items()) for e in expected):
            e = expected[0]
            field = next((k for k, v in e.items() if evaluation.get(k, v) != v), "settings")
            return f"{part}: {field} is {evaluation.get(field)!r} but the run's settings give {e.get(field)!r}"
        mismatch = count_mismatch(evaluation)
        if mismatch:
            return f"{part}: {mismatch}"
    return None


def _fingerprint_contradiction(run: Run, fingerprint: dict | None, configs: list[dict], recorded: dict | None):
    """Why an eval.json fingerprint is not the run's: other settings, or other inputs than inputs.json's."""
    if fingerprint and fingerprint.get("settings_sha256"):
        hashes = {settings_sha256(c) for c in configs}
        if fingerprint["settings_sha256"] not in hashes:
            return (
                f"made with other settings (sha256 {fingerprint['settings_sha256'][:SHORT]}) than the run's "
                f"{run.path / rundir.CONFIG} ({settings_sha256(run.config)[:SHORT]})"
            )
    if fingerprint and isinstance(fingerprint.get("inputs"), dict) and recorded is not None:
        for name, digest in fingerprint["inputs"].items():
            if recorded.get(name) != digest:
                return (
                    f"made from another {name} (sha256 {str(digest)[:SHORT]}) than the run's {rundir.MANIFEST} "
                    f"({str(recorded.get(name))[:SHORT]})"
                )
    return None


def _point_contradiction(run: Run, point: dict, hashes: set[str], recorded: dict | None) -> str | None:
    """Why a curve point's fingerprint is not the run's (a run that records its inputs fingerprints every point)."""
    fingerprint = point.get("fingerprint")
    if recorded is None:
        return None
    if not isinstance(fingerprint, dict) or not fingerprint.get("settings_sha256"):
        return f"step {point['step']}: " + UNFINGERPRINTED.format(rundir.MANIFEST) + " (llm curve measures it again)"
    if fingerprint["settings_sha256"] not in hashes:
        return (
            f"step {point['step']}: measured with other settings (sha256 {fingerprint['settings_sha256'][:SHORT]}) "
            f"than the run's {rundir.CONFIG} ({settings_sha256(run.config)[:SHORT]})"
        )
    if point["step"] == 0 and recorded.get("model") and fingerprint.get("weights_sha256") != recorded["model"]:
        return (
            f"step 0: measured other weights (sha256 {str(fingerprint.get('weights_sha256'))[:SHORT]}) than the "
            f"run's base model in {rundir.MANIFEST} ({recorded['model'][:SHORT]})"
        )
    return None


def curve_contradiction(run: Run) -> str | None:
    """Why the run's curve.json cannot be its run's (None when nothing contradicts)."""
    configs = settings_ran_with(run)
    hashes, recorded = {settings_sha256(c) for c in configs}, recorded_inputs(run)
    for point in run.curve or []:
        why = _point_contradiction(run, point, hashes, recorded)
        if why:
            return why
        if "source" in point:
            why = _source_contradiction(run, point)
            if why:
                return why
            continue
        for kind in ("sampled", "greedy"):
            evaluation = point.get(kind) or {}
            expected = [
                {
                    k: v
                    for k, v in (
                        ("seed", _curve_seed(c["seed"], point["step"]) if isinstance(c.get("seed"), int) else None),
                        ("max_new_tokens", c.get("max_completion_length")),
                    )
                    if v is not None
                }
                for c in configs
            ]
            if not any(all(evaluation.get(k, v) == v for k, v in e.items()) for e in expected):
                field = next(k for k, v in expected[0].items() if evaluation.get(k, v) != v)
                return (
                    f"step {point['step']} {kind}: {field} is {evaluation.get(field)!r} but the run's settings "
                    f"give {expected[0][field]!r}"
                )
            mismatch = count_mismatch(evaluation)
            if mismatch:
                return f"step {point['step']} {kind}: {mismatch}"
    return None


def _source_contradiction(run: Run, point: dict) -> str | None:
    """Why a curve point that names the run's own evaluation as its source is not that evaluation."""
    label = {"eval.json base": "base", "eval.json final": "final"}.get(point["source"])
    if label is None:
        return f"step {point['step']}: unknown source {point['source']!r}"
    for kind, part in (("sampled", label), ("greedy", f"{label}_greedy")):
        evaluation = (run.eval or {}).get(part)
        if (
            evaluation is None
            or (point.get(kind) or {}).get("per_problem") != evaluation.get("per_problem")
            or (point.get(kind) or {}).get("seed") != evaluation.get("seed")
        ):
            return f"step {point['step']} {kind}: its source is eval.json {part}, which it is not"
    return None


def _final_weights(run: Run) -> str | None:
    """The final weights' hash, for runs whose weights moved (drift > 0 in the last metrics row)."""
    digest = ((run.eval or {}).get("fingerprint") or {}).get("final_weights_sha256")
    drift = run.metrics[-1].get("drift_rel") if run.metrics else None
    moved = isinstance(drift, (int, float)) and drift > 0
    return digest if digest and moved else None


def completeness(run: Run) -> tuple:
    """How much of a run a directory holds, to choose among copies: a final evaluation, metrics rows, curve points,
    probe measurements."""
    return (
        bool(run.eval and "final" in run.eval),
        len(run.metrics),
        len(run.curve or []),
        len((run.probe or {}).get("measurements") or []),
    )


def _held(run: Run) -> str:
    final, rows, points, probes = completeness(run)
    return (
        f"{'a' if final else 'no'} final evaluation, {rows} metrics rows, {points} curve points, "
        f"{probes} probe measurements"
    )


def screen(runs: list[Run]) -> tuple[list[Run], list[dict]]:
    """The runs a report counts and what it leaves out, each {"what": path, "reason": ...} (see the module
    docstring). A run's contradicting eval.json or curve.json is dropped from it (run.eval / run.curve = None)."""
    excluded, kept = [], []
    seen_path: dict = {}
    seen_settings: dict = {}
    seen_weights: dict = {}
    for run in runs:
        where = run.path.resolve()
        if where in seen_path:
            excluded.append(
                {
                    "what": str(run.path),
                    "reason": f"given twice (the same directory as {seen_path[where].path}); counted once",
                }
            )
            continue
        seen_path[where] = run
        settings = (settings_sha256(run.config), _inputs_key(run))
        if settings in seen_settings:
            first = seen_settings[settings]
            if completeness(run) <= completeness(first):
                excluded.append(
                    {
                        "what": str(run.path),
                        "reason": f"the same settings, seed ({run.seed}) and inputs "
                        f"as {first.path} (a copy or a rerun of it); counted once",
                    }
                )
                continue
            kept.remove(first)  # a partial copy given first: the complete one counts
            seen_weights = {w: r for w, r in seen_weights.items() if r is not first}
            excluded.append(
                {
                    "what": str(first.path),
                    "reason": f"the same settings, seed ({run.seed}) and inputs as "
                    f"{run.path}, which holds more of the run ({_held(run)}, here {_held(first)}); counted "
                    "once, as the more complete",
                }
            )
        if run.eval:
            why = eval_contradiction(run)
            if why:
                excluded.append(
                    {"what": str(run.path / rundir.EVAL), "reason": f"{why}; left out (not this run's evaluation)"}
                )
                run.eval = None
        if run.curve:
            why = curve_contradiction(run)
            if why:
                excluded.append(
                    {"what": str(run.path / rundir.CURVE), "reason": f"{why}; left out (not this run's curve)"}
                )
                run.curve = None
        weights = _final_weights(run)
        if weights is not None and weights in seen_weights:
            excluded.append(
                {
                    "what": str(run.path),
                    "reason": f"the same final weights (sha256 {weights[:SHORT]}) as "
                    f"{seen_weights[weights].path}; counted once",
                }
            )
            continue
        seen_settings[settings] = run
        if weights is not None:
            seen_weights[weights] = run
        kept.append(run)
    return kept, excluded
