"""Experiment 1: does GRPO's entropy collapse while ES's does not, and what does that do to Pass@K?

GRPO and ES run from the same base policy with equal FLOPs (N = 4 G, so equal update counts).
Because their step sizes differ, endpoints alone mislead: both are also compared at matched
Pass@1 (the lower of the two final Pass@1 values of each seed), reading entropy and Pass@32 off each
trajectory where it first reaches that Pass@1. At equal FLOPs ES moves Pass@1 much less than GRPO,
so that level sits near the base; the matched claim (matched_passk_above_grpo, the id paper_checks
reads) is therefore decided along the whole Pass@1 range GRPO and a longer ES run (ES_LONG times the
updates, greedy members) both reach (matched_along, theory.matched's reading), with ES with sampled
members read the same way beside it. es_passk_above_grpo is the end-of-training claim: Pass@32 of the
equal-FLOPs runs at their last update.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from escov.theory.claims import BY_ID
from escov.theory.decisions import FINDING, combine

from ..bandit import make_task
from ..measure import DEFAULT_KS
from ..train import train
from .common import (
    ES,
    GRPO,
    SEEDS,
    SHAPE,
    STEPS,
    band,
    claim,
    decided,
    finding,
    fmt,
    matched,
    matched_along,
    save,
    scaled,
    settings,
    stats,
)

NAME = "entropy_collapse"
TITLE = "GRPO's entropy against ES's; Pass@K of base, GRPO and ES; the Pass@1-Pass@32 frontier"
ES_LONG = 4  # updates of the long ES runs, in units of the equal-FLOPs budget: enough to reach GRPO's Pass@1 range


def run(seeds: int = SEEDS, out: Path | None = None, scale: float = 1.0, progress: bool = True) -> dict:
    steps = scaled(STEPS, scale)
    task = make_task(SHAPE, seeds)
    grpo = train(task, [(GRPO, steps)], progress=progress, desc="grpo")
    es = train(task, [(ES, steps)], progress=progress, desc="es")
    es_long = train(task, [(ES, ES_LONG * steps)], progress=progress, desc="es long")
    es_long_sampled = train(
        task, [(replace(ES, member_temperature=1.0), ES_LONG * steps)], progress=progress, desc="es long sampled"
    )
    base = grpo.policy

    d_ent_grpo = grpo.final("entropy") - base["entropy"][0]
    d_ent_es = es.final("entropy") - base["entropy"][0]
    level, ent_g, ent_e = matched(grpo, es, "entropy")
    _, p32_g, p32_e = matched(grpo, es, "pass@32")
    gain = level - base["pass@1"][0]

    collapse = BY_ID["entropy_collapse"]
    ent_verdict, ent_text = decided(collapse.simulate_test, ent_e - ent_g)
    fall_verdict, fall_text = decided(collapse.simulate_test, -d_ent_grpo)
    claims = [
        claim(
            collapse,
            {
                "entropy_change_grpo": stats(d_ent_grpo),
                "entropy_change_es": stats(d_ent_es),
                "matched_pass1_gain": stats(gain),
                "entropy_at_matched_grpo": stats(ent_g),
                "entropy_at_matched_es": stats(ent_e),
            },
            combine([ent_verdict, fall_verdict]),
            f"entropy change over training: GRPO {fmt(d_ent_grpo)} (its fall, -change: {fall_text}), "
            f"ES {fmt(d_ent_es)}; "
            f"at matched Pass@1 (+{fmt(gain)} over base) entropy GRPO {fmt(ent_g)} vs ES {fmt(ent_e)} "
            f"(ES - GRPO: {ent_text})",
        ),
    ]
    lo, hi, along = matched_along(es_long, grpo, "pass@32")
    _, _, along_sampled = matched_along(es_long_sampled, grpo, "pass@32")
    above, frontier_claim = BY_ID["es_passk_above_grpo"], BY_ID["matched_passk_above_grpo"]
    frontier, frontier_text = decided(frontier_claim.simulate_test, along)
    _, sampled_text = decided(frontier_claim.simulate_test, along_sampled)
    end, end_text = decided(above.simulate_test, es.final("pass@32") - grpo.final("pass@32"))
    claims.append(
        claim(
            above,
            {"difference_es_minus_grpo_at_end": stats(es.final("pass@32") - grpo.final("pass@32"))},
            end,
            f"Pass@32, ES - GRPO after equal FLOPs: {end_text}",
        )
    )
    claims.append(
        claim(
            frontier_claim,
            {
                "range_lo": stats(lo),
                "range_hi": stats(hi),
                "difference_es_minus_grpo_along_range": stats(along),
                "difference_sampled_es_minus_grpo_along_range": stats(along_sampled),
                "pass32_at_lower_final_grpo": stats(p32_g),
                "pass32_at_lower_final_es": stats(p32_e),
                "difference_at_lower_final": stats(p32_e - p32_g),
            },
            frontier,
            f"Pass@32, ES ({ES_LONG}x the updates) - GRPO, mean over the Pass@1 range both reach "
            f"({fmt(lo)} to {fmt(hi)}): {frontier_text}; ES with sampled members: {sampled_text}; at the lower "
            f"final Pass@1 of equal-FLOPs runs: GRPO {fmt(p32_g)}, ES {fmt(p32_e)}",
        )
    )
    raises = BY_ID["grpo_raises_pass1"]
    grpo_up, grpo_up_text = decided(raises.simulate_test, grpo.final("pass@1") - base["pass@1"][0])
    claims.append(
        claim(
            raises,
            {"pass@1_change_grpo": stats(grpo.final("pass@1") - base["pass@1"][0])},
            grpo_up,
            f"GRPO Pass@1 minus base (equal FLOPs) {grpo_up_text}",
        )
    )
    endpoint = {
        f"pass@{k}": {
            "base": stats(base[f"pass@{k}"][0]),
            "grpo": stats(grpo.final(f"pass@{k}")),
            "es": stats(es.final(f"pass@{k}")),
        }
        for k in DEFAULT_KS
    }
    claims.append(
        finding(
            "endpoints",
            "Endpoints after equal FLOPs: Pass@K of GRPO and ES against the base",
            "GRPO: Pass@1 up, Pass@16/32 near or below base; ES: Pass@1 up, Pass@16/32 kept or raised",
            endpoint,
            FINDING,
            "; ".join(
                f"Pass@{k}: base {fmt(base[f'pass@{k}'][0])}, GRPO {fmt(grpo.final(f'pass@{k}'))}, "
                f"ES {fmt(es.final(f'pass@{k}'))}"
                for k in (1, 16, 32, 256)
            ),
        )
    )

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    x = np.arange(steps + 1)
    band(axes[0], x, grpo.policy["entropy"], "GRPO")
    band(axes[0], x, es.policy["entropy"], "ES")
    axes[0].set(xlabel="update", ylabel="policy entropy (nats)", title="Entropy over training (equal FLOPs)")
    ks = np.array(DEFAULT_KS)
    for label, values in (
        ("base", [base[f"pass@{k}"][0] for k in ks]),
        ("GRPO", [grpo.final(f"pass@{k}") for k in ks]),
        ("ES", [es.final(f"pass@{k}") for k in ks]),
    ):
        v = np.array(values)
        axes[1].errorbar(ks, v.mean(1), yerr=v.std(1), marker="o", capsize=3, label=label)
    axes[1].set(xscale="log", xlabel="K", ylabel="Pass@K (exact)", title="Pass@K at the end")
    for label, r in (("GRPO", grpo), ("ES", es)):
        axes[2].plot(r.policy["pass@1"].mean(1), r.policy["pass@32"].mean(1), label=label)
    axes[2].scatter([base["pass@1"][0].mean()], [base["pass@32"][0].mean()], color="k", zorder=3, label="base")
    axes[2].set(xlabel="Pass@1", ylabel="Pass@32", title="Frontier along training (seed mean)")
    for ax in axes:
        ax.legend()
        ax.grid(alpha=0.3)
    plot = save(fig, out, NAME)
    return {
        "name": NAME,
        "title": TITLE,
        "claims": claims,
        "plot": plot,
        "settings": settings(shape=SHAPE, grpo=GRPO, es=ES, steps=steps, seeds=seeds, budget="flops (N = 4G)"),
    }
