"""`python -m escov.paper_checks planted-bases`: the base of each counted task's answer, chosen on validation prompts.

A planted base (llm/tinymodel_planted.py) sees one strategy often and the other rarely. The answer on a task can
speak to the premise only where its base shows that rarity and could still lose what it knows: a rule fixed before
any candidate was measured, read on VALIDATION_PROMPTS validation prompts of the task with `n` = 32 samples at
T = 1.0 (llm/planted_base.py measure_base; never a test prompt):

    enough        at least MIN_RARE_ONLY of the prompts are rare-only (every solution uses the rare strategy)
    reachable     the base solves some rare-only prompt: its Pass@32 on them is above 0 (so a run can lose them)
    rare          the rarity shows: its Pass@1 on rare-only prompts is at most RARITY x its Pass@1 on all prompts

The candidates (CANDIDATES: `--set` pairs of `pretrain-planted`, the shipped first-look recipe first) are built in
order and the first that meets all three is the task's base (budgets.py TASK_BASES holds the choice, filled in from
this record before the task's answer ran); a task where none does has no answer.

    python -m escov.paper_checks planted-bases --out DIR [--task grid_paths]   -> DIR/planted_bases.json, .md

Each candidate is pretrained through bases.obtain_base (cached by its recipe, seed 0, one thread).
"""

from __future__ import annotations

from pathlib import Path

from escov.llm.tinymodel_planted import PLANTED_TASKS

VALIDATION_PROMPTS = 64
SAMPLES = 32
TEMPERATURE = 1.0
MIN_RARE_ONLY = 5
RARITY = 0.5
# in order; the first is the shipped first look (rare_share 0.1, rare_keep 0.3); then a rare-only instance kept more
# often (for `reachable`), then a rarer rare strategy (for `rare`)
CANDIDATES: tuple[tuple[tuple[str, str], ...], ...] = (
    (),
    (("rare_keep", "0.6"),),
    (("rare_share", "0.05"),),
)
RECORD_JSON, RECORD_MD = "planted_bases.json", "planted_bases.md"


def meets(measure: dict) -> dict:
    """The rule's three conditions (module docstring) on one candidate's measure_base record."""
    overall = measure["pass_at_k"]["1"]
    rare1, rare_n = measure["rare_only_pass_at_k"]["1"], measure["rare_only_pass_at_k"][str(measure["n"])]
    enough = measure["rare_only_prompts"] >= MIN_RARE_ONLY
    return {
        "enough": bool(enough),
        "reachable": bool(enough and rare_n > 0),
        "rare": bool(enough and rare1 <= RARITY * overall),
    }


def choose(task: str, out: Path, progress: bool = True) -> dict:
    """Measure the task's candidates in order until one meets the rule; the task's record (module docstring)."""
    from escov.llm.planted_base import measure_base
    from escov.paper_checks.base_info import base_record
    from escov.paper_checks.reproduce.bases import base_cache_key, obtain_base, pretrain_command

    if task not in PLANTED_TASKS:
        raise ValueError(f"--task must be one of {', '.join(PLANTED_TASKS)}, got {task!r}")
    tried, chosen = [], None
    for settings in CANDIDATES:
        base = obtain_base(out / f"{task}-{base_cache_key(task, 0, settings)}", task, progress, settings)
        measure = measure_base(base, task, prompts=VALIDATION_PROMPTS, n=SAMPLES, temperature=TEMPERATURE)
        conditions = meets(measure)
        tried.append(
            {
                "settings": dict(settings),
                "base": base_record(base),
                "command": pretrain_command(task, settings),
                "measure": measure,
                "conditions": conditions,
            }
        )
        if all(conditions.values()):
            chosen = dict(settings)
            break
    return {"task": task, "candidates": tried, "chosen": chosen}


def _rate(value: float | None) -> str:
    """A table cell: the rate to 3 decimals, "-" where it is undefined (no rare-only prompt among those measured)."""
    return "-" if value is None else f"{value:.3f}"


def render(record: dict) -> list[str]:
    """planted_bases.md: each task's candidates, their measures and the rule's conditions."""
    lines = [
        "# The counted tasks' bases, chosen on validation prompts",
        "",
        f"{VALIDATION_PROMPTS} validation prompts x {SAMPLES} samples at T = {TEMPERATURE:g}; a candidate meets the "
        f"rule when at least {MIN_RARE_ONLY} prompts are rare-only, its Pass@{SAMPLES} on them is above 0 and its "
        f"Pass@1 on them is at most {RARITY:g} x its Pass@1 on all prompts.",
        "",
        "| task | recipe | Pass@1 | Pass@32 | rare-only prompts | their Pass@1 | their Pass@32 | enough | reachable "
        "| rare | chosen |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for task in sorted(record):
        r = record[task]
        for c in r["candidates"]:
            m, ok = c["measure"], c["conditions"]
            recipe = ", ".join(f"{k}={v}" for k, v in c["settings"].items()) or "as shipped"
            lines.append(
                f"| {task} | {recipe} | {_rate(m['pass_at_k']['1'])} | {_rate(m['pass_at_k'][str(m['n'])])} "
                f"| {m['rare_only_prompts']} | {_rate(m['rare_only_pass_at_k']['1'])} "
                f"| {_rate(m['rare_only_pass_at_k'][str(m['n'])])} | {'yes' if ok['enough'] else 'no'} "
                f"| {'yes' if ok['reachable'] else 'no'} | {'yes' if ok['rare'] else 'no'} "
                f"| {'yes' if c['settings'] == r['chosen'] else ''} |"
            )
    return lines


def main_args(args) -> int:
    from escov.llm.rundir import read_json, write_json

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / RECORD_JSON
    record = read_json(path) if path.is_file() else {}
    for task in [args.task] if args.task else PLANTED_TASKS:
        if task not in record:
            record[task] = choose(task, args.out, progress=not args.no_progress)
            write_json(path, record)
    (args.out / RECORD_MD).write_text("\n".join(render(record)) + "\n", encoding="utf-8")
    print("\n".join(render(record)))
    return 0
