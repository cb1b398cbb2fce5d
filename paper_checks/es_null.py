"""ES beside its random-z null: is ES's forgetting, and its drift, more than a random walk's? (the premise record's
`es_null`, paper_checks/premise_record.py)

The null (variant `es[null]`, llm/settings/es_config.py null_control) is ES with the same N, sigma and alpha whose
fitness z are standardized random normals drawn independently of the noise (llm/es/algorithm.py ES.fitness): it
moves exactly as often and as far as ES, in directions that carry no reward signal.

Held-out Pass@1 change: final - base on the held-out task (eval.json's heldout, each run's own base evaluation),
per (seed, prompt), for ES, the null and GRPO, with the seeds x prompts interval (design.seeds_by_prompts); and ES -
null of the same seed per prompt: `es_forgets_more_than_null` when that interval lies below 0, `..._less_...` when
above, `within_HELDOUT_MARGIN_of_null` when it lies inside +-HELDOUT_MARGIN, else `inconclusive`.

Drift against the random walk. ES's update (llm/es/plan.py) is Delta_t = (alpha / N) sum_d c_d E_d with c_d = sum of
s_m z_m over the members m of direction d and E_d ~ N(0, I_d) (llm/es/noise.py), d the trained parameters. Under
the null, given z, Delta_t ~ N(0, (alpha / N)^2 sum_d c_d^2 I_d):

    one-point (d_m = m, s_m = 1)   sum_d c_d^2 = sum_m z_m^2 = N (population std; times (s / (s + 1e-8))^2, 1 to
                                   within 1e-8), so Delta_t ~ N(0, alpha^2 / N I_d) whatever the z
    antithetic (c_d = z_2d - z_2d+1)  E sum_d c_d^2 = N - 2 sum_d E z_2d z_2d+1 = N + N / (N - 1) = N^2 / (N - 1):
                                   standardized z have sum z = 0 and sum z^2 = N, so E z_i z_j = -1 / (N - 1)

Steps draw fresh noise, so the increments are independent with mean 0 and

    E ||theta_T - theta_0||^2 = T d alpha^2 c / N,   c = 1 (one-point), N / (N - 1) (antithetic)

over the T steps with a non-zero update (the null skips the steps real ES skips: all rewards equal). One-point,
||theta_T - theta_0||^2 = (T alpha^2 / N) chi^2_d exactly: the drift lies within about 1 / sqrt(2 d) of the
prediction alpha sqrt(T d c / N) / ||theta_0||, relative. Real ES's z depend on the noise only through the members'
rewards; along any unit vector u its step moves (alpha / N) sum z_m E_m.u <= alpha (Cauchy-Schwarz, E_m.u ~ N(0,1)),
so however coherently it learns its drift is at most sqrt(1 + T N / d) times the random walk's: with d >> T N,
drift cannot tell learning from noise (the published answer: T N / d = 0.018, at most 1.009).

Per run: alpha, N, antithetic (config.json), T (metrics.jsonl: steps with es_update_norm > 0), d (eval.json's
update_analysis entries), ||theta_0|| (es_update_norm / drift_rel at the first step with a non-zero update, where
theta_t - theta_0 is that step's update) and drift_rel at the last step. The ratio measured / predicted per seed has
a t interval over seeds; `equals_random_walk` only when that interval lies inside 1 +- DRIFT_MARGIN (an equivalence
reading, never from a test that fails to reject 1), `above_random_walk` / `below_random_walk` when it excludes 1
outside the margin, else `inconclusive`. Beside it, the ratio to sqrt(sum_t es_update_norm_t^2) / ||theta_0||: the
same walk from the steps as they were, which tests the independence of the increments alone.
"""

from __future__ import annotations

import math

import numpy as np

from escov.paper_checks.design import seed_level, seeds_by_prompts
from escov.paper_checks.evidence import Evidence, heldout_of, per_problem_pass
from escov.paper_checks.rundir import Run
from escov.theory.decisions import over_seeds

NULL = "es[null]"
METHODS = ("es", NULL, "grpo")
DRIFT_MARGIN = 0.05  # "drift equals a random walk's": the ratio's interval inside [0.95, 1.05], stated in advance
HELDOUT_MARGIN = 0.02  # ES - null held-out Pass@1 within 2 points (the no_forgetting claim's 2 points)


def walk_constant(population_size: int, antithetic: bool) -> float:
    """c of E ||theta_T - theta_0||^2 = T d alpha^2 c / N (module docstring)."""
    return population_size / (population_size - 1) if antithetic else 1.0


def predicted_drift(alpha: float, steps: int, params: int, population_size: int, antithetic: bool = False) -> float:
    """The random walk's root mean square ||theta_T - theta_0||: alpha sqrt(T d c / N)."""
    return alpha * math.sqrt(steps * params * walk_constant(population_size, antithetic) / population_size)


def _series(run: Run, key: str) -> np.ndarray:
    return np.array([row.get(key) for row in run.metrics if isinstance(row.get(key), (int, float))], dtype=float)


def run_drift(run: Run) -> dict | None:
    """One run's drift against the walk (module docstring); None when its records lack a part."""
    es = run.config.get("es") or {}
    norms, drifts = _series(run, "es_update_norm"), _series(run, "drift_rel")
    params = ((run.eval or {}).get("update_analysis") or {}).get("entries")
    moved = np.flatnonzero(norms > 0)
    if not es.get("alpha") or not es.get("population_size") or not params or not moved.size:
        return None
    if norms.size != drifts.size or drifts[moved[0]] <= 0:
        return None
    theta0 = float(norms[moved[0]] / drifts[moved[0]])
    steps = int(moved.size)
    walk = predicted_drift(es["alpha"], steps, int(params), es["population_size"], bool(es.get("antithetic")))
    return {
        "run": run.name,
        "seed": run.seed,
        "steps": steps,
        "params": int(params),
        "theta0_norm": theta0,
        "drift_rel": float(drifts[-1]),
        "predicted_rel": walk / theta0,
        "ratio": float(drifts[-1] * theta0 / walk),
        "ratio_to_steps": float(drifts[-1] * theta0 / math.sqrt(float((norms**2).sum()))),
    }


def drift_reading(interval: dict) -> str:
    """equals / above / below the random walk, or inconclusive (module docstring: DRIFT_MARGIN)."""
    if interval["lo"] >= 1 - DRIFT_MARGIN and interval["hi"] <= 1 + DRIFT_MARGIN:
        return "equals_random_walk"
    if interval["lo"] > 1:
        return "above_random_walk"
    if interval["hi"] < 1:
        return "below_random_walk"
    return "inconclusive"


def heldout_reading(interval: dict) -> str:
    """ES - null held-out Pass@1 (module docstring: HELDOUT_MARGIN)."""
    if interval["hi"] < 0:
        return "es_forgets_more_than_null"
    if interval["lo"] > 0:
        return "es_forgets_less_than_null"
    if interval["lo"] > -HELDOUT_MARGIN and interval["hi"] < HELDOUT_MARGIN:
        return f"within_{round(100 * HELDOUT_MARGIN)}_points_of_null"
    return "inconclusive"


def _interval(est) -> dict:
    return {k: v for k, v in est.to_json().items() if k in ("mean", "lo", "hi", "design", "detectable")}


def heldout_changes(runs: list[Run]) -> dict[int, tuple[tuple, np.ndarray, int]]:
    """seed -> (prompt ids, held-out Pass@1 final - base per prompt, samples) of the runs with both evaluations."""
    out = {}
    for r in runs:
        base, final = heldout_of(r, "base"), heldout_of(r, "final")
        if base and final and base.get("per_problem") and final.get("per_problem"):
            ids = tuple(p["id"] for p in final["per_problem"])
            if ids == tuple(p["id"] for p in base["per_problem"]):
                out[r.seed] = (ids, per_problem_pass(final, 1) - per_problem_pass(base, 1), int(final["n"]))
    return out


def _over_design(rows: list[tuple[tuple, np.ndarray, int]]) -> dict | None:
    """The seeds x prompts interval of per-prompt rows on one prompt set, each of n samples (None: fewer than 2 rows,
    other prompts or another sample count)."""
    if len(rows) < 2 or len({ids for ids, _, _ in rows}) > 1 or len({n for _, _, n in rows}) > 1:
        return None
    return _interval(seeds_by_prompts(np.stack([v for _, v, _ in rows]), rows[0][2]))


def es_null(ev: Evidence) -> dict:
    """The record of the module docstring; a part whose runs are missing says why."""
    record: dict = {"null_variant": NULL, "drift_margin": DRIFT_MARGIN, "heldout_margin": HELDOUT_MARGIN}
    changes = {m: heldout_changes(ev.by_variant(m)) for m in METHODS}
    record["heldout_pass1_change"] = {m: _over_design(list(c.values())) for m, c in changes.items()}
    seeds = sorted(set(changes["es"]) & set(changes[NULL]))
    paired = [(changes["es"][s][0], changes["es"][s][1] - changes[NULL][s][1], changes["es"][s][2]) for s in seeds]
    same = all(changes["es"][s][0] == changes[NULL][s][0] for s in seeds)
    diff = _over_design(paired) if same else None
    record["es_minus_null_heldout"] = (
        diff | {"reading": heldout_reading(diff)}
        if diff
        else {"reason": f"needs es and {NULL} runs of at least 2 common seeds with held-out evaluations"}
    )
    record["drift"] = {}
    for m in ("es", NULL):
        rows = [d for d in map(run_drift, ev.by_variant(m)) if d is not None]
        if not rows:
            record["drift"][m] = {"reason": "no run with es_update_norm, drift_rel and update_analysis"}
            continue
        ratio = seed_level(over_seeds([r["ratio"] for r in rows])).to_json()
        record["drift"][m] = {
            "runs": len(rows),
            "drift_rel": [min(r["drift_rel"] for r in rows), max(r["drift_rel"] for r in rows)],
            "predicted_rel": float(np.mean([r["predicted_rel"] for r in rows])),
            "ratio": {k: ratio[k] for k in ("mean", "lo", "hi", "design")},
            "reading": drift_reading(ratio),
            "ratio_to_steps": seed_level(over_seeds([r["ratio_to_steps"] for r in rows])).to_json()["mean"],
            "per_run": rows,
        }
    return record


def _pm(e: dict | None) -> str:
    """An interval in points (x100)."""
    if not e or e.get("mean") is None:
        return "not measured"
    if e.get("lo") is None or not math.isfinite(e["lo"]):
        return f"{100 * e['mean']:+.2f} (no interval)"
    return f"{100 * e['mean']:+.2f} [{100 * e['lo']:+.2f}, {100 * e['hi']:+.2f}]"


def render(record: dict | None) -> list[str]:
    """The premise section's lines on ES beside its null ([] without a record)."""
    if not record:
        return []
    h, d = record["heldout_pass1_change"], record["es_minus_null_heldout"]
    lines = [
        f"- Forgetting against the random-z null ({NULL}: same N, sigma, alpha): held-out Pass@1 final - base, "
        f"points: ES {_pm(h['es'])}, null {_pm(h[NULL])}, GRPO {_pm(h['grpo'])}; ES - null "
        + (f"{_pm(d)}: **{d['reading']}**." if "reading" in d else f"not measured ({d['reason']}).")
    ]
    parts = []
    for m, e in record["drift"].items():
        if "ratio" not in e:
            parts.append(f"{m} not measured ({e['reason']})")
            continue
        lo, hi = e["drift_rel"]
        r = e["ratio"]
        ratio = f"{r['mean']:.4f}" + ("" if r["lo"] is None else f" [{r['lo']:.4f}, {r['hi']:.4f}]")
        parts.append(
            f"{m} {lo:.4f}-{hi:.4f} against {e['predicted_rel']:.4f} predicted, ratio {ratio} "
            f"(**{e['reading']}**, {e['runs']} runs)"
        )
    lines.append(
        "- Drift ||theta_T - theta_0|| / ||theta_0|| against the random walk alpha sqrt(T d c / N) / ||theta_0|| "
        f"(equal only inside 1 +- {DRIFT_MARGIN:g}): " + "; ".join(parts) + "."
    )
    return lines
