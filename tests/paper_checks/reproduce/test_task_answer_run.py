"""A counted task's answer end to end on a tiny design (budgets.task_answer at small sizes, the shipped planted
grid_paths base): its positive control on validation prompts with the planted families, ES and GRPO, the endpoints,
the report's premise record and the rare-only prompts attached to it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from escov.paper_checks.reproduce.answer_arms import AnswerArms
from escov.paper_checks.reproduce.budgets import BUDGETS

CURVE = {"points": 1, "samples": 32, "temperature": 1.0, "resolution": 0.99, "max_points": 2}
COMMON = BUDGETS["answer-grid_paths"].common | {
    "steps": 2,
    "batch_size": 2,
    "eval_problems": 12,
    "eval_samples": 2,
    "eval_ks": (1,),
    "heldout_problems": 2,
    "checkpoint_every": 1,
    "checkpoint_dense": 0,
    "step_samples": 1,
}
TINY = replace(
    BUDGETS["answer-grid_paths"],
    seeds=(0, 1),
    common=COMMON,
    curve=CURVE,
    grpo={"num_generations": 4, "learning_rate": 1e-4},
    es={"population_size": 4, "sigma": 0.02, "alpha": 0.01},
    es_updates=4,
    es_common={"checkpoint_every": 2, "checkpoint_dense": 0, "probe_every": 0},
    arms=AnswerArms(
        endpoint_samples=16,
        endpoint_temperatures=(1.0,),
        endpoint_chunk=6,
        null_seeds=(),
        draw_seeds=(),
        lr_control=None,
        control=(("seeds", (300, 301)), ("steps", 2), ("problems", 12), ("curve", CURVE), ("checkpoint_every", 1)),
    ),
)


def test_a_task_answer_runs_and_its_record_reads_the_planted_families(tmp_path):
    import torch

    from escov.llm.rundir import read_json
    from escov.llm.tasks.solution_coverage import enumerated
    from escov.paper_checks.report import build_report
    from escov.paper_checks.reproduce import answer_stages, endpoints
    from escov.paper_checks.reproduce.bases import shipped_base_dir
    from escov.paper_checks.reproduce.jobs import run_jobs
    from escov.paper_checks.reproduce.reproduction import PREMISE_DIR, REPORT_DIR, reproduction_jobs

    torch.set_num_threads(1)
    model = shipped_base_dir("grid_paths")
    out = tmp_path / "answer"
    jobs = [
        j
        for j in reproduction_jobs(TINY, out, model, progress=False)
        if j.name not in ("theory", "simulate", "Lemma 1 grid")
    ]
    run_jobs(jobs, 1, lambda msg: None)
    control = read_json(out / PREMISE_DIR / "control.json")
    assert control["prompts"] == 12 and control["split"] == "validation"
    # the control's families: a validation prompt is rare-only when every shortest path starts vertically, counted
    # here from the enumeration (premise.prompt_family reads the same table; the Countdown rule would find none)
    from escov.llm.tasks import get_task

    validation = get_task("grid_paths").problems("validation", 12, seed=0)
    rare_validation = sum(all(s == "rare" for _, s in enumerated("grid_paths", p.meta).values()) for p in validation)
    families = control["endpoints"]["families"]
    assert rare_validation > 0 and families["rare-only"]["prompts"] == rare_validation
    assert families["other"]["prompts"] == 12 - rare_validation
    report = build_report(
        sorted((out / "runs").iterdir()), out / REPORT_DIR, None, None, None, TINY.purpose, premise_control=control
    )
    lost = report["premise"]["positive_control"]["lost_by_family"]
    assert lost == {f: v["lost"] for f, v in families.items()} and set(lost) == {"rare-only", "other"}
    found = answer_stages.attach(out, out / REPORT_DIR, TINY, out / PREMISE_DIR / "control.json")
    published = read_json(out / REPORT_DIR / "report.json")["premise"]
    rare = found["rare_only"]
    base = read_json(endpoints.endpoint_file(out, "base", 0, 1.0))
    test = {p.id: p for p in get_task("grid_paths").problems("test", 20, seed=0)}  # the draw the runs read, 8 skipped
    ids = base["prompts"]
    assert ids == list(test)[8:20]
    is_rare = np.array([all(s == "rare" for _, s in enumerated("grid_paths", test[i].meta).values()) for i in ids])
    solved = np.array(base["correct"]) > 0
    assert rare["rare_only_prompts"] == is_rare.sum()
    assert published["rare_only_base_pass_at_k"] == (solved[is_rare].mean() if is_rare.any() else None)
    assert "### The rare-only test prompts at the endpoints" in (out / REPORT_DIR / "REPORT.md").read_text()
