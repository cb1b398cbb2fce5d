"""The premise's registered endpoints on several tasks, each task's reading beside one pooled across them (issue 54).

Input: one published premise record per task (report.json "premise", premise_record.py). Each member of the
registered family (registered.py FAMILY: (a), (b'), (d'), (e)) is read from a task's record exactly as registered.py
reads it there (its interval, standard error and degrees of freedom; (b') only where that task's validity condition
held), and pooled across the tasks where it was read by pooled.py's random-effects model:

    premise_by_task   task -> that task's premise record, unchanged
    pooled            member -> {"label", "test", the pool (mean, lo, hi, se, df, tau, i2, tasks, by_task),
                      "reading", "tasks_agreeing", "holm", "not_read"}; or {"label", "test", the pool's fields
                      null, "tasks", "reason", "not_read"} where fewer than 2 tasks read it (pooled.py: nothing
                      to pool)

    reading           a directional member (registered.py GREATER / LESS): "claimed_side" when the pooled interval
                      lies wholly on the side its test claims ((a): GRPO narrows; (b'): ES above GRPO), "other_side"
                      when wholly on the other, else "inconclusive"; a two-sided member: "differs" when the interval
                      excludes 0, else "inconclusive". A pool over tasks that disagree is wide by construction (its
                      interval carries tau), so "inconclusive" is the pool's answer there, not a task's.
    tasks_agreeing    how many tasks' own 95% intervals lie wholly on the claimed side (directional) or exclude 0
                      on the pooled mean's side (two-sided): the count the README names beside the pool
    holm              in each pooled entry: the pooled members tested as one family, as registered.py tests one
                      task's: each member's p from its t statistic (df = tasks - 1; a directional member at twice
                      its one-sided p), Holm's step-down at family-wise 0.05

`python -m escov.paper_checks pool-tasks TASK=REPORT_JSON ... --out DIR [--into REPORT_JSON]` writes DIR/pooled.json
and DIR/POOLED.md, and with --into adds `premise_by_task` and `pooled` to a published report.json and POOLED.md's
table as a section of the REPORT.md beside it (before "All claims"; a second pool replaces it).
"""

from __future__ import annotations

import json
from pathlib import Path

from escov.paper_checks.pooled import pooled
from escov.paper_checks.registered import FAMILY, LABELS, SIDES, TWO_SIDED, family_member, holm, member_p
from escov.paper_checks.verdict import fmt_interval

POOLED_JSON, POOLED_MD = "pooled.json", "POOLED.md"
UNREAD_FIELDS = ("mean", "lo", "hi", "se", "df", "tau", "i2")  # null in a member fewer than 2 tasks read


def _reading(pool: dict, side: int) -> str:
    """The pooled interval's reading (module docstring)."""
    lo, hi = pool["lo"], pool["hi"]
    if side == TWO_SIDED:
        return "differs" if lo > 0 or hi < 0 else "inconclusive"
    lo, hi = (lo, hi) if side > 0 else (-hi, -lo)
    return "claimed_side" if lo > 0 else "other_side" if hi < 0 else "inconclusive"


def _agrees(est: dict, side: int, pooled_mean: float) -> bool:
    """Whether one task's own interval lies wholly on the claimed side (two-sided: excludes 0 on the pool's side)."""
    sign = side if side != TWO_SIDED else (1 if pooled_mean >= 0 else -1)
    return est["lo"] > 0 if sign > 0 else est["hi"] < 0


def pool_premise(by_task: dict[str, dict]) -> dict:
    """{"premise_by_task", "pooled"} of task -> premise record (module docstring)."""
    if not by_task:
        raise ValueError("pool-tasks: no task given")
    out: dict[str, dict] = {}
    for name, side in FAMILY.items():
        read = {task: est for task, record in by_task.items() if (est := family_member(record, name)) is not None}
        entry = {"label": LABELS[name], "test": SIDES[side], "not_read": sorted(set(by_task) - set(read))}
        pool = pooled({task: {"mean": est["mean"], "se": est["se"]} for task, est in read.items()})
        if "reason" in pool:  # the pool's fields kept, null: the member is not read, and why
            out[name] = entry | dict.fromkeys(UNREAD_FIELDS) | {"tasks": pool["tasks"], "reason": pool["reason"]}
            continue
        agreeing = [task for task, est in read.items() if _agrees(est, side, pool["mean"])]
        out[name] = entry | pool | {"reading": _reading(pool, side), "tasks_agreeing": sorted(agreeing)}
    tests = {name: member_p(entry, FAMILY[name]) for name, entry in out.items() if "reason" not in entry}
    adjusted = holm({name: t["p"] for name, t in tests.items()})
    for name in tests:
        out[name]["holm"] = tests[name] | adjusted[name]
    return {"premise_by_task": dict(sorted(by_task.items())), "pooled": out}


# the members whose values are counts, not shares: written as they are (distinct correct solutions per prompt)
COUNTS = ("distinct_at_grpo_plateau",)


def _fmt(name: str, mean: float, lo: float, hi: float) -> str:
    """A member's interval in its unit: points for a share, the count itself for COUNTS."""
    return fmt_interval(mean, lo, hi, scale=1.0, unit="") if name in COUNTS else fmt_interval(mean, lo, hi)


def render(result: dict) -> list[str]:
    """POOLED.md: each member per task and pooled, with the spread and how many tasks agree."""
    tasks = sorted(result["premise_by_task"])
    lines = [
        "# The premise on several tasks",
        "",
        f"Tasks: {', '.join(tasks)}. Each registered endpoint read on each task as that task's record reads it, then "
        "pooled (random effects: DerSimonian-Laird spread, Hartung-Knapp-Sidik-Jonkman interval with its factor "
        "kept at least 1, t on tasks - 1 degrees of freedom); Holm across the pooled endpoints.",
        "",
        "| endpoint | " + " | ".join(tasks) + " | pooled | between-task sd | tasks agreeing | Holm |",
        "| --- | " + " | ".join("---" for _ in tasks) + " | --- | --- | --- | --- |",
    ]
    for name, entry in result["pooled"].items():
        cells = []
        for task in tasks:
            est = family_member(result["premise_by_task"][task], name)
            cells.append("not read" if est is None else _fmt(name, est["mean"], est["lo"], est["hi"]))
        if "reason" in entry:
            lines.append(f"| {entry['label']} | " + " | ".join(cells) + f" | {entry['reason']} | | | |")
            continue
        test = entry["holm"]
        decided = "rejected" if test["rejects"] else "not rejected"
        lines.append(
            f"| {entry['label']} | "
            + " | ".join(cells)
            + f" | {_fmt(name, entry['mean'], entry['lo'], entry['hi'])}: {entry['reading']} | "
            + (f"{entry['tau']:.2f}" if name in COUNTS else f"{100 * entry['tau']:.2f} pts")
            + f" (I^2 {100 * entry['i2']:.0f}%) | "
            + f"{len(entry['tasks_agreeing'])} of {len(entry['tasks'])} | p adj {test['p_adjusted']:.3g}, {decided} |"
        )
    return lines + [""]


def _load(spec: str) -> tuple[str, dict]:
    """TASK=REPORT_JSON -> (task, its premise record), or ValueError naming the argument or the file."""
    task, sep, path = spec.partition("=")
    if not sep or not task or not path:
        raise ValueError(f"pool-tasks: {spec!r} is not TASK=REPORT_JSON")
    file = Path(path)
    try:
        report = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{file}: not JSON ({err})") from err
    if not isinstance(report, dict) or not isinstance(report.get("premise"), dict):
        raise ValueError(f"{file}: no premise record (a report.json of `reproduce --budget answer`)")
    return task, report["premise"]


def pool_tasks_command(specs: list[str], out: Path, into: Path | None = None) -> dict:
    """Read TASK=REPORT_JSON specs, write out/pooled.json and out/POOLED.md, and with `into` add premise_by_task and
    pooled to that report.json; returns the result."""
    loaded = [_load(spec) for spec in specs]
    tasks = [task for task, _ in loaded]
    if len(set(tasks)) != len(tasks):
        raise ValueError(f"pool-tasks: a task is named twice in {tasks}")
    result = pool_premise(dict(loaded))
    out.mkdir(parents=True, exist_ok=True)
    (out / POOLED_JSON).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (out / POOLED_MD).write_text("\n".join(render(result)), encoding="utf-8")
    if into is not None:
        report = json.loads(into.read_text(encoding="utf-8"))
        report |= result
        into.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        if (into.parent / "REPORT.md").is_file():
            _into_report_md(into.parent / "REPORT.md", render(result))
    return result


def _into_report_md(path: Path, lines: list[str]) -> None:
    """The pooled section (render's lines, its heading made a second-level one) in REPORT.md before "## All claims"
    (else at the end), in place of the one an earlier pool wrote."""
    section = ["## " + lines[0].removeprefix("# ")] + lines[1:]
    text = path.read_text(encoding="utf-8")
    start = text.find("\n" + section[0] + "\n")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[:start] + (text[end:] if end >= 0 else "\n")
    at = text.find("\n## All claims")
    at = at + 1 if at >= 0 else len(text)
    path.write_text(text[:at] + "\n".join(section) + "\n" + text[at:], encoding="utf-8")
