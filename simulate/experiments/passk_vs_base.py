"""Experiment 2: how often does GRPO end below the base on Pass@16 and Pass@32, and does ES improve
Pass@1, 16 and 32 over the base? Over several task shapes, each with its own task instance per seed,
and equal FLOPs (N = 4 G).

The claims' records (theory.claims: grpo_passk_below_base, es_improves_over_base) hold the paper's
statements and numbers. In each shape a claim is decided over seeds by its record's test (t interval
of the change against the base); the claim holds (or not) when every shape agrees, and is inconclusive
when the shapes disagree (it depends on task shape).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from escov.theory.claims import BY_ID
from escov.theory.decisions import INCONCLUSIVE, combine

from ..bandit import make_task
from ..train import train
from .common import ES, GRPO, SHAPE, STEPS, claim, decided, save, scaled, settings, stats

NAME = "passk_vs_base"
TITLE = "Pass@1/16/32 of GRPO and ES against the base, over task shapes and seeds"
SEEDS = 10

SHAPES = {
    "default (1 common + 3 rare correct)": SHAPE,
    "one correct path": replace(SHAPE, n_correct=1, rare_share=0.0),
    "many rare correct paths": replace(SHAPE, n_correct=8, rare_share=0.5),
    "hard prompts (base Pass@1 0.15)": replace(SHAPE, base_pass1=0.15),
    "independent logits": replace(SHAPE, feature_dim=None),
    "small model (d = 16)": replace(SHAPE, feature_dim=16),
}


def _verdict(per_shape: dict[str, str]) -> str:
    """The same verdict in every shape -> that verdict; different ones -> inconclusive (it depends on task shape)."""
    verdicts = set(per_shape.values())
    return verdicts.pop() if len(verdicts) == 1 else INCONCLUSIVE


def _depends(per_shape: dict[str, str]) -> str:
    return "depends on task shape; " if len(set(per_shape.values())) > 1 else ""


def run(seeds: int = SEEDS, out: Path | None = None, scale: float = 1.0, progress: bool = True) -> dict:
    steps = scaled(STEPS, scale)
    rows = {}
    for label, shape in tqdm(SHAPES.items(), desc=NAME, disable=not progress):
        task = make_task(shape, seeds)
        grpo = train(task, [(GRPO, steps)], progress=False)
        es = train(task, [(ES, steps)], progress=False)
        base = {k: grpo.policy[f"pass@{k}"][0] for k in (1, 16, 32)}
        d = {m: {k: r.final(f"pass@{k}") - base[k] for k in (1, 16, 32)} for m, r in (("grpo", grpo), ("es", es))}
        grpo_below = (d["grpo"][16] < 0) & (d["grpo"][32] < 0)
        es_up = (d["es"][1] > 0) & (d["es"][16] > 0) & (d["es"][32] > 0)
        es_keeps = (d["es"][1] > 0) & (d["es"][16] >= -1e-3) & (d["es"][32] >= -1e-3)
        rows[label] = {"d": d, "grpo_below": grpo_below, "es_up": es_up, "es_keeps": es_keeps, "base": base}

    n_total = seeds * len(SHAPES)
    below_count = int(sum(r["grpo_below"].sum() for r in rows.values()))
    up_count = int(sum(r["es_up"].sum() for r in rows.values()))
    keep_count = int(sum(r["es_keeps"].sum() for r in rows.values()))
    per_shape = {
        label: {
            "base_pass@1/16/32": [stats(r["base"][k])["mean"] for k in (1, 16, 32)],
            "grpo_change_pass@1/16/32": [stats(r["d"]["grpo"][k]) for k in (1, 16, 32)],
            "es_change_pass@1/16/32": [stats(r["d"]["es"][k]) for k in (1, 16, 32)],
            "grpo_below_base_on_16_and_32": f"{int(r['grpo_below'].sum())}/{seeds}",
            "es_above_base_on_1_16_32": f"{int(r['es_up'].sum())}/{seeds}",
        }
        for label, r in rows.items()
    }
    # per shape, over seeds: GRPO - base < 0 on both Pass@16 and Pass@32; ES - base > 0 on all three
    below, up = BY_ID["grpo_passk_below_base"], BY_ID["es_improves_over_base"]
    below_holds = {
        label: combine([decided(below.simulate_test, r["d"]["grpo"][k])[0] for k in (16, 32)])
        for label, r in rows.items()
    }
    up_holds = {
        label: combine([decided(up.simulate_test, r["d"]["es"][k])[0] for k in (1, 16, 32)])
        for label, r in rows.items()
    }
    claims = [
        claim(
            below,
            {"count": f"{below_count}/{n_total}", "share": below_count / n_total, "per_shape_verdict": below_holds},
            _verdict(below_holds),
            _depends(below_holds)
            + f"GRPO below base on both in {below_count}/{n_total} ({below_count / n_total:.0%}); "
            f"per shape (t over seeds): "
            + ", ".join(f"{k} {v}" for k, v in below_holds.items())
            + "; counts: "
            + ", ".join(f"{k} {per_shape[k]['grpo_below_base_on_16_and_32']}" for k in rows),
        ),
        claim(
            up,
            {
                "count_all_three_up": f"{up_count}/{n_total}",
                "count_pass1_up_rest_kept": f"{keep_count}/{n_total}",
                "per_shape_verdict": up_holds,
            },
            _verdict(up_holds),
            _depends(up_holds)
            + f"ES above base on all three in {up_count}/{n_total} ({up_count / n_total:.0%}); Pass@1 up with "
            f"Pass@16/32 kept within 0.001 in {keep_count}/{n_total}; per shape (t over seeds): "
            + ", ".join(f"{k} {v}" for k, v in up_holds.items())
            + "; counts: "
            + ", ".join(f"{k} {per_shape[k]['es_above_base_on_1_16_32']}" for k in rows),
        ),
    ]

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8), sharey=False)
    labels = list(rows)
    y = np.arange(len(labels))
    for ax, k in zip(axes, (1, 16, 32)):
        for j, (m, color) in enumerate((("grpo", "C0"), ("es", "C1"))):
            vals = np.array([rows[lab]["d"][m][k] for lab in labels])
            ax.barh(
                y + (j - 0.5) * 0.38,
                vals.mean(1),
                height=0.36,
                xerr=vals.std(1) / np.sqrt(seeds),
                color=color,
                label=m.upper(),
                capsize=3,
            )
        ax.axvline(0, color="k", lw=0.8)
        ax.set(
            yticks=y,
            yticklabels=labels if k == 1 else [],
            xlabel=f"change of Pass@{k} vs base (mean +- SE)",
            title=f"Pass@{k}",
        )
        ax.grid(axis="x", alpha=0.3)
    axes[0].legend()
    plot = save(fig, out, NAME)
    return {
        "name": NAME,
        "title": TITLE,
        "claims": claims,
        "per_shape": per_shape,
        "plot": plot,
        "settings": settings(
            shapes={k: settings(s=v)["s"] for k, v in SHAPES.items()},
            grpo=GRPO,
            es=ES,
            steps=steps,
            seeds=seeds,
            budget="flops (N = 4G)",
        ),
    }
