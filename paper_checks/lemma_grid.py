"""Lemma 1 on a real model over a grid of sigma and N, with independent noise draws per grid point.

For each (sigma, N) and each of `draws` independent populations (own noise seed per grid point and
draw, so errors are not shared across sigma): JSpol_N measured with the low-variance mixture
estimator on fixed probe prompts (llm.lemma_measurements.measure_population) against
(sigma^2 / 2)(1 - 1/N) tr I_x, the Fisher trace estimated from per-sample score gradients at the
center. The ratio measured / predicted of a grid point is the mean over draws, with a Student t
interval over draws (draws - 1 df): it holds the variance between populations, the largest one
(a single population's ratio has the spread `ratio_sd`). Then, per N, the fitted exponent of JSpol
in sigma (2 where Lemma 1 holds) and the sigmas whose ratio interval lies inside 1 +- 10%.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from tqdm import tqdm

from escov.llm.engines.hf import HFEngine
from escov.llm.lemma_measurements import measure_population
from escov.llm.rollout import derive_seed
from escov.llm.tasks import get_task
from escov.theory.claims import BY_ID
from escov.theory.decisions import HOLDS, over_seeds



def measure_grid(model_dir: str | Path, sigmas, members, *, draws: int = 3, task: str = "countdown",
                 probe_prompts: int = 4, samples: int = 8, center_samples: int = 16, temperature: float = 1.0,
                 max_new_tokens: int = 24, seed: int = 0, progress: bool = True) -> list[dict]:
    """One row per (sigma, N): measured and predicted JSpol_N over `draws` populations, the ratio's
    t interval over draws, measured s."""
    if any(s <= 0 for s in sigmas):
        raise ValueError(f"sigmas must be > 0, got {list(sigmas)}")
    if any(n < 2 for n in members):
        raise ValueError(f"members must be >= 2, got {list(members)}")
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 2:
        raise ValueError(f"draws must be an integer >= 2 (an interval over populations needs two), got {draws!r}")
    engine = HFEngine(model_dir)
    the_task = get_task(task)
    problems = the_task.problems("test", probe_prompts, seed=seed)
    center = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    rows = []
    grid = [(s, n) for n in members for s in sigmas]
    for sigma, n in tqdm(grid, desc="lemma 1 grid", disable=not progress):
        found = [measure_population(engine=engine, scorer=engine.model, task=the_task, problems=problems,
                                    encode=engine.prompt_token_ids, pad_id=engine.tokenizer.pad_token_id, center=center,
                                    sigma=float(sigma), members=int(n), samples=samples, center_samples=center_samples,
                                    temperature=temperature, max_new_tokens=max_new_tokens,
                                    seed=derive_seed(seed, sigma, n, draw) % 2**31, step=0)
                 for draw in range(draws)]
        measured = np.array([m["jspol"]["mean"] for m in found])
        predicted = np.array([m["lemma1_prediction"] for m in found])
        ratio = over_seeds(measured / predicted)
        rows.append({"sigma": float(sigma), "members": int(n), "draws": draws, "measured": float(measured.mean()),
                     "predicted": float(predicted.mean()), "ratio": ratio["mean"], "ratio_ci": [ratio["lo"], ratio["hi"]],
                     "ratio_sd": float(np.std(measured / predicted, ddof=1)), "ratios": (measured / predicted).tolist(),
                     "s_measured": float(np.mean([m["validity"]["measured"]["mean"] for m in found])),
                     "s_predicted": float(np.mean([m["validity"]["predicted"] for m in found])),
                     "fisher_trace": float(np.mean([m["fisher_trace"]["mean"] for m in found]))})
    engine.close()
    return rows


def summarize_grid(rows: list[dict]) -> dict:
    """Per N: the fitted sigma exponent of measured JSpol (least squares on log-log) and the sigmas
    whose ratio interval lies inside 1 +- 10% (Lemma 1's test, theory.claims, on ratio - 1)."""
    out = {}
    for n in sorted({r["members"] for r in rows}):
        sub = sorted((r for r in rows if r["members"] == n and r["measured"] is not None and r["measured"] > 0
                      and r["ratio"] is not None), key=lambda r: r["sigma"])  # None: a non-finite value nulled
        if len(sub) < 2:
            continue
        slope = float(np.polyfit(np.log([r["sigma"] for r in sub]), np.log([r["measured"] for r in sub]), 1)[0])
        lemma1 = BY_ID["lemma1"].test
        within = [r["sigma"] for r in sub if lemma1.decide(r["ratio_ci"][0] - 1, r["ratio_ci"][1] - 1) == HOLDS]
        out[str(n)] = {"sigma_exponent": slope, "sigmas_within_10pct": within,
                       "sigmas_outside": [r["sigma"] for r in sub if r["sigma"] not in within]}
    return out
