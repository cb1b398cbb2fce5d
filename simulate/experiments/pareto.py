"""Experiment 3: the Pass@1-Pass@32 Pareto front of GRPO, ES, GRPO->ES and ES->GRPO.

Every method spends the budget of STEPS GRPO updates, under each of the three budget definitions
(equal sampled responses, equal updates, the paper's FLOP match with N = 4 G); the sequential
schedules switch methods after 25%, 50% or 75% of the budget.
The paper's pattern (Table 2, easy setting, all three models): GRPO has the highest Pass@1 of the
main, ES the highest Pass@32, and the schedules lie between.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from escov.theory.decisions import FAILS, FINDING, HOLDS
from escov.theory.paper import TABLE2_EASY

from ..bandit import make_task
from ..schedules import BUDGETS, grpo_budget, schedule
from ..train import train
from .common import ES, GRPO, SHAPE, STEPS, finding, save, scaled, settings, stats

NAME = "pareto"
TITLE = "Pass@1 vs Pass@32 endpoints of GRPO, ES and sequential schedules, under three budget definitions"
SEEDS = 6
SWITCHES = (0.25, 0.5, 0.75)


def methods() -> dict[str, tuple]:
    """label -> (first config, second config or None, switch fraction)."""
    out = {"GRPO": (GRPO, None, 1.0), "ES": (ES, None, 1.0)}
    for s in SWITCHES:
        out[f"GRPO->ES@{s:g}"] = (GRPO, ES, s)
        out[f"ES->GRPO@{s:g}"] = (ES, GRPO, s)
    return out


def paper_pattern(model: str = "Qwen2.5-1.5B") -> str:
    """The paper's Table 2 pattern for one model (theory.paper): Pass@1 of GRPO and ES, Pass@32 of ES and
    GRPO, and the schedules' ranges."""
    t = TABLE2_EASY[model]
    schedules = [t[m] for m in ("ES->GRPO", "GRPO->ES")]
    span = [f"{min(v[i] for v in schedules):.1f}-{max(v[i] for v in schedules):.1f}" for i in (0, 2)]
    return (
        f"Table 2 (easy, six-task average): e.g. {model} Pass@1 GRPO {t['GRPO'][0]:.1f} > ES {t['ES'][0]:.1f}, "
        "Pass@32 ES "
        f"{t['ES'][2]:.1f} > GRPO {t['GRPO'][2]:.1f}; schedules {span[0]} / {span[1]}"
    )


def pareto_front(points: dict[str, tuple[float, float]]) -> list[str]:
    """Labels whose (x, y) no other point matches or beats on both coordinates with one strictly better."""
    return [
        a
        for a, (xa, ya) in points.items()
        if not any((xb >= xa and yb >= ya) and (xb > xa or yb > ya) for b, (xb, yb) in points.items() if b != a)
    ]


def run(seeds: int = SEEDS, out: Path | None = None, scale: float = 1.0, progress: bool = True) -> dict:
    steps = scaled(STEPS, scale)
    task = make_task(SHAPE, seeds)
    n_batch = task.n_prompts
    results: dict[str, dict[str, dict]] = {}
    jobs = [(b, label, m) for b in BUDGETS for label, m in methods().items()]
    base, cache = None, {}
    for budget, label, (first, second, switch) in tqdm(jobs, desc=NAME, disable=not progress):
        total = grpo_budget(GRPO, steps, n_batch, budget)
        phases = schedule(first, second, total, n_batch, budget, switch)
        key = tuple(phases)  # "updates" and "flops" coincide when N = 4 G: run each schedule once
        if key not in cache:
            cache[key] = train(task, phases, progress=False, population=False)
        r = cache[key]
        base = r.policy["pass@1"][0], r.policy["pass@32"][0]
        results.setdefault(budget, {})[label] = {
            "pass@1": r.final("pass@1"),
            "pass@32": r.final("pass@32"),
            "updates": [int(s) for _, s in phases],
        }

    claims, summary = [], {}
    for budget in BUDGETS:
        res = results[budget]
        means = {k: (float(v["pass@1"].mean()), float(v["pass@32"].mean())) for k, v in res.items()}
        summary[budget] = {
            k: {"pass@1": stats(v["pass@1"]), "pass@32": stats(v["pass@32"]), "updates_per_phase": v["updates"]}
            for k, v in res.items()
        }
        summary[budget]["pareto_front"] = pareto_front(means)
        main = {k: means[k] for k in ("GRPO", "ES", "GRPO->ES@0.5", "ES->GRPO@0.5")}
        best1 = max(main, key=lambda k: main[k][0])
        best32 = max(main, key=lambda k: main[k][1])
        between = all(
            min(main["GRPO"][0], main["ES"][0]) <= main[k][0] <= max(main["GRPO"][0], main["ES"][0])
            for k in ("GRPO->ES@0.5", "ES->GRPO@0.5")
        )
        ok = best1 == "GRPO" and best32 == "ES"
        claims.append(
            finding(
                f"pareto_{budget}",
                f"[{budget} budget] GRPO has the highest Pass@1, ES the highest Pass@32, schedules lie between",
                paper_pattern(),
                {
                    "highest_pass@1": best1,
                    "highest_pass@32": best32,
                    "schedules_between_on_pass@1": between,
                    "pareto_front": summary[budget]["pareto_front"],
                },
                HOLDS if ok and between else FAILS,
                f"highest Pass@1: {best1} ({main[best1][0]:.3f}); highest Pass@32: {best32} ({main[best32][1]:.3f}); "
                f"GRPO {main['GRPO'][0]:.3f}/{main['GRPO'][1]:.3f}, ES {main['ES'][0]:.3f}/{main['ES'][1]:.3f}, "
                f"base {base[0].mean():.3f}/{base[1].mean():.3f}; front: {', '.join(summary[budget]['pareto_front'])}",
            )
        )
    claims.append(
        finding(
            "budget_definition",
            "Which definition of a fair budget decides the comparison",
            "the paper matches FLOPs (N = 4 G), which equals matching update counts",
            {b: summary[b]["pareto_front"] for b in BUDGETS},
            FINDING,
            "; ".join(
                f"{b}: ES makes {summary[b]['ES']['updates_per_phase'][0]} updates against GRPO's "
                f"{summary[b]['GRPO']['updates_per_phase'][0]}"
                for b in BUDGETS
            ),
        )
    )

    fig, axes = plt.subplots(1, len(BUDGETS), figsize=(15, 4.6), sharey=True)
    for ax, budget in zip(axes, BUDGETS):
        for label, v in results[budget].items():
            marker = "o" if "->" not in label else ("^" if label.startswith("GRPO->") else "v")
            ax.errorbar(
                v["pass@1"].mean(),
                v["pass@32"].mean(),
                xerr=v["pass@1"].std() / np.sqrt(seeds),
                yerr=v["pass@32"].std() / np.sqrt(seeds),
                marker=marker,
                capsize=2,
                label=label,
            )
        ax.scatter([base[0].mean()], [base[1].mean()], color="k", marker="s", label="base", zorder=3)
        ax.set(xlabel="Pass@1", title=f"budget: equal {budget}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Pass@32")
    axes[-1].legend(fontsize=7, loc="best")
    plot = save(fig, out, NAME)
    return {
        "name": NAME,
        "title": TITLE,
        "claims": claims,
        "budgets": summary,
        "plot": plot,
        "settings": settings(shape=SHAPE, grpo=GRPO, es=ES, grpo_steps=steps, seeds=seeds, switches=SWITCHES),
    }
