"""Experiment 4: ablations of ES (and one of GRPO) on the default task, equal update counts.

- rollout: greedy member rollouts (the paper's easy setting) against sampled ones (T = 1):
  which of the two carries ES's Pass@K behaviour?
- zscore: standardized member rewards against centered ones (R_i - mean R, as llm's ES) at the same
  alpha (a ~1/std(R) smaller step), and centered at alpha rescaled to the z-scored update norm
  (center_scale = 1 / mean std(R) of the z-scored run): the last comparison is z-scoring's own effect;
- two_point: one-point against antithetic two-point ES on re-sampled rewards (the paper: no gain;
  the + and - rewards correlate weakly, theory.paper.ANTITHETIC_REWARD_CORRELATION), with that
  correlation measured here;
- sigma: a sweep of the perturbation scale;
- population_vs_dim: N in {8, 16, 32, 64} against feature dimension d in {16, 64, 256} (the paper's
  Table 6: the gain from a larger N shrinks for larger models), measured as the smoothed training
  reward (mean member reward over the last 20% of updates);
- grpo_std: GRPO with and without dividing advantages by the group std.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from escov.theory.claims import BY_ID
from escov.theory.decisions import FINDING
from escov.theory.paper import PAPER_SIGMA

from ..bandit import BanditTask, make_task
from ..es import ESConfig, member_fitness
from ..train import BanditRun, train
from .common import (
    DIFFERENCE,
    ES,
    GRPO,
    SHAPE,
    STEPS,
    claim,
    decided,
    finding,
    fmt,
    matched,
    save,
    scaled,
    settings,
    stats,
)

NAME = "ablations"
TITLE = "ES ablations (rollouts, z-scoring, two-point, sigma, N vs d) and GRPO's std normalization"
SEEDS = 5
SIGMAS = (0.125, 0.25, 0.5, 1.0, 2.0)
POPULATIONS = (8, 16, 32, 64)
DIMS = (16, 64, 256)
SAMPLED = replace(ES, member_temperature=1.0)


def pair_correlation(
    task: BanditTask, cfg: ESConfig, pairs: int, rng: np.random.Generator, common_seed: bool = False
) -> np.ndarray:
    """Correlation over antithetic pairs of R(theta_0 + sigma eps) and R(theta_0 - sigma eps), per seed;
    common_seed=True samples both members' rollouts with the same random numbers (as the paper did)."""
    eps = rng.standard_normal((task.n_seeds, pairs, task.dim))
    batch = np.arange(task.n_prompts)
    seed = int(rng.integers(2**31))
    rng_plus = np.random.default_rng(seed)
    rng_minus = np.random.default_rng(seed) if common_seed else rng
    plus = member_fitness(task, task.logits(task.theta0[:, None] + cfg.sigma * eps), batch, cfg, rng_plus)
    minus = member_fitness(task, task.logits(task.theta0[:, None] - cfg.sigma * eps), batch, cfg, rng_minus)
    return np.array([np.corrcoef(a, b)[0, 1] for a, b in zip(plus, minus)])


def smoothed_reward(run: BanditRun) -> np.ndarray:
    f = run.updates["fitness_mean"]
    return f[-max(1, len(f) // 5) :].mean(0)


def run(seeds: int = SEEDS, out: Path | None = None, scale: float = 1.0, progress: bool = True) -> dict:
    steps = scaled(STEPS, scale)
    task = make_task(SHAPE, seeds)
    jobs = {
        "greedy": (task, ES),
        "sampled": (task, SAMPLED),
        "no_zscore": (task, replace(ES, zscore=False)),
        "sampled_two_point": (task, replace(SAMPLED, antithetic=True)),
        "grpo_std": (task, GRPO),
        "grpo_no_std": (task, replace(GRPO, scale_rewards=False)),
    }
    jobs.update({f"sigma={s:g}": (task, replace(ES, sigma=s)) for s in SIGMAS if s != ES.sigma})
    dim_tasks = {d: make_task(replace(SHAPE, feature_dim=d), seeds) for d in DIMS}
    jobs.update({f"N={n},d={d}": (dim_tasks[d], replace(ES, population_size=n)) for d in DIMS for n in POPULATIONS})
    runs: dict[str, BanditRun] = {}
    for label, (t, cfg) in tqdm(jobs.items(), desc=NAME, disable=not progress):
        runs[label] = train(t, [(cfg, steps)], progress=False, population=False)
    spread = runs["greedy"].updates["fitness_std"]
    center_scale = 1.0 / float(spread[spread > 0].mean())
    runs["centered_rescaled"] = train(
        task, [(replace(ES, zscore=False, center_scale=center_scale), steps)], progress=False, population=False
    )
    runs[f"sigma={ES.sigma:g}"] = runs["greedy"]
    base = runs["greedy"].policy

    def delta(label: str, metric: str) -> np.ndarray:
        return runs[label].final(metric) - base[metric][0]

    claims = []
    # rollout
    ro = {m: {k: stats(delta(m, k)) for k in ("pass@1", "pass@32", "entropy")} for m in ("greedy", "sampled")}
    level, p32_greedy, p32_sampled = matched(runs["greedy"], runs["sampled"], "pass@32")
    ro["pass@32_at_matched_pass@1"] = {
        "level": stats(level),
        "greedy": stats(p32_greedy),
        "sampled": stats(p32_sampled),
    }
    _, e = decided(DIFFERENCE, p32_greedy - p32_sampled)
    claims.append(
        finding(
            "greedy_vs_sampled",
            "Greedy vs sampled member rollouts: which carries ES's Pass@K behaviour?",
            "open question (the paper trains ES with greedy member rollouts in the easy setting)",
            ro,
            FINDING,
            "; ".join(
                f"{m}: dPass@1 {fmt(delta(m, 'pass@1'))}, dPass@32 {fmt(delta(m, 'pass@32'))}, "
                f"dEntropy {fmt(delta(m, 'entropy'))}"
                for m in ("greedy", "sampled")
            )
            + f"; Pass@32 at matched Pass@1 ({fmt(level)}): greedy {fmt(p32_greedy)}, sampled {fmt(p32_sampled)} "
            f"(greedy - sampled: {e})",
        )
    )
    # z-scoring, three ways
    zscore = BY_ID["zscore_essential"]
    zs_verdict, zs_text = decided(
        zscore.simulate_test, delta("greedy", "pass@1") - delta("centered_rescaled", "pass@1")
    )
    _, same_alpha = decided(zscore.simulate_test, delta("greedy", "pass@1") - delta("no_zscore", "pass@1"))
    claims.append(
        claim(
            zscore,
            {
                "pass@1_gain_zscore": stats(delta("greedy", "pass@1")),
                "pass@1_gain_centered": stats(delta("no_zscore", "pass@1")),
                "pass@1_gain_centered_rescaled": stats(delta("centered_rescaled", "pass@1")),
                "center_scale": center_scale,
            },
            zs_verdict,
            f"Pass@1 gain z-scored {fmt(delta('greedy', 'pass@1'))}, centered at the same alpha "
            f"{fmt(delta('no_zscore', 'pass@1'))} (step size effect: {same_alpha}), "
            f"centered at alpha x {center_scale:.3g} "
            f"{fmt(delta('centered_rescaled', 'pass@1'))} (z-scoring's own effect, against centered rewards at the "
            f"z-scored update norm: {zs_text})",
        )
    )
    # two-point
    rng = np.random.default_rng([seeds, 17])
    corr_sampled = pair_correlation(task, SAMPLED, 256, rng)
    corr_common = pair_correlation(task, SAMPLED, 256, rng, common_seed=True)
    corr_greedy = pair_correlation(task, ES, 256, rng)
    one_point = BY_ID["one_point_vs_two_point"]
    tp_verdict, tp_text = decided(
        one_point.simulate_test, delta("sampled", "pass@1") - delta("sampled_two_point", "pass@1")
    )
    claims.append(
        claim(
            one_point,
            {
                "pass@1_gain_one_point": stats(delta("sampled", "pass@1")),
                "pass@1_gain_two_point": stats(delta("sampled_two_point", "pass@1")),
                "corr_plus_minus_sampled": stats(corr_sampled),
                "corr_plus_minus_sampled_common_seed": stats(corr_common),
                "corr_plus_minus_greedy": stats(corr_greedy),
            },
            tp_verdict,
            f"sampled rollouts: Pass@1 gain one-point {fmt(delta('sampled', 'pass@1'))}, two-point "
            f"{fmt(delta('sampled_two_point', 'pass@1'))} "
            f"(one - two > {one_point.simulate_test.threshold:g}: {tp_text}); "
            f"corr(R+, R-) sampled {fmt(corr_sampled)}, sampled with a common seed {fmt(corr_common)}, "
            f"greedy {fmt(corr_greedy)}",
        )
    )
    # sigma sweep
    sig = {f"{s:g}": {k: stats(delta(f"sigma={s:g}", k)) for k in ("pass@1", "pass@32", "entropy")} for s in SIGMAS}
    claims.append(
        finding(
            "sigma_sweep",
            "Sigma sweep",
            f"the paper uses sigma = {PAPER_SIGMA:g} (here sigma is in logit units; default {ES.sigma})",
            sig,
            FINDING,
            "; ".join(
                f"sigma {s:g}: dPass@1 {fmt(delta(f'sigma={s:g}', 'pass@1'))}, "
                f"dPass@32 {fmt(delta(f'sigma={s:g}', 'pass@32'))}"
                for s in SIGMAS
            ),
        )
    )
    # N vs d
    rew = {d: {n: smoothed_reward(runs[f"N={n},d={d}"]) for n in POPULATIONS} for d in DIMS}
    gain = {d: rew[d][POPULATIONS[-1]] - rew[d][POPULATIONS[0]] for d in DIMS}
    population = BY_ID["population_size"]
    n_verdict, e = decided(population.simulate_test, gain[DIMS[0]] - gain[DIMS[-1]])
    claims.append(
        claim(
            population,
            {f"d={d}": {f"N={n}": stats(rew[d][n]) for n in POPULATIONS} for d in DIMS},
            n_verdict,
            "gain N=64 minus N=8 (equal updates, Table 6's protocol): "
            + ", ".join(f"d={d} {fmt(gain[d])}" for d in DIMS)
            + f" (smallest d minus largest d: {e})",
        )
    )
    # GRPO std
    gs = {m: {k: stats(delta(m, k)) for k in ("pass@1", "pass@32", "entropy")} for m in ("grpo_std", "grpo_no_std")}
    claims.append(
        finding(
            "grpo_std",
            "GRPO with and without std normalization of advantages",
            "the paper's GRPO divides by the group std",
            gs,
            FINDING,
            "; ".join(
                f"{m}: dPass@1 {fmt(delta(m, 'pass@1'))}, dPass@32 {fmt(delta(m, 'pass@32'))}, "
                f"dEntropy {fmt(delta(m, 'entropy'))}"
                for m in ("grpo_std", "grpo_no_std")
            ),
        )
    )

    fig, axes = plt.subplots(2, 3, figsize=(16, 8.5))
    x = np.arange(steps + 1)

    def curves(ax, labels, metric, title):
        for lab in labels:
            ax.plot(x, runs[lab].policy[metric].mean(1), label=lab)
        ax.set(xlabel="update", ylabel=metric, title=title)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)

    curves(axes[0, 0], ["greedy", "sampled", "sampled_two_point", "no_zscore"], "pass@1", "ES variants: Pass@1")
    curves(axes[0, 1], ["greedy", "sampled", "sampled_two_point", "no_zscore"], "pass@32", "ES variants: Pass@32")
    curves(axes[0, 2], ["grpo_std", "grpo_no_std", "greedy"], "entropy", "GRPO std on/off (ES for reference)")
    for k in ("pass@1", "pass@32"):
        axes[1, 0].errorbar(
            SIGMAS,
            [delta(f"sigma={s:g}", k).mean() for s in SIGMAS],
            yerr=[delta(f"sigma={s:g}", k).std() for s in SIGMAS],
            marker="o",
            capsize=3,
            label=f"d{k}",
        )
    axes[1, 0].set(xscale="log", xlabel="sigma", ylabel="change vs base", title="Sigma sweep")
    axes[1, 0].set_xticks(SIGMAS, [f"{s:g}" for s in SIGMAS], minor=False)
    axes[1, 0].minorticks_off()
    axes[1, 0].legend()
    axes[1, 0].grid(alpha=0.3)
    for d in DIMS:
        paired = np.array([rew[d][n] - rew[d][POPULATIONS[0]] for n in POPULATIONS])
        axes[1, 1].errorbar(
            POPULATIONS, paired.mean(1), yerr=paired.std(1) / np.sqrt(seeds), marker="o", capsize=3, label=f"d={d}"
        )
    axes[1, 1].set(
        xscale="log",
        xlabel="population N",
        ylabel=f"smoothed training reward minus N={POPULATIONS[0]}",
        title="N against model size d (mean +- SE, paired by seed)",
    )
    axes[1, 1].set_xticks(POPULATIONS, [str(n) for n in POPULATIONS])
    axes[1, 1].minorticks_off()
    axes[1, 1].legend()
    axes[1, 1].grid(alpha=0.3)
    axes[1, 2].hist(
        [corr_sampled, corr_common, corr_greedy], label=["sampled", "sampled, common seed", "greedy"], bins=10
    )
    axes[1, 2].set(xlabel="corr(R+, R-) per seed", title="Antithetic reward correlation at theta_0")
    axes[1, 2].legend()
    plot = save(fig, out, NAME)
    return {
        "name": NAME,
        "title": TITLE,
        "claims": claims,
        "plot": plot,
        "settings": settings(
            shape=SHAPE, grpo=GRPO, es=ES, steps=steps, seeds=seeds, sigmas=SIGMAS, populations=POPULATIONS, dims=DIMS
        ),
    }
