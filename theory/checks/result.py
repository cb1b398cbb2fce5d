"""One check's outcome as a plain dict (what `python -m escov.theory --json` prints, one per item).

Keys: name ("<topic>/<what>"), predicted, measured, ratio (measured / predicted, or None when
predicted is 0), holds (the verdict), and where useful: stderr (of measured), regime (set only on
items that show where an approximation breaks; they never count as failures), detail (one line),
plus parameters such as sigma, n, fisher_trace, s that the plots read.
"""

from __future__ import annotations

import math

import numpy as np

TOPICS = ("lemma1", "lemma2", "lemma3", "prop1", "dpi", "cross_prompt", "grpo", "metrics")


def _plain(value):
    """Convert numpy scalars to Python ones; non-finite floats become None (valid JSON)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def check_result(
    name: str,
    predicted: float,
    measured: float,
    holds: bool,
    *,
    ratio: float | None = None,
    stderr: float | None = None,
    regime: str | None = None,
    detail: str | None = None,
    **params,
) -> dict:
    """Build one result item; ratio defaults to measured / predicted."""
    if name.split("/", 1)[0] not in TOPICS or "/" not in name:
        raise ValueError(f"name must start with one of {TOPICS} and a slash, got {name!r}")
    if ratio is None and predicted != 0:
        ratio = measured / predicted
    item = {
        "name": name,
        "predicted": _plain(float(predicted)),
        "measured": _plain(float(measured)),
        "ratio": _plain(ratio),
        "holds": bool(holds),
    }
    if stderr is not None:
        item["stderr"] = _plain(float(stderr))
    if regime is not None:
        item["regime"] = regime
    if detail is not None:
        item["detail"] = detail
    item.update({key: _plain(value) for key, value in params.items()})
    return item


def counts(item: dict) -> bool:
    """Whether an item's verdict counts towards the exit code (regime items do not)."""
    return "regime" not in item
