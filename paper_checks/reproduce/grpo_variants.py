"""`python -m escov.paper_checks grpo-variants`: ES against the best coverage-keeping GRPO variant ("than which
GRPO?"), on the premise's base, after the answer ran.

    python -m escov.paper_checks grpo-variants --answer runs/answer-premise [--jobs 2] [--candidates a,b]
                                               [--selection-only]   (the selection alone, beside an unfinished answer)

Selection, on validation prompts only (llm/problem_sets.py SELECTION_SPLIT; the premise control's design,
paper_checks/reproduce/premise_control.py): plain GRPO (the control's runs, reused from the answer's
out/premise-control/) and every candidate of CANDIDATES (docs/training.md: each variant at its source's recommended
setting), trained from the base with the control's step, steps and seeds. GRPO's plateau Pass@1 L is the mean over
seeds of plain GRPO's Pass@1 at its last checkpoint; a run reaches it when its curve crosses L - REACH_TOLERANCE
(the answer's rule for reaching GRPO's plateau, paper_checks/premise_plateau.py: L is a mean of last points, which
a seed ending below the mean never crosses). A candidate's score is its Pass@32 read at its curve's first crossing
of that level (theory/matched.py read_at), minus its base's, averaged over seeds and prompts: how much coverage it
keeps at the Pass@1 GRPO reaches; plain GRPO's own score at the level is recorded beside them. A candidate counts
only when every seed's curve reaches the level (one that does not learn that far keeps coverage by not learning).
The chosen variant has the highest score (ties: CANDIDATES' order).

Amended 2026-12-06, after the selection's runs and before any test run: the level was L itself, with no tolerance.
Plain GRPO's own third seed peaks at 0.629 below its mean plateau 0.639 on the validation prompts, so that rule
excluded plain GRPO and every candidate (a selection that could not choose); the tolerance is the answer's own, set
before for the same reason. The test prompts were read by neither rule.

Test, on the answer's test prompts: the chosen variant run as the answer's GRPO runs are (their saved settings,
seeds and curve), its settings added. The record `grpo_variants` (report.json) holds, each a seeds x prompts
interval (paper_checks/design.py, 95%):

    variant_plateau_minus_base   the chosen variant's last checkpoint - base: Pass@32 and the no-correct share,
                                 with the premise's verdict (narrowed when the Pass@32 interval lies below 0):
                                 does that variant narrow at all?
    es_at_variant_plateau        ES - variant Pass@32 at L*, the highest Pass@1 every run of both reaches, read
                                 by the premise's (b') rule with the variant in GRPO's place
                                 (paper_checks/premise_plateau.py es_at_grpo_plateau): only where the variant's
                                 Pass@32 there lies MIN_FALL or more below the base is ES - variant read ("es_above"
                                 when its interval lies above 0, no advantage of half the variant's fall when it
                                 lies below that); elsewhere "not_readable": does ES keep more coverage than the best
                                 of them where that variant has narrowed?

Amended 2026-12-06, before the test runs: the registration read ES - variant at the top of the common Pass@1 range
as the premise's (b) (test > 0, a 2-point margin), with no condition on where that level lies. ES never rose above
the base in the answer, so that level lies at or below the base, where both curves stand at or near their shared
start and the variant has narrowed nothing: a difference read there says nothing about coverage kept where the
variant narrows. The premise's own (b') has this condition; the arm now reads the variant as (b') reads GRPO.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from escov.paper_checks.reproduce.premise_control import (
    CONTROL_CHECKPOINT_EVERY,
    CONTROL_CURVE,
    CONTROL_GRPO,
    CONTROL_PROMPTS,
    CONTROL_SEEDS,
    CONTROL_STEPS,
    control_runs,
)
from escov.theory.matched import read_at

# each coverage-keeping variant at the setting its source recommends (docs/training.md); name -> [grpo] settings
CANDIDATES = {
    "entropy-bonus": {"entropy_coef": 0.01},
    "adaptive-entropy": {"use_adaptive_entropy": True},  # Skywork-OR1 through TRL's defaults
    "forking-tokens": {"top_entropy_quantile": 0.2},  # the 80/20 rule's top 20%
    "gspo": {"importance_sampling_level": "sequence"},
    "cispo": {"loss_type": "cispo", "epsilon_high": 5.0},  # ScaleRL's cap
    "sapo": {"loss_type": "sapo"},
    "grpo-passk": {"adv_estimator": "grpo_passk"},
    "passk-analytic": {"adv_estimator": "passk_analytic", "pass_k": 4},
    "pkpo": {"adv_estimator": "pkpo", "pass_k": 4, "scale_rewards": "none"},  # the unbiased form
    "clip-cov": {"loss_type": "clip_cov"},
    "kl-cov": {"loss_type": "kl_cov"},
    "zero-success-gating": {"zero_success_gating": True},
    "outcome-bonus": {"outcome_bonus_coef": 0.5},
}
PLAIN = "grpo"
K = 32
VARIANTS_DIR = "grpo-variants"  # out/grpo-variants/ of the answer's out directory


@dataclass(frozen=True)
class Design:
    """The selection's sizes: the premise control's by default."""

    seeds: tuple[int, ...] = CONTROL_SEEDS
    steps: int = CONTROL_STEPS
    checkpoint_every: int = CONTROL_CHECKPOINT_EVERY
    prompts: int = CONTROL_PROMPTS
    curve: tuple[tuple[str, object], ...] = tuple(CONTROL_CURVE.items())


def selection_runs(model: Path, budget, design: Design, candidates: dict[str, dict]) -> dict[str, dict]:
    """Plain GRPO (named as the control names its runs) and each candidate on every selection seed."""
    runs = control_runs(model, budget, design.seeds, design.steps, checkpoint_every=design.checkpoint_every)
    for name, settings in candidates.items():
        for run_name, cfg in control_runs(
            model,
            budget,
            design.seeds,
            design.steps,
            grpo=CONTROL_GRPO | settings,
            checkpoint_every=design.checkpoint_every,
        ).items():
            runs[f"{name}-{run_name.split('-')[-1]}"] = cfg
    return runs


def highest_pass1(curves: list) -> list[float]:
    """Each curve's highest measured Pass@1."""
    return [float(np.max(c.pass1)) for c in curves]


def kept_at(curves: list, level: float) -> float | None:
    """Pass@32 read at each curve's first crossing of the Pass@1 level, minus its base point's, averaged over curves
    and prompts; None unless every curve reaches the level."""
    read = [read_at(c.pass1, c.metric(f"pass@{K}"), level) for c in curves]
    if not curves or any(r is None for r in read):
        return None
    return float(np.mean([r - c.metric(f"pass@{K}")[0] for r, c in zip(read, curves)]))


def choose(plain: list, by_candidate: dict[str, list]) -> dict:
    """The selection's record from the validation curves (paper_checks/matched.py Curve): GRPO's plateau Pass@1,
    the level a run must reach (its tolerance below), plain GRPO's Pass@32 - base at its last checkpoint and at the
    level, every candidate's score and each seed's highest Pass@1, the chosen one."""
    from escov.paper_checks.premise_plateau import REACH_TOLERANCE

    plateau_level = float(np.mean([c.pass1[-1] for c in plain]))
    level = plateau_level - REACH_TOLERANCE
    scores = {
        name: {"seeds": len(curves), "pass32_minus_base": kept_at(curves, level), "highest": highest_pass1(curves)}
        for name, curves in by_candidate.items()
    }
    for score in scores.values():
        score["reaches"] = score["pass32_minus_base"] is not None
    eligible = [n for n in by_candidate if scores[n]["reaches"]]
    chosen = max(eligible, key=lambda n: scores[n]["pass32_minus_base"]) if eligible else None  # max keeps the first
    plateau = float(np.mean([c.metric(f"pass@{K}")[-1] - c.metric(f"pass@{K}")[0] for c in plain]))
    return {
        "plateau": plateau_level,
        "tolerance": REACH_TOLERANCE,
        "level": level,
        "plain_pass32_minus_base": plateau,
        "plain_at_level": kept_at(plain, level),
        "plain_highest": highest_pass1(plain),
        "candidates": scores,
        "chosen": chosen,
        "reason": None
        if chosen
        else f"no candidate reached Pass@1 {level:.3f} (GRPO's plateau {plateau_level:.3f} - {REACH_TOLERANCE:g}) "
        "on every seed",
    }


def test_runs(answer_runs: Path, chosen: str, settings: dict) -> dict[str, dict]:
    """The answer's plain GRPO runs (their saved settings) with the chosen variant's settings added."""
    from escov.paper_checks.evidence import variant

    out = {}
    for _, cfg in _configs(answer_runs):
        if variant(cfg) == PLAIN and cfg["algo"] == "grpo":
            cfg = {k: v for k, v in cfg.items() if k not in ("schedule", "device")}
            out[f"grpo[{chosen}]-s{cfg['seed']}"] = cfg | {"grpo": cfg["grpo"] | settings}
    if len(out) < 2:
        raise ValueError(f"{answer_runs}: fewer than 2 plain GRPO runs to run the chosen variant as")
    return out


def record(selection: dict, es: list, variant_curves: list) -> dict:
    """The report's `grpo_variants` record from the selection and the test curves of ES and the chosen variant."""
    from escov.paper_checks.premise import endpoints, verdict
    from escov.paper_checks.premise_plateau import es_at_grpo_plateau, grpo_plateau_pass1, reaches
    from escov.paper_checks.premise_record import _pairs

    out = {
        "selection": selection,
        "chosen": selection["chosen"],
        "settings": selection["settings"],
        "registered": "docs/answer-budget.md, 'Than which GRPO?'",
    }
    if selection["chosen"] is None or len(variant_curves) < 2:
        return out | {"reason": selection["reason"] or "fewer than 2 test runs of the chosen variant with curves"}
    ends = endpoints(_pairs(variant_curves), ["other"] * len(variant_curves[0].ids))
    out["variant_plateau_minus_base"] = {
        f"pass@{K}": ends[f"pass@{K}"],
        "no_correct": ends["no_correct"],
        "verdict": verdict(ends[f"pass@{K}"]),
    }
    level = grpo_plateau_pass1(variant_curves)
    out["es_at_variant_plateau"], _ = es_at_grpo_plateau(es, variant_curves, level, reaches(es, level["level"]))
    return out


def render(rec: dict) -> list[str]:
    """REPORT.md's section."""
    from escov.paper_checks.premise_plateau import NOT_READABLE
    from escov.paper_checks.premise_record import _pm

    s = rec["selection"]
    lines = [
        "## Than which GRPO? ES against the best coverage-keeping variant",
        "",
        "Run after the answer, in its out directory: `python -m escov.paper_checks grpo-variants --answer OUT` "
        "(docs/answer-budget.md, 'Than which GRPO?').",
        "",
        f"Chosen on validation prompts: the variant whose Pass@32 - base is highest where its curve first reaches "
        f"Pass@1 {100 * s['level']:.1f} (GRPO's plateau {100 * s['plateau']:.1f} less {100 * s['tolerance']:g} "
        f"points), on every seed. Plain GRPO there {_signed(s['plain_at_level'])}, at its last checkpoint "
        f"{_signed(s['plain_pass32_minus_base'])}; its seeds' highest Pass@1 {_levels(s['plain_highest'])}.",
        "",
        "| candidate | reaches the level | each seed's highest Pass@1 | Pass@32 - base at the level (points) |",
        "| --- | --- | --- | --- |",
    ]
    for name, c in s["candidates"].items():
        value = "" if c["pass32_minus_base"] is None else _signed(c["pass32_minus_base"])
        chosen = " (chosen)" if name == rec["chosen"] else ""
        lines.append(f"| {name}{chosen} | {c['reaches']} | {_levels(c['highest'])} | {value} |")
    if rec.get("commits"):
        trained = "; ".join(
            f"{part} runs at {', '.join(f'{c[:12]} ({n})' for c, n in counts.items())}"
            for part, counts in rec["commits"].items()
            if counts
        )
        lines += ["", f"Code commits the runs trained with (runs each): {trained}."]
    if "reason" in rec:
        return lines + ["", f"- {rec['reason']}", ""]
    v, b = rec["variant_plateau_minus_base"], rec["es_at_variant_plateau"]
    lines += [
        "",
        f"- {rec['chosen']} at its last checkpoint - base (test): Pass@32 {_pm(v[f'pass@{K}'])}, "
        f"no-correct share {_pm(v['no_correct'])}: **{v['verdict']}**.",
    ]
    where = f"ES - {rec['chosen']} Pass@32 at the highest Pass@1 every run reaches"
    if "reason" in b:
        return lines + [f"- {where}: **{b['reading'].replace('_', ' ')}** ({b['reason']}).", ""]
    fall = f"{rec['chosen']}'s fall there (base - variant) {_pm(b['grpo_fall'])}"
    if b["reading"] == NOT_READABLE:
        return lines + [
            f"- {where} (Pass@1 {100 * b['level']:.1f}): {fall}, under the {100 * b['min_fall']:g}-point validity "
            f"condition: **not readable** (the variant has not narrowed where both methods are; ES - variant there "
            f"{_pm(b['difference'])} decides nothing).",
            "",
        ]
    return lines + [
        f"- {where} (Pass@1 {100 * b['level']:.1f}): {fall}; ES - variant {_pm(b['difference'])}: "
        f"**{b['reading']}** (test > 0; margin half the variant's fall, {100 * b['margin']:.2f} points).",
        "",
    ]


def _signed(x: float | None) -> str:
    return "not reached" if x is None else f"{100 * x:+.2f}"


def _levels(xs: list[float]) -> str:
    return ", ".join(f"{100 * x:.1f}" for x in xs)


def attach(report_dir: Path, rec: dict) -> None:
    """Add the record to report.json and its section to REPORT.md (replacing an earlier one)."""
    from escov.llm.rundir import read_json, write_json

    report = read_json(report_dir / "report.json", allow_non_finite=True) | {"grpo_variants": rec}
    write_json(report_dir / "report.json", report)
    md = report_dir / "REPORT.md"
    text = md.read_text(encoding="utf-8").split("\n## Than which GRPO?")[0].rstrip("\n")
    md.write_text(text + "\n\n" + "\n".join(render(rec)), encoding="utf-8")


def run(
    answer: Path,
    budget,
    *,
    premise_dir: str,
    report_dir: str,
    design: Design = Design(),
    candidates: dict[str, dict] | None = None,
    jobs: int = 2,
    selection_only: bool = False,
    log=print,
) -> dict:
    """Selection, test runs and the record, into answer/grpo-variants/ and the answer's report (resumable);
    premise_dir, report_dir: where the reproduction keeps the premise control and the report (reproduction.py).
    The test runs and the record read the answer's ES curves, so they need the answer's reproduction finished (its
    report written); selection_only: stop after selection.json (it needs the premise control alone), returning
    {"selection": ...}, so that the selection can run beside an unfinished answer and the rest resume after it."""
    from escov.llm.problem_sets import SELECTION_SPLIT
    from escov.llm.rundir import read_curve, write_json
    from escov.paper_checks.evidence import variant
    from escov.paper_checks.finite import without_non_finite
    from escov.paper_checks.matched import curve_of
    from escov.paper_checks.reproduce.training_runs import run_all

    answer, candidates = Path(answer), CANDIDATES if candidates is None else candidates
    control = answer / premise_dir / "control.json"
    if not control.is_file():
        raise ValueError(f"--answer {answer}: no {premise_dir}/control.json (run the answer's reproduction first)")
    model = Path(_configs(answer / premise_dir / "runs")[0][1]["model"])
    out, start = answer / VARIANTS_DIR, time.perf_counter()
    curve = dict(design.curve) | {"n_problems": design.prompts, "split": SELECTION_SPLIT}
    runs = selection_runs(model, budget, design, candidates)
    plain = {n: c for n, c in runs.items() if n.startswith(f"{PLAIN}-s")}
    timed = lambda msg: log(f"[{time.perf_counter() - start:6.0f} s] {msg}")  # noqa: E731
    run_all(plain, answer / premise_dir / "runs", curve, jobs, timed)  # the control's own runs: nothing to do
    run_all({n: c for n, c in runs.items() if n not in plain}, out / "selection", curve, jobs, timed)

    def curves(root: Path, names) -> list:
        return [curve_of(sorted(read_curve(root / n), key=lambda p: p["step"]), runs_seed(n)) for n in names]

    by_candidate = {name: curves(out / "selection", [f"{name}-s{s}" for s in design.seeds]) for name in candidates}
    selection = choose(curves(answer / premise_dir / "runs", sorted(plain)), by_candidate)
    selection["settings"] = candidates.get(selection["chosen"])
    write_json(out / "selection.json", selection)
    if selection_only:
        return {"selection": selection}
    if not (answer / report_dir / "report.json").is_file():
        raise ValueError(
            f"--answer {answer}: no {report_dir}/report.json, so its reproduction has not finished and its ES curves "
            "may be partial (--selection-only runs the selection alone)"
        )
    variant_curves, tests = [], {}
    if selection["chosen"]:
        tests = test_runs(answer / "runs", selection["chosen"], selection["settings"])
        run_all(tests, out / "test-runs", budget.curve, jobs, timed)
        variant_curves = curves(out / "test-runs", sorted(tests))
    es = curves(answer / "runs", [name for name, cfg in _configs(answer / "runs") if variant(cfg) == "es"])
    rec = record(selection, [c for c in es if c is not None], [c for c in variant_curves if c is not None])
    rec["commits"] = {
        "selection": commits_of(out / "selection" / n for n in runs if n not in plain),
        "test": commits_of(out / "test-runs" / n for n in tests),
    }
    rec, non_finite = without_non_finite(rec)  # an interval of too few seeds: null, its path listed
    rec["non_finite"] = non_finite
    write_json(out / "grpo_variants.json", rec)
    attach(answer / report_dir, rec)
    return rec


def commits_of(run_dirs) -> dict[str, int]:
    """How many runs trained with each code commit (inputs.json's, the last invocation's when a run was resumed;
    "+modified" marks a tree with uncommitted changes; "unknown" a run without the record)."""
    from escov.llm import rundir

    counts: dict[str, int] = {}
    for run_dir in run_dirs:
        code = (rundir.read_manifest(run_dir) or {}).get("code") or {}
        name = (code.get("commit") or "unknown") + ("+modified" if code.get("modified") else "")
        counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def runs_seed(name: str) -> int:
    """The seed of a run named NAME-sSEED."""
    return int(name.rsplit("-s", 1)[1])


def _configs(root: Path) -> list[tuple[str, dict]]:
    """(run name, saved settings) of every run directory under root, by name."""
    from escov.llm.rundir import CONFIG, read_json

    found = [(path.parent.name, read_json(path)) for path in sorted(Path(root).glob(f"*/{CONFIG}"))]
    if not found:
        raise ValueError(f"{root}: no run directories")
    return found


def main_args(args, budget, premise_dir: str, report_dir: str) -> int:
    """`grpo-variants`: the whole arm with the answer budget's settings."""
    names = [n for n in args.candidates.split(",") if n]
    unknown = sorted(set(names) - set(CANDIDATES))
    if unknown:
        raise ValueError(f"--candidates: unknown {unknown}; known: {list(CANDIDATES)}")
    rec = run(
        args.answer,
        budget,
        premise_dir=premise_dir,
        report_dir=report_dir,
        candidates={n: CANDIDATES[n] for n in names} or None,
        jobs=args.jobs,
        selection_only=args.selection_only,
    )
    if args.selection_only:
        chosen = rec["selection"]["chosen"]
        print(f"selection on validation prompts: chosen {chosen or 'none'}")
        print(f"wrote {Path(args.answer) / VARIANTS_DIR / 'selection.json'}")
        return 0
    print("\n".join(render(rec)))
    print(f"wrote {Path(args.answer) / VARIANTS_DIR / 'grpo_variants.json'}")
    return 0
