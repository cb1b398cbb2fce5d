"""JSON records without NaN or infinity: report.json, control.json and the other records hold null there instead,
with the paths of the replaced values listed beside them."""

from __future__ import annotations

import math

import numpy as np


def without_non_finite(data, path: str = "", found: list[str] | None = None):
    """(data with every NaN / infinity replaced by None, the paths of the replaced values); numpy
    scalars become Python numbers. report.json holds null there and lists the paths in "non_finite"."""
    found = [] if found is None else found
    if isinstance(data, np.generic):
        data = data.item()
    if isinstance(data, float) and not math.isfinite(data):
        found.append(path or "(top level)")
        return None, found
    if isinstance(data, dict):
        return {k: without_non_finite(v, f"{path}.{k}" if path else str(k), found)[0] for k, v in data.items()}, found
    if isinstance(data, (list, tuple, np.ndarray)):
        return [without_non_finite(v, f"{path}[{i}]", found)[0] for i, v in enumerate(data)], found
    return data, found
