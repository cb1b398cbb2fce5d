"""Whole runs of `llm train` on the tiny model: the run directory, resume after kill -9 (bit-identical
to an uninterrupted run), schedules, and runs stopped by non-finite values. Runs compared with each
other go through `python -m escov.llm train` in fresh processes: a process that has created a VLLMEngine
(the session fixture) no longer honours torch.set_num_threads, so its arithmetic differs."""

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from escov.llm import rundir
from escov.llm.config import TrainConfig, flag_applies
from escov.llm.rollout import NonFiniteError
from escov.llm.rundir import TIMING_KEYS
from escov.llm.train import train
from tests.llm.tasks_for_tests import CountdownScoredBy

SMALL = dict(
    steps=6,
    switch_step=3,
    batch_size=2,
    train_pool=8,
    threads=1,
    max_completion_length=6,
    checkpoint_every=2,
    step_samples=2,
    probe_prompts=1,
    probe_members=2,
    probe_samples=2,
    probe_center_samples=2,
    eval_problems=2,
    eval_samples=2,
    eval_ks=(1,),
    heldout_task="",
    threshold_keep=(50.0,),
    format_reward=0.1,
)
SMALL_ES = dict(population_size=8, sigma=0.02, alpha=0.01, member_temperature=1.0, member_samples=2)
SMALL_GRPO = dict(num_generations=4, learning_rate=3e-3)


def _cfg(model_dir, out, algo, es=None, grpo=None, **over):
    data = {
        "algo": algo,
        "model": str(model_dir),
        "out": str(out),
        **SMALL,
        **over,
        "es": SMALL_ES | (es or {}),
        "grpo": SMALL_GRPO | (grpo or {}),
    }
    return TrainConfig.from_dict(data)


def _flags(cfg: TrainConfig) -> list[str]:
    """Every setting of cfg as a flag, except those its algorithm never reads (refused as flags)."""
    out = []
    for key, value in cfg.to_dict().items():
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for sub, v in items:
            name = f"{key}.{sub}" if sub else key
            if not flag_applies(name, cfg.algo):
                continue
            text = (
                ",".join(map(str, v))
                if isinstance(v, (list, tuple))
                else str(v).lower()
                if isinstance(v, bool)
                else str(v)
            )
            out += [f"--{name}", text]
    return out


def _strip_timing(rows):
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rows]


def _outputs(run: Path):
    rows = [json.loads(l) for l in (run / "metrics.jsonl").read_text().splitlines()]
    last = max(int(p.name.split("-")[1]) for p in (run / "checkpoints").glob("step-*"))
    return (
        _strip_timing(rows),
        load_file(run / "checkpoints" / f"step-{last}" / "model.safetensors"),
        json.loads((run / "probe.json").read_text()),
        json.loads((run / "eval.json").read_text()),
    )


def _same(a, b):
    rows_a, w_a, pop_a, ev_a = a
    rows_b, w_b, pop_b, ev_b = b
    assert rows_a == rows_b
    assert w_a.keys() == w_b.keys() and all(torch.equal(w_a[n], w_b[n]) for n in w_a)
    assert pop_a == pop_b
    for ev in (ev_a, ev_b):  # evaluation timings differ between runs
        for part in ("base", "base_greedy", "final", "final_greedy"):
            ev[part].pop("seconds")
    assert ev_a == ev_b


def _cli(*args, env_extra: dict | None = None, **kw):
    """`python -m escov.llm train ...` in a fresh process (a process that has imported vLLM computes differently)."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]), **(env_extra or {}))
    return subprocess.Popen([sys.executable, "-m", "escov.llm", "train", *args], env=env, **kw)


def _run(cfg: TrainConfig | None = None, *args) -> None:
    proc = _cli(*(_flags(cfg) if cfg is not None else []), *args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()[-2000:]


def test_run_directory_contents(tiny_model_dir, tmp_path):
    run = tmp_path / "run"
    _run(_cfg(tiny_model_dir, run, "es", steps=2, checkpoint_every=1))
    cfg = json.loads((run / "config.json").read_text())
    assert (
        cfg["algo"] == "es" and cfg["schedule"]["budget"] == "flops" and cfg["schedule"]["total_steps"] == 2
    )  # 2 N m = 8 G
    rows = [json.loads(l) for l in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for key in (
        "reward_mean",
        "pass_at_1",
        "no_correct_share",
        "entropy",
        "drift_rel",
        "drift_layers",
        "tokens_per_s",
        "wall_seconds",
    ):
        assert all(math.isfinite(r[key]) if key != "drift_layers" else r[key] for r in rows), key
    assert rows[-1]["drift_rel"] > 0
    pop = json.loads((run / "probe.json").read_text())["measurements"]
    assert [m["step"] for m in pop] == [0, 2]
    for key in ("jspol", "jssucc", "fisher_trace", "lemma1_prediction", "validity", "lemma2"):
        assert key in pop[-1]
    ev = json.loads((run / "eval.json").read_text())
    assert {"base", "base_greedy", "final", "final_greedy", "update_analysis", "thresholded"} <= set(ev)
    assert (run / "curves.png").stat().st_size > 0 and (run / "drift_hist.png").stat().st_size > 0
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step-1", "step-2"]
    from escov.paper_checks.rundir import load_run  # the reader of paper_checks accepts every record the run wrote

    read = load_run(run)
    assert read.problems == [] and read.metrics == rows and read.eval == ev and read.probe["measurements"] == pop
    assert all(rundir.check_record(rundir.StepMetrics, r, "row") for r in rows)  # complete records, es_* fields typed


# slow (44-70 s here): the same equalities are checked in process, in the fast suite, by llm/es/test_batched_hf.py
# (batched and low-rank batched against member by member) and llm/es/test_ray_actors.py (two actors)
@pytest.mark.slow
@pytest.mark.ray
def test_batched_population_and_ray_workers_train_the_member_by_member_weights(tiny_model_dir, tmp_path):
    """Greedy members: one population-batched generate (logits within 1e-5 of the perturbed model's) and
    two Ray actors (each replica applies the update from the seeds and z) reproduce the member-by-member run;
    so does a batched low-rank population (stacked layout) its member-by-member low-rank run."""
    es = {"member_temperature": 0.0, "member_samples": 1}
    ways = {
        "member": {},
        "batched": {"population": {"batched": True}},
        "ray": {"workers": 2},
        "lowrank-member": {"population": {"noise_rank": 2}},
        "lowrank-batched": {"population": {"noise_rank": 2, "batched": True}},
    }
    for name, over in ways.items():
        _run(_cfg(tiny_model_dir, tmp_path / name, "es", es=es, steps=2, **over))
    runs = {name: _outputs(tmp_path / name) for name in ways}
    for reference, same in (("member", ("batched", "ray")), ("lowrank-member", ("lowrank-batched",))):
        rewards = [r["es_rewards"] for r in runs[reference][0]]
        assert any(len(set(r)) > 1 for r in rewards), "members that all score the same would test nothing"
        for name in same:
            assert [r["es_rewards"] for r in runs[name][0]] == rewards, name
            assert all(torch.equal(runs[reference][1][n], runs[name][1][n]) for n in runs[reference][1]), name
    assert not all(torch.equal(runs["member"][1][n], runs["lowrank-member"][1][n]) for n in runs["member"][1])


@pytest.mark.parametrize(
    "over, match",
    [
        ({"population": {"noise_rank": 64}}, "noise_rank 64 is larger than"),
        ({"ray_address": "127.0.0.1:9"}, "no Ray cluster reachable"),
        ({"population": {"batched": True}, "es": {"inplace_bf16": True}}, "inplace_bf16"),
    ],
)
def test_bad_population_settings_fail_before_any_work(tiny_model_dir, tmp_path, over, match):
    es = over.pop("es", None)
    with pytest.raises(ValueError, match=match):
        train(_cfg(tiny_model_dir, tmp_path / "bad", "es", es=es, **over), show_progress=False)
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())


def test_workers_without_ray_installed_is_a_usage_error_before_any_work(tiny_model_dir, tmp_path, monkeypatch, capsys):
    """`llm train` in this process with `import ray` failing (sys.modules entry None, as for a missing package):
    refused with exit code 2 before anything is loaded or written."""
    from escov.llm.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)
    cfg = _cfg(tiny_model_dir, tmp_path / "noray", "es", workers=2)
    with pytest.raises(SystemExit) as exit_:
        main(["train", *_flags(cfg)])
    assert exit_.value.code == 2 and "needs Ray: pip install" in capsys.readouterr().err
    assert not (tmp_path / "noray").exists()


def test_non_finite_reward_stops_the_run_naming_step_and_quantity(tiny_model_dir, tmp_path):
    cfg = _cfg(tiny_model_dir, tmp_path / "nan", "grpo", eval_samples=1, eval_ks=(1,))
    calls = []  # the base evaluation (eval_problems x 1 sampled, x 1 greedy) is scored; then every reward is NaN

    def reward(completion: str) -> float:
        calls.append(completion)
        return 0.0 if len(calls) <= 2 * cfg.eval_problems else float("nan")

    with pytest.raises(NonFiniteError, match=r"step 0: reward is not finite.*last good checkpoint: .*step-0"):
        train(cfg, task=CountdownScoredBy("nan-reward", reward), show_progress=False)
    assert (tmp_path / "nan" / "checkpoints" / "step-0" / "model.safetensors").exists()
    with pytest.raises(
        NonFiniteError, match=r"^step 0: reward is not finite \(nan\) for task nan-reward \(evaluation\)$"
    ):
        train(
            _cfg(tiny_model_dir, tmp_path / "nan-eval", "grpo", eval_samples=1, eval_ks=(1,)),
            task=CountdownScoredBy("nan-reward", lambda completion: float("nan")),
            show_progress=False,
        )
    assert not (tmp_path / "nan-eval").exists()


def test_non_finite_weight_stops_the_run_and_keeps_the_last_good_checkpoint(tiny_model_dir, tmp_path):
    cfg = _cfg(tiny_model_dir, tmp_path / "inf", "es", es={"alpha": 1e39})
    with pytest.raises(NonFiniteError, match=r"step \d+: weight .* is not finite"):
        train(cfg, show_progress=False)
    kept = load_file(max((tmp_path / "inf" / "checkpoints").glob("step-*")) / "model.safetensors")
    assert all(torch.isfinite(t).all() for t in kept.values())


def test_existing_run_directory_is_not_overwritten(tiny_model_dir, tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("keep")
    with pytest.raises(ValueError, match=r"is a folder with other files in it \(not a run of `llm train`\)"):
        train(_cfg(tiny_model_dir, tmp_path / "busy", "es"), show_progress=False)  # not "--resume": it is no run
    assert (tmp_path / "busy" / "x").read_text() == "keep"


# ----------------------------------------------------------------------------- resume at every point

KILL_POINTS = {  # ESCOV_TEST_STOP_AT value -> where an es-grpo run (ES steps 1-3, GRPO 4-6, checkpoints 2 3 4 6) dies
    "start": "before the first step (base evaluation and step-0 population written)",
    "step-1": "mid-phase, before any checkpoint",
    "step-5": "mid-GRPO-phase, its checkpoint-4 optimizer state needed",
    "checkpoint-3": "at the phase switch (the switch checkpoint written, GRPO not started)",
    "checkpoint-6": "after the last step, before the final stage",
    "final-population": "during the final stage: final population written, final evaluation not",
    "final-eval": "during the final evaluation: computed, eval.json not written",
}
# the others run with -m slow. The fallback test below resumes mid-GRPO from checkpoint 4, with its optimizer state,
# as step-5 would; tests/llm/test_resume_point.py resumes a schedule stopped at its phase switch
FAST_POINTS = ("checkpoint-6",)


def _every_output(run: Path) -> dict:
    """Every file of a run directory, by relative path, in a comparable form: JSON without timings,
    checkpoint weights and optimizer states as tensors, other files as bytes."""
    out = {}
    for path in sorted(p for p in run.rglob("*") if p.is_file()):
        rel = str(path.relative_to(run))
        if path.name == rundir.LOCK:  # the pid and time of the last writer
            continue
        if path.name == rundir.CONFIG_HISTORY:  # the settings as config.json holds them, but for where the run lives
            out[rel] = [{k: v for k, v in r["config"].items() if k != "out"} for r in rundir.config_history(run)]
        elif path.name == "metrics.jsonl":
            out[rel] = _strip_timing([json.loads(l) for l in path.read_text().splitlines()])
        elif path.name == "trainer_state.json":
            out[rel] = {k: v for k, v in json.loads(path.read_text()).items() if k != "elapsed"}
        elif path.name == "eval.json":
            ev = json.loads(path.read_text())
            for part in ("base", "base_greedy", "final", "final_greedy"):
                ev.get(part, {}).pop("seconds", None)
            out[rel] = ev
        elif rel == "config.json":  # the run's own settings: equal but for where the run lives
            out[rel] = {k: v for k, v in json.loads(path.read_text()).items() if k != "out"}
        elif path.suffix == ".json":
            out[rel] = json.loads(path.read_text())
        elif path.suffix == ".safetensors":
            out[rel] = {n: t.tolist() for n, t in load_file(path).items()}
        elif path.suffix == ".pt":
            out[rel] = repr(torch.load(path, weights_only=True))
        else:
            out[rel] = path.read_bytes()
    return out


@pytest.fixture(scope="module")
def uninterrupted_es_grpo(tiny_model_dir, tmp_path_factory):
    run = tmp_path_factory.mktemp("uninterrupted") / "run"
    _run(_cfg(tiny_model_dir, run, "es-grpo"))
    outputs = _every_output(run)
    rows = outputs["metrics.jsonl"]
    assert [r["phase"] for r in rows] == ["es"] * 3 + ["grpo"] * 3 and rows[-1]["drift_rel"] > 0
    ev = outputs["eval.json"]
    assert ev["final"]["mean_token_entropy"] != ev["base"]["mean_token_entropy"], (
        "a final evaluation equal to the base one could not tell final weights from base weights"
    )
    return outputs


def _killed_at(point: str, cfg: TrainConfig) -> None:
    proc = _cli(
        *_flags(cfg), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env_extra={"ESCOV_TEST_STOP_AT": point}
    )
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, f"the run did not stop at {point}: {err.decode()[-1000:]}"


@pytest.mark.parametrize(
    "point", [pytest.param(p, marks=() if p in FAST_POINTS else pytest.mark.slow) for p in KILL_POINTS]
)
def test_resume_after_a_kill_at_every_point_of_a_run_writes_every_file_as_an_uninterrupted_run(
    tiny_model_dir, tmp_path, uninterrupted_es_grpo, point
):
    run = tmp_path / "run"
    _killed_at(point, _cfg(tiny_model_dir, run, "es-grpo"))
    assert _every_output(run) != uninterrupted_es_grpo, "the kill must leave the run unfinished"
    _run(None, "--resume", str(run))
    assert _every_output(run) == uninterrupted_es_grpo, KILL_POINTS[point]


def test_a_kill_9_from_outside_mid_run_resumes_to_every_file_of_the_uninterrupted_run(
    tiny_model_dir, tmp_path, uninterrupted_es_grpo
):
    """SIGKILL sent from outside at whatever the run is doing once checkpoint 2 exists (mid ES phase), then
    --resume: every file equals the uninterrupted es-grpo run's (the points above kill at chosen places, from
    inside)."""
    run = tmp_path / "killed"
    proc = _cli(*_flags(_cfg(tiny_model_dir, run, "es-grpo")), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marker = run / "checkpoints" / "step-2" / "trainer_state.json"
    deadline = time.time() + 120
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (run / "checkpoints" / "step-6").exists()
    _run(None, "--resume", str(run))
    assert _every_output(run) == uninterrupted_es_grpo


def test_a_checkpoint_that_fails_to_load_falls_back_to_the_previous_one_naming_it(
    tiny_model_dir, tmp_path, uninterrupted_es_grpo
):
    run = tmp_path / "run"
    _killed_at("checkpoint-6", _cfg(tiny_model_dir, run, "es-grpo"))
    damaged = run / "checkpoints" / "step-6" / "model.safetensors"
    damaged.write_bytes(damaged.read_bytes()[:100])  # truncated
    (run / "checkpoints" / "step-abc").mkdir()  # a stray folder does not block resuming
    proc = _cli("--resume", str(run), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert f"checkpoint {run / 'checkpoints' / 'step-6'} failed to load ({damaged}" in err.decode()
    assert "step-abc is not a checkpoint" in err.decode()
    shutil.rmtree(run / "checkpoints" / "step-abc")
    assert (run / "checkpoints" / "step-6.damaged").is_dir()
    shutil.rmtree(run / "checkpoints" / "step-6.damaged")
    assert _every_output(run) == uninterrupted_es_grpo  # resumed from step 4 mid-GRPO: steps 5 and 6 run again
