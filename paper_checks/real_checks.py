"""Verdicts on the paper's claims from real training runs (run directories of `python -m llm train`).

Each function takes the Evidence and returns a Verdict for one claim id. Differences of Pass@k are
paired by prompt (a run evaluates its base and its final model on the same test prompts; runs of
different methods with the same seed share their test prompts) and bootstrapped over seeds and
prompts. Pass@k values are fractions here; the report shows points (x100).
"""
from __future__ import annotations

import numpy as np

from paper_checks import paper_numbers as paper
from paper_checks.evidence import Evidence, eval_of, heldout_of, per_problem_pass
from paper_checks.rundir import Run
from paper_checks.verdict import (FAILS, HOLDS, INCONCLUSIVE, MISSING, Verdict, bootstrap_mean,
                                  bootstrap_two_sample,
                                  fmt_interval, status_from_interval, status_no_worse)
from theory.paper_constants import LEMMA1_S_LIMIT

KS = (1, 16, 32)
NO_LOSS_TOLERANCE = 0.02  # "keeps Pass@1" / "no forgetting": a loss of at most 2 points
LEMMA1_MAX_S = LEMMA1_S_LIMIT  # Lemma 1 is claimed where s = E KL(pi_{theta+sigma eps} || pi_theta) is small


def _missing(claim_id: str, what: str) -> Verdict:
    return Verdict(claim_id, MISSING, "n/a", note=f"needs {what}")


def _evals_with(runs: list[Run], which: str, k: int) -> list[Run]:
    return [r for r in runs if eval_of(r, which) and str(k) in eval_of(r, which)["pass_at_k"]
            and "per_problem" in eval_of(r, which)]


def diff_vs_base(runs: list[Run], k: int, which: str = "final") -> tuple[float, float, float] | None:
    """Paired Pass@k difference final - base over the runs' test prompts, with its bootstrap interval."""
    runs = [r for r in _evals_with(runs, which, k) if r in _evals_with(runs, "base", k)]
    if not runs:
        return None
    return bootstrap_mean([per_problem_pass(eval_of(r, which), k) - per_problem_pass(eval_of(r, "base"), k)
                           for r in runs])


def diff_between(a: list[Run], b: list[Run], k: int) -> tuple[float, float, float] | None:
    """Pass@k difference final(a) - final(b), paired by seed (same seed, same test prompts)."""
    pairs = [(ra, rb) for ra in _evals_with(a, "final", k) for rb in _evals_with(b, "final", k)
             if ra.seed == rb.seed and [p["id"] for p in eval_of(ra, "final")["per_problem"]]
             == [p["id"] for p in eval_of(rb, "final")["per_problem"]]]
    if not pairs:
        return None
    return bootstrap_mean([per_problem_pass(eval_of(ra, "final"), k) - per_problem_pass(eval_of(rb, "final"), k)
                           for ra, rb in pairs])


def _combine(statuses: list[str]) -> str:
    """All parts hold -> holds; any part fails -> does not hold; otherwise inconclusive."""
    if all(s == HOLDS for s in statuses):
        return HOLDS
    if any(s == FAILS for s in statuses):
        return FAILS
    return INCONCLUSIVE


def improves_over_base(ev: Evidence, claim_id: str, name: str, ks=KS) -> Verdict:
    """`name` raises Pass@k over the base for every k in ks."""
    runs = ev.by_variant(name)
    parts, texts, evidence = [], [], {}
    for k in ks:
        d = diff_vs_base(runs, k)
        if d is None:
            return _missing(claim_id, f"{name} runs with base and final evaluations (Pass@{k})")
        parts.append(status_from_interval(d[1], d[2]))
        texts.append(f"@{k} {fmt_interval(*d)}")
        evidence[f"pass_at_{k}_minus_base"] = d
    return Verdict(claim_id, _combine(parts), "; ".join(texts), evidence=evidence | {"seeds": len(runs)})


def es_improves_over_base(ev: Evidence) -> Verdict:
    return improves_over_base(ev, "es_improves_over_base", "es")


def grpo_raises_pass1(ev: Evidence) -> Verdict:
    return improves_over_base(ev, "grpo_raises_pass1", "grpo", ks=(1,))


def grpo_passk_below_base(ev: Evidence) -> Verdict:
    """GRPO ends below the base on both Pass@16 and Pass@32."""
    runs = ev.by_variant("grpo")
    parts, texts, evidence = [], [], {}
    for k in (16, 32):
        d = diff_vs_base(runs, k)
        if d is None:
            return _missing("grpo_passk_below_base", f"grpo runs with base and final evaluations (Pass@{k})")
        parts.append(status_from_interval(-d[2], -d[1]))  # claim: base - final > 0
        texts.append(f"@{k} {fmt_interval(*d)}")
        evidence[f"pass_at_{k}_minus_base"] = d
    return Verdict("grpo_passk_below_base", _combine(parts), "; ".join(texts), evidence=evidence,
                   note="GRPO final minus base; the claim needs both intervals below zero")


def es_passk_above_grpo(ev: Evidence) -> Verdict:
    parts, texts, evidence = [], [], {}
    for k in (16, 32):
        d = diff_between(ev.by_variant("es"), ev.by_variant("grpo"), k)
        if d is None:
            return _missing("es_passk_above_grpo", "es and grpo runs with the same seeds")
        parts.append(status_from_interval(d[1], d[2]))
        texts.append(f"@{k} {fmt_interval(*d)}")
        evidence[f"es_minus_grpo_pass_at_{k}"] = d
    return Verdict("es_passk_above_grpo", _combine(parts), "; ".join(texts), evidence=evidence)


def _series(run: Run, key: str) -> np.ndarray:
    return np.array([row[key] for row in run.metrics if isinstance(row.get(key), (int, float))], dtype=float)


def entropy_change(run: Run) -> float | None:
    """Relative change of mean token entropy from the first step to the mean of the last fifth of steps."""
    h = _series(run, "entropy")
    if h.size < 2 or h[0] <= 0:
        return None
    tail = h[-max(1, h.size // 5):]
    return float(tail.mean() / h[0] - 1.0)


def entropy_collapse(ev: Evidence) -> Verdict:
    """GRPO's entropy falls, and falls more than ES's (relative change over training)."""
    changes = {}
    for name in ("grpo", "es"):
        vals = [c for c in (entropy_change(r) for r in ev.by_variant(name)) if c is not None]
        if not vals:
            return _missing("entropy_collapse", f"{name} runs with per-step entropy in metrics.jsonl")
        changes[name] = vals
    g = bootstrap_mean([np.array(changes["grpo"])])
    d = bootstrap_two_sample(changes["es"], changes["grpo"])
    falls = status_from_interval(-g[2], -g[1])
    more = status_from_interval(d[1], d[2])
    ours = (f"GRPO entropy change {g[0] * 100:+.1f}% [{g[1] * 100:+.1f}, {g[2] * 100:+.1f}]; "
            f"ES {np.mean(changes['es']) * 100:+.1f}%")
    return Verdict("entropy_collapse", _combine([falls, more]), ours,
                   evidence={"grpo_relative_change": changes["grpo"], "es_relative_change": changes["es"]},
                   note="relative change of per-step token entropy, first step vs the last fifth of steps")


def schedules_pareto(ev: Evidence) -> Verdict:
    """ES->GRPO gives the best Pass@32 of all methods."""
    names = ("es-grpo", "grpo-es", "es", "grpo")
    finals = {n: [eval_of(r, "final")["pass_at_k"] for r in ev.by_variant(n) if eval_of(r, "final")] for n in names}
    if any(not finals[n] for n in names):
        return _missing("schedules_pareto", "es, grpo, es-grpo and grpo-es runs with final evaluations")
    others = [n for n in names if n != "es-grpo"]
    best_other = max(others, key=lambda n: np.mean([f["32"] for f in finals[n]]))
    d = diff_between(ev.by_variant("es-grpo"), ev.by_variant(best_other), 32)
    if d is None:
        return _missing("schedules_pareto", f"es-grpo and {best_other} runs with the same seeds")
    table = {n: {k: float(np.mean([f[k] for f in finals[n]])) for k in ("1", "32")} for n in names}
    return Verdict("schedules_pareto", status_from_interval(d[1], d[2]),
                   f"ES->GRPO minus best other ({best_other}) @32 {fmt_interval(*d)}",
                   evidence={"mean_final": table, "best_other": best_other, "diff": d})


def final_drift(run: Run) -> float | None:
    d = _series(run, "drift_rel")
    return float(d[-1]) if d.size else None


def drift_ratio(ev: Evidence) -> Verdict:
    """ES moves the weights much further than GRPO (relative L2 drift)."""
    es = [x for x in map(final_drift, ev.by_variant("es")) if x is not None]
    gr = [x for x in map(final_drift, ev.by_variant("grpo")) if x is not None]
    if not es or not gr:
        return _missing("drift_ratio", "es and grpo runs with drift_rel in metrics.jsonl")
    ratio = float(np.mean(es) / np.mean(gr))
    rng = np.random.default_rng(0)
    boot = [np.mean(rng.choice(es, len(es))) / np.mean(rng.choice(gr, len(gr))) for _ in range(2000)]
    lo, hi = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
    null = [x for x in map(final_drift, ev.by_variant("es[null]")) if x is not None]
    note = f"random-z null ES drift / real ES drift = {np.mean(null) / np.mean(es):.2f}" if null else "no null-control run"
    return Verdict("drift_ratio", status_from_interval(lo - 1, hi - 1), f"ES/GRPO drift ratio {ratio:.1f}x [{lo:.1f}, {hi:.1f}]",
                   interval=(lo, hi), evidence={"es": es, "grpo": gr, "null": null}, note=note)


def update_analysis_of(run: Run) -> dict | None:
    return (run.eval or {}).get("update_analysis")


def update_sparsity(ev: Evidence) -> Verdict:
    """Share of non-zero ES update entries with |delta| <= 1.5e-3, against the paper's 77.6%-93.0%."""
    key = "0.0015"
    shares = [100 * a["share_nonzero_le_tau"][key] for a in map(update_analysis_of, ev.by_variant("es")) if a]
    if not shares:
        return _missing("update_sparsity", "es runs with update_analysis in eval.json")
    lo_paper, hi_paper = min(v["share"][1] for v in paper.TABLE4_DRIFT.values()), max(v["share"][1] for v in paper.TABLE4_DRIFT.values())
    mean = float(np.mean(shares))
    null = [100 * a["share_nonzero_le_tau"][key] for a in map(update_analysis_of, ev.by_variant("es[null]")) if a]
    status = HOLDS if lo_paper <= mean <= hi_paper else FAILS
    note = (f"the random-z null gives {np.mean(null):.1f}%: the share says little about the reward signal"
            if null and abs(np.mean(null) - mean) < 5 else (f"null {np.mean(null):.1f}%" if null else "no null-control run"))
    return Verdict("update_sparsity", status, f"{mean:.1f}% of non-zero entries have |delta| <= 1.5e-3",
                   evidence={"es": shares, "null": null, "paper_range": [lo_paper, hi_paper]}, note=note)


def thresholded_pass1(ev: Evidence) -> Verdict:
    """Keeping only the largest ~22% of ES update entries keeps Pass@1 (within 2 points)."""
    diffs = []
    for run in ev.by_variant("es"):
        rows = [t for t in (run.eval or {}).get("thresholded", []) if abs(t["sparsity_percent"] - 78) < 1e-6]
        final = eval_of(run, "final")
        if rows and final:
            diffs.append(rows[0]["pass_at_1"] - final["pass_at_k"]["1"])
    if not diffs:
        return _missing("thresholded_pass1", "es runs with a 78%-sparsity thresholded checkpoint evaluated")
    mean, lo, hi = bootstrap_mean([np.array(diffs)])
    return Verdict("thresholded_pass1", status_no_worse(lo, hi, NO_LOSS_TOLERANCE),
                   f"Pass@1 change at 78% sparsity {fmt_interval(mean, lo, hi)}", evidence={"diffs": diffs},
                   note="interval over seeds; holds when no loss beyond 2 points")


def no_forgetting(ev: Evidence) -> Verdict:
    """Held-out task Pass@1 does not drop by more than 2 points after ES or after GRPO."""
    parts, texts, evidence = [], [], {}
    for name in ("es", "grpo"):
        runs = [r for r in ev.by_variant(name) if heldout_of(r, "base") and heldout_of(r, "final")]
        if not runs:
            return _missing("no_forgetting", f"{name} runs with held-out evaluations before and after")
        d = bootstrap_mean([per_problem_pass(heldout_of(r, "final"), 1) - per_problem_pass(heldout_of(r, "base"), 1)
                            for r in runs])
        parts.append(status_no_worse(d[1], d[2], NO_LOSS_TOLERANCE))
        texts.append(f"{name.upper()} held-out @1 {fmt_interval(*d)}")
        evidence[name] = d
    return Verdict("no_forgetting", _combine(parts), "; ".join(texts), evidence=evidence)


def smoothed_reward(run: Run, tail: float = 0.2) -> float | None:
    r = _series(run, "reward_mean")
    return float(r[-max(1, int(r.size * tail)):].mean()) if r.size else None


def model_size(run: Run) -> int | None:
    """Number of parameter entries of the run's model (from its update analysis)."""
    return ((run.eval or {}).get("update_analysis") or {}).get("entries")


def population_size(ev: Evidence) -> Verdict:
    """Larger models need smaller N: the reward gain from the smallest to the largest N is smaller
    for the larger model.

    The sweep is every plain ES run, grouped by (model, N); the smoothed training reward (mean over
    the last fifth of steps) stands in for the paper's smoothed GSM8K reward (Table 6). The gain is
    paired by seed within a model, and the difference of gains is bootstrapped over seeds."""
    sweep: dict[str, dict[int, dict[int, float]]] = {}
    sizes: dict[str, int] = {}
    for run in ev.by_variant("es", sweep=True):
        value, size = smoothed_reward(run), model_size(run)
        if value is None or size is None:
            continue
        model = str(run.config.get("model"))
        sizes[model] = size
        sweep.setdefault(model, {}).setdefault(int(run.config["es"]["population_size"]), {})[run.seed] = value
    gains = {}
    for model, by_n in sweep.items():
        if len(by_n) >= 2:
            lo_n, hi_n = min(by_n), max(by_n)
            seeds = sorted(set(by_n[lo_n]) & set(by_n[hi_n]))
            if seeds:
                gains[model] = np.array([by_n[hi_n][s] - by_n[lo_n][s] for s in seeds])
    if len(gains) < 2:
        return _missing("population_size", "ES runs at two or more population sizes (same seeds) for two or more models")
    small, large = min(gains, key=sizes.get), max(gains, key=sizes.get)
    mean, lo, hi = bootstrap_two_sample(gains[small], gains[large])
    ours = "; ".join(f"{sizes[m]:,} params: gain N={min(sweep[m])}->{max(sweep[m])} {gains[m].mean():+.3f}" for m in (small, large))
    return Verdict("population_size", status_from_interval(lo, hi), ours, interval=(lo, hi),
                   evidence={"smoothed_reward": {m: {str(n): v for n, v in by_n.items()} for m, by_n in sweep.items()},
                             "model_sizes": sizes},
                   note="two tiny models stand in for 0.5B-3B; holds when the smaller model gains more from a larger N")


def _pair_final(ev: Evidence, a: str, b: str, k: int, claim_id: str, tolerance: float | None) -> Verdict:
    d = diff_between(ev.by_variant(a), ev.by_variant(b), k)
    if d is None:
        return _missing(claim_id, f"{a} and {b} runs with the same seeds")
    status = status_from_interval(d[1], d[2]) if tolerance is None else status_no_worse(d[1], d[2], tolerance)
    return Verdict(claim_id, status, f"{a} minus {b} @{k} {fmt_interval(*d)}", evidence={"diff": d})


def zscore_essential(ev: Evidence) -> Verdict:
    return _pair_final(ev, "es", "es[no-zscore]", 1, "zscore_essential", None)


def one_point_vs_two_point(ev: Evidence) -> Verdict:
    return _pair_final(ev, "es", "es[two-point]", 1, "one_point_vs_two_point", NO_LOSS_TOLERANCE)


def _last_population(run: Run) -> dict | None:
    ms = (run.population or {}).get("measurements") or []
    return ms[-1] if ms else None


def lemma1_real(ev: Evidence) -> Verdict:
    """Measured JSpol_N against (sigma^2/2)(1 - 1/N) tr I_x on the real population."""
    ratios, s_values = [], []
    for run in ev.by_variant("es"):
        for m in (run.population or {}).get("measurements", []):
            if m.get("lemma1_prediction"):
                ratios.append(m["jspol"]["mean"] / m["lemma1_prediction"])
                s_values.append(m["validity"]["measured"]["mean"])
    if not ratios:
        return _missing("lemma1", "population.json with jspol and lemma1_prediction")
    mean, lo, hi = bootstrap_mean([np.array(ratios)])
    s_median = float(np.median(s_values))
    if s_median > LEMMA1_MAX_S:
        status, note = INCONCLUSIVE, (f"the runs' sigma puts the population outside Lemma 1's small-s regime "
                                      f"(s > {LEMMA1_MAX_S}); see the sigma x N grid")
    else:
        status = HOLDS if lo <= 1.1 and hi >= 0.9 else FAILS
        note = "holds when the interval of the ratio meets [0.9, 1.1]"
    return Verdict("lemma1", status, f"JSpol / prediction = {mean:.2f} [{lo:.2f}, {hi:.2f}]; s = {s_median:.2g}",
                   interval=(lo, hi), evidence={"ratios": ratios, "s": s_values}, note=note)


def lemma2_real(ev: Evidence) -> Verdict:
    """One sample from each of K members against K samples from one policy of the same mean success."""
    gaps = []
    for run in ev.by_variant("es"):
        m = _last_population(run)
        if m and "lemma2" in m:
            gaps.extend(np.array(m["lemma2"]["distinct_members_pass"]) - np.array(m["lemma2"]["same_policy_pass"]))
    if not gaps:
        return _missing("lemma2", "population.json with lemma2 estimates")
    gaps = np.array(gaps)
    return Verdict("lemma2", HOLDS if np.all(gaps >= -1e-12) else FAILS,
                   f"P_pop - P_same: min {gaps.min():.3g}, mean {gaps.mean():.3g}", evidence={"gaps": gaps.tolist()},
                   note="an identity of the measured member success rates (Lemma 2 is exact), so it must hold")


REAL_CHECKS = {
    "entropy_collapse": entropy_collapse,
    "grpo_raises_pass1": grpo_raises_pass1,
    "es_improves_over_base": es_improves_over_base,
    "es_passk_above_grpo": es_passk_above_grpo,
    "grpo_passk_below_base": grpo_passk_below_base,
    "schedules_pareto": schedules_pareto,
    "drift_ratio": drift_ratio,
    "update_sparsity": update_sparsity,
    "thresholded_pass1": thresholded_pass1,
    "no_forgetting": no_forgetting,
    "population_size": population_size,
    "zscore_essential": zscore_essential,
    "one_point_vs_two_point": one_point_vs_two_point,
    "lemma1": lemma1_real,
    "lemma2": lemma2_real,
}
