"""Lemma 1 on a real model over a grid of sigma and N.

For each (sigma, N): JSpol_N measured with the low-variance mixture estimator on fixed probe
prompts (llm.lemma_measurements.measure_population) against (sigma^2 / 2)(1 - 1/N) tr I_x, the Fisher trace
estimated from per-sample score gradients at the center. Then, per N, the fitted exponent of
JSpol in sigma (2 where Lemma 1 holds) and the sigma range where the ratio measured / predicted
lies within 10% of 1.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from tqdm import tqdm

from llm.engines.hf import HFEngine
from llm.lemma_measurements import measure_population
from llm.tasks import get_task

TOLERANCE = 0.10


def measure_grid(model_dir: str | Path, sigmas, members, *, task: str = "countdown", probe_prompts: int = 4,
                 samples: int = 8, center_samples: int = 16, temperature: float = 1.0, max_new_tokens: int = 24,
                 seed: int = 0, progress: bool = True) -> list[dict]:
    """One row per (sigma, N): measured and predicted JSpol_N, their ratio and interval, measured s."""
    if any(s <= 0 for s in sigmas):
        raise ValueError(f"sigmas must be > 0, got {list(sigmas)}")
    if any(n < 2 for n in members):
        raise ValueError(f"members must be >= 2, got {list(members)}")
    engine = HFEngine(model_dir)
    the_task = get_task(task)
    problems = the_task.problems("test", probe_prompts, seed=seed)
    center = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    rows = []
    grid = [(s, n) for n in members for s in sigmas]
    for sigma, n in tqdm(grid, desc="lemma 1 grid", disable=not progress):
        m = measure_population(engine=engine, scorer=engine.model, task=the_task, problems=problems,
                               encode=engine.prompt_token_ids, pad_id=engine.tokenizer.pad_token_id, center=center,
                               sigma=float(sigma), members=int(n), samples=samples, center_samples=center_samples,
                               temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, step=0)
        pred, (f_lo, f_hi) = m["lemma1_prediction"], m["fisher_trace"]["ci95"]
        tr = m["fisher_trace"]["mean"]
        j_lo, j_hi = m["jspol"]["ci95"]
        rows.append({"sigma": float(sigma), "members": int(n), "measured": m["jspol"]["mean"], "predicted": pred,
                     "ratio": m["jspol"]["mean"] / pred,
                     "ratio_ci": [max(j_lo, 0.0) / (pred * f_hi / tr), j_hi / (pred * max(f_lo, 1e-300) / tr)],
                     "s_measured": m["validity"]["measured"]["mean"], "s_predicted": m["validity"]["predicted"],
                     "fisher_trace": tr, "measured_per_prompt": m["jspol"]["per_prompt"],
                     "predicted_per_prompt": [r["lemma1_prediction"] for r in m["per_prompt"]]})
    engine.close()
    return rows


def summarize_grid(rows: list[dict]) -> dict:
    """Per N: the fitted sigma exponent of measured JSpol (least squares on log-log) and the sigmas
    whose ratio lies within 10% of 1."""
    out = {}
    for n in sorted({r["members"] for r in rows}):
        sub = sorted((r for r in rows if r["members"] == n and r["measured"] is not None and r["measured"] > 0
                      and r["ratio"] is not None), key=lambda r: r["sigma"])  # None: a non-finite value nulled
        if len(sub) < 2:
            continue
        slope = float(np.polyfit(np.log([r["sigma"] for r in sub]), np.log([r["measured"] for r in sub]), 1)[0])
        within = [r["sigma"] for r in sub if abs(r["ratio"] - 1) <= TOLERANCE]
        out[str(n)] = {"sigma_exponent": slope, "sigmas_within_10pct": within,
                       "sigmas_outside": [r["sigma"] for r in sub if abs(r["ratio"] - 1) > TOLERANCE]}
    return out

