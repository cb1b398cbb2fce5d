"""The measurement of Lemma 1 as stated on a real model: E[JSpol_N] over independent populations against
(sigma^2/2)(1 - 1/N) tr I_x with tr I_x from separate center completions; read by paper_checks/lemma_as_stated.py
(the report's record `lemma_as_stated` and its REPORT.md lines).

Design (StatedDesign). Fixed probe prompts (the task's first `prompts` test problems) and the base's weights theta.

- tr I_x: `trace_completions` completions per prompt from the center, each scored by ||grad_theta log pi(y | x)||^2
  over every parameter (llm.lemma_measurements.score_sq_norms, one backward pass each, at the sampling temperature):
  unbiased for tr I_x with no projection, independent of every population.
- per cell (sigma, N, D): D independent populations theta + sigma eps_j (own noise seed each, no antithetic twin),
  `samples` completions per member and prompt; per population and prompt JSpol_N (chain-rule estimator), the
  members' s = E_j KL(pi_j || pi_theta), and the success side (JSsucc_N, Lemma 2's gap and its local form, each
  beside its permutation null: llm.lemma_measurements.success_diversity).
- on the cells in `gram_cells`: each population's own second-order value Q along its directions from each of the
  first `gram_completions` center completions per prompt (direction_gram), so that the grid's estimator (Q from 8
  completions per pair) can be redrawn and its bias measured (paper_checks.lemma_as_stated.grid_estimator_bias).

Sizing (docs/answer-budget.md, "Lemma 1 as stated"): one population's relative sd of JSpol_N (averaged over 8
prompts) and tr I's per-completion relative sd give the populations a row needs
(paper_checks.lemma_as_stated.draws_for_half_width).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm


@dataclass(frozen=True)
class StatedDesign:
    """cells: (sigma, N, independent populations); es_arm: (sigma, N) of the ES arm inside the regime, whose row
    the report reads for JSsucc and Lemma 2 (it must be one of the cells)."""

    cells: tuple[tuple[float, int, int], ...]
    prompts: int = 8
    samples: int = 2
    trace_completions: int = 1024
    gram_completions: int = 64
    gram_cells: tuple[tuple[float, int], ...] = ()
    es_arm: tuple[float, int] | None = None

    def __post_init__(self):
        for sigma, n, d in self.cells:
            if not sigma > 0 or n < 2 or d < 2:
                raise ValueError(
                    f"lemma-as-stated cell (sigma, N, populations) = {(sigma, n, d)}: need sigma > 0, "
                    "N >= 2 and >= 2 populations"
                )
        if self.samples < 2 or self.prompts < 1 or self.trace_completions < 2:
            raise ValueError("lemma-as-stated design: samples >= 2, prompts >= 1, trace_completions >= 2")
        keys = {(s, n) for s, n, _ in self.cells}
        for cell in self.gram_cells + ((self.es_arm,) if self.es_arm else ()):
            if tuple(cell) not in keys:
                raise ValueError(f"lemma-as-stated design: {cell} is not one of the cells {sorted(keys)}")
        if self.gram_cells and self.gram_completions > self.trace_completions:
            raise ValueError("lemma-as-stated design: gram_completions must be <= trace_completions")


# The answer's base (countdown3, T = 0.6, 32 new tokens): three sigmas inside the regime at N = 2, 4, 16 and 32 to
# decide, three above it to locate the departure, the es-small-sigma arm's (2e-3, N = 32) for JSsucc and Lemma 2,
# and the grid's estimator redrawn at N = 2 and 4 inside the regime. Sized in docs/answer-budget.md ("Lemma 1 as
# stated") from its first run (the same design without N = 32 at 1e-3 and 4e-3, 1024 trace completions per prompt:
# 6.8 CPU-min, pooled interval 0.124 wide): on synthetic rows with the measured spreads this design decides "holds"
# at a true ratio of 1 in 97% of replications (the first run's design: 67%), "holds" at the margin in under 3%.
ANSWER_LEMMA_AS_STATED = StatedDesign(
    cells=tuple((s, 2, 24) for s in (1e-3, 2e-3, 4e-3))
    + tuple((s, 4, 12) for s in (1e-3, 2e-3, 4e-3))
    + tuple((s, 16, 6) for s in (1e-3, 2e-3, 4e-3))
    + tuple((s, n, d) for s in (1e-2, 2e-2, 4e-2) for n, d in ((2, 12), (4, 6), (16, 3)))
    + tuple((s, 32, 4) for s in (1e-3, 2e-3, 4e-3)),
    trace_completions=2048,
    gram_cells=((1e-3, 2), (2e-3, 2), (1e-3, 4)),
    es_arm=(2e-3, 32),
)
# two cells with the grid's estimator redrawn at one: the pipeline end to end in under a CPU-minute
SMOKE_LEMMA_AS_STATED = StatedDesign(
    cells=((1e-3, 2, 3), (2e-3, 32, 2)),
    trace_completions=32,
    gram_completions=16,
    gram_cells=((1e-3, 2),),
    es_arm=(2e-3, 32),
)
# ANSWER_LEMMA_AS_STATED on the answer's base, one thread: its first run's 6.8 measured CPU-min plus the added parts at
# their measured unit costs (1024 more trace completions per prompt: about 2 min; 8 populations at N = 32: about 1)
LEMMA_AS_STATED_CPU_MINUTES = 10.0


def measure_lemma_as_stated(
    model, settings: dict, design: StatedDesign, out, *, seed: int = 0, progress: bool = True
) -> dict:
    """Measure `design` on the model directory `model` with grid_settings' dict `settings` (task, task_name,
    temperature, max_new_tokens); write the measurement's JSON to `out` and return it."""
    from escov.llm.engines.hf import HFEngine
    from escov.llm.lemma_measurements import (
        direction_gram,
        population_direction,
        population_samples,
        score_sq_norms,
        stratified_mean,
        success_diversity,
        validity_estimate,
    )
    from escov.llm.rollout import derive_seed, rollout

    start = time.process_time()
    task, temperature, tokens = settings["task"], settings["temperature"], settings["max_new_tokens"]
    engine = HFEngine(str(model))
    try:
        problems = task.problems("test", design.prompts, seed=seed)
        center = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
        pad = engine.tokenizer.pad_token_id
        prompt_ids = [engine.prompt_token_ids(p.prompt) for p in problems]
        bar = tqdm(total=1 + sum(d for _, _, d in design.cells), desc="lemma 1 as stated", disable=not progress)
        # tr I_x from separate center completions
        outs = rollout(
            engine,
            task,
            problems,
            n=design.trace_completions,
            temperature=temperature,
            max_new_tokens=tokens,
            seed=derive_seed(seed, "as-stated-trace"),
            step=0,
        )
        completions = [[c.token_ids for c in outs.completions[i]] for i in range(len(problems))]
        params = list(engine.model.parameters())
        sq = [
            score_sq_norms(
                engine.model, params, [prompt_ids[i]] * len(completions[i]), completions[i], temperature, pad
            ).tolist()
            for i in range(len(problems))
        ]
        bar.update()
        common = dict(
            engine=engine,
            scorer=engine.model,
            task=task,
            problems=problems,
            encode=engine.prompt_token_ids,
            pad_id=pad,
            center=center,
            temperature=temperature,
            max_new_tokens=tokens,
        )
        rows = []
        for sigma, n, draws in design.cells:
            row = {"sigma": sigma, "members": n, "jspol": [], "s": [], "q_per_completion": []}
            for d in range(draws):
                pop_seed = derive_seed(seed, "as-stated", sigma, n, d) % 2**31
                logp, correct, chain = population_samples(
                    sigma=float(sigma), members=n, samples=design.samples, seed=pop_seed, step=0, **common
                )
                row["jspol"].append([stratified_mean(chain[i])[0] for i in range(len(problems))])
                row["s"].append(float(np.mean([validity_estimate(logp[i]) for i in range(len(problems))])))
                succ = [
                    success_diversity(correct[i], seed=derive_seed(pop_seed, "success-null", i))
                    for i in range(len(problems))
                ]
                for k in succ[0]:
                    row.setdefault(k, []).append([x[k] for x in succ])
                if (sigma, n) in design.gram_cells:
                    row["q_per_completion"].append(
                        _own_q(
                            direction_gram,
                            population_direction,
                            engine,
                            center,
                            prompt_ids,
                            completions,
                            design.gram_completions,
                            pop_seed,
                            n,
                            sigma,
                            temperature,
                            pad,
                        )
                    )
                bar.update()
            rows.append(row)
        bar.close()
    finally:
        engine.close()
    measurement = {
        "settings": {
            "task": settings["task_name"],
            "temperature": temperature,
            "max_new_tokens": tokens,
            "model": Path(model).name,
            "seed": seed,
        },
        "design": asdict(design),
        "es_arm": {"sigma": design.es_arm[0], "members": design.es_arm[1]} if design.es_arm else None,
        "trace_per_completion": sq,
        "rows": rows,
        "cpu_seconds": time.process_time() - start,
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(measurement))
    return measurement


def _own_q(
    direction_gram,
    population_direction,
    engine,
    center,
    prompt_ids,
    completions,
    per_prompt,
    pop_seed,
    n,
    sigma,
    temperature,
    pad,
) -> list[list[float]]:
    """Q = (sigma^2/2)(1/N) sum_j d_j^T I_b d_j (d_j = eps_j - eps_bar) of one population along its own directions,
    from each of the first `per_prompt` center completions of every prompt: [prompt][completion]."""
    p = len(prompt_ids)
    gram = direction_gram(
        engine.model,
        center,
        [prompt_ids[i] for i in range(p) for _ in range(per_prompt)],
        [completions[i][b] for i in range(p) for b in range(per_prompt)],
        [population_direction(center, pop_seed, 0, j) for j in range(n)],
        temperature,
        pad,
    )
    centering = np.eye(n) - 1.0 / n
    q = 0.5 * sigma**2 * np.einsum("jk,klb,lj->b", centering, gram, centering) / n
    return q.reshape(p, per_prompt).tolist()


def relative_sd_summary(measurement: dict) -> list[dict]:
    """Per cell: one population's relative sd of JSpol_N (the mean over prompts) and the s measured, to size the
    next design with paper_checks.lemma_as_stated.draws_for_half_width."""
    out = []
    for r in measurement["rows"]:
        j = np.asarray(r["jspol"], dtype=float).mean(axis=1)
        out.append(
            {
                "sigma": r["sigma"],
                "members": r["members"],
                "populations": int(j.size),
                "relative_sd": float(j.std(ddof=1) / j.mean()) if j.mean() > 0 else math.nan,
                "s": float(np.mean(r["s"])),
            }
        )
    return out
