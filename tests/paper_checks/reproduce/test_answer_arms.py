"""The answer's arms (issue 49) as stages of the reproduction, on a tiny design: ES runs its cap in updates while GRPO
runs its steps, the null arm, the endpoints to k = n and the base draws run and resume (a second invocation trains
nothing), and the attachments hold what the evaluations measured."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from escov.paper_checks.reproduce.answer_arms import AnswerArms
from escov.paper_checks.reproduce.budgets import BUDGETS
from escov.paper_checks.reproduce.plan import es_steps, plan

ANSWER = BUDGETS["answer"]
CURVE = {"points": 2, "samples": 32, "temperature": 1.0, "resolution": 0.99, "max_points": 3}
COMMON = {
    "steps": 2,
    "batch_size": 2,
    "max_completion_length": 6,
    "eval_problems": 4,
    "eval_samples": 2,
    "eval_ks": (1,),
    "heldout_task": "arithmetic",
    "heldout_problems": 2,
    "threshold_keep": (),
    "probe": False,
    "probe_every": 0,
    "checkpoint_every": 1,
    "checkpoint_dense": 0,
    "threads": 1,
    "step_samples": 1,
}
ARMS = AnswerArms(
    endpoint_samples=8,
    endpoint_temperatures=(0.6, 1.0),
    endpoint_chunk=3,
    null_seeds=(0,),
    draw_seeds=(1,),
    lr_control=3e-5,
    control=(("seeds", (300, 301)), ("steps", 1), ("problems", 3), ("curve", CURVE), ("checkpoint_every", 1)),
)
# N = 4 members against G = 4 generations: an ES update costs a quarter of a GRPO step (llm/schedules.py), so 4
# updates are a budget of 1 GRPO step, while GRPO runs its own 2
TINY = replace(
    ANSWER,
    base_preset="test",
    base_settings=(),
    seeds=(0, 1),
    common=COMMON,
    curve=CURVE,
    grpo={"num_generations": 4, "learning_rate": 1e-4},
    es={"population_size": 4, "sigma": 0.02, "alpha": 0.01},
    es_variants=(),
    es_updates=4,
    es_common={"checkpoint_every": 2, "checkpoint_dense": 0},
    premise_control=False,
    lemma_as_stated=None,  # the answer's size of it costs minutes; its own tests run it small
    arms=ARMS,
)


def test_the_answer_plans_es_to_its_cap_in_updates_and_grpo_to_its_steps():
    from escov.paper_checks.reproduce.budgets import ANSWER_ES_UPDATES, PREMISE_STEPS

    runs = plan(ANSWER, Path("base"), None)
    assert all(runs[f"grpo-s{s}"]["steps"] == PREMISE_STEPS for s in ANSWER.seeds)
    for name, cfg in runs.items():
        if cfg["algo"] == "es":  # N = 32 against G = 8: one update per GRPO step of equal FLOPs
            want = 150 if name.startswith("es-small-sigma") else ANSWER_ES_UPDATES  # its published length
            assert cfg["steps"] == want and cfg["checkpoint_every"] == 10, name
    assert {n for n in runs if n.startswith("es-null")} == {f"es-null-s{s}" for s in ANSWER.arms.null_seeds}
    # twice the members: an update costs two GRPO steps, so the cap is twice the budget
    wide = replace(ANSWER, es=ANSWER.es | {"population_size": 64})
    assert es_steps(wide, wide.es) == 2 * ANSWER_ES_UPDATES
    assert plan(wide, Path("base"), None)["es-small-sigma-s0"]["steps"] == 2 * 150 == es_steps(wide, wide.es, 150)
    with pytest.raises(ValueError, match="no whole budget"):  # 4 updates of N = 6: 4 x 12 / 32 = 1.5 GRPO steps
        es_steps(replace(TINY, es_updates=4), TINY.es | {"population_size": 6})


def test_the_answers_curves_measure_every_checkpoint_and_one_at_least_every_10_steps():
    from escov.llm.config import TrainConfig
    from escov.llm.curve import curve_steps
    from escov.llm.schedules import plan as phases
    from escov.llm.train import checkpoint_due

    runs = plan(ANSWER, Path("base"), None)
    for name in ("grpo-s0", "es-small-sigma-s0", "es-s0"):
        cfg = TrainConfig.from_dict(runs[name])
        total = phases(cfg)[0].steps
        saved = [s for s in range(1, total + 1) if checkpoint_due(cfg, s, total)]
        measured = curve_steps(saved, ANSWER.curve["points"])
        assert measured == [0] + saved and len(measured) <= ANSWER.curve["max_points"], name
        assert max(np.diff(measured)) <= 10 and measured[-1] == total, name
    assert len(curve_steps(saved, ANSWER.curve["points"])) == 1 + 45  # ES: 450 updates, every 10


def test_the_answer_job_graph_evaluates_endpoints_after_their_runs_and_runs_the_base_draws_last(tmp_path):
    from escov.paper_checks.reproduce.jobs import check_order
    from escov.paper_checks.reproduce.reproduction import reproduction_jobs

    jobs = reproduction_jobs(ANSWER, tmp_path, None, progress=False)
    check_order(jobs)
    names, after = [j.name for j in jobs], {j.name: j.after for j in jobs}
    assert names[0] == "pretrain base"
    assert after["control draw 2"] == ("pretrain draw 2",) and after["control lr 3e-05"] == ("pretrain base",)
    # the pool starts the first ready job in list order: a draw's pretraining that did not wait for the answer's
    # base would start while every comparison job still waits for it
    assert after["pretrain draw 1"] == after["pretrain draw 2"] == ("pretrain base",)
    assert after["endpoint grpo-s3 T=1"] == ("grpo-s3",) and after["endpoint es-s7 T=0.6"] == ("es-s7",)
    endpoint_jobs = [n for n in names if n.startswith("endpoint")]
    draws = ["pretrain draw 1", "control draw 1", "pretrain draw 2", "control draw 2", "control lr 3e-05"]
    assert names[-len(draws) :] == draws  # after everything the ES-GRPO comparison reads
    assert len(endpoint_jobs) == (1 + 2 * len(ANSWER.seeds)) * 2
    assert names[-len(draws) - len(endpoint_jobs) : -len(draws)] == endpoint_jobs
    null = next(j for j in jobs if j.name == "es-null-s3").make()[1]
    assert null[3]["points"] == 1 and null[3]["max_points"] == 2  # the null arm: base and end
    assert next(j for j in jobs if j.name == "es-s3").make()[1][3] == ANSWER.curve


def _run_pool(budget, out: Path, model: Path):
    from escov.paper_checks.reproduce.jobs import run_jobs
    from escov.paper_checks.reproduce.reproduction import reproduction_jobs

    kept = ("theory", "simulate", "Lemma 1 grid")  # the stages this test leaves to the reproduction's own tests
    jobs = [j for j in reproduction_jobs(budget, out, model, progress=False) if j.name not in kept]
    run_jobs(jobs, 1, lambda msg: None)
    return jobs


def test_the_arms_run_resume_and_attach_what_they_measured(tmp_path, monkeypatch):
    import torch

    from escov.llm.rundir import read_json, read_steps, write_json
    from escov.paper_checks.reproduce import answer_stages, base_draws, endpoints
    from escov.paper_checks.reproduce.bases import shipped_base_dir
    from escov.paper_checks.reproduce.reproduction import REPORT_DIR

    torch.set_num_threads(1)
    monkeypatch.setenv("ESCOV_CACHE", str(tmp_path / "cache"))  # the draws' pretraining cache
    model = shipped_base_dir(ANSWER.base_preset, ANSWER.base_settings)  # it solves some prompts: counts not all 0
    out = tmp_path / "answer"
    first = _run_pool(TINY, out, model)
    names = {j.name for j in first}
    assert {"es-s0", "grpo-s1", "es-null-s0", "pretrain draw 1", "control draw 1", "control lr 3e-05"} <= names
    assert "endpoint base T=0.6" in names and "endpoint es-s1 T=1" in names

    # ES makes its cap in updates (a budget of 1 GRPO step), GRPO its 2 steps; every checkpoint (every 2) on the curve
    for seed in (0, 1):
        assert len(read_steps(out / "runs" / f"es-s{seed}")) == 4
        assert len(read_steps(out / "runs" / f"grpo-s{seed}")) == 2
        assert [p["step"] for p in read_json(out / "runs" / f"es-s{seed}" / "curve.json")["points"]] == [0, 2, 4]
    null = out / "runs" / "es-null-s0"  # the null arm: its length, the base and end only, held-out task and drift
    assert len(read_steps(null)) == 4 and read_json(null / "config.json")["es"]["null_control"] is True
    assert [p["step"] for p in read_json(null / "curve.json")["points"]] == [0, 4]
    assert "heldout" in read_json(null / "eval.json") and "drift_rel" in read_steps(null)[-1]

    # a second invocation trains, pretrains, controls and evaluates nothing
    from escov.paper_checks.reproduce.reproduction import reproduction_jobs

    again = [j.name for j in reproduction_jobs(TINY, out, model, progress=False)]
    assert set(again) <= {"theory", "simulate", "Lemma 1 grid"}, again
    # a run to be completed again (its curve gone) has its endpoints measured again after it, though their files
    # are there for its present last checkpoint: the run may end elsewhere
    curve = out / "runs" / "es-s1" / "curve.json"
    kept_curve = curve.read_bytes()
    curve.unlink()
    after = {j.name: j.after for j in reproduction_jobs(TINY, out, model, progress=False)}
    assert after["endpoint es-s1 T=0.6"] == after["endpoint es-s1 T=1"] == ("es-s1",) and "es-s1" in after
    assert "endpoint es-s0 T=0.6" not in after
    curve.write_bytes(kept_curve)
    # an endpoint measured with another number of samples than the arm's is measured again
    other = endpoints.endpoint_file(out, "es-s0", 4, 1.0)
    kept_endpoint = other.read_bytes()
    write_json(other, read_json(other) | {"n": TINY.arms.endpoint_samples // 2})
    assert [j.name for j in reproduction_jobs(TINY, out, model, progress=False) if j.name.startswith("endpoint")] == [
        "endpoint es-s0 T=1"
    ]
    other.write_bytes(kept_endpoint)

    # an evaluation stopped after its first chunk of prompts continues there and draws the same samples
    done = endpoints.endpoint_file(out, "es-s1", 4, 0.6)
    whole = read_json(done)
    partial = done.with_suffix(".partial.json")
    chunks = [
        {
            "seed": whole["chunk_seeds"][0],
            "per_problem": [
                {"id": whole["prompts"][i], "correct": -1, "distinct_correct_answers": 0} for i in range(3)
            ],
        }
    ]  # a marker the rerun must keep
    write_json(
        partial,
        {k: whole[k] for k in ("model", "step", "temperature", "n", "weights_sha256")}
        | {"chunks": chunks, "seconds": 0.0, "cpu_seconds": 0.0},
    )
    done.unlink()
    endpoints.evaluate_endpoint(out / "runs" / "es-s1", "es-s1", 0.6, out, 8, 3)
    resumed = read_json(done)
    assert resumed["correct"] == [-1, -1, -1] + whole["correct"][3:] and not partial.exists()
    write_json(done, whole)

    (out / REPORT_DIR).mkdir()
    # an earlier attachment (an earlier invocation's) is replaced, the rest of the record kept
    stale = {"verdict": "narrowed", "pass_at_k_endpoints": {"ks": [1]}, "base_draws": {"draws": []}}
    write_json(out / REPORT_DIR / "report.json", {"premise": stale})
    md = out / REPORT_DIR / "REPORT.md"
    md.write_text("# report\n\n## The premise: x\n\n- (a) ...\n\n## All claims\n\n| table |\n", encoding="utf-8")
    found = answer_stages.attach(out, out / REPORT_DIR, TINY, out / "premise-control" / "control.json")
    report = read_json(out / REPORT_DIR / "report.json")
    assert report["premise"]["verdict"] == "narrowed"  # the record is extended, not replaced
    assert report["premise"]["base_draws"] == read_json(out / base_draws.ATTACHMENT) != stale["base_draws"]
    text = md.read_text(encoding="utf-8")  # the section closes the premise's, before the next one
    assert text.index("- (a) ...") < text.index("### Coverage to k = 8") < text.index("## All claims")
    assert text.index("### The premise across pretraining draws") < text.index("## All claims")
    assert (out / REPORT_DIR / "passk_to_n.png").stat().st_size > 0
    rec = report["premise"]["pass_at_k_endpoints"]
    assert rec == read_json(out / endpoints.ATTACHMENT) == found["pass_at_k_endpoints"]
    assert rec["ks"] == [1, 2, 4, 8] and rec["prompts"] == 4
    # Pass@k at k = n is the share of (seed, prompt) cells with any correct sample, counted from the files
    solved_any = []
    for group, variant in (("base", None), ("grpo_plateau", "grpo"), ("es_end", "es")):
        for t in ("0.6", "1"):
            if variant is None:
                files = [endpoints.endpoint_file(out, "base", 0, float(t))]
            else:
                files = [
                    endpoints.endpoint_file(out, f"{variant}-s{s}", 4 if variant == "es" else 2, float(t))
                    for s in (0, 1)
                ]
            counts = np.array([read_json(f)["correct"] for f in files])
            assert counts.shape[1] == 4 and counts.max() <= 8
            assert rec[group][t]["8"]["mean"] == pytest.approx(float((counts > 0).mean()))
            assert rec[group][t]["1"]["mean"] == pytest.approx(float(counts.mean() / 8))
            if group == "base" and t == "0.6":  # REPORT.md's Pass@8 cell of the base, from the counts
                row = next(
                    line for line in text.splitlines()[text.splitlines().index("T = 0.6:") :] if "| base |" in line
                )
                assert row.split(" | ")[-1].startswith(f"{100 * float((counts > 0).mean()):.1f} [")
            solved_any.append((counts > 0).mean())
    assert 0 < np.mean(solved_any) < 1  # the check above compares something
    assert set(rec["crossing"]) == {"es_over_grpo", "base_over_grpo", "base_over_es"}
    assert set(rec["crossing"]["es_over_grpo"]) == {"0.6", "1"}

    assert found["rare_only"]["temperatures"] == [0.6, 1.0]  # every endpoint temperature, each read
    assert set(found["rare_only"]["by_temperature"]) == {"0.6", "1"}
    draws = read_json(out / base_draws.ATTACHMENT)
    assert [d["draw"] for d in draws["draws"]] == ["seed 1", "lr 3e-05"]  # no main control in this design
    assert draws["draws"][0]["base"]["seed"] == 1 and draws["draws"][1]["grpo"]["learning_rate"] == 3e-5
    for d in draws["draws"]:
        assert d["verdict"] in ("narrowed", "widened", "no_change_detected")
        assert set(d["pass32_plateau_minus_base"]) == {"mean", "lo", "hi"}


def test_the_answer_measures_lemma_1_as_stated_once_on_its_base(tmp_path):
    from escov.paper_checks.reproduce.lemma_as_stated_measurement import ANSWER_LEMMA_AS_STATED
    from escov.paper_checks.reproduce.reproduction import LEMMA_AS_STATED, _lemma_as_stated, reproduction_jobs

    def stated(budget):
        return [j for j in reproduction_jobs(budget, tmp_path, None, progress=False) if j.name == "Lemma 1 as stated"]

    (job,) = stated(ANSWER)
    assert job.after == ("pretrain base",) and ANSWER.lemma_as_stated == ANSWER_LEMMA_AS_STATED
    assert job.make() == (_lemma_as_stated, (tmp_path / LEMMA_AS_STATED, tmp_path / "base", ANSWER, False))
    assert stated(replace(ANSWER, lemma_as_stated=None)) == []
    (tmp_path / LEMMA_AS_STATED).write_text("{}", encoding="utf-8")
    assert stated(ANSWER) == []  # measured once, kept across resumes


def test_an_arms_stage_is_skipped_only_when_its_output_is_complete(tmp_path):
    """A draw's pretraining is skipped once its base has a config.json, its control once control.json is written (an
    interrupted control's folder is not enough), the step-size control likewise; an endpoint once its file holds the
    arm's sample count for the run's last checkpoint (the base's at step 0), not another count, and only for a run
    with no job of its own in the pool."""
    from escov.llm.rundir import write_json
    from escov.paper_checks.reproduce import base_draws, endpoints
    from escov.paper_checks.reproduce.answer_stages import arm_jobs, draw_jobs

    def put(path, record):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, record)

    budget, out = replace(TINY, arms=replace(ARMS, draw_seeds=(1, 2, 3))), tmp_path
    (base_draws.draw_dir(out, 1) / "base").mkdir(parents=True)
    (base_draws.draw_dir(out, 1) / "base" / "config.json").write_text("{}")
    (base_draws.draw_dir(out, 2) / "control").mkdir(parents=True)  # interrupted before control.json
    put(base_draws.draw_dir(out, 3) / "control" / base_draws.CONTROL_JSON, {})
    names = {j.name: j.after for j in draw_jobs(budget, out, out / "base", False, ("pretrain base",))}
    assert names == {
        "control draw 1": (),
        "pretrain draw 2": ("pretrain base",),
        "control draw 2": ("pretrain draw 2",),
        "control lr 3e-05": ("pretrain base",),
    }
    put(base_draws.lr_dir(out, ARMS.lr_control) / "control" / base_draws.CONTROL_JSON, {})
    assert "control lr 3e-05" not in {j.name for j in draw_jobs(budget, out, out / "base", False, ())}

    for run, step in (("grpo-s0", 2), ("grpo-s1", 2), ("es-s0", 4), ("es-s1", 4)):
        (out / "runs" / run).mkdir(parents=True)
        (out / "runs" / run / "config.json").write_text("{}")
        for s in (1, step):
            (out / "runs" / run / "checkpoints" / f"step-{s}").mkdir(parents=True, exist_ok=True)
            (out / "runs" / run / "checkpoints" / f"step-{s}" / "trainer_state.json").write_text("{}")
    for model, step in (("base", 0), ("grpo-s0", 2), ("grpo-s1", 1), ("es-s0", 4), ("es-s1", 4)):
        for t in ARMS.endpoint_temperatures:
            n = ARMS.endpoint_samples if (model, t) != ("es-s1", 0.6) else ARMS.endpoint_samples // 2
            put(endpoints.endpoint_file(out, model, step, t), {"n": n})
    runs = {f"es-null-s{s}": {} for s in ARMS.null_seeds}
    jobs = arm_jobs(budget, out, runs, set(), out / "shared", ("pretrain base",))
    listed = {j.name: j.after for j in jobs if j.name.startswith("endpoint")}
    # grpo-s1's file is at step 1, its last checkpoint is 2; es-s1's file at T = 0.6 holds half the samples
    assert listed == {f"endpoint grpo-s1 T={t:g}": ("pretrain base",) for t in ARMS.endpoint_temperatures} | {
        "endpoint es-s1 T=0.6": ("pretrain base",)
    }
    jobs = arm_jobs(budget, out, runs, {"es-s0"}, out / "shared", ("pretrain base",))
    assert {j.name: j.after for j in jobs if j.name.startswith("endpoint es-s0")} == {
        f"endpoint es-s0 T={t:g}": ("es-s0",) for t in ARMS.endpoint_temperatures
    }
