"""scripts/publish_results.sh: a finished reproduction's report copied into results/ with the header
a reader needs (command, commit, wall time, machine), simulate plot links rewritten, no checkpoints."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from escov.paper_checks.reproduce.reproduction import git_commit, write_run_info

ROOT = Path(__file__).resolve().parents[3]


def test_publish_copies_the_report_with_its_header(tmp_path):
    out, dest = tmp_path / "out", tmp_path / "results"
    (out / "report").mkdir(parents=True)
    (out / "simulate").mkdir()
    (out / "runs" / "es-s0" / "checkpoints" / "step-5").mkdir(parents=True)
    (out / "runs" / "es-s0" / "checkpoints" / "step-5" / "model.safetensors").write_bytes(b"x")
    (out / "report" / "REPORT.md").write_text(
        "# Report\n![entropy](../simulate/entropy_collapse.png) ![f](frontier.png)\n"
    )
    (out / "report" / "report.json").write_text("{}")
    (out / "report" / "frontier.png").write_bytes(b"png")
    (out / "simulate" / "entropy_collapse.png").write_bytes(b"png")
    (out / "premise-control" / "runs").mkdir(parents=True)
    for name in ("control.json", "control.md", "control.png"):
        (out / "premise-control" / name).write_text(name)
    commit = git_commit()
    write_run_info(
        out / "report" / "run_info.json",
        "answer",
        2,
        125.0,
        "python -m escov.paper_checks reproduce --budget answer",
        commit,
    )
    info = json.loads((out / "report" / "run_info.json").read_text())
    assert info["commit"] == commit[0] and info["machine"]["cpu_count"] >= 1
    res = subprocess.run(
        ["bash", str(ROOT / "scripts" / "publish_results.sh"), str(out), str(dest)],
        capture_output=True,
        text=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0, res.stderr
    text = (dest / "REPORT.md").read_text()
    assert "`python -m escov.paper_checks reproduce --budget answer`" in text and commit[0] in text
    assert "2.1 min" in text and "CPU cores" in text
    assert "](simulate/entropy_collapse.png)" in text and (dest / "simulate" / "entropy_collapse.png").exists()
    assert (dest / "frontier.png").exists() and (dest / "report.json").exists()
    assert not list(dest.rglob("*.safetensors"))
    assert sorted(p.name for p in (dest / "premise-control").iterdir()) == ["control.json", "control.md", "control.png"]
    assert (dest / "premise-control" / "control.md").read_text() == "control.md"


def test_publish_refuses_an_unfinished_reproduction(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "REPORT.md").write_text("x")
    res = subprocess.run(
        ["bash", str(ROOT / "scripts" / "publish_results.sh"), str(tmp_path), str(tmp_path / "r")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and "report.json missing" in res.stderr


def test_publish_beside_another_report_lists_both_bases(tmp_path):
    """The answer from two bases: the second report published first into a folder, the first beside it; the
    top report.json's "bases" holds both, each tagged with the report that measured it."""
    commit = git_commit()
    for name, model in (("diffuse", "default-base"), ("main", "paper-base")):
        out = tmp_path / name
        (out / "report").mkdir(parents=True)
        (out / "report" / "REPORT.md").write_text(f"# {name}\n")
        (out / "report" / "report.json").write_text(json.dumps({"bases": [{"model": model, "pass_at_k": {"1": 0.3}}]}))
        write_run_info(
            out / "report" / "run_info.json", "answer", 2, 60.0, "python -m escov.paper_checks reproduce", commit
        )
    run = lambda *args: subprocess.run(
        ["bash", str(ROOT / "scripts" / "publish_results.sh"), *args],
        capture_output=True,
        text=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
    )
    dest = tmp_path / "results"
    missing = run(str(tmp_path / "main"), str(dest), "diffuse")
    assert missing.returncode != 0 and "diffuse/report.json missing" in missing.stderr
    assert run(str(tmp_path / "diffuse"), str(dest / "diffuse")).returncode == 0
    res = run(str(tmp_path / "main"), str(dest), "diffuse")
    assert res.returncode == 0, res.stderr
    bases = json.loads((dest / "report.json").read_text())["bases"]
    assert [(b["model"], b["report"]) for b in bases] == [
        ("paper-base", "REPORT.md"),
        ("default-base", "diffuse/REPORT.md"),
    ]


def test_run_info_keeps_every_invocation_with_the_first_commit_and_start(tmp_path):
    """A 54-minute reproduction at one commit, then a 13.7-second report rebuild at another: run_info.json keeps
    both invocations; its top level keeps the first's command, commit and start, the last finish, both commits and
    the summed wall time; the published header names the later commit. A record written before invocations were
    kept (no `invocations`) is read as the first invocation."""
    import time

    path = tmp_path / "out" / "report" / "run_info.json"
    path.parent.mkdir(parents=True)
    t0 = time.time() - 3600
    run = "python -m escov.paper_checks reproduce --budget answer"
    stages = {"train": {"span_seconds": 3200.0, "job_seconds": 6000.0, "cpu_seconds": 5800.0, "jobs": 48}}
    write_run_info(path, "answer", 2, 3240.0, run, ("a" * 40, False), stages, t0)
    rebuild = {"report": {"span_seconds": 9.9, "job_seconds": 9.9, "cpu_seconds": 9.9, "jobs": 1}}
    info = write_run_info(path, "answer", 2, 13.7, run + " --no-progress", ("b" * 40, True), rebuild, t0 + 3500)
    assert json.loads(path.read_text()) == info
    first, second = info["invocations"]
    assert (first["commit"], first["wall_seconds"], first["stages"]) == ("a" * 40, 3240.0, stages)
    assert (second["commit"], second["uncommitted_changes"], second["stages"]) == ("b" * 40, True, rebuild)
    assert first["started_utc"] == time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t0))
    assert second["started_utc"] == time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t0 + 3500))
    assert (info["command"], info["commit"], info["started_utc"]) == (run, "a" * 40, first["started_utc"])
    assert info["commits"] == ["a" * 40, "b" * 40] and info["uncommitted_changes"] is True
    assert info["finished_utc"] == second["finished_utc"] and info["wall_seconds"] == 3253.7
    assert info["stages"] == stages | rebuild
    third = write_run_info(path, "answer", 2, 5.0, run, ("a" * 40, False), rebuild)
    assert [i["commit"] for i in third["invocations"]] == ["a" * 40, "b" * 40, "a" * 40]
    assert third["commits"] == ["a" * 40, "b" * 40] and third["stages"]["report"]["jobs"] == 2
    assert third["stages"]["report"]["span_seconds"] == 19.8

    (tmp_path / "out" / "report" / "REPORT.md").write_text("# Report\n")
    (tmp_path / "out" / "report" / "report.json").write_text("{}")
    res = subprocess.run(
        ["bash", str(ROOT / "scripts" / "publish_results.sh"), str(tmp_path / "out"), str(tmp_path / "results")],
        capture_output=True,
        text=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0, res.stderr
    header = (tmp_path / "results" / "REPORT.md").read_text()
    assert f"**Commit:** `{'a' * 40}` (with uncommitted changes); later invocations at `{'b' * 40}`" in header
    assert f"3 invocations, started {first['started_utc']}" in header and "54.3 min" in header

    old = {k: v for k, v in info.items() if k not in ("invocations", "commits", "started_utc")}
    path.write_text(json.dumps(old | {"commit": "c" * 40, "finished_utc": "2026-12-03 11:00 UTC"}))
    kept = write_run_info(path, "answer", 2, 1.0, run, ("d" * 40, False))
    assert [i["commit"] for i in kept["invocations"]] == ["c" * 40, "d" * 40]
    assert kept["invocations"][0]["finished_utc"] == "2026-12-03 11:00 UTC" and kept["started_utc"] is None


def test_a_stage_whose_output_is_there_is_not_done_again_and_a_given_model_is_not_pretrained(tmp_path):
    """The full budget's jobs: theory, simulate and the Lemma 1 grid only while their outputs are missing (a partial
    simulate folder is no output); with --model given, neither base is pretrained (the sweep's second base
    included) and no run waits for a pretraining."""
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.reproduction import reproduction_jobs

    budget, out = BUDGETS["full"], tmp_path / "out"
    names = {j.name for j in reproduction_jobs(budget, out, None, progress=False)}
    assert {"pretrain base", "pretrain sweep base", "theory", "simulate", "Lemma 1 grid"} <= names
    (out / "simulate").mkdir(parents=True)
    (out / "simulate" / "sim.png").write_bytes(b"")  # a simulate stage cut short: no summary yet
    for done in ("theory.json", "lemma_grid.json"):
        (out / done).write_text("{}")
    names = {j.name for j in reproduction_jobs(budget, out, None, progress=False)}
    assert "simulate" in names and not {"theory", "Lemma 1 grid"} & names
    (out / "simulate" / "summary.json").write_text("{}")
    model = tmp_path / "model"
    model.mkdir()
    jobs = reproduction_jobs(budget, out, model, progress=False)
    assert not {"theory", "simulate", "Lemma 1 grid"} & {j.name for j in jobs}
    assert not any(j.name.startswith("pretrain") for j in jobs)
    assert not any(a.startswith("pretrain") for j in jobs for a in j.after)
    assert not any("sweep-other" in j.name for j in jobs)


def test_the_answers_own_stages_are_not_done_again_and_its_null_arm_is_one_job_each(tmp_path):
    """The answer's premise control and Lemma 1 as stated only while their records are missing; each null-arm run is
    one job, with the null arm's curve (the base and the last checkpoint), not the comparison's."""
    from escov.paper_checks.reproduce.answer_stages import null_curve
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.reproduction import LEMMA_AS_STATED, PREMISE_DIR, reproduction_jobs

    budget, out = BUDGETS["answer"], tmp_path / "out"
    names = [j.name for j in reproduction_jobs(budget, out, None, progress=False)]
    assert {"premise control", "Lemma 1 as stated"} <= set(names)
    (out / PREMISE_DIR).mkdir(parents=True)
    (out / PREMISE_DIR / "control.json").write_text("{}")
    (out / LEMMA_AS_STATED).write_text("{}")
    jobs = reproduction_jobs(budget, out, None, progress=False)
    names = [j.name for j in jobs]
    assert not {"premise control", "Lemma 1 as stated"} & set(names)
    nulls = [j for j in jobs if j.name.startswith("es-null-")]
    assert sorted(j.name for j in nulls) == sorted(f"es-null-s{s}" for s in budget.arms.null_seeds)
    assert all(j.make()[1][3] == null_curve(budget.curve) != budget.curve for j in nulls)


def test_a_rescaled_run_is_scaled_by_its_seeds_main_es_runs_reward_spread(tiny_model_dir, tmp_path):
    """The full budget's es-rescaled-s0 job, once es-s0 has run: centered rewards at center_scale = 1 / the mean of
    es-s0's positive member-reward spreads (es_reward_std over its updating steps, read here from metrics.jsonl)."""
    import torch

    from escov.llm.config import TrainConfig
    from escov.llm.train import train
    from escov.paper_checks.reproduce.budgets import BUDGETS
    from escov.paper_checks.reproduce.reproduction import reproduction_jobs
    from tests.llm.tasks_for_tests import digit_share_task

    torch.set_num_threads(1)
    out = tmp_path / "out"
    settings = {"algo": "es", "model": str(tiny_model_dir), "out": str(out / "runs" / "es-s0"), "steps": 2}
    small = {"batch_size": 2, "train_pool": 8, "threads": 1, "max_completion_length": 6, "checkpoint_every": 2}
    quiet = {"step_samples": 1, "probe": False, "eval_problems": 1, "eval_samples": 1, "eval_ks": (1,)}
    rest = {"heldout_task": "", "threshold_keep": (), "es": {"population_size": 4, "sigma": 0.02, "alpha": 0.01}}
    train(TrainConfig.from_dict(settings | small | quiet | rest), task=digit_share_task(), show_progress=False)
    rows = [json.loads(line) for line in (out / "runs" / "es-s0" / "metrics.jsonl").read_text().splitlines()]
    spreads = [r["es_reward_std"] for r in rows if r["es_reward_std"] > 0]
    assert spreads
    (job,) = [
        j for j in reproduction_jobs(BUDGETS["full"], out, tiny_model_dir, progress=False) if j.name == "es-rescaled-s0"
    ]
    assert job.after == ("es-s0",)
    cfg = job.make()[1][1]
    assert cfg["es"]["zscore"] is False and cfg["es"]["center_scale"] == pytest.approx(len(spreads) / sum(spreads))


def test_reproduce_hands_the_report_what_its_stages_wrote(tmp_path, monkeypatch):
    """With every stage's output there, `reproduce` builds the report from them: the premise control's record with
    the fresh split's check beside it, the published report of the budget's own base (paper_checks/summary.py), the
    needs the budget plans; the report's assembly itself (build_report, tested in test_report_assembly.py) is
    recorded here, not run."""
    from dataclasses import replace

    from escov.llm.rundir import write_json
    from escov.paper_checks.reproduce import reproduction
    from escov.paper_checks.reproduce.budgets import BUDGETS, published_for
    from escov.paper_checks.reproduce.plan import planned_needs
    from escov.paper_checks.summary import load_published

    budget = replace(  # the answer's stages from the paper-regime base: the published report set beside is that base's
        BUDGETS["answer"],
        base_settings=(),
        seeds=(),
        es_variants=(),
        arms=None,
        lemma_as_stated=None,
        curve=None,
        purpose="here",
    )
    monkeypatch.setitem(BUDGETS, "stages-only", budget)
    out, model = tmp_path / "out", tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (out / "simulate").mkdir(parents=True)
    (out / "runs").mkdir()
    (out / reproduction.PREMISE_DIR).mkdir()
    for path in ("theory.json", "simulate/summary.json", "lemma_grid.json"):
        (out / path).write_text("{}")
    write_json(out / reproduction.PREMISE_DIR / "control.json", {"verdict": "narrowed"})
    write_json(out / reproduction.FRESH_SPLIT, {"fresh": True})
    handed = {}

    def recorded(run_dirs, report_dir, *args, **kwargs):
        Path(report_dir).mkdir(parents=True, exist_ok=True)
        handed.update(kwargs, run_dirs=run_dirs, args=args)
        return {}

    monkeypatch.setattr(reproduction, "build_report", recorded)
    monkeypatch.setattr(reproduction, "load_lemma_grid", lambda path: "the grid")
    reproduction.reproduce("stages-only", out, model=model, progress=False, jobs=1)
    assert handed["premise_control"] == {"verdict": "narrowed", "test_split_fresh": {"fresh": True}}
    assert handed["published_at"] == published_for(budget) and handed["published"] == load_published(
        published_for(budget)
    )
    assert published_for(budget) != published_for(BUDGETS["answer"]) and handed["published"] is not None
    assert handed["planned"] == planned_needs(budget)
    assert handed["lemma_as_stated"] is None and handed["args"][2] == "the grid" and handed["args"][3] == "here"
    assert (out / reproduction.REPORT_DIR / "run_info.json").is_file()
