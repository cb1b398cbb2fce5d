"""The measurement of Lemma 1 on a real model over a grid of sigma and N, on the task, temperature and completion
length of the runs it sits beside, sized to decide; its rows are read by paper_checks/lemma_grid.py (each row's
ratio and interval, the pooled decision, the summary).

Design. Fixed probe prompts (the task's first `prompts` test problems) and the base's weights theta. For each
(sigma, N), `D` independent draws (own noise seed per point and draw, so errors are not shared across rows), each
an antithetic pair of populations (members theta + sigma eps_j and theta - sigma eps_j: the terms of odd order in
the noise, which spread one population's JSpol_N around its second-order value by O(sigma) of it, cancel in the
pair's mean), measured twice (llm.lemma_measurements):

- JSpol_N of each population of the pair, from `samples` completions per member and prompt (population_samples: the
  chain-rule
  estimator, every position's token averaged exactly over the vocabulary), its s = E_j KL(pi_j || pi_theta) and
  the verifier-projected side;
- Lemma 1's prediction for the pair's members (the same for both), Q = (sigma^2 / 2)(1/N) sum_j d_j^T I_x d_j with
  d_j = eps_j - eps_bar,
  from `center_samples` fresh center completions per prompt (direction_gram: exact along the members' directions,
  so only the completions are sampled). Over the noise, E Q = (sigma^2 / 2)(1 - 1/N) tr I_x, Lemma 1's prediction.

Why pairs. I_x of these models is dominated by a few directions, so JSpol_N of one population, and any Gaussian
projection of I_x (the Hutchinson sketch of tr I), spreads widely with the noise drawn (relative sd about 1.3 for
one sketch of 64 completions on the paper-regime base). Measured on the same members, JSpol_N and Q move together:
their ratio, population by population, is Lemma 1's statement with the noise's spread cancelled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from escov.paper_checks.lemma_grid import row_statistics
from escov.theory.decisions import over_seeds
from escov.theory.paper import LEMMA1_S_LIMIT


@dataclass(frozen=True)
class GridDesign:
    """What the grid measures: every sigma at every N (draws[N] populations each; N absent from `sigmas_of`
    gets all sigmas), `prompts` probe prompts, `samples` completions per member and prompt, and `center_samples`
    center completions per prompt and population for its prediction."""

    sigmas: tuple[float, ...]
    members: tuple[int, ...]
    draws: dict[int, int]
    prompts: int = 4
    samples: int = 2
    center_samples: int = 8
    sigmas_of: dict[int, tuple[float, ...]] = field(default_factory=dict)

    def __post_init__(self):
        if not self.sigmas or any(not s > 0 for s in self.sigmas):
            raise ValueError(f"grid sigmas must be > 0, got {list(self.sigmas)}")
        if not self.members or any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in self.members):
            raise ValueError(f"grid members must be integers >= 2, got {list(self.members)}")
        for n in self.members:
            d = self.draws.get(n)
            if isinstance(d, bool) or not isinstance(d, int) or d < 2:
                raise ValueError(
                    f"grid draws for N = {n} must be an integer >= 2 (an interval over populations "
                    f"needs two), got {d!r}"
                )
        for name in ("prompts", "samples", "center_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"grid {name} must be >= 1, got {getattr(self, name)}")
        if self.samples < 2:
            raise ValueError(
                f"grid samples must be >= 2 (a population's JSpol needs its standard error), got {self.samples}"
            )

    def cells(self) -> list[tuple[float, int, int]]:
        """(sigma, N, draws) of every grid point, N-major."""
        return [(s, n, self.draws[n]) for n in self.members for s in self.sigmas_of.get(n, self.sigmas)]


def _mean_ci(values) -> dict:
    """Mean over draws with its Student t 95% interval."""
    r = over_seeds(values)
    return {"mean": r["mean"], "ci": [r["lo"], r["hi"]]}


def measure_grid(
    model_dir: str | Path,
    design: GridDesign,
    *,
    task,
    task_name: str,
    temperature: float,
    max_new_tokens: int,
    seed: int = 0,
    progress: bool = True,
) -> list[dict]:
    """One row per (sigma, N) of the design on the model at model_dir, for `task` (an llm.tasks Task, built as
    the runs build theirs; task_name: the runs' name for it, recorded in every row) at the runs' sampling
    temperature and completion length."""
    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import (
        direction_gram,
        population_direction,
        population_prediction,
        population_samples,
        stratified_mean,
        success_diversity,
        validity_estimate,
    )
    from escov.llm.rollout import derive_seed, rollout

    engine = HFEngine(model_dir)
    try:
        problems = task.problems("test", design.prompts, seed=seed)
        center = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
        prompt_ids = [engine.prompt_token_ids(p.prompt) for p in problems]
        common = dict(
            engine=engine,
            scorer=engine.model,
            task=task,
            problems=problems,
            encode=engine.prompt_token_ids,
            pad_id=engine.tokenizer.pad_token_id,
            center=center,
            temperature=temperature,
            max_new_tokens=max_new_tokens,
        )
        rows = []
        cells = design.cells()
        bar = tqdm(
            total=sum(d for _, _, d in cells),
            desc="lemma 1 grid (antithetic pairs of populations)",
            disable=not progress,
        )
        for sigma, n, draws in cells:
            per_draw = []
            for draw in range(draws):
                pop_seed = derive_seed(seed, sigma, n, draw) % 2**31
                signed = {}  # the population and its antithetic twin (sign -1): the same directions, the same Q
                for sign in (1.0, -1.0):
                    logp, correct, chain = population_samples(
                        sigma=float(sigma),
                        members=int(n),
                        samples=design.samples,
                        seed=pop_seed,
                        step=0,
                        sign=sign,
                        **common,
                    )
                    succ = [
                        success_diversity(correct[i], seed=derive_seed(pop_seed, "success-null", sign, i))
                        for i in range(len(problems))
                    ]
                    signed[sign] = {
                        "jspol": np.array([stratified_mean(chain[i])[0] for i in range(len(problems))]),
                        "s": float(np.mean([validity_estimate(logp[i]) for i in range(len(problems))])),
                        **{k: np.array([x[k] for x in succ]) for k in succ[0]},
                    }
                # the prediction for these members, from fresh center completions (population_samples left the center)
                out = rollout(
                    engine,
                    task,
                    problems,
                    n=design.center_samples,
                    temperature=temperature,
                    max_new_tokens=max_new_tokens,
                    seed=derive_seed(pop_seed, "prediction-center"),
                    step=0,
                )
                gram = direction_gram(
                    engine.model,
                    center,
                    [prompt_ids[i] for i in range(len(problems)) for _ in range(design.center_samples)],
                    [c.token_ids for i in range(len(problems)) for c in out.completions[i]],
                    [population_direction(center, pop_seed, 0, j) for j in range(n)],
                    temperature,
                    engine.tokenizer.pad_token_id,
                )
                gram = gram.reshape(n, n, len(problems), design.center_samples).mean(axis=3)  # [j, k, prompt]
                q = np.array([population_prediction(gram[:, :, i], float(sigma)) for i in range(len(problems))])
                per_draw.append(
                    {
                        "predicted": q,
                        "fisher_trace": q * 2 * n / (sigma**2 * (n - 1)),
                        **{k: np.stack([signed[1.0][k], signed[-1.0][k]]) for k in signed[1.0]},
                    }
                )
                bar.update()
            rows.append(
                grid_row(per_draw, float(sigma), int(n))
                | {
                    "task": task_name,
                    "temperature": temperature,
                    "max_new_tokens": max_new_tokens,
                    "prompts": len(problems),
                    "samples": design.samples,
                    "center_samples": design.center_samples,
                }
            )
        bar.close()
    finally:
        engine.close()
    return rows


def grid_row(per_draw: list[dict], sigma: float, members: int) -> dict:
    """A grid row from its draws, each an antithetic pair of populations (eps and -eps): per draw, arrays [sign, prompt]
    of jspol and of the success-side statistics of llm.lemma_measurements.success_diversity, [sign] of the population's
    s, and arrays [prompt] of the prediction for the pair's members (`predicted`) and its tr I estimate (`fisher_trace`:
    (1/(N - 1)) sum_j d_j^T I_x d_j). A draw's JSpol is the mean of its pair's: the terms of odd order in the noise,
    which spread single populations around Q by O(sigma) of it, cancel."""
    js = np.array([d["jspol"].mean() for d in per_draw])
    q = np.array([d["predicted"].mean() for d in per_draw])
    trace = np.array([d["fisher_trace"].mean() for d in per_draw])
    s = np.array([np.mean(d["s"]) for d in per_draw])
    jssucc = np.array([d["jssucc"] - d["jssucc_null"] for d in per_draw])  # [draw, sign, prompt], bias-corrected
    gap = np.array([(d["gap"] - d["gap_null"]).mean() for d in per_draw])
    local = np.array([(d["local"] - d["local_null"]).mean() for d in per_draw])
    jspol_pp = np.array([d["jspol"] for d in per_draw])
    fisher = float(trace.mean())
    row = {
        "sigma": sigma,
        "members": members,
        "draws": len(per_draw),
        **row_statistics(js, q),
        "s_measured": float(s.mean()),
        "s_ci": _mean_ci(s)["ci"],
        "s_predicted": 0.5 * sigma**2 * fisher,
        "in_regime": bool(s.mean() <= LEMMA1_S_LIMIT),
        "fisher_trace": fisher,
        "fisher_trace_se": float(trace.std(ddof=1) / math.sqrt(trace.size)),
    }
    row["jssucc"] = _mean_ci(jssucc.mean(axis=(1, 2)))
    row["jspol_minus_jssucc"] = _mean_ci(js - jssucc.mean(axis=(1, 2)))
    row["dpi_share"] = float(np.mean((jssucc >= 0) & (jssucc <= jspol_pp)))  # populations x prompts, point values
    row["lemma2"] = {"gap": _mean_ci(gap), "local": _mean_ci(local), "gap_minus_local": _mean_ci(gap - local)}
    return row
