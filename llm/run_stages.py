"""The stages of a run around its steps: the base evaluation before training (llm/shared_measurements.py
lets runs share it), the validation every eval_steps steps (TRL's periodic evaluation, in metrics.jsonl), and
the final stage after the last step (the probe, the final and held-out evaluations, the update analysis, the
magnitude-thresholded checkpoints and the plots), written to eval.json."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from escov.llm import drift, rundir
from escov.llm.interrupts import stop_if_requested
from escov.llm.problem_sets import heldout_set
from escov.llm.stop_points import stop_point

if TYPE_CHECKING:
    from escov.llm.train import TrainingRun

FINAL_SOURCES = ("eval/final", "eval/final_greedy", "eval/heldout_final")  # kept completions of the final stage


def base_evaluation(run: TrainingRun) -> dict:
    """The before-training evaluations by label (the engine holds the base weights), each with its kept
    completions (those with a finite reward: the ones completions.jsonl takes)."""
    cfg = run.cfg
    keep = cfg.completions_kept
    measured = {
        "base": run.evaluate(run.test, cfg.eval_samples, cfg.eval_ks, "eval", keep=keep),
        "base_greedy": run.evaluate(run.test, 1, (1,), "eval", temperature=0.0, keep=keep),
    }
    if (heldout := heldout_set(cfg)) is not None:
        measured["heldout_base"] = run.evaluate(heldout, cfg.eval_samples, cfg.eval_ks, "heldout", keep=keep)
    for result in measured.values():
        result["kept"] = [k for k in result.get("kept", []) if math.isfinite(k["reward"])]
    return measured


def warn_base_evaluation(result: dict) -> None:
    """What the base evaluation shows to be wrong with the rewards (a reward that never applies, a total that
    passes alone; llm/evaluate.py evaluation_warnings), on stderr."""
    from escov.llm.evaluate import evaluation_warnings

    for warning in evaluation_warnings(result):
        print(f"warning: base evaluation: {warning}", file=sys.stderr, flush=True)


VALIDATION_KEYS = (
    "num_problems",
    "n",
    "temperature",
    "correct",
    "pass_at_k",
    "maj_at_k",
    "reward_mean",
    "rewards",
    "mean_token_entropy",
    "truncated_fraction",
    "solved_fraction",
)


def validation(run: TrainingRun, step: int) -> dict:
    """What a metrics.jsonl row keeps of the eval_steps evaluation after `step` (the test problems at
    eval_temperature, the same samples' seeds as the base and final evaluations): its rates and reward means,
    not its per-problem rows."""
    cfg = run.cfg
    result = run.measure("validation", step, run.test, cfg.eval_samples, cfg.eval_ks, "eval")
    return {k: result[k] for k in VALIDATION_KEYS if k in result}


def final_stage(run: TrainingRun) -> None:
    """After the last step (the engine holds the final weights): the probe, final and held-out
    evaluation, update analysis, plots."""
    cfg, last = run.cfg, run.total_steps
    if cfg.probe and not any(
        m["step"] == last for m in (rundir.read_probe(run.dir) or {"measurements": []})["measurements"]
    ):
        run.record_probe(last)
    stop_point("final-population")
    stop_if_requested("after the final population measurement, before the final evaluation")
    rundir.keep_completions(run.dir, last, drop_sources=FINAL_SOURCES)  # a resumed final stage measures them again
    ev = rundir.read_eval(run.dir) or {}
    during = "during the final evaluation (eval.json keeps no final one: a resume measures it again)"
    ev["final"] = run.measure("final", last, run.test, cfg.eval_samples, cfg.eval_ks, "eval")
    stop_if_requested(during)
    ev["final_greedy"] = run.measure("final_greedy", last, run.test, 1, (1,), "eval", temperature=0.0)
    stop_point("final-eval")
    stop_if_requested(during)
    if (heldout := heldout_set(cfg)) is not None:
        ev.setdefault("heldout", {})["final"] = run.measure(
            "heldout_final", last, heldout, cfg.eval_samples, cfg.eval_ks, "heldout"
        )
    final = run.cpu_weights()
    base = {n: run.base[n] for n in run.all_names}
    ev["update_analysis"] = drift.update_analysis(final, base, alpha=cfg.es.alpha)
    ev["thresholded"] = []
    for q in cfg.threshold_keep:
        run.set_weights(drift.thresholded(final, base, q))
        res = run.evaluate(run.test, min(cfg.eval_samples, 8), (1,), "eval", step=last)
        ev["thresholded"].append({"keep_percent": q, "sparsity_percent": 100 - q, "pass_at_1": res["pass_at_k"]["1"]})
    run.set_weights(final)
    stop_if_requested(during)
    if "fingerprint" in ev:  # an eval.json of older code: its base evaluation's fingerprint kept as the witness
        ev.setdefault("base_fingerprint", {k: v for k, v in ev["fingerprint"].items() if k != "final_weights_sha256"})
    ev["fingerprint"] = run.fingerprint(final)
    rundir.write_eval(run.dir, ev)
    drift.plot_histogram(ev["update_analysis"], run.dir / "drift_hist.png", f"{cfg.algo}: update magnitudes")
    plot_curves(run.dir)


def plot_curves(run_dir: Path) -> None:
    """reward, sampled Pass@1, entropy and drift against step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from escov.llm.plot_axes import step_axis

    rows = rundir.read_steps(run_dir)
    fig, axes = plt.subplots(1, 4, figsize=(12, 3))
    for ax, key in zip(axes, ("reward_mean", "pass_at_1", "entropy", "drift_rel")):
        ax.plot([r["step"] for r in rows], [r[key] for r in rows], "o-" if len(rows) < 30 else "-", ms=3)
        ax.set_title(key)
        ax.set_xlabel("step")
        step_axis(ax)
    fig.tight_layout()
    fig.savefig(run_dir / "curves.png", dpi=110)
    plt.close(fig)
