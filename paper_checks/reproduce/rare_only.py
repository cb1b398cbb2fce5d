"""The rare-only test prompts at the answer's endpoints: could the base lose them, and did GRPO or ES (issue 54).

A test prompt is rare-only when every one of its solutions uses the rare strategy of the base's corpus
(premise.prompt_family: Countdown's rare family, a planted task's rare strategy). From the stored endpoint
evaluations (reproduce/endpoints.py: c correct of n samples per prompt, per model and temperature), per temperature:

    base_pass_at_n    the base's Pass@n on the rare-only prompts: the share with c > 0 (the unbiased Pass@n of one
                      prompt is 1 when c > 0, else 0)
    grpo_plateau,     per seed, of the rare-only prompts the base solved: `kept` the share the endpoint still solves,
    es_end            `lost` the share it no longer solves (kept + lost = 1), and `gained`: rare-only prompts the
                      base never solved that the endpoint solves; each with its mean over seeds

On a task whose solutions are enumerated (grid_paths, subset_sum) the exact share of each prompt's solution set
found in the n samples is added, per model and temperature over all test prompts: the distinct correct answers of
a prompt are canonical ids of its enumerated solutions, so the share is distinct / |S| (solution_coverage.share_found
on the answers themselves; the endpoint files keep their count).

`rare_only_base_pass_at_k`, the premise record's field the pooled answer names, is base_pass_at_n at the highest
endpoint temperature (the endpoints' 1.0, where rarer paths are likelier; the registered endpoints' 0.6 beside it):
above 0 when some rare-only prompt is solved by the base, so that losing it is possible.

`attach(report_dir, record)` puts it into a published report (report.json's premise record, REPORT.md's section at
the end of the premise's), replacing the section an earlier attach wrote: the reproduction's answer_stages.attach
does so for a new run, and `python -m escov.paper_checks rare-only --answer DIR --into results/` for a published one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from escov.paper_checks.reproduce.endpoints import BASE, GROUPS, endpoint_file, last_step

ATTACHMENT = "rare_only.json"


def _problems(run_dir: Path, ids: list[str]) -> tuple[dict, str]:
    """The test problems (id -> Problem) the endpoint evaluations of the run read (problem_sets.eval_set), and the
    run's base model."""
    from escov.llm.config import load_config
    from escov.llm.problem_sets import eval_set

    cfg = load_config(run_dir)
    by_id = {p.id: p for p in eval_set(cfg).problems}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise ValueError(f"{run_dir}: endpoint prompts not among its test prompts: {', '.join(missing[:3])}")
    return by_id, cfg.model


def kept_lost(base_counts: np.ndarray, counts: np.ndarray) -> dict:
    """Per seed (rows of counts), of the prompts the base solved (base_counts > 0): the share kept and lost, and the
    count of prompts the base never solved that the seed solves."""
    solved = base_counts > 0
    rows = []
    for row in np.atleast_2d(counts):
        kept = int(np.sum(solved & (row > 0)))
        rows.append(
            {
                "kept": kept / solved.sum() if solved.any() else None,
                "lost": 1 - kept / solved.sum() if solved.any() else None,
                "gained": int(np.sum(~solved & (row > 0))),
            }
        )
    out = {"per_seed": rows}
    for field in ("kept", "lost", "gained"):
        values = [r[field] for r in rows if r[field] is not None]
        out[field] = float(np.mean(values)) if values else None
    return out


def _evaluations(out: Path, seeds: tuple[int, ...], t: float) -> dict[str, list[tuple[Path, dict]]]:
    """model group -> [(file, its evaluation)] at temperature t (the base; each seed's GRPO and ES endpoint);
    ValueError naming every missing file."""
    from escov.llm.rundir import read_json

    files = {BASE: [endpoint_file(out, BASE, 0, t)]}
    for group, variant in GROUPS.items():
        runs = [out / "runs" / f"{variant}-s{s}" for s in seeds]
        files[group] = [endpoint_file(out, r.name, last_step(r), t) for r in runs]
    missing = [str(f) for fs in files.values() for f in fs if not f.is_file()]
    if missing:
        raise ValueError(f"endpoint evaluations missing: {', '.join(missing)}")
    return {name: [(f, read_json(f)) for f in fs] for name, fs in files.items()}


def rare_only_record(out: Path, seeds: tuple[int, ...], temperatures: tuple[float, ...], task: str) -> dict:
    """The attachment (module docstring) from out/endpoints/ and the runs' settings (their test prompts and base);
    ValueError naming a missing evaluation or one of other prompts."""
    from escov.llm.tasks.solution_coverage import COVERAGE_TASKS, enumerated
    from escov.paper_checks.premise import prompt_family

    out = Path(out)
    by_t = {t: _evaluations(out, seeds, t) for t in temperatures}
    reference, first = by_t[temperatures[0]][BASE][0]
    ids = first["prompts"]
    others = [str(f) for data in by_t.values() for rows in data.values() for f, r in rows if r["prompts"] != ids]
    if others:
        raise ValueError(f"endpoint evaluations of other prompts than {reference}: {', '.join(others)}")
    by_id, model = _problems(out / "runs" / f"{GROUPS['grpo_plateau']}-s{seeds[0]}", ids)
    rare = np.array([prompt_family(task, by_id[i].meta, model) == "rare-only" for i in ids])
    sizes = [len(enumerated(task, by_id[i].meta)) for i in ids] if task in COVERAGE_TASKS else None
    record: dict = {
        "task": task,
        "temperatures": list(temperatures),
        "by_temperature": {},
        "prompts": len(ids),
        "rare_only_prompts": int(rare.sum()),
        "ids": [i for i, r in zip(ids, rare) if r],
    }
    for t, data in by_t.items():
        base_eval = data[BASE][0][1]
        base = np.array(base_eval["correct"])[rare]
        entry: dict = {
            "n": base_eval["n"],
            "base_pass_at_n": float(np.mean(base > 0)) if rare.any() else None,
            "base_solved": int(np.sum(base > 0)),
        }
        for group in GROUPS:
            counts = np.array([r["correct"] for _, r in data[group]])[:, rare]
            entry[group] = kept_lost(base, counts)
        if sizes is not None:
            entry["solution_share_found"] = {
                name: float(np.mean([np.array(r["distinct_correct_answers"]) / sizes for _, r in rows]))
                for name, rows in data.items()
            }
        record["by_temperature"][f"{t:g}"] = entry
    record["rare_only_base_pass_at_k"] = record["by_temperature"][f"{max(temperatures):g}"]["base_pass_at_n"]
    return record


def attach(report_dir: Path, record: dict) -> None:
    """report.json's premise record gains `rare_only` and `rare_only_base_pass_at_k`; REPORT.md its section (module
    docstring), in place of one written before."""
    from escov.llm.rundir import read_json, write_json
    from escov.paper_checks.premise_attachments import premise_section_end, render_rare_only

    report_dir = Path(report_dir)
    report = read_json(report_dir / "report.json")  # a report holds no non-finite value (nor may it be written one)
    report["premise"] = (report.get("premise") or {}) | {
        "rare_only": record,
        "rare_only_base_pass_at_k": record["rare_only_base_pass_at_k"],
    }
    write_json(report_dir / "report.json", report)
    path = report_dir / "REPORT.md"
    text = path.read_text(encoding="utf-8")
    lines = render_rare_only(record)
    start = text.find("\n" + lines[0] + "\n")
    if start >= 0:  # an earlier section: removed up to the next heading
        end = min(i for i in (text.find("\n### ", start + 1), text.find("\n## ", start + 1), len(text)) if i >= 0)
        text = text[:start] + text[end:]
    at = premise_section_end(text)
    path.write_text(text[:at] + "\n".join(lines) + "\n\n" + text[at:], encoding="utf-8")
