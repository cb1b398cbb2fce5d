"""The real-run checks at matched Pass@1: ES against GRPO along each run's curve (paper_checks/matched.py), where
both were measured."""

from __future__ import annotations

from escov.paper_checks.design import plan_text, seed_level
from escov.paper_checks.evidence import Evidence
from escov.paper_checks.matched import Curve, curve_of, matched_difference, matched_seed_values
from escov.paper_checks.real_checks.decide import decided, registers
from escov.paper_checks.real_checks.needs import CURVE
from escov.paper_checks.rundir import Run
from escov.paper_checks.verdict import INCONCLUSIVE, MISSING, NOT_TESTABLE, Verdict, fmt_interval
from escov.theory.claims import Claim
from escov.theory.decisions import over_seeds

KS = (1, 16, 32)


def curves_of(runs: list[Run]) -> list[Curve]:
    """The runs' curves (llm/curve.py), those with at least two points."""
    return [c for c in (curve_of(r.curve or [], r.seed or 0) for r in runs) if c is not None]


def _matched_missing(claim: Claim, info: dict) -> Verdict:
    """No comparison: not testable (no supported level), inconclusive (no common range), or missing runs."""
    status = NOT_TESTABLE if info.get("not_testable") else INCONCLUSIVE if "range" in info else MISSING
    moved = (
        f"; Pass@1 moved ES {100 * info['moved_a']:+.1f} pts, GRPO {100 * info['moved_b']:+.1f} pts"
        if "moved_a" in info
        else ""
    )
    return Verdict(
        claim.id,
        status,
        "n/a",
        evidence={"matched": info} | ({"needs": [["es", CURVE], ["grpo", CURVE]]} if status == MISSING else {}),
        note=info.get("reason", "") + moved,
        test=claim.test.describe(),
    )


def _range_note(info: dict) -> str:
    lo, hi = info["range"]
    dropped = len(info["levels"]) - len(info["compared_levels"])
    return (
        f"mean over {len(info['compared_levels'])} Pass@1 levels in the common range {100 * lo:.1f}-{100 * hi:.1f} pts"
        + (f" ({dropped} left out: a measured gap wider than {100 * info['resolution']:g} pts)" if dropped else "")
        + f"; measured points in the range per run: ES {info['points_in_range_a']}, GRPO {info['points_in_range_b']}"
        f"; Pass@1 moved ES {100 * info['moved_a']:+.1f}, GRPO {100 * info['moved_b']:+.1f} pts"
    )


def _bias_text(info: dict, scale: float = 100.0, unit: str = " pts") -> str:
    b = info["bias"]
    e = b["estimate"]
    return (
        f" (bias control, {b['thinned']} thinned to {b['to_layout_of']}'s layout against itself: "
        f"{fmt_interval(e['mean'], e['lo'], e['hi'], scale, unit)})"
    )


def matched_passk_above_grpo(ev: Evidence, claim: Claim) -> Verdict:
    es, grpo = curves_of(ev.by_variant("es")), curves_of(ev.by_variant("grpo"))
    parts, infos = [], {}
    for k in (16, 32):
        d, info = matched_difference(es, grpo, f"pass@{k}", names=("ES", "GRPO"))
        if d is None:
            return _matched_missing(claim, info)
        parts.append((f"ES - GRPO @{k} at matched Pass@1", d))
        infos[f"pass@{k}"] = info
    planned = plan_text(infos["pass@32"]["plan"])
    v = decided(
        claim, parts, note=_range_note(info) + (f"; Pass@32: {planned}" if planned else ""), evidence={"matched": infos}
    )
    v.ours = "; ".join(
        f"{label} {fmt_interval(e.mean, e.lo, e.hi)}{_bias_text(infos[f'pass@{k}'])}"
        for (label, e), k in zip(parts, (16, 32))
    )
    return v


registers("matched_passk_above_grpo")(matched_passk_above_grpo)


def matched_no_correct(ev: Evidence, claim: Claim) -> Verdict:
    es, grpo = curves_of(ev.by_variant("es")), curves_of(ev.by_variant("grpo"))
    d, info = matched_difference(es, grpo, "no_correct", names=("ES", "GRPO"))
    if d is None:
        return _matched_missing(claim, info)
    if d.samples <= max(KS):  # unbiased Pass@n from n samples is 1 exactly when a prompt has a correct sample
        return Verdict(
            claim.id,
            NOT_TESTABLE,
            "n/a",
            evidence={"matched": info},
            test=claim.test.describe(),
            design=d.design,
            note=(
                f"with {d.samples} samples per prompt the no-correct share is exactly 1 - Pass@{d.samples}: "
                f"the same measurement as matched_passk_above_grpo @{d.samples}, not a second result; "
                f"it needs curves measured with more than {max(KS)} samples per prompt"
            ),
        )
    v = decided(
        claim, [("ES - GRPO no-correct share at matched Pass@1", d)], note=_range_note(info), evidence={"matched": info}
    )
    v.ours += _bias_text(info)
    return v


registers("matched_no_correct")(matched_no_correct)


ENTROPY = "ES - GRPO token entropy at matched Pass@1 (nats)"


def matched_entropy(ev: Evidence, claim: Claim) -> Verdict:
    """ES - GRPO token entropy at matched Pass@1: per (seed, prompt), each prompt's own mean token entropy, with the
    seeds x prompts interval (prompts a random effect), when every curve point carries it; else (curves measured
    before it was recorded) per seed from the pooled entropy, an interval over seeds only, labelled as such (the
    prompts' share of the variance is then left out: that interval is too narrow when prompts differ)."""
    es, grpo = curves_of(ev.by_variant("es")), curves_of(ev.by_variant("grpo"))
    if es and grpo and all(c.prompt_entropy is not None for c in es + grpo):
        d, info = matched_difference(es, grpo, "entropy", names=("ES", "GRPO"))
        if d is None:
            return _matched_missing(claim, info)
        v = decided(
            claim,
            [(ENTROPY, d)],
            scale=1.0,
            unit="",
            evidence={"matched": info},
            note="per seed and prompt (each prompt's own mean token entropy, prompts weighted equally), mean over the "
            "compared Pass@1 levels; an interval over seeds x prompts (prompts a random effect); " + _range_note(info),
        )
        v.ours += _bias_text(info, 1.0, "")
        return v
    values, info = matched_seed_values(es, grpo, "entropy", names=("ES", "GRPO"))
    if values is None:
        return _matched_missing(claim, info)
    est = seed_level(over_seeds(values))
    bias = seed_level(over_seeds(info["bias"]["per_seed"]))
    info["bias"]["estimate"] = bias.to_json()
    v = decided(
        claim,
        [(ENTROPY, est)],
        scale=1.0,
        unit="",
        evidence={"per_seed": values, "matched": info},
        note="per seed, mean over the compared Pass@1 levels; an interval over seeds only (these curves carry no "
        "per-prompt entropy, so the prompts are not a random effect and the interval is too narrow when prompts "
        "differ); " + _range_note(info),
    )
    v.ours += _bias_text(info, 1.0, "")
    return v


registers("matched_entropy")(matched_entropy)
