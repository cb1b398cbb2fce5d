"""The answer's arms as stages of the reproduction's job pool (reproduction.py; sizes: answer_arms.py), each
skipped when its output is complete, and their attachments to the report.

    draw_jobs     "pretrain draw S" then "control draw S", per draw seed, and "control lr LR", all after the
                  answer's base: listed last, after the comparison's runs and endpoints they do not feed
    arm_jobs      the null arm's runs (es-null-sS: trained to the answer's ES length, their curve the base and the
                  last checkpoint only), then one "endpoint ..." job per (model, temperature) after the run it
                  reads (endpoints.py)
    attach        out/endpoints.json, out/base_draws.json and out/rare_only.json, in report.json's `premise`
                  record as pass_at_k_endpoints, base_draws and rare_only (with rare_only_base_pass_at_k beside
                  them: reproduce/rare_only.py), and their section in REPORT.md with the Pass@k-to-n plot
                  (paper_checks/premise_attachments.py)
"""

from __future__ import annotations

from pathlib import Path

from escov.paper_checks import premise_attachments
from escov.paper_checks.reproduce import base_draws, endpoints, rare_only
from escov.paper_checks.reproduce.bases import obtain_base
from escov.paper_checks.reproduce.jobs import Job
from escov.paper_checks.reproduce.training_runs import run_jobs_of

NULL_VARIANT = "es-null"


def null_runs(budget, runs: dict[str, dict]) -> dict[str, dict]:
    """The null arm's runs of the plan (plan.py adds them on budget.arms.null_seeds)."""
    seeds = budget.arms.null_seeds if budget.arms is not None else ()
    return {f"{NULL_VARIANT}-s{s}": runs[f"{NULL_VARIANT}-s{s}"] for s in seeds}


def null_curve(curve: dict | None) -> dict | None:
    """The null arm's curve: the base and the last checkpoint, measured as the answer's curves are."""
    return None if curve is None else curve | {"points": 1, "max_points": 2}


def draw_jobs(budget, out: Path, base: Path, progress: bool, wait_base: tuple[str, ...]) -> list[Job]:
    """The base draws' pretrainings and controls, and the step-size control on the answer's base (module docstring;
    base: the answer's, made by the job wait_base names when there is one)."""
    arms, jobs = budget.arms, []
    for seed in arms.draw_seeds:
        folder = base_draws.draw_dir(out, seed)
        if (folder / "control" / base_draws.CONTROL_JSON).is_file():
            continue
        wait: tuple[str, ...] = ()
        if not (folder / "base" / "config.json").is_file():
            wait = (f"pretrain draw {seed}",)
            jobs.append(
                Job(
                    wait[0],
                    "base draws",
                    lambda folder=folder, seed=seed: (
                        obtain_base,
                        (folder / "base", budget.base_preset, progress, budget.base_settings, seed),
                    ),
                    # after the answer's base: while that job is pending every comparison job waits, and a
                    # pretraining with no wait would take a worker ahead of them
                    after=wait_base,
                )
            )
        jobs.append(
            Job(
                f"control draw {seed}",
                "base draws",
                lambda folder=folder: (base_draws.run_draw_control, (folder / "base", folder / "control", budget)),
                after=wait,
            )
        )
    if arms.lr_control is None:  # no step-size control (answer_arms.AnswerArms)
        return jobs
    folder = base_draws.lr_dir(out, arms.lr_control)
    if not (folder / "control" / base_draws.CONTROL_JSON).is_file():
        jobs.append(
            Job(
                f"control lr {arms.lr_control:g}",
                "base draws",
                lambda: (base_draws.run_draw_control, (base, folder / "control", budget, arms.lr_control)),
                after=wait_base,
            )
        )
    return jobs


def arm_jobs(
    budget, out: Path, runs: dict[str, dict], listed: set[str], shared: Path, wait_base: tuple[str, ...]
) -> list[Job]:
    """The null arm's runs and the endpoint evaluations not yet done (module docstring). listed: the names of the
    jobs already in the pool (an evaluation waits for its run's job when there is one)."""
    arms = budget.arms
    jobs = run_jobs_of(
        null_runs(budget, runs), out / "runs", null_curve(budget.curve), "null arm", after=wait_base, shared=shared
    )
    for model, run in endpoints.endpoint_models(budget.seeds):
        run_dir = out / "runs" / run
        for t in arms.endpoint_temperatures:
            if run not in listed and _measured(out, model, run_dir, t, arms.endpoint_samples):
                continue
            jobs.append(
                Job(
                    f"endpoint {model} T={t:g}",
                    "endpoints",
                    lambda model=model, run_dir=run_dir, t=t: (
                        endpoints.evaluate_endpoint,
                        (run_dir, model, t, out, arms.endpoint_samples, arms.endpoint_chunk),
                    ),
                    after=(run,) if run in listed else wait_base,
                )
            )
    return jobs


def _measured(out: Path, model: str, run_dir: Path, temperature: float, samples: int) -> bool:
    """Whether the endpoint's file is there for the run's current last checkpoint with these samples."""
    from escov.llm.rundir import read_json

    if not (run_dir / "config.json").is_file():
        return False
    try:
        step = 0 if model == endpoints.BASE else endpoints.last_step(run_dir)
    except ValueError:
        return False
    path = endpoints.endpoint_file(out, model, step, temperature)
    return path.is_file() and read_json(path).get("n") == samples


def attach(out: Path, report_dir: Path, budget, main_control: Path) -> dict:
    """Write the two attachments and add them to report.json's premise record (created when the report has none)."""
    from escov.llm.rundir import read_json, write_json

    arms = budget.arms
    found = {
        "pass_at_k_endpoints": endpoints.attachment(
            out, budget.seeds, arms.endpoint_temperatures, arms.endpoint_samples
        ),
        "base_draws": base_draws.attachment(out, budget, main_control),
    }
    rare = rare_only.rare_only_record(out, budget.seeds, arms.endpoint_temperatures, budget.task)
    write_json(out / endpoints.ATTACHMENT, found["pass_at_k_endpoints"])
    write_json(out / base_draws.ATTACHMENT, found["base_draws"])
    write_json(out / rare_only.ATTACHMENT, rare)
    report = read_json(report_dir / "report.json", allow_non_finite=True)
    report["premise"] = (report.get("premise") or {}) | found
    write_json(report_dir / "report.json", report)
    _into_report_md(report_dir / "REPORT.md", premise_attachments.render(found, report_dir))
    rare_only.attach(report_dir, rare)
    return found | {"rare_only": rare}


def _into_report_md(path: Path, lines: list[str]) -> None:
    """The attachments' section in REPORT.md, at the end of the premise's section (before the next "## "), or at the
    end of a report without one."""
    text = path.read_text(encoding="utf-8")
    at = premise_attachments.premise_section_end(text)
    path.write_text(text[:at] + "\n".join(lines) + "\n" + text[at:], encoding="utf-8")
