"""Verdicts on the paper's claims from real training runs (run directories of `python -m escov.llm train`).

Each check takes the Evidence and returns a Verdict for the claim it registers on (`registers(claim_id)(check)`,
paper_checks.registry), decided by the claim's Test (theory.claims) on an interval from one design:

- per-prompt comparisons (Pass@k final - base, method - method): paper_checks.design.seeds_by_prompts,
  seeds x test prompts shared by every run (resampled jointly, so differences stay paired by prompt)
  x samples per prompt; two methods are paired by seed and by prompt;
- per-run numbers (drift, entropy change, smoothed reward, update shares): Student t over seeds
  (theory.decisions.over_seeds, or welch for two independent groups of runs).

Every verdict carries the design, the test, and a power line: the smallest difference the design
detects at 80% power, beside the paper's effect size. Pass@k values are fractions here; the report
shows points (x100).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from escov.paper_checks.design import Estimate, plan_text, seed_level, seeds_by_prompts
from escov.paper_checks.evidence import Evidence, eval_of, heldout_of, per_problem_pass, variant
from escov.paper_checks.lemma_grid import lemma1_decision
from escov.paper_checks.matched import Curve, curve_of, matched_difference, matched_seed_values
from escov.paper_checks.registry import CheckRegistry
from escov.paper_checks.rundir import Run
from escov.paper_checks.verdict import (IDENTITY, INCONCLUSIVE, MISSING, NOT_TESTABLE, OUTSIDE_REGIME, Verdict, decimals,
                                        fmt_interval)
from escov.theory import paper
from escov.theory.claims import BY_ID, CLAIMS, LEMMA1_MARGIN, THRESHOLDED_PERCENT
from escov.theory.decisions import FAILS, combine, over_seeds, welch
from escov.theory.paper import LEMMA1_S_LIMIT

KS = (1, 16, 32)
LEMMA1_MAX_S = LEMMA1_S_LIMIT  # Lemma 1 is claimed where s = E KL(pi_{theta+sigma eps} || pi_theta) is small
SPARSITY_TAU = "0.0015"
_REGISTRY = CheckRegistry(CLAIMS)
# registers(claim_id)(check), written after each check: the check is that claim's real-run check. Not as a decorator:
# mutation testing (scripts/mutation.py, mutmut) leaves every decorated function unmutated, and these are the verdicts
registers = _REGISTRY.registers


# What a check reads, as needs (variant, measurement): measurement "" is the variant's runs themselves (their
# metrics and their base and final evaluations); the others a run measures only when its settings ask for them.
# A reproduction's budget plans a set of needs (`provided` over its planned runs); a check that lacks data whose
# needs the budget does not plan is "not run in this budget" (report.real_verdict), otherwise "missing data".
HELDOUT, PROBE, CURVE, SWEEP = "held-out evaluations", "the Lemma 1 probe", "a curve along training", "the population sweep"


def thresholded(sparsity: float) -> str:
    """The need of a checkpoint with `sparsity` percent of its update entries reverted (llm train's threshold_keep)."""
    return f"a checkpoint thresholded at {sparsity:g}% sparsity"


def provided(config: dict, *, curve: bool = False, sweep: bool = False) -> set[tuple[str, str]]:
    """The needs one run gives the checks, from its full config (TrainConfig.to_dict, as config.json holds it):
    its variant's runs, and the measurements its settings ask for; curve: a curve is evaluated along it; sweep: it
    is a run of the population-size sweep."""
    name = variant(config)
    got = {(name, "")} | {(name, thresholded(100 - keep)) for keep in config.get("threshold_keep") or ()}
    for wanted, need in ((config.get("heldout_task"), HELDOUT), (config.get("probe"), PROBE), (curve, CURVE), (sweep, SWEEP)):
        if wanted:
            got.add((name, need))
    return got


def describe_need(need) -> str:
    name, measurement = need
    return f"{name} runs" + (f" with {measurement}" if measurement else "")


def _missing(claim_id: str, what: str, needs: tuple[tuple[str, str], ...] = ()) -> Verdict:
    """No verdict for want of data: what the check needs in words, and as needs (in its evidence)."""
    return Verdict(claim_id, MISSING, "n/a", note=f"needs {what}", evidence={"needs": [list(n) for n in needs]},
                   test=BY_ID[claim_id].describe_test())


def _power(est: Estimate, claim_id: str, scale: float = 100.0, unit: str = " pts", label: str = "") -> str:
    effect = BY_ID[claim_id].test_of(label).paper_effect
    d = decimals(0.0, est.detectable * scale)   # two significant digits, at least two decimals
    found = ("no run-to-run variance (one seed)" if not math.isfinite(est.detectable)
             else f"{est.detectable * scale:.{d}f}{unit}")
    return f"detectable at 80% power: {found}; paper: {effect}"


def _verdict(claim_id: str, parts: list[tuple[str, Estimate]], *, scale: float = 100.0, unit: str = " pts",
             note: str = "", evidence: dict | None = None) -> Verdict:
    """One verdict from labelled estimates, each decided by its part's test (Claim.test_of: the claim's test unless
    the claim gives the part its own), combined (all must hold; any that fails, fails)."""
    claim = BY_ID[claim_id]
    statuses = [claim.test_of(label).decide(e.lo, e.hi) for label, e in parts]
    ours = "; ".join(f"{label} {fmt_interval(e.mean, e.lo, e.hi, scale, unit)}" for label, e in parts)
    interval = (parts[0][1].lo, parts[0][1].hi) if len(parts) == 1 else None
    if any(e.seeds < 2 for _, e in parts):
        note = (note + "; " if note else "") + "one seed: no run-to-run variance, so no decision"
    return Verdict(claim_id, combine(statuses), ours, interval=interval,
                   evidence=(evidence or {}) | {label: e.to_json() for label, e in parts}, note=note,
                   test=claim.describe_test(), design=" | ".join(sorted({e.design for _, e in parts})),
                   power=" | ".join(f"{label}: {_power(e, claim_id, scale, unit, label)}" for label, e in parts))


# ----------------------------------------------------------------------------- per-prompt data

def _has_eval(run: Run, which: str, k: int) -> bool:
    ev = eval_of(run, which)
    return bool(ev) and str(k) in ev["pass_at_k"] and "per_problem" in ev


def _ids(run: Run, which: str) -> list[str]:
    return [p["id"] for p in eval_of(run, which)["per_problem"]]


def _samples(runs: list[Run], which: str) -> int:
    return int(eval_of(runs[0], which)["n"])


def diff_vs_base(runs: list[Run], k: int, which: str = "final") -> Estimate | None:
    """Pass@k final - base per (seed, prompt) over runs sharing their test prompts."""
    runs = [r for r in runs if _has_eval(r, which, k) and _has_eval(r, "base", k)]
    if not runs or any(_ids(r, which) != _ids(runs[0], which) or _ids(r, "base") != _ids(r, which) for r in runs):
        return None
    y = np.stack([per_problem_pass(eval_of(r, which), k) - per_problem_pass(eval_of(r, "base"), k) for r in runs])
    return seeds_by_prompts(y, _samples(runs, which))


def diff_between(a: list[Run], b: list[Run], k: int, which: str = "final") -> Estimate | None:
    """Pass@k a - b per (seed, prompt): runs paired by seed, on the same test prompts."""
    by_seed = {r.seed: r for r in b if _has_eval(r, which, k)}
    pairs = [(ra, by_seed[ra.seed]) for ra in a if _has_eval(ra, which, k) and ra.seed in by_seed]
    if not pairs or any(_ids(ra, which) != _ids(pairs[0][0], which) or _ids(rb, which) != _ids(ra, which)
                        for ra, rb in pairs):
        return None
    y = np.stack([per_problem_pass(eval_of(ra, which), k) - per_problem_pass(eval_of(rb, which), k) for ra, rb in pairs])
    return seeds_by_prompts(y, _samples([p[0] for p in pairs], which))


# ----------------------------------------------------------------------------- Pass@k claims

def improves_over_base(ev: Evidence, claim_id: str, name: str) -> Verdict:
    """`name`'s final Pass@k minus the base's, for every k the claim reads (its pass_at_k), decided by its test."""
    parts = []
    for k in BY_ID[claim_id].pass_at_k:
        d = diff_vs_base(ev.by_variant(name), k)
        if d is None:
            return _missing(claim_id, f"{name} runs with base and final evaluations on the same prompts (Pass@{k})",
                            ((name, ""),))
        parts.append((f"@{k}", d))
    return _verdict(claim_id, parts, note=f"{name} final minus base")


def es_improves_over_base(ev: Evidence) -> Verdict:
    return improves_over_base(ev, "es_improves_over_base", "es")
registers("es_improves_over_base")(es_improves_over_base)


def grpo_raises_pass1(ev: Evidence) -> Verdict:
    return improves_over_base(ev, "grpo_raises_pass1", "grpo")
registers("grpo_raises_pass1")(grpo_raises_pass1)


def grpo_passk_below_base(ev: Evidence) -> Verdict:
    return improves_over_base(ev, "grpo_passk_below_base", "grpo")
registers("grpo_passk_below_base")(grpo_passk_below_base)


def es_passk_above_grpo(ev: Evidence) -> Verdict:
    parts = []
    for k in BY_ID["es_passk_above_grpo"].pass_at_k:
        d = diff_between(ev.by_variant("es"), ev.by_variant("grpo"), k)
        if d is None:
            return _missing("es_passk_above_grpo", "es and grpo runs with the same seeds and test prompts",
                            (("es", ""), ("grpo", "")))
        parts.append((f"ES - GRPO @{k}", d))
    return _verdict("es_passk_above_grpo", parts)
registers("es_passk_above_grpo")(es_passk_above_grpo)


def schedules_pareto(ev: Evidence) -> Verdict:
    """ES->GRPO's Pass@32 above each of ES, GRPO and GRPO->ES (every comparison must hold)."""
    parts = []
    (k,) = BY_ID["schedules_pareto"].pass_at_k
    for other in ("es", "grpo", "grpo-es"):
        d = diff_between(ev.by_variant("es-grpo"), ev.by_variant(other), k)
        if d is None:
            return _missing("schedules_pareto", f"es-grpo and {other} runs with the same seeds and test prompts",
                            (("es-grpo", ""), (other, "")))
        parts.append((f"ES->GRPO - {other} @{k}", d))
    return _verdict("schedules_pareto", parts, note="holds when ES->GRPO is above every other method")
registers("schedules_pareto")(schedules_pareto)


def zscore_essential(ev: Evidence) -> Verdict:
    """z-scored ES against centered rewards at alpha rescaled to the z-scored update norm (the effect
    of z-scoring itself); the same-alpha comparison (mostly a ~1/std(R) smaller step) is shown beside."""
    d = diff_between(ev.by_variant("es"), ev.by_variant("es[no-zscore,rescaled]"), 1)
    if d is None:
        return _missing("zscore_essential", "es and es[no-zscore,rescaled] runs with the same seeds",
                        (("es", ""), ("es[no-zscore,rescaled]", "")))
    same_alpha = diff_between(ev.by_variant("es"), ev.by_variant("es[no-zscore]"), 1)
    shown = (f"; at the same alpha (step size effect, not decided): {fmt_interval(same_alpha.mean, same_alpha.lo, same_alpha.hi)}"
             if same_alpha is not None else "")
    v = _verdict("zscore_essential", [("z-scored - centered at rescaled alpha @1", d)],
                 note="the effect of z-scoring at equal update norm" + shown,
                 evidence={"same_alpha": same_alpha.to_json() if same_alpha is not None else None})
    return v
registers("zscore_essential")(zscore_essential)


def one_point_vs_two_point(ev: Evidence) -> Verdict:
    d = diff_between(ev.by_variant("es"), ev.by_variant("es[two-point]"), 1)
    if d is None:
        return _missing("one_point_vs_two_point", "es and es[two-point] runs with the same seeds",
                        (("es", ""), ("es[two-point]", "")))
    return _verdict("one_point_vs_two_point", [("one-point - two-point @1", d)],
                    note="holds when one-point loses at most 2 points, with the whole interval")
registers("one_point_vs_two_point")(one_point_vs_two_point)


def no_forgetting(ev: Evidence) -> Verdict:
    """Held-out Pass@1 after minus before, for ES and for GRPO: no loss beyond 2 points."""
    parts = []
    for name in ("es", "grpo"):
        runs = [r for r in ev.by_variant(name) if heldout_of(r, "base") and heldout_of(r, "final")]
        if not runs:
            return _missing("no_forgetting", f"{name} runs with held-out evaluations before and after", ((name, HELDOUT),))
        y = np.stack([per_problem_pass(heldout_of(r, "final"), 1) - per_problem_pass(heldout_of(r, "base"), 1) for r in runs])
        parts.append((f"{name.upper()} held-out @1", seeds_by_prompts(y, int(heldout_of(runs[0], "final")["n"]))))
    return _verdict("no_forgetting", parts)
registers("no_forgetting")(no_forgetting)


# ----------------------------------------------------------------------------- at matched Pass@1

def curves_of(runs: list[Run]) -> list[Curve]:
    """The runs' curves (llm/curve.py), those with at least two points."""
    return [c for c in (curve_of(r.curve or [], r.seed or 0) for r in runs) if c is not None]


def _matched_missing(claim_id: str, info: dict) -> Verdict:
    """No comparison: not testable (no supported level), inconclusive (no common range), or missing runs."""
    status = NOT_TESTABLE if info.get("not_testable") else INCONCLUSIVE if "range" in info else MISSING
    moved = (f"; Pass@1 moved ES {100 * info['moved_a']:+.1f} pts, GRPO {100 * info['moved_b']:+.1f} pts"
             if "moved_a" in info else "")
    return Verdict(claim_id, status, "n/a", evidence={"matched": info} | ({"needs": [["es", CURVE], ["grpo", CURVE]]}
                                                                          if status == MISSING else {}),
                   note=info.get("reason", "") + moved, test=BY_ID[claim_id].test.describe())


def _range_note(info: dict) -> str:
    lo, hi = info["range"]
    dropped = len(info["levels"]) - len(info["compared_levels"])
    return (f"mean over {len(info['compared_levels'])} Pass@1 levels in the common range {100 * lo:.1f}-{100 * hi:.1f} pts"
            + (f" ({dropped} left out: a measured gap wider than {100 * info['resolution']:g} pts)" if dropped else "")
            + f"; measured points in the range per run: ES {info['points_in_range_a']}, GRPO {info['points_in_range_b']}"
            f"; Pass@1 moved ES {100 * info['moved_a']:+.1f}, GRPO {100 * info['moved_b']:+.1f} pts")


def _bias_text(info: dict, scale: float = 100.0, unit: str = " pts") -> str:
    b = info["bias"]
    e = b["estimate"]
    return (f" (bias control, {b['thinned']} thinned to {b['to_layout_of']}'s layout against itself: "
            f"{fmt_interval(e['mean'], e['lo'], e['hi'], scale, unit)})")


def matched_passk_above_grpo(ev: Evidence) -> Verdict:
    es, grpo = curves_of(ev.by_variant("es")), curves_of(ev.by_variant("grpo"))
    parts, infos = [], {}
    for k in (16, 32):
        d, info = matched_difference(es, grpo, f"pass@{k}", names=("ES", "GRPO"))
        if d is None:
            return _matched_missing("matched_passk_above_grpo", info)
        parts.append((f"ES - GRPO @{k} at matched Pass@1", d))
        infos[f"pass@{k}"] = info
    planned = plan_text(infos["pass@32"]["plan"])
    v = _verdict("matched_passk_above_grpo", parts, note=_range_note(info) + (f"; Pass@32: {planned}" if planned else ""),
                 evidence={"matched": infos})
    v.ours = "; ".join(f"{label} {fmt_interval(e.mean, e.lo, e.hi)}{_bias_text(infos[f'pass@{k}'])}"
                       for (label, e), k in zip(parts, (16, 32)))
    return v
registers("matched_passk_above_grpo")(matched_passk_above_grpo)


def matched_no_correct(ev: Evidence) -> Verdict:
    es, grpo = curves_of(ev.by_variant("es")), curves_of(ev.by_variant("grpo"))
    d, info = matched_difference(es, grpo, "no_correct", names=("ES", "GRPO"))
    if d is None:
        return _matched_missing("matched_no_correct", info)
    if d.samples <= max(KS):  # unbiased Pass@n from n samples is 1 exactly when a prompt has a correct sample
        return Verdict("matched_no_correct", NOT_TESTABLE, "n/a", evidence={"matched": info},
                       test=BY_ID["matched_no_correct"].test.describe(), design=d.design,
                       note=(f"with {d.samples} samples per prompt the no-correct share is exactly 1 - Pass@{d.samples}: "
                             f"the same measurement as matched_passk_above_grpo @{d.samples}, not a second result; "
                             f"it needs curves measured with more than {max(KS)} samples per prompt"))
    v = _verdict("matched_no_correct", [("ES - GRPO no-correct share at matched Pass@1", d)], note=_range_note(info),
                 evidence={"matched": info})
    v.ours += _bias_text(info)
    return v
registers("matched_no_correct")(matched_no_correct)


def matched_entropy(ev: Evidence) -> Verdict:
    values, info = matched_seed_values(curves_of(ev.by_variant("es")), curves_of(ev.by_variant("grpo")), "entropy",
                                       names=("ES", "GRPO"))
    if values is None:
        return _matched_missing("matched_entropy", info)
    est = seed_level(over_seeds(values))
    bias = seed_level(over_seeds(info["bias"]["per_seed"]))
    info["bias"]["estimate"] = bias.to_json()
    v = _verdict("matched_entropy", [("ES - GRPO token entropy at matched Pass@1 (nats)", est)], scale=1.0, unit="",
                 evidence={"per_seed": values, "matched": info},
                 note="per seed, mean over the compared Pass@1 levels; an interval over seeds; " + _range_note(info))
    v.ours += _bias_text(info, 1.0, "")
    return v
registers("matched_entropy")(matched_entropy)


# ----------------------------------------------------------------------------- per-run numbers

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
    """Two parts, each by its own test (the claim's `parts`): GRPO's token entropy falls (the fall, -change, > 0
    over seeds), and ES keeps its entropy (its relative change within +-ENTROPY_KEEP_MARGIN, the whole 95%
    interval over seeds inside). Holds only when both hold; does not hold when either fails."""
    changes = {}
    for name in ("grpo", "es"):
        vals = [c for c in (entropy_change(r) for r in ev.by_variant(name)) if c is not None]
        if not vals:
            return _missing("entropy_collapse", f"{name} runs with per-step entropy in metrics.jsonl", ((name, ""),))
        changes[name] = vals
    (fall, _), (kept, keep_test) = BY_ID["entropy_collapse"].parts
    parts = [(fall, seed_level(over_seeds(-np.array(changes["grpo"])))), (kept, seed_level(over_seeds(changes["es"])))]
    return _verdict("entropy_collapse", parts, scale=100.0, unit="%",
                    evidence={"grpo_relative_change": changes["grpo"], "es_relative_change": changes["es"]},
                    note=f"relative change of per-step token entropy, first step vs the last fifth of steps; ES keeps its "
                         f"entropy when its change's interval lies within +-{100 * keep_test.margin:g}%")
registers("entropy_collapse")(entropy_collapse)


def final_drift(run: Run) -> float | None:
    d = _series(run, "drift_rel")
    return float(d[-1]) if d.size else None


def drift_ratio(ev: Evidence) -> Verdict:
    """ES / GRPO relative drift (geometric mean over seeds, Welch interval of the log ratio) against the
    paper's 40.7-44.1x; the random-z null's drift relative to real ES is shown beside."""
    es = [x for x in map(final_drift, ev.by_variant("es")) if x is not None and x > 0]
    gr = [x for x in map(final_drift, ev.by_variant("grpo")) if x is not None and x > 0]
    if not es or not gr:
        return _missing("drift_ratio", "es and grpo runs with drift_rel in metrics.jsonl", (("es", ""), ("grpo", "")))
    log_ratio = welch(np.log(es), np.log(gr))
    est = Estimate(math.exp(log_ratio["mean"]), math.exp(log_ratio["lo"]) if math.isfinite(log_ratio["lo"]) else 0.0,
                   math.exp(log_ratio["hi"]) if math.isfinite(log_ratio["hi"]) else float("inf"),
                   log_ratio["se"], log_ratio["df"], log_ratio["seeds"])
    test = BY_ID["drift_ratio"].test
    status = test.decide(est.lo if est.lo > 0 else -math.inf, est.hi)
    null = [x for x in map(final_drift, ev.by_variant("es[null]")) if x is not None]
    null_text = ""
    if null:
        nr = welch(np.log(null), np.log(es))
        null_text = (f"; random-z null / real ES drift {math.exp(nr['mean']):.2f}x "
                     f"[{math.exp(nr['lo']) if math.isfinite(nr['lo']) else 0:.2f}, {math.exp(nr['hi']):.2f}]")
    return Verdict("drift_ratio", status, f"ES/GRPO drift ratio {est.mean:.1f}x [{est.lo:.1f}, {est.hi:.1f}]{null_text}",
                   interval=(est.lo, est.hi), evidence={"es": es, "grpo": gr, "null": null},
                   note="geometric mean over seeds; Welch t interval of the log ratio", test=test.describe(),
                   design=est.design, power=f"interval width on the log scale {log_ratio['hi'] - log_ratio['lo']:.2f}; paper: {test.paper_effect}")
registers("drift_ratio")(drift_ratio)


def update_analysis_of(run: Run) -> dict | None:
    return (run.eval or {}).get("update_analysis")


def analytic_tiny_share(run: Run, tau: float) -> float | None:
    """Share of update entries with |delta| <= tau if every updating step adds N(0, alpha^2 / N) per
    entry (z-scored: sum z^2 = N, so alpha (1/N) sum z_i eps_i has variance alpha^2 / N), whatever the
    rewards: 2 Phi(tau / (alpha sqrt(T / N))) - 1 over the T steps with a non-zero update."""
    es_cfg = run.config.get("es", {})
    steps = int(np.sum(_series(run, "es_update_norm") > 0))
    if steps == 0 or not es_cfg.get("alpha") or not es_cfg.get("population_size"):
        return None
    sd = es_cfg["alpha"] * math.sqrt(steps / es_cfg["population_size"])
    return float(2 * norm.cdf(tau / sd) - 1)


def update_sparsity(ev: Evidence) -> Verdict:
    """Share of non-zero update entries with |delta| <= 1.5e-3: real ES minus the random-z null of the
    same seed; holds only when real ES has more tiny entries than the null beyond the interval."""
    def shares(name):
        return {r.seed: 100 * a["share_nonzero_le_tau"][SPARSITY_TAU] for r in ev.by_variant(name) if (a := update_analysis_of(r))}
    es, null = shares("es"), shares("es[null]")
    if not es or not null:
        return _missing("update_sparsity", "es and es[null] runs with update_analysis in eval.json",
                        (("es", ""), ("es[null]", "")))
    seeds = sorted(set(es) & set(null))
    if not seeds:
        return _missing("update_sparsity", "es and es[null] runs with the same seeds", (("es", ""), ("es[null]", "")))
    d = seed_level(over_seeds([es[s] - null[s] for s in seeds]))
    analytic = [a for a in (analytic_tiny_share(r, float(SPARSITY_TAU)) for r in ev.by_variant("es")) if a is not None]
    lo_paper = min(v["share"][1] for v in paper.TABLE4_DRIFT.values())
    hi_paper = max(v["share"][1] for v in paper.TABLE4_DRIFT.values())
    text = (f"share <= 1.5e-3: ES {np.mean(list(es.values())):.1f}%, null {np.mean(list(null.values())):.1f}%, "
            f"analytic 2 Phi(tau / (alpha sqrt(T/N))) - 1 = {100 * np.mean(analytic):.1f}%" if analytic else
            f"share <= 1.5e-3: ES {np.mean(list(es.values())):.1f}%, null {np.mean(list(null.values())):.1f}%")
    v = _verdict("update_sparsity", [("ES - null share", d)], scale=1.0, unit=" pts",
                 evidence={"es": es, "null": null, "analytic": analytic, "paper_range": [lo_paper, hi_paper]},
                 note=f"{text}; paper {lo_paper}%-{hi_paper}%; paired by seed")
    return v
registers("update_sparsity")(update_sparsity)


def thresholded_pass1(ev: Evidence) -> Verdict:
    """Pass@1 of the checkpoint with the paper's sparsity (THRESHOLDED_PERCENT of the update entries reverted, the
    largest kept) minus the full final's, per seed: within +-2 points (equivalence). Decided at that sparsity only,
    the one the claim's statement names: runs thresholded at other sparsities are named, not read."""
    diffs, measured = [], set()
    for run in ev.by_variant("es"):
        rows = (run.eval or {}).get("thresholded", [])
        measured |= {t["sparsity_percent"] for t in rows}
        at = [t for t in rows if abs(t["sparsity_percent"] - THRESHOLDED_PERCENT) < 1e-6]
        final = eval_of(run, "final")
        if at and final:
            diffs.append(at[0]["pass_at_1"] - final["pass_at_k"]["1"])
    if not diffs:
        others = (f"; these runs thresholded ES at {', '.join(f'{p:g}%' for p in sorted(measured))} sparsity only"
                  if measured else "")
        return _missing("thresholded_pass1", f"es runs with a {THRESHOLDED_PERCENT:g}%-sparsity thresholded checkpoint "
                                             f"evaluated{others}", (("es", thresholded(THRESHOLDED_PERCENT)),))
    return _verdict("thresholded_pass1", [(f"Pass@1 change at {THRESHOLDED_PERCENT:g}% sparsity",
                                           seed_level(over_seeds(diffs)))], evidence={"diffs": diffs}, note="interval over seeds")
registers("thresholded_pass1")(thresholded_pass1)


def smoothed_reward(run: Run, tail: float = 0.2, steps: int | None = None) -> float | None:
    """Mean training reward over the last fifth of the first `steps` steps (all steps by default)."""
    r = _series(run, "reward_mean")[:steps]
    return float(r[-max(1, int(r.size * tail)):].mean()) if r.size else None


def model_size(run: Run) -> int | None:
    """Number of parameter entries of the run's model (from its update analysis)."""
    return ((run.eval or {}).get("update_analysis") or {}).get("entries")


def population_size(ev: Evidence) -> Verdict:
    """Larger models need smaller N (Table 6: equal updates): the smoothed-reward gain from the smallest
    to the largest N, paired by seed within a model, is larger for the smaller model (Welch across the
    two models). Equal FLOPs beside it: the largest N read at the step where it has spent the smallest
    N's whole budget of member evaluations."""
    sweep: dict[str, dict[int, dict[int, Run]]] = {}
    sizes: dict[str, int] = {}
    for run in ev.by_variant("es", sweep=True):
        if smoothed_reward(run) is None or model_size(run) is None:
            continue
        model = str(run.config.get("model"))
        sizes[model] = model_size(run)
        sweep.setdefault(model, {}).setdefault(int(run.config["es"]["population_size"]), {})[run.seed] = run
    gains, flops_gains = {}, {}
    for model, by_n in sweep.items():
        if len(by_n) >= 2:
            lo_n, hi_n = min(by_n), max(by_n)
            seeds = sorted(set(by_n[lo_n]) & set(by_n[hi_n]))
            if seeds:
                gains[model] = np.array([smoothed_reward(by_n[hi_n][s]) - smoothed_reward(by_n[lo_n][s]) for s in seeds])
                flops_steps = max(1, len(by_n[lo_n][seeds[0]].metrics) * lo_n // hi_n)
                flops_gains[model] = np.array([smoothed_reward(by_n[hi_n][s], steps=flops_steps) - smoothed_reward(by_n[lo_n][s])
                                               for s in seeds])
    if len(gains) < 2:
        return _missing("population_size", "ES runs at two or more population sizes (same seeds) for two or more models",
                        (("es", SWEEP),))
    small, large = min(gains, key=sizes.get), max(gains, key=sizes.get)
    flat = [m for m in (small, large)
            if np.ptp(np.concatenate([_series(r, "reward_mean") for by_seed in sweep[m].values() for r in by_seed.values()])) == 0]
    d = seed_level(welch(gains[small], gains[large]))
    n_lo, n_hi = min(sweep[small]), max(sweep[small])
    ours = "; ".join(f"{sizes[m]:,} params: gain N={n_lo}->{n_hi} {gains[m].mean():+.3f} (equal FLOPs {flops_gains[m].mean():+.3f})"
                     for m in (small, large))
    v = _verdict("population_size", [("gain difference, smaller - larger model", d)], scale=1.0, unit="",
                 evidence={"gains": {m: g.tolist() for m, g in gains.items()},
                           "equal_flops_gains": {m: g.tolist() for m, g in flops_gains.items()}, "model_sizes": sizes},
                 note="Table 6 protocol: equal updates; two tiny models stand in for 0.5B-3B")
    v.ours = ours + "; " + v.ours
    if flat:  # a constant training reward carries no signal: the sweep cannot tell population sizes apart
        v.status = INCONCLUSIVE
        v.note += "; " + ", ".join(f"{sizes[m]:,}-parameter model" for m in flat) + \
            ": the same training reward at every step of every run (no reward signal), so no decision"
    return v
registers("population_size")(population_size)


# ----------------------------------------------------------------------------- the lemmas on real populations

def training_summary(ratios: list[float], s_values: list[float], sigma: float | None, temperature: float | None) -> dict:
    """The training runs' own population measurements for Lemma 1: one ratio JSpol / prediction per run,
    every measured s, the runs' sigma and sampling temperature."""
    return {"sigma": sigma, "temperature": temperature, "ratios": list(ratios), "s": list(s_values),
            "s_median": float(np.median(s_values)) if s_values else None}


def training_populations(ev: Evidence) -> dict | None:
    """training_summary of the main ES runs' probes (probe.json), None without one."""
    ratios, s_values, runs = [], [], []
    for run in ev.by_variant("es"):
        ms = [m for m in (run.probe or {}).get("measurements", []) if m.get("lemma1_prediction")]
        if ms:
            ratios.append(float(np.mean([m["jspol"]["mean"] / m["lemma1_prediction"] for m in ms])))
            s_values.extend(m["validity"]["measured"]["mean"] for m in ms)
            runs.append(run)
    if not ratios:
        return None
    return training_summary(ratios, s_values, runs[0].config.get("es", {}).get("sigma"), runs[0].config.get("temperature"))


def es_regime(ev: Evidence) -> dict:
    """Where the main ES runs train, against Lemma 1's regime: their members' measured divergence
    s = E_j KL(pi_j || pi_center) at the training sigma (probe.json, at each probed step, sequences sampled at the
    run's temperature), beside the regime s <= LEMMA1_MAX_S the lemma (and the grid's verdict) claims.
    {"measured": False, ...} when no main ES run probed its population at its own sigma."""
    rows = [(run, m) for run in ev.by_variant("es") for m in (run.probe or {}).get("measurements", [])
            if m.get("validity") and m.get("sigma") == run.config.get("es", {}).get("sigma")]
    if not rows:
        return {"measured": False, "s_limit": LEMMA1_MAX_S}
    s = np.array([m["validity"]["measured"]["mean"] for _, m in rows], dtype=float)
    return {"measured": True, "s_limit": LEMMA1_MAX_S, "sigma": rows[0][1]["sigma"],
            "temperature": rows[0][0].config.get("temperature"), "runs": len({run.name for run, _ in rows}),
            "steps": sorted({int(m["step"]) for _, m in rows}), "s": s.tolist(), "s_median": float(np.median(s)),
            "s_min": float(s.min()), "s_max": float(s.max()), "inside": int(np.sum(s <= LEMMA1_MAX_S))}


def es_regime_line(regime: dict) -> str:
    """The report's line on ES's regime (es_regime), "not measured" without probes."""
    if not regime["measured"]:
        return (f"**ES's regime.** The ES members' divergence s = E KL(pi_member || pi_center) at the training sigma: "
                f"not measured (no main ES run has a Lemma 1 probe, probe.json; `--budget answer` probes its runs). "
                f"Lemma 1's regime: s <= {regime['s_limit']}.")
    steps = regime["steps"]
    return (f"**ES's regime.** The ES members' measured divergence s = E KL(pi_member || pi_center) at the training "
            f"sigma {regime['sigma']:g} (sequences sampled at T = {regime['temperature']}): median {regime['s_median']:.2g}, "
            f"range {regime['s_min']:.2g}-{regime['s_max']:.2g} over {len(regime['s'])} measurements of {regime['runs']} "
            f"runs (steps {steps[0]}-{steps[-1]}); {regime['inside']} of {len(regime['s'])} inside Lemma 1's regime "
            f"s <= {regime['s_limit']}, where the lemma and its grid's verdict apply.")


def lemma1_real(ev: Evidence) -> Verdict:
    """Lemma 1 on the real model (lemma1_verdict): from the grid's rows inside the regime when it has any, else
    from the training runs' own populations (decided only inside the regime)."""
    return lemma1_verdict(ev.lemma_grid or [], training_populations(ev))
registers("lemma1")(lemma1_real)


def _training_text(training: dict) -> str:
    est = seed_level(over_seeds(np.array(training["ratios"]) - 1.0))
    where = f"sigma = {training['sigma']:g}, T = {training['temperature']:g}: " if training.get("sigma") else ""
    return (f"the training runs' own populations ({where}s = {training['s_median']:.2g}, median of {len(training['s'])}) "
            f"sit outside the regime: JSpol / prediction - 1 {fmt_interval(est.mean, est.lo, est.hi, 1.0, '')} over "
            f"{len(training['ratios'])} runs, not decided")


def lemma1_verdict(grid: list[dict], training: dict | None) -> Verdict:
    """Measured JSpol_N against (sigma^2/2)(1 - 1/N) tr I_x. With grid rows inside Lemma 1's regime
    (s <= LEMMA1_MAX_S): paper_checks.lemma_grid.lemma1_decision (the pooled in-regime ratio within 1 +- 10%,
    no row wholly outside). Otherwise the training runs' ratios (one per run, t over runs), decided only where
    their measured s lies in the regime."""
    decision = lemma1_decision(grid) if grid else None
    test = BY_ID["lemma1"].test.describe()
    if decision is not None:
        inside = [r for r in grid if r.get("s_measured") is not None and r["s_measured"] <= LEMMA1_MAX_S
                  and any(d["sigma"] == r["sigma"] and d["members"] == r["members"] for d in decision["rows"])]
        pooled = decision["pooled"]
        lo, hi = pooled["ci"]
        widths = [r["ratio_ci"][1] - r["ratio_ci"][0] for r in inside]
        first = inside[0]
        ours = (f"grid on {first.get('task', '?')} at T = {first.get('temperature', '?')}, {len(inside)} rows with s <= "
                f"{LEMMA1_MAX_S}: pooled JSpol / prediction {pooled['ratio']:.3f} [{lo:.3f}, {hi:.3f}]; "
                + ", ".join(f"N={r['members']} sigma={r['sigma']:g}: {r['ratio']:.3f} [{r['ratio_ci'][0]:.3f}, "
                            f"{r['ratio_ci'][1]:.3f}]" for r in inside))
        rows_out = [d for d in decision["rows"] if d["status"] == FAILS]
        note = (f"holds when the pooled interval lies within 1 +- {LEMMA1_MARGIN} and no in-regime row lies wholly outside it"
                + (f"; rows wholly outside: " + ", ".join(f"N={d['members']} sigma={d['sigma']:g}" for d in rows_out) if rows_out else "")
                + (f"; {_training_text(training)}" if training else ""))
        design = (f"grid: {len(inside)} of {len(grid)} rows inside s <= {LEMMA1_MAX_S}; per row "
                  + ", ".join(sorted({f"N={r['members']}: {r['draws']} antithetic pairs of populations" for r in inside},
                                     key=lambda t: int(t[2:t.index(':')])))
                  + f" x {first.get('prompts', '?')} prompts x {first.get('samples', '?')} samples per member, each pair against "
                  f"the prediction for its own members from {first.get('center_samples', '?')} center completions per prompt")
        power = (f"pooled interval width {hi - lo:.3f}; rows' widths {min(widths):.3f}-{max(widths):.3f} "
                 f"(margin +-{LEMMA1_MARGIN}); paper: {BY_ID['lemma1'].test.paper_effect}")
        return Verdict("lemma1", decision["status"], ours, interval=(lo - 1, hi - 1),
                       evidence={"grid_decision": decision, "training": training}, note=note, test=test, design=design, power=power)
    if training is None:
        return _missing("lemma1", "a Lemma 1 grid (lemma_grid.json) or probe.json with jspol and lemma1_prediction")
    est = seed_level(over_seeds(np.array(training["ratios"]) - 1.0))
    s_median = training["s_median"]
    v = _verdict("lemma1", [("JSpol / prediction - 1", est)], scale=1.0, unit="",
                 evidence={"ratios": training["ratios"], "s": training["s"], "training": training},
                 note=f"s = {s_median:.2g}; holds when the whole interval lies within +-{LEMMA1_MARGIN}")
    if s_median > LEMMA1_MAX_S:
        v.status = OUTSIDE_REGIME
        v.ours = f"s = {s_median:.2g} > {LEMMA1_MAX_S}; " + v.ours
        v.note = (f"measured s = {s_median:.2g} (median over the runs' population measurements) is above the lemma's "
                  f"regime s <= {LEMMA1_MAX_S}: the ratio is shown, not decided; "
                  + ("the grid has no row inside the regime" if grid else "no sigma x N grid given"))
    return v


def lemma2_real(ev: Evidence) -> Verdict:
    """P_pop - P_same on the measured member success rates: >= 0 for every p by Maclaurin's inequality."""
    gaps = []
    for run in ev.by_variant("es"):
        ms = (run.probe or {}).get("measurements") or []
        if ms and "lemma2" in ms[-1]:
            gaps.extend(np.array(ms[-1]["lemma2"]["distinct_members_pass"]) - np.array(ms[-1]["lemma2"]["same_policy_pass"]))
    if not gaps:
        return _missing("lemma2", "probe.json with lemma2 estimates", (("es", PROBE),))
    gaps = np.array(gaps)
    return Verdict("lemma2", IDENTITY, f"P_pop - P_same: min {gaps.min():.3g}, mean {gaps.mean():.3g}",
                   evidence={"gaps": gaps.tolist()}, test=BY_ID["lemma2"].test.describe(),
                   note="true for any success rates (Maclaurin's inequality): shown, not evidence for the paper")
registers("lemma2")(lemma2_real)


REAL_CHECKS = _REGISTRY.complete()  # {claim id: check}; a claim left without one stops the import here
