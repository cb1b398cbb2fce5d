"""Verdicts on the paper's claims from real training runs (run directories of `python -m escov.llm train`).

Each check takes the Evidence and its claim's record (theory.claims) and returns a Verdict for that claim; it
registers on the claim it decides (`registers(claim_id)(check)`, paper_checks.registry), and REAL_CHECKS holds each
with its claim bound: REAL_CHECKS[claim_id](ev). A verdict is decided by the claim's Test on an interval from one
design:

- per-prompt comparisons (Pass@k final - base, method - method): paper_checks.design.seeds_by_prompts,
  seeds x test prompts shared by every run (resampled jointly, so differences stay paired by prompt)
  x samples per prompt; two methods are paired by seed and by prompt;
- per-run numbers (drift, entropy change, smoothed reward, update shares): Student t over seeds
  (theory.decisions.over_seeds, or welch for two independent groups of runs).

Every verdict carries the design, the test, and a power line: the smallest difference the design
detects at 80% power, beside the paper's effect size. Pass@k values are fractions here; the report
shows points (x100).

    needs.py       what a check reads (variant, measurement) and what a run's settings give (provided)
    decide.py      the registry, a verdict from labelled estimates (decided), the power line, missing data
    passk.py       Pass@k per prompt: over the base, between methods, the schedules, z-scoring, held-out
    at_matched.py  ES against GRPO at matched Pass@1: Pass@16/32, the no-correct share, token entropy
    per_run.py     per-run numbers: entropy collapse, drift ratio, update sparsity, thresholded Pass@1, N sweep
    lemmas.py      Lemma 1 (the grid, or the training runs' probes), Lemma 2, ES's regime
"""

from functools import partial

from escov.paper_checks.real_checks import at_matched, lemmas, passk, per_run  # noqa: F401  (each registers its checks)
from escov.paper_checks.real_checks.at_matched import KS, curves_of
from escov.paper_checks.real_checks.decide import REGISTRY
from escov.paper_checks.real_checks.lemmas import (
    LEMMA1_MAX_S,
    es_regime,
    es_regime_line,
    lemma1_verdict,
    training_populations,
    training_summary,
)
from escov.paper_checks.real_checks.needs import CURVE, HELDOUT, PROBE, SWEEP, describe_need, provided, thresholded
from escov.paper_checks.real_checks.passk import diff_between, diff_vs_base
from escov.paper_checks.real_checks.per_run import (
    SPARSITY_TAU,
    analytic_tiny_share,
    entropy_change,
    final_drift,
    model_size,
    smoothed_reward,
    update_analysis_of,
)

# {claim id: its check with the claim's record bound, called as check(ev)}; a claim left without one stops the import
REAL_CHECKS = {cid: partial(check, claim=REGISTRY.claims[cid]) for cid, check in REGISTRY.complete().items()}

__all__ = [
    "REAL_CHECKS",
    "KS",
    "LEMMA1_MAX_S",
    "SPARSITY_TAU",
    "CURVE",
    "HELDOUT",
    "PROBE",
    "SWEEP",
    "analytic_tiny_share",
    "curves_of",
    "describe_need",
    "diff_between",
    "diff_vs_base",
    "entropy_change",
    "es_regime",
    "es_regime_line",
    "final_drift",
    "lemma1_verdict",
    "model_size",
    "provided",
    "smoothed_reward",
    "thresholded",
    "training_populations",
    "training_summary",
    "update_analysis_of",
]
