"""What every experiment shares: the default task and hyperparameters, statistics over seeds, verdicts, plots.

Defaults were picked once, before looking at any claim, so that both methods visibly raise Pass@1
within the default budget on the default task; they are not tuned per experiment:
task 64 prompts x 16 paths, 4 correct paths (1 common, 3 rare holding 10% of the success mass),
2 tempting wrong paths, base Pass@1 about 0.4, feature dimension 64;
GRPO G = 8, Adam lr 0.02, clip 0.2, KL 0.001, mu = 1; ES N = 32 (= 4 G, the paper's FLOP match),
sigma = 0.5 (logit units), alpha = 0.05, greedy member rollouts, z-scored rewards; 100 updates each.
Verdicts use the rules and words every level shares (theory.decisions) on Student t intervals over
seeds: a directional claim holds when the 95% interval of its paired difference lies on the claimed
side, does not hold when it lies on the other side, is inconclusive otherwise; an equivalence claim
("keeps Pass@1") holds only when the whole interval lies inside the margin; statements true for every
input are labelled identities, never evidence. A paper's claim is reported through its record
(theory.claims): its entry carries the record's statement, paper and test, and is decided by that
test; an entry that is no paper's claim is a `finding` of the analogue, with its own words.
"""

from __future__ import annotations

import math
from dataclasses import asdict, is_dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from escov.theory.claims import Claim, Test  # noqa: E402
from escov.theory.decisions import DECISIONS, FINDING, over_seeds  # noqa: E402
from escov.theory.matched import compared_levels, differences_at, read_at  # noqa: E402

from ..bandit import TaskShape  # noqa: E402
from ..es import ESConfig  # noqa: E402
from ..grpo import GRPOConfig  # noqa: E402

SHAPE = TaskShape()
GRPO = GRPOConfig()
ES = ESConfig()
STEPS = 100
SEEDS = 8

VERDICTS = (*DECISIONS, FINDING)
DIFFERENCE = Test("directional")  # a finding's side comparison: the difference > 0


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


def interval(values) -> dict:
    """Mean over seeds with its Student t 95% interval (theory.decisions.over_seeds)."""
    v = np.asarray(values, dtype=float).ravel()
    return (
        over_seeds(v[np.isfinite(v)])
        if np.isfinite(v).any()
        else {"mean": float("nan"), "lo": -math.inf, "hi": math.inf, "seeds": 0}
    )


def decided(test: Test, values) -> tuple[str, str]:
    """(verdict, text) of `test` (a claim's, theory.claims) on the t interval over seeds of `values`."""
    iv = interval(values)
    verdict = test.decide(iv["lo"], iv["hi"])
    margin = f", margin +-{test.margin:g}" if test.kind == "equivalence" else ""
    return verdict, f"{iv['mean']:+.4f} [{iv['lo']:+.4f}, {iv['hi']:+.4f}] over {iv['seeds']} seeds{margin}: {verdict}"


def fmt(values, digits: int = 3) -> str:
    s = stats(values)
    return "n/a" if s["n"] == 0 else f"{s['mean']:.{digits}f} +- {s['std']:.{digits}f}"


def claim(record: Claim, analogue: dict, verdict: str, why: str) -> dict:
    """The entry of a paper's claim in an experiment's summary: its id, statement, paper and test are the
    record's own (theory.claims; the test is written as its description), the verdict a decision."""
    if verdict not in DECISIONS:
        raise ValueError(f"claim {record.id}: verdict must be one of {DECISIONS}, got {verdict!r}")
    return {
        "id": record.id,
        "claim": record.statement,
        "paper": record.paper,
        "analogue": analogue,
        "verdict": verdict,
        "why": why,
        "test": record.simulate_test,
    }


def finding(id: str, text: str, paper: str, analogue: dict, verdict: str, why: str, test: str = "") -> dict:
    """An entry that is no paper's claim (a measurement of the analogue, or a claim's variant); `test` the rule used."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    return {"id": id, "claim": text, "paper": paper, "analogue": analogue, "verdict": verdict, "why": why, "test": test}


def matched(run_a, run_b, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per seed: the common Pass@1 level (the lower final Pass@1 of two runs) and `metric` of each run
    read where its trajectory first reaches that level (theory.matched.read_at; NaN if never)."""
    level = np.minimum(run_a.final("pass@1"), run_b.final("pass@1"))

    def read(r, s):
        v = read_at(r.policy["pass@1"][:, s], r.policy[metric][:, s], level[s])
        return float("nan") if v is None else float(v)

    a, b = (np.array([read(r, s) for s in range(len(level))]) for r in (run_a, run_b))
    return level, a, b


def matched_along(run_a, run_b, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per seed: the Pass@1 range both trajectories pass through and the mean over its interior levels
    (those both trajectories support) of metric_a - metric_b, each read at its first crossing: the
    reading of theory.matched, the same as paper_checks/matched.py's. (lo, hi, difference); NaN
    difference for a seed with no supported level."""
    pa, pb = run_a.policy["pass@1"], run_b.policy["pass@1"]
    lo, hi = np.empty(pa.shape[1]), np.empty(pa.shape[1])
    diff = np.full(pa.shape[1], np.nan)
    for s in range(pa.shape[1]):
        lo[s], hi[s], levels, kept = compared_levels([pa[:, s], pb[:, s]])
        if kept.any():
            diff[s] = differences_at(
                levels[kept], pa[:, s], run_a.policy[metric][:, s], pb[:, s], run_b.policy[metric][:, s]
            ).mean()
    return lo, hi, diff


def band(ax, x, values, label: str, color=None):
    """Mean over seeds (axis 1) with a +- 1 std band."""
    m, s = values.mean(1), values.std(1)
    (line,) = ax.plot(x, m, label=label, color=color)
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
