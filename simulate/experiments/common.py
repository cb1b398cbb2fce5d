"""What every experiment shares: the default task and hyperparameters, statistics over seeds, verdicts, plots.

Defaults were picked once, before looking at any claim, so that both methods visibly raise Pass@1
within the default budget on the default task; they are not tuned per experiment:
task 64 prompts x 16 paths, 4 correct paths (1 common, 3 rare holding 10% of the success mass),
2 tempting wrong paths, base Pass@1 about 0.4, feature dimension 64;
GRPO G = 8, Adam lr 0.02, clip 0.2, KL 0.001, mu = 1; ES N = 32 (= 4 G, the paper's FLOP match),
sigma = 0.5 (logit units), alpha = 0.05, greedy member rollouts, z-scored rewards; 100 updates each.
Verdicts: a paired difference over seeds counts as an effect when |mean| > 2 standard errors.
"""
from __future__ import annotations

import math
from dataclasses import asdict, is_dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..bandit import TaskShape  # noqa: E402
from ..es import ESConfig  # noqa: E402
from ..grpo import GRPOConfig  # noqa: E402

SHAPE = TaskShape()
GRPO = GRPOConfig()
ES = ESConfig()
STEPS = 100
SEEDS = 8
Z_EFFECT = 2.0

REPRODUCED, NOT_REPRODUCED, DEPENDS, FINDING = ("reproduced", "not reproduced", "depends on task shape", "finding")


def scaled(steps: int, scale: float) -> int:
    """Steps at a reduced size (scale < 1 for quick looks and smoke tests), at least 2."""
    if not (isinstance(scale, (int, float)) and 0 < scale <= 10):
        raise ValueError(f"scale must be a number in (0, 10], got {scale!r}")
    return max(2, int(round(steps * scale)))


def stats(values) -> dict:
    """Mean, standard deviation and standard error over seeds (NaNs dropped), as plain floats."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    n = v.size
    if n == 0:
        return {"mean": None, "std": None, "se": None, "n": 0}
    std = float(v.std(ddof=1)) if n > 1 else 0.0
    return {"mean": float(v.mean()), "std": std, "se": std / math.sqrt(n), "n": int(n)}


def effect(values, expected_sign: int = 1) -> str:
    """'yes' if the mean has the expected sign beyond Z_EFFECT standard errors, 'opposite' if the
    other sign beyond it, 'none' otherwise."""
    s = stats(values)
    if s["n"] == 0:
        return "none"
    m, se = s["mean"] * expected_sign, s["se"]
    if m > Z_EFFECT * se and m != 0:
        return "yes"
    if m < -Z_EFFECT * se:
        return "opposite"
    return "none"


def fmt(values, digits: int = 3) -> str:
    s = stats(values)
    return "n/a" if s["n"] == 0 else f"{s['mean']:.{digits}f} +- {s['std']:.{digits}f}"


def claim(text: str, paper: str, analogue: dict, verdict: str, why: str) -> dict:
    if verdict not in (REPRODUCED, NOT_REPRODUCED, DEPENDS, FINDING):
        raise ValueError(f"verdict must be one of the four verdicts, got {verdict!r}")
    return {"claim": text, "paper": paper, "analogue": analogue, "verdict": verdict, "why": why}


def value_at_level(x: np.ndarray, y: np.ndarray, level: float) -> float:
    """y where the trajectory x first reaches `level` (linear interpolation between steps); NaN if never."""
    above = np.nonzero(x >= level)[0]
    if above.size == 0:
        return float("nan")
    i = above[0]
    if i == 0:
        return float(y[0])
    t = (level - x[i - 1]) / (x[i] - x[i - 1])
    return float(y[i - 1] + t * (y[i] - y[i - 1]))


def matched(run_a, run_b, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per seed: the common Pass@1 level (the lower final Pass@1 of two runs) and `metric` of each run
    where its trajectory first reaches that level."""
    level = np.minimum(run_a.final("pass@1"), run_b.final("pass@1"))
    a, b = ([value_at_level(r.policy["pass@1"][:, s], r.policy[metric][:, s], level[s]) for s in range(len(level))]
            for r in (run_a, run_b))
    return level, np.array(a), np.array(b)


def band(ax, x, values, label: str, color=None):
    """Mean over seeds (axis 1) with a +- 1 std band."""
    m, s = values.mean(1), values.std(1)
    line, = ax.plot(x, m, label=label, color=color)
    ax.fill_between(x, m - s, m + s, alpha=0.2, color=line.get_color())


def save(fig, out: Path | None, name: str) -> str | None:
    """Write fig to out/name.png (if out is given); return the file name."""
    if out is None:
        plt.close(fig)
        return None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=110)
    plt.close(fig)
    return f"{name}.png"


def settings(**objs) -> dict:
    """JSON-able record of the configs used."""
    return {k: (asdict(v) if is_dataclass(v) else v) for k, v in objs.items()}

