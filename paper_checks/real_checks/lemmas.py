"""The real-run checks of the lemmas on real populations: Lemma 1 from the grid's rows inside its regime or the
training runs' own probes, Lemma 2's identity; and where the main ES runs train against Lemma 1's regime."""

from __future__ import annotations

import numpy as np

from escov.paper_checks.design import seed_level
from escov.paper_checks.evidence import Evidence
from escov.paper_checks.lemma_grid import GRID_ROLE, lemma1_decision
from escov.paper_checks.real_checks.decide import decided, missing, registers
from escov.paper_checks.real_checks.needs import PROBE
from escov.paper_checks.verdict import IDENTITY, OUTSIDE_REGIME, Verdict, fmt_interval
from escov.theory.claims import BY_ID, LEMMA1_MARGIN, Claim
from escov.theory.decisions import FAILS, over_seeds
from escov.theory.paper import LEMMA1_S_LIMIT

LEMMA1_MAX_S = LEMMA1_S_LIMIT  # Lemma 1 is claimed where s = E KL(pi_{theta+sigma eps} || pi_theta) is small


def training_summary(
    ratios: list[float], s_values: list[float], sigma: float | None, temperature: float | None
) -> dict:
    """The training runs' own population measurements for Lemma 1: one ratio JSpol / prediction per run,
    every measured s, the runs' sigma and sampling temperature."""
    return {
        "sigma": sigma,
        "temperature": temperature,
        "ratios": list(ratios),
        "s": list(s_values),
        "s_median": float(np.median(s_values)) if s_values else None,
    }


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
    return training_summary(
        ratios, s_values, runs[0].config.get("es", {}).get("sigma"), runs[0].config.get("temperature")
    )


def es_regime(ev: Evidence) -> dict:
    """Where the main ES runs train, against Lemma 1's regime: their members' measured divergence
    s = E_j KL(pi_j || pi_center) at the training sigma (probe.json, at each probed step, sequences sampled at the
    run's temperature), beside the regime s <= LEMMA1_MAX_S the lemma (and the grid's verdict) claims.
    {"measured": False, ...} when no main ES run probed its population at its own sigma."""
    rows = [
        (run, m)
        for run in ev.by_variant("es")
        for m in (run.probe or {}).get("measurements", [])
        if m.get("validity") and m.get("sigma") == run.config.get("es", {}).get("sigma")
    ]
    if not rows:
        return {"measured": False, "s_limit": LEMMA1_MAX_S}
    s = np.array([m["validity"]["measured"]["mean"] for _, m in rows], dtype=float)
    return {
        "measured": True,
        "s_limit": LEMMA1_MAX_S,
        "sigma": rows[0][1]["sigma"],
        "temperature": rows[0][0].config.get("temperature"),
        "runs": len({run.name for run, _ in rows}),
        "steps": sorted({int(m["step"]) for _, m in rows}),
        "s": s.tolist(),
        "s_median": float(np.median(s)),
        "s_min": float(s.min()),
        "s_max": float(s.max()),
        "inside": int(np.sum(s <= LEMMA1_MAX_S)),
    }


def es_regime_line(regime: dict) -> str:
    """The report's line on ES's regime (es_regime), "not measured" without probes."""
    if not regime["measured"]:
        return (
            f"**ES's regime.** The ES members' divergence s = E KL(pi_member || pi_center) at the training sigma: "
            f"not measured (no main ES run has a Lemma 1 probe, probe.json; `--budget answer` probes its runs). "
            f"Lemma 1's regime: s <= {regime['s_limit']}."
        )
    steps = regime["steps"]
    return (
        f"**ES's regime.** The ES members' measured divergence s = E KL(pi_member || pi_center) at the training "
        f"sigma {regime['sigma']:g} (sequences sampled at T = {regime['temperature']}): "
        f"median {regime['s_median']:.2g}, "
        f"range {regime['s_min']:.2g}-{regime['s_max']:.2g} over {len(regime['s'])} measurements of {regime['runs']} "
        f"runs (steps {steps[0]}-{steps[-1]}); {regime['inside']} of {len(regime['s'])} inside Lemma 1's regime "
        f"s <= {regime['s_limit']}, where the lemma and its grid's verdict apply."
    )


def lemma1_real(ev: Evidence, claim: Claim) -> Verdict:
    """Lemma 1 on the real model: as stated (lemma1_as_stated_verdict) when that record is there; else from the
    grid's rows inside the regime (lemma1_verdict, labelled an implementation check), else from the training runs'
    own populations (decided only inside the regime)."""
    grid = lemma1_verdict(ev.lemma_grid or [], training_populations(ev), claim)
    if ev.lemma_as_stated and ev.lemma_as_stated.get("pooled"):
        return lemma1_as_stated_verdict(ev.lemma_as_stated, grid, claim)
    return grid


def lemma1_as_stated_verdict(record: dict, grid: Verdict, claim: Claim = BY_ID["lemma1"]) -> Verdict:
    """The claim decided from paper_checks.lemma_as_stated's record: the pooled in-regime E[JSpol_N] over independent
    populations against (sigma^2/2)(1 - 1/N) tr I_x with tr I_x from separate completions, within 1 +- margin. The
    grid's reading (an implementation check and regime boundary) is kept in the note."""
    pooled, t = record["pooled"], record["trace"]
    lo, hi = pooled["ci"]
    inside = [r for r in record["rows"] if r["in_regime"]]
    ours = (
        f"as stated, {len(inside)} rows with s <= {LEMMA1_MAX_S}: pooled E[JSpol_N] / ((sigma^2/2)(1 - 1/N) tr I) "
        f"{pooled['ratio']:.3f} [{lo:.3f}, {hi:.3f}], tr I = {t['trace']:.4g} (se {t['se']:.2g}) from "
        f"{t['completions']} separate completions"
    )
    design = ", ".join(f"N={r['members']} sigma={r['sigma']:g}: {r['draws']} populations" for r in inside)
    return Verdict(
        claim.id,
        pooled["status"],
        ours,
        interval=(lo - 1, hi - 1),
        evidence={"lemma_as_stated": {"pooled": pooled, "trace": t}, "grid": grid.evidence},
        note=f"holds when the pooled interval lies within 1 +- {LEMMA1_MARGIN}; the per-population grid "
        f"({GRID_ROLE}): {grid.status}, {grid.ours}",
        test=claim.test.describe(),
        design=f"independent populations: {design}",
        power=f"pooled interval width {hi - lo:.3f} (margin +-{LEMMA1_MARGIN}); paper: {claim.test.paper_effect}",
    )


registers("lemma1")(lemma1_real)


def _training_text(training: dict) -> str:
    est = seed_level(over_seeds(np.array(training["ratios"]) - 1.0))
    where = f"sigma = {training['sigma']:g}, T = {training['temperature']:g}: " if training.get("sigma") else ""
    return (
        f"the training runs' own populations ({where}s = {training['s_median']:.2g}, median of {len(training['s'])}) "
        f"sit outside the regime: JSpol / prediction - 1 {fmt_interval(est.mean, est.lo, est.hi, 1.0, '')} over "
        f"{len(training['ratios'])} runs, not decided"
    )


def lemma1_verdict(grid: list[dict], training: dict | None, claim: Claim = BY_ID["lemma1"]) -> Verdict:
    """Measured JSpol_N against (sigma^2/2)(1 - 1/N) tr I_x. With grid rows inside Lemma 1's regime
    (s <= LEMMA1_MAX_S): paper_checks.lemma_grid.lemma1_decision (the pooled in-regime ratio within 1 +- 10%,
    no row wholly outside). Otherwise the training runs' ratios (one per run, t over runs), decided only where
    their measured s lies in the regime."""
    decision = lemma1_decision(grid) if grid else None
    test = claim.test.describe()
    if decision is not None:
        inside = [
            r
            for r in grid
            if r.get("s_measured") is not None
            and r["s_measured"] <= LEMMA1_MAX_S
            and any(d["sigma"] == r["sigma"] and d["members"] == r["members"] for d in decision["rows"])
        ]
        pooled = decision["pooled"]
        lo, hi = pooled["ci"]
        widths = [r["ratio_ci"][1] - r["ratio_ci"][0] for r in inside]
        first = inside[0]
        ours = (
            f"{GRID_ROLE}: grid on {first.get('task', '?')} at T = {first.get('temperature', '?')}, {len(inside)} "
            f"rows with s <= "
            f"{LEMMA1_MAX_S}: pooled JSpol / prediction {pooled['ratio']:.3f} [{lo:.3f}, {hi:.3f}]; "
            + ", ".join(
                f"N={r['members']} sigma={r['sigma']:g}: {r['ratio']:.3f} [{r['ratio_ci'][0]:.3f}, "
                f"{r['ratio_ci'][1]:.3f}]"
                for r in inside
            )
        )
        rows_out = [d for d in decision["rows"] if d["status"] == FAILS]
        note = (
            f"holds when the pooled interval lies within 1 +- {LEMMA1_MARGIN} and no in-regime row lies wholly "
            "outside it"
            + (
                "; rows wholly outside: " + ", ".join(f"N={d['members']} sigma={d['sigma']:g}" for d in rows_out)
                if rows_out
                else ""
            )
            + (f"; {_training_text(training)}" if training else "")
        )
        design = (
            f"grid: {len(inside)} of {len(grid)} rows inside s <= {LEMMA1_MAX_S}; per row "
            + ", ".join(
                sorted(
                    {f"N={r['members']}: {r['draws']} antithetic pairs of populations" for r in inside},
                    key=lambda t: int(t[2 : t.index(":")]),
                )
            )
            + f" x {first.get('prompts', '?')} prompts x {first.get('samples', '?')} samples per member, "
            "each pair against "
            f"the prediction for its own members from {first.get('center_samples', '?')} center completions per prompt"
        )
        power = (
            f"pooled interval width {hi - lo:.3f}; rows' widths {min(widths):.3f}-{max(widths):.3f} "
            f"(margin +-{LEMMA1_MARGIN}); paper: {claim.test.paper_effect}"
        )
        return Verdict(
            claim.id,
            decision["status"],
            ours,
            interval=(lo - 1, hi - 1),
            evidence={"grid_decision": decision, "training": training},
            note=note,
            test=test,
            design=design,
            power=power,
        )
    if training is None:
        return missing(claim, "a Lemma 1 grid (lemma_grid.json) or probe.json with jspol and lemma1_prediction")
    est = seed_level(over_seeds(np.array(training["ratios"]) - 1.0))
    s_median = training["s_median"]
    v = decided(
        claim,
        [("JSpol / prediction - 1", est)],
        scale=1.0,
        unit="",
        evidence={"ratios": training["ratios"], "s": training["s"], "training": training},
        note=f"s = {s_median:.2g}; holds when the whole interval lies within +-{LEMMA1_MARGIN}",
    )
    if s_median > LEMMA1_MAX_S:
        v.status = OUTSIDE_REGIME
        v.ours = f"s = {s_median:.2g} > {LEMMA1_MAX_S}; " + v.ours
        v.note = (
            f"measured s = {s_median:.2g} (median over the runs' population measurements) is above the lemma's "
            f"regime s <= {LEMMA1_MAX_S}: the ratio is shown, not decided; "
            + ("the grid has no row inside the regime" if grid else "no sigma x N grid given")
        )
    return v


def lemma2_real(ev: Evidence, claim: Claim) -> Verdict:
    """P_pop - P_same on the measured member success rates: >= 0 for every p by Maclaurin's inequality."""
    gaps = []
    for run in ev.by_variant("es"):
        ms = (run.probe or {}).get("measurements") or []
        if ms and "lemma2" in ms[-1]:
            gaps.extend(
                np.array(ms[-1]["lemma2"]["distinct_members_pass"]) - np.array(ms[-1]["lemma2"]["same_policy_pass"])
            )
    if not gaps:
        return missing(claim, "probe.json with lemma2 estimates", (("es", PROBE),))
    gaps = np.array(gaps)
    return Verdict(
        claim.id,
        IDENTITY,
        f"P_pop - P_same: min {gaps.min():.3g}, mean {gaps.mean():.3g}",
        evidence={"gaps": gaps.tolist()},
        test=claim.test.describe(),
        note="true for any success rates (Maclaurin's inequality): shown, not evidence for the paper",
    )


registers("lemma2")(lemma2_real)
