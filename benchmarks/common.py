"""What the benchmarks share: a random-init model of a given shape, and the peak memory of this process.

Benchmarks import it as `from common import ...` (a script's own folder is on sys.path).
"""

from __future__ import annotations

import resource
from pathlib import Path


def peak_mb() -> float:
    """Peak resident set size of this process so far, in MB (ru_maxrss; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def random_model(
    out: Path,
    *,
    preset: str = "default",
    hidden_size: int | None = None,
    num_layers: int | None = None,
    intermediate_size: int | None = None,
) -> Path:
    """An untrained model of a tinymodel preset's shape (or the given sizes), saved to out: speed does not
    depend on training. llm.tinymodel.save_untrained_llama with unscaled initial weights (head size 32)."""
    from escov.llm.tinymodel import PRESETS, save_untrained_llama

    shape = PRESETS[preset]
    return save_untrained_llama(
        out,
        hidden_size or shape.hidden_size,
        num_layers or shape.num_layers,
        intermediate_size or shape.intermediate_size,
        weight_scale=1.0,
    )
