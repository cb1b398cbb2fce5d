"""A report's summary: the lines REPORT.md opens with and a reproduction's console ends on (at most SUMMARY_LINES).

    summary_lines(report, report_md, published, published_at) -> list[str]
    story_lines(report, published, published_at) -> list[str]   the answer's story, here beside the published
    decided_parts(claim) -> [(status, text)]        a decided real-run verdict, or an undecided one's decided parts
    undecided_rows(report, published) -> [dict]     what design would decide each undecided real-run part

The summary names the real-run claims decided here, each with the status the report's table gives it (a claim whose
parts did not all decide is listed as inconclusive and its decided parts as parts: "holds in part (@16, @32
inconclusive): @1 ..."), the answer's story (STORY: GRPO's Pass@1 gain and its Pass@32 against the base, read as
narrowed, widened or no change detected; ES's Pass@1 and Pass@32 against the base; ES - GRPO Pass@32, all at the
runs' last checkpoints) here beside the published answer's, the published answer's premise reading (GRPO at its
plateau - base, Pass@32 on its curves' 64 samples), the answer's key figure (ES - GRPO Pass@32 at matched Pass@1)
beside the published one, where the report is and the command for the full answer. `published` is the published
report.json (PUBLISHED, in the repository; None when it is absent), `published_at` the file it was read from (named
as a folder of the repository with its REPORT.md).

For an undecided part, the effect it needs is the one the published answer measured for the same part: the
seeds that would detect it at this run's prompts come from this run's own variance (design.seeds_to_detect).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from escov.paper_checks.design import seeds_to_detect
from escov.paper_checks.premise import verdict as coverage_verdict
from escov.paper_checks.verdict import FAILS, HOLDS, INCONCLUSIVE, MISSING, NOT_RUN, NOT_TESTABLE, fmt_interval
from escov.theory.claims import BY_ID

SUMMARY_LINES = 25
PUBLISHED = Path(__file__).resolve().parents[1] / "results" / "report.json"  # the published answer's report
KEY_CLAIM, KEY_PART = "matched_passk_above_grpo", "ES - GRPO @32 at matched Pass@1"
FULL_ANSWER = "python -m escov.paper_checks reproduce --budget answer --out runs/answer --jobs 2"
# the next answer, from its measured units: 23,378 CPU-s at N = 32 (docs/answer-budget.md, its cost table); the
# published one took 53.9 min
FULL_ANSWER_TIME = "about 3.2 hours on 2 cores"
MOST_SEEDS = 64  # seeds beyond this are "out of reach" in the table of what would decide a part
# The answer's story, as its claims' real-run parts measure it (each run's last checkpoint against the base, on the
# test prompts): (row, claim, part). GRPO's Pass@32 row is also read as narrowed / widened / no change detected.
STORY = (
    ("GRPO Pass@1 - base", "grpo_raises_pass1", "@1"),
    ("GRPO Pass@32 - base", "grpo_passk_below_base", "@32"),
    ("ES Pass@1 - base", "es_improves_over_base", "@1"),
    ("ES Pass@32 - base", "es_improves_over_base", "@32"),
    ("ES - GRPO Pass@32", "es_passk_above_grpo", "ES - GRPO @32"),
)
NARROWING = ("grpo_passk_below_base", "@32")


def load_published(path: Path = PUBLISHED) -> dict | None:
    """The published answer's report.json, or None when the file is absent or unreadable."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def estimates(real: dict) -> dict[str, dict]:
    """The labelled interval estimates of a real-run verdict (design.Estimate.to_json), in its evidence."""
    return {
        label: e
        for label, e in (real.get("evidence") or {}).items()
        if isinstance(e, dict) and {"mean", "lo", "hi", "detectable", "design"} <= set(e)
    }


def _segment(ours: str, label: str) -> str:
    """The part of a verdict's text that reports `label` (texts join their parts with '; ')."""
    return next((s for s in ours.split("; ") if s.startswith(label)), label)


def _short(text: str, width: int = 118) -> str:
    """A summary line's text: without the bias control's aside, cut to width."""
    text = text.split(" (bias control")[0]
    return text if len(text) <= width else text[: width - 3] + "..."


def part_status(claim_id: str, label: str, est: dict) -> str:
    """One part's status by its test (Claim.test_of; None bounds, written for infinite ones, decide nothing)."""
    if est["lo"] is None or est["hi"] is None:
        return INCONCLUSIVE
    return BY_ID[claim_id].test_of(label).decide(est["lo"], est["hi"])


def decided_parts(claim: dict) -> list[tuple[str, str]]:
    """(status, text) of the real-run verdict when it is decided; for an undecided claim with decided parts, one
    entry whose status is the claim's (as the table gives it) and whose text says the verdict holds (or not) in
    part, names the undecided parts and gives the decided ones; [] when no part decided."""
    real = claim["levels"]["real"]
    if real["status"] in (HOLDS, FAILS):
        return [(real["status"], f"{claim['id']}: {real['ours']}")]
    status = {label: part_status(claim["id"], label, est) for label, est in estimates(real).items()}
    done = {label: s for label, s in status.items() if s in (HOLDS, FAILS)}
    if not done:
        return []
    rest = [label for label in status if label not in done]
    verdicts = " and ".join(dict.fromkeys(done.values()))
    aside = f" ({', '.join(rest)} {INCONCLUSIVE})" if rest else ""
    parts = "; ".join(_segment(real["ours"], label) for label in done)
    return [(real["status"], f"{claim['id']}: {verdicts} in part{aside}: {parts}")]


def _published_estimate(published: dict | None, claim_id: str, label: str) -> tuple[dict | None, str]:
    for claim in (published or {}).get("claims", []):
        if claim["id"] == claim_id:
            real = claim["levels"]["real"]
            est = estimates(real).get(label)
            return est, (part_status(claim_id, label, est) if est else real["status"])
    return None, ""


def effect_needed(claim_id: str, label: str, mean: float) -> float:
    """How far an estimate lies from its part's decision boundary: what a design must detect to decide it
    (directional: from the threshold; equivalence: inside the margin; 0 when it lies on the boundary's wrong side)."""
    test = BY_ID[claim_id].test_of(label)
    if test.kind == "equivalence":
        return max(0.0, test.margin - abs(mean))
    return abs(mean - test.threshold)


def _scale(claim_id: str, label: str) -> tuple[float, str]:
    """How a part is printed, by its test's unit: Pass@k and shares in points, entropy changes in %, nats as they
    are."""
    test = BY_ID[claim_id].test_of(label)
    return test.unit, test.printed_unit


def _fmt(claim_id: str, label: str, est: dict) -> str:
    scale, unit = _scale(claim_id, label)
    if est["lo"] is None or est["hi"] is None:
        return f"{est['mean'] * scale:+.2f}{unit} (no interval)"
    return fmt_interval(est["mean"], est["lo"], est["hi"], scale, unit)


def _detectable(claim_id: str, label: str, est: dict) -> str:
    scale, unit = _scale(claim_id, label)
    d = est["detectable"]
    return "none (one seed)" if d is None or not math.isfinite(d) else f"{d * scale:.3g}{unit}"


def undecided_rows(report: dict, published: dict | None) -> list[dict]:
    """Every undecided part of an inconclusive real-run verdict: this run's estimate and detectable difference,
    the published answer's (the effect a design has to detect), and the seeds that detect it at this run's prompts
    (None: more than MOST_SEEDS; "" without a published value)."""
    rows = []
    for claim in report["claims"]:
        real = claim["levels"]["real"]
        if real["status"] != INCONCLUSIVE:
            continue
        if not estimates(real):  # no interval to size a design on (e.g. no common Pass@1 range): the reason
            rows.append(
                {
                    "claim": claim["id"],
                    "part": "no estimate",
                    "here": real["note"] or real["ours"],
                    "design": "",
                    "detectable": "",
                    "answer": "",
                    "answer_detectable": "",
                    "seeds_needed": "",
                }
            )
        for label, est in estimates(real).items():
            if part_status(claim["id"], label, est) != INCONCLUSIVE:
                continue
            answer, answer_status = _published_estimate(published, claim["id"], label)
            seeds = ""
            if answer is not None and est["detectable"] is not None and math.isfinite(est["detectable"] or math.inf):
                seeds = seeds_to_detect(est, effect_needed(claim["id"], label, answer["mean"]), most=MOST_SEEDS)
            rows.append(
                {
                    "claim": claim["id"],
                    "part": label,
                    "here": _fmt(claim["id"], label, est),
                    "design": est["design"],
                    "detectable": _detectable(claim["id"], label, est),
                    "answer": "" if answer is None else f"{_fmt(claim['id'], label, answer)}, {answer_status}",
                    "answer_detectable": ""
                    if answer is None
                    else f"{_detectable(claim['id'], label, answer)} ({answer['design']})",
                    "seeds_needed": seeds,
                }
            )
    return rows


def undecided_markdown(report: dict, published: dict | None) -> list[str]:
    """REPORT.md's table of what would decide the rest, and the real-run claims these runs could not test."""
    rows = undecided_rows(report, published)
    untested = [
        f"- {c['id']}: {c['levels']['real']['status']}"
        + (f" ({c['levels']['real']['note']})" if c["levels"]["real"]["note"] else "")
        for c in report["claims"]
        if c["levels"]["real"]["status"] in (NOT_RUN, MISSING, NOT_TESTABLE) and BY_ID[c["id"]].real
    ]  # claims with no real-run check at all are theory's and simulate's
    if not rows and not untested:
        return []
    lines = ["## What would decide the rest", ""]
    if rows:
        lines += [
            f"Each undecided part of a real-run claim: its estimate and the smallest difference this design "
            f"detects at 80% power, beside the effect it needs (the published answer's estimate of the same part: "
            f"its distance from the test's boundary is what a design has to detect) and the seeds that would "
            f"detect that at this run's prompts, from this run's own variance ('out of reach': more than "
            f"{MOST_SEEDS} seeds).",
            "",
            "| claim | part | here | design | detectable here | the answer (the effect it needs) | "
            "detectable there | seeds to detect it here |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
    for r in rows:
        need = (
            "" if r["seeds_needed"] == "" else "out of reach" if r["seeds_needed"] is None else str(r["seeds_needed"])
        )
        lines.append(
            f"| {r['claim']} | {r['part']} | {r['here']} | {r['design']} | {r['detectable']} | {r['answer']} | "
            f"{r['answer_detectable']} | {need} |"
        )
    if untested:
        lines += [
            "",
            "Not tested by these runs (a budget whose runs they need: `--budget answer` for the schedules, "
            "sampled members and 64-sample curves; `--budget full` for the ablations, nulls and the population "
            "sweep):",
            "",
            *untested,
        ]
    return lines + [""]


def _key_line(who: str, report: dict | None) -> str:
    for claim in (report or {}).get("claims", []):
        if claim["id"] == KEY_CLAIM:
            real = claim["levels"]["real"]
            est = estimates(real).get(KEY_PART)
            if est is None:
                note = real["note"].removeprefix(real["status"] + ": ")
                return _short(f"  {who:10s} {real['status']}: {note}")
            return (
                f"  {who:10s} {_fmt(KEY_CLAIM, KEY_PART, est)}, {part_status(KEY_CLAIM, KEY_PART, est)}; "
                f"{est['design']}, "
                f"detectable {_detectable(KEY_CLAIM, KEY_PART, est)}"
            )
    return f"  {who:10s} not in this report"


def published_folder(path: Path | str = PUBLISHED) -> str:
    """The folder of a published report.json as the repository names it ("results/", "results/paper-regime/")."""
    folder = Path(path).resolve().parent
    try:
        return f"{folder.relative_to(PUBLISHED.parents[1]).as_posix()}/"
    except ValueError:
        return f"{folder}/"


def _story_estimate(report: dict | None, claim_id: str, label: str) -> dict | None:
    claim = next((c for c in (report or {}).get("claims", []) if c["id"] == claim_id), None)
    return None if claim is None else estimates(claim["levels"]["real"]).get(label)


def _story_cell(report: dict | None, claim_id: str, label: str) -> str:
    est = _story_estimate(report, claim_id, label)
    if est is None:
        return "not measured" if report else "not found"
    cell = _fmt(claim_id, label, est)
    if (claim_id, label) == NARROWING and est["lo"] is not None and est["hi"] is not None:
        cell += f", {coverage_verdict(est).replace('_', ' ')}"
    return cell


def _premise_line(published: dict | None) -> list[str]:
    """The published answer's premise reading (a): GRPO at its last checkpoint - base, Pass@32, on its curves."""
    a = ((published or {}).get("premise") or {}).get("grpo_plateau_minus_base")
    if not a:
        return []
    steps = sorted({p["step"] for p in a["plateau"].values()})
    at = f"step {steps[0]}" if len(steps) == 1 else "its plateau"
    return [
        _short(
            f"  premise (published): GRPO at {at} - base, Pass@32 {_fmt(*NARROWING, a['pass@32'])}, "
            f"{a['verdict'].replace('_', ' ')} ({a['pass@32']['samples']} samples a prompt)"
        )
    ]


def story_lines(report: dict, published: dict | None, published_at: Path | str = PUBLISHED) -> list[str]:
    """The answer's story (STORY) at the runs' last checkpoints, here | published, with each side's design, then the
    published answer's premise reading."""
    folder = published_folder(published_at)
    design = [
        (est or {}).get("design", "not measured" if r else "not found")
        for r in (report, published)
        for est in [_story_estimate(r, *STORY[0][1:])]
    ]
    rows = [(name, _story_cell(report, c, p), _story_cell(published, c, p)) for name, c, p in STORY]
    width = max(len(here) for _, here, _ in rows + [("", design[0], "")])
    return (
        [f"The answer's story at the last checkpoints, here | published ({folder}, {folder}REPORT.md):"]
        + [f"  {'design':20s} {design[0]:{width}s} | {design[1]}"]
        + [f"  {name:20s} {here:{width}s} | {there}" for name, here, there in rows]
        + _premise_line(published)
    )


def summary_lines(
    report: dict, report_md: Path | str, published: dict | None, published_at: Path | str = PUBLISHED
) -> list[str]:
    """The summary (at most SUMMARY_LINES lines): decided claims, the answer's story and its key figure beside the
    published ones (published_at: the report.json `published` was read from), where the report is, the command for
    the full answer."""
    listed = [part for claim in report["claims"] for part in decided_parts(claim)]
    decided = sum(status in (HOLDS, FAILS) for status, _ in listed)
    undecided = sum(1 for c in report["claims"] if c["levels"]["real"]["status"] == INCONCLUSIVE)
    tail = [
        *story_lines(report, published, published_at),
        "The answer's key figure, ES - GRPO Pass@32 at matched Pass@1:",
        _key_line("here", report),
        _key_line("published", published)
        if published
        else f"  published  not found ({published_folder(published_at)}report.json)",
        f"Report: {report_md}",
        f"The full answer ({FULL_ANSWER_TIME}): {FULL_ANSWER}",
    ]
    in_part = f" (and {len(listed) - decided} in part, listed as {INCONCLUSIVE})" if len(listed) > decided else ""
    head = ["== Summary ==", f"Decided here by the real runs (95% intervals): {decided}{in_part}"]
    room = SUMMARY_LINES - len(head) - len(tail) - 1
    shown = [_short(f"  {status:14s} {text}") for status, text in listed]
    if len(shown) > room:
        shown = shown[: room - 1] + [f"  ... and {len(shown) - room + 1} more (REPORT.md)"]
    more = (
        f"Not decided here: {undecided} real-run claims (inconclusive); what would decide each: "
        "REPORT.md, 'What would decide the rest'"
    )
    return head + (shown or ["  none"]) + [more] + tail
