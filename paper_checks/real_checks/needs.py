"""What a real-run check reads, as needs (variant, measurement), and what a run gives: a reproduction's budget plans
the needs of its runs (`provided`), and a check lacking data the budget does not plan is "not run in this budget"
(report.real_verdict), otherwise "missing data"."""

from __future__ import annotations

from escov.paper_checks.evidence import variant

HELDOUT, PROBE, CURVE, SWEEP = (
    "held-out evaluations",
    "the Lemma 1 probe",
    "a curve along training",
    "the population sweep",
)


def thresholded(sparsity: float) -> str:
    """The need of a checkpoint with `sparsity` percent of its update entries reverted (llm train's threshold_keep)."""
    return f"a checkpoint thresholded at {sparsity:g}% sparsity"


def provided(config: dict, *, curve: bool = False, sweep: bool = False) -> set[tuple[str, str]]:
    """The needs one run gives the checks, from its full config (TrainConfig.to_dict, as config.json holds it):
    its variant's runs, and the measurements its settings ask for; curve: a curve is evaluated along it; sweep: it
    is a run of the population-size sweep."""
    name = variant(config)
    got = {(name, "")} | {(name, thresholded(100 - keep)) for keep in config.get("threshold_keep") or ()}
    for wanted, need in (
        (config.get("heldout_task"), HELDOUT),
        (config.get("probe"), PROBE),
        (curve, CURVE),
        (sweep, SWEEP),
    ):
        if wanted:
            got.add((name, need))
    return got


def describe_need(need) -> str:
    name, measurement = need
    return f"{name} runs" + (f" with {measurement}" if measurement else "")
