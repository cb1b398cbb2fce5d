"""The measurement settings of `llm train`, each at a non-default value, reach the record they shape:
one short ES run on the tiny model (in this process) with every evaluation, probe, checkpoint and
kept-completion setting changed, its records read back and compared with the settings; the count
of completions each training step scores, against the count worked out from the settings."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from escov.llm import rundir
from escov.llm.config import TrainConfig
from escov.llm.train import train
from tests.llm.tasks_for_tests import CountdownScoredBy, digit_share

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CHANGED = dict(
    steps=2,
    batch_size=2,
    train_pool=5,
    threads=1,
    max_completion_length=5,
    seed=3,
    temperature=0.9,
    checkpoint_every=3,
    checkpoint_dense=1,
    step_samples=3,
    probe_prompts=2,
    probe_members=3,
    probe_samples=2,
    probe_center_samples=3,
    eval_problems=3,
    eval_samples=3,
    eval_ks=(1, 3),
    eval_temperature=0.7,
    heldout_task="arithmetic",
    heldout_problems=2,
    threshold_keep=(50.0,),
    completions_kept=1,
    completions_every=1,
)
ES = {"population_size": 4, "sigma": 0.02, "alpha": 0.01}
GRPO = {"num_generations": 2}  # N = 4 against G = 2: 2 ES iterations per GRPO step of budget


def _config(model, out, **over) -> TrainConfig:
    return TrainConfig.from_dict(
        {"algo": "es", "model": str(model), "out": str(out), **CHANGED, **over, "es": ES, "grpo": GRPO}
    )


def _evaluated_again(cfg: TrainConfig, weights, problems, seed_label: str, *, n=None, ks=None, step: int = 0) -> dict:
    """llm.evaluate of a problem set (llm/problem_sets.py) with a model folder or an engine holding the weights, at the
    run's evaluation temperature and completion length, with the evaluations' seed of seed_label (llm/rollout.py)."""
    from escov.llm.engines import make_engine
    from escov.llm.evaluate import evaluate
    from escov.llm.rollout import evaluation_seed

    engine = (
        make_engine("hf", weights, dtype=torch.float32, seed=cfg.seed) if isinstance(weights, (str, Path)) else weights
    )
    return evaluate(
        engine,
        problems.task,
        problems.problems,
        n=cfg.eval_samples if n is None else n,
        ks=list(cfg.eval_ks if ks is None else ks),
        temperature=cfg.eval_temperature,
        max_new_tokens=cfg.max_completion_length,
        seed=evaluation_seed(cfg.seed, seed_label),
        progress=False,
        step=step,
    )


@pytest.fixture(scope="module")
def changed_run(tiny_model_dir, tmp_path_factory):
    cfg = _config(tiny_model_dir, tmp_path_factory.mktemp("changed") / "run", eval_steps=3)
    return cfg, train(cfg, show_progress=False)


def test_evaluation_settings_shape_the_evaluations(changed_run):
    cfg, run = changed_run
    ev = rundir.read_eval(run)
    for label in ("base", "final"):
        assert (ev[label]["num_problems"], len(ev[label]["per_problem"])) == (cfg.eval_problems, cfg.eval_problems)
        assert ev[label]["n"] == cfg.eval_samples and ev[label]["temperature"] == cfg.eval_temperature
        assert set(ev[label]["pass_at_k"]) == {str(k) for k in cfg.eval_ks}
        assert ev[label]["max_new_tokens"] == cfg.max_completion_length
        assert ev[f"{label}_greedy"]["n"] == 1 and ev[f"{label}_greedy"]["temperature"] == 0.0
        held = ev["heldout"][label]
        assert (held["task"], held["num_problems"]) == (cfg.heldout_task, cfg.heldout_problems)
    assert [t["keep_percent"] for t in ev["thresholded"]] == list(cfg.threshold_keep)
    # eval_steps 3 of 4 steps: a validation after step 3 only (the last step's is the final evaluation): the test
    # problems at eval_temperature with the base and final evaluations' seed, its rates and reward means, drawn again
    # here from checkpoint 3
    from escov.llm.problem_sets import eval_set

    rows = rundir.read_steps(run)
    assert [r["step"] for r in rows if "validation" in r] == [3]
    validation = rows[2]["validation"]
    assert set(validation["pass_at_k"]) == {str(k) for k in cfg.eval_ks} and "per_problem" not in validation
    again = _evaluated_again(cfg, rundir.checkpoint_dir(run, 3), eval_set(cfg), "eval", step=3)
    keys = ("n", "temperature", "pass_at_k", "reward_mean", "correct", "mean_token_entropy", "truncated_fraction")
    assert {k: validation[k] for k in keys} == {k: again[k] for k in keys}  # the entropy reads the samples drawn


def test_the_held_out_evaluations_are_drawn_again_from_their_models_with_the_held_out_seed(changed_run):
    """The held-out task's base and final evaluations (eval.json) are what llm.evaluate gives on the base and the
    final weights, at eval_temperature, with the held-out evaluations' own seed (evaluation_seed(seed, "heldout"),
    not the test evaluations' "eval")."""
    from escov.llm.problem_sets import heldout_set

    cfg, run = changed_run
    ev = rundir.read_eval(run)
    held = heldout_set(cfg)
    last = max(rundir.checkpoint_steps(run)[0])
    for label, model in (("base", cfg.model), ("final", rundir.checkpoint_dir(run, last))):
        again = _evaluated_again(cfg, model, held, "heldout")
        recorded = ev["heldout"][label]
        assert recorded["per_problem"] == again["per_problem"], label
        assert recorded["pass_at_k"] == again["pass_at_k"], label
        eval_seeded = _evaluated_again(cfg, model, held, "eval")
        assert eval_seeded["per_problem"] != again["per_problem"], label  # the seed shows


def test_probe_settings_shape_the_probe(changed_run):
    cfg, run = changed_run
    measurements = rundir.read_probe(run)["measurements"]
    for m in measurements:
        assert (m["members"], m["samples_per_member"], m["center_samples"]) == (
            cfg.probe_members,
            cfg.probe_samples,
            cfg.probe_center_samples,
        )
        assert m["temperature"] == cfg.temperature and len(m["probe_problems"]) == cfg.probe_prompts


def test_checkpoint_and_kept_completion_settings_shape_the_run_directory(changed_run):
    cfg, run = changed_run
    total = len(rundir.read_steps(run))
    assert total == 4  # 2 GRPO steps of budget x 2 ES iterations each (N = 2 G: half a GRPO step's FLOPs)
    due = {s for s in range(1, total + 1) if s % cfg.checkpoint_every == 0 or s <= cfg.checkpoint_dense} | {total}
    assert set(rundir.checkpoint_steps(run)[0]) == due == {1, 3, 4}
    kept = [json.loads(line) for line in (run / rundir.COMPLETIONS).read_text().splitlines()]
    by_source: dict = {}
    for record in kept:
        by_source.setdefault((record["source"], record["step"]), []).append(record)
    assert by_source and all(len(v) == cfg.completions_kept for v in by_source.values())
    trained_on = [r["prompt"] for r in kept if r["source"] == "train"]  # completions_every = 1: every step's
    assert len(trained_on) == total
    pool = {str(p.prompt) for p in cfg.make_task().problems("train", cfg.train_pool, seed=cfg.seed)}
    assert set(trained_on) <= pool  # the batches are drawn from the train_pool prompts of the run's seed
    assert torch.get_num_threads() == cfg.threads


def test_each_es_step_scores_the_members_and_step_samples_center_completions(tiny_model_dir, tmp_path):
    """Completions scored by a run, counted by its reward: raising step_samples by 2 adds exactly
    batch_size x 2 per ES iteration (the center's per-step samples), nothing else; the members score
    batch_size x population_size x member_samples each iteration."""
    counts = {}
    for step_samples in (1, 3):
        calls = []
        cfg = _config(
            tiny_model_dir,
            tmp_path / f"s{step_samples}",
            step_samples=step_samples,
            probe=False,
            heldout_task="",
            checkpoint_dense=0,
            completions_kept=0,
            eval_problems=1,
            eval_samples=1,
            eval_ks=(1,),
            threshold_keep=(50.0,),
        )
        run = train(
            cfg, task=CountdownScoredBy("counted", lambda c: calls.append(c) or digit_share(c)), show_progress=False
        )
        iterations = len(rundir.read_steps(run))
        # base and final, sampled and greedy; each thresholded checkpoint sampled
        evaluations = (2 * (cfg.eval_samples + 1) + len(cfg.threshold_keep) * cfg.eval_samples) * cfg.eval_problems
        counts[step_samples] = len(calls)
        assert len(calls) == evaluations + iterations * cfg.batch_size * (ES["population_size"] * 1 + step_samples)
    assert counts[3] - counts[1] == iterations * cfg.batch_size * 2


@pytest.mark.parametrize("inplace_bf16", [False, True])
def test_a_bf16_run_measures_its_drift_from_the_base_as_its_own_weights_hold_it(tiny_model_dir, tmp_path, inplace_bf16):
    """dtype bfloat16, with and without es.inplace_bf16, and a reward that never varies (so no update): the drift
    is measured from theta_0 as the run holds it, fp32 beside the fp32 master (where it stays exactly 0), bf16(base)
    in place (where it is the residue the paper's bf16 add and subtract leave), computed here from the saved weights."""
    from safetensors.torch import load_file

    cfg = _config(
        tiny_model_dir,
        tmp_path / "run",
        dtype="bfloat16",
        probe=False,
        heldout_task="",
        threshold_keep=(),
        eval_problems=1,
        eval_samples=1,
        eval_ks=(1,),
        checkpoint_dense=0,
        completions_kept=0,
    )
    cfg.es.inplace_bf16 = inplace_bf16
    run = train(cfg, task=CountdownScoredBy("constant", lambda c: 0.5), show_progress=False)
    rows = rundir.read_steps(run)
    assert rows and all(r["es_update_norm"] == 0.0 for r in rows)
    final = load_file(str(rundir.checkpoint_dir(run, rows[-1]["step"]) / "model.safetensors"))
    base = load_file(str(tiny_model_dir / "model.safetensors"))
    theta0 = {n: (t.to(torch.bfloat16) if inplace_bf16 else t).float() for n, t in base.items()}
    num = sum(float(((final[n].float() - theta0[n]) ** 2).sum(dtype=torch.float64)) for n in final)
    den = sum(float((theta0[n] ** 2).sum(dtype=torch.float64)) for n in final)
    assert rows[-1]["drift_rel"] == pytest.approx((num / den) ** 0.5, rel=1e-6, abs=1e-12)
    assert (rows[-1]["drift_rel"] > 0) == inplace_bf16


VLLM_RUN = """
import json, sys
from escov.llm.config import TrainConfig
from escov.llm.train import TrainingRun
cfg = TrainConfig.from_dict(json.loads(sys.argv[1]))
run = TrainingRun(cfg, show_progress=False)
cache = run.engine.llm.llm_engine.vllm_config.cache_config
print(json.dumps({"engine": type(run.engine).__name__, "gpu_memory_utilization": cache.gpu_memory_utilization}))
"""


# slow (70-80 s here, most of it vLLM's start in a fresh process: one vLLM engine per process, and the session
# has one); the engine make_engine("vllm") builds is tested fast in tests/llm/engines/test_vllm_engine.py
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")
def test_engine_vllm_starts_the_run_on_vllm_with_its_share_of_gpu_memory(tiny_model_dir, tmp_path):
    data = {
        "algo": "es",
        "model": str(tiny_model_dir),
        "out": str(tmp_path / "run"),
        "engine": "vllm",
        "gpu_memory_utilization": 0.35,
        "steps": 1,
        "batch_size": 2,
        "train_pool": 4,
        "threads": 1,
        "max_completion_length": 4,
        "probe": False,
        "heldout_task": "",
        "threshold_keep": [],
        "eval_problems": 1,
        "eval_samples": 1,
        "eval_ks": [1],
        "es": {"population_size": 4},
        "grpo": {"num_generations": 2},
    }
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]), OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", VLLM_RUN, json.dumps(data)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"engine": "VLLMEngine", "gpu_memory_utilization": 0.35}


def _check_thresholded(cfg: TrainConfig, run: Path, task) -> None:
    """Each thresholded entry of eval.json: keep_percent q of the update's entries kept (drift.thresholded of the
    final and base weights at q), sparsity 100 - q, and Pass@1 of min(eval_samples, 8) samples of the test problems
    with those weights, drawn again here with the evaluations' seed."""
    from safetensors.torch import load_file

    from escov.llm import drift
    from escov.llm.engines import make_engine
    from escov.llm.problem_sets import eval_set

    ev = rundir.read_eval(run)
    last = max(rundir.checkpoint_steps(run)[0])
    final = load_file(str(rundir.checkpoint_dir(run, last) / "model.safetensors"))
    base = load_file(str(Path(cfg.model) / "model.safetensors"))
    test = eval_set(cfg, task=task)
    engine = make_engine("hf", cfg.model, dtype=torch.float32, seed=cfg.seed)
    assert [e["keep_percent"] for e in ev["thresholded"]] == list(cfg.threshold_keep)
    for q, entry in zip(cfg.threshold_keep, ev["thresholded"]):
        assert entry["sparsity_percent"] == 100 - q
        engine.load_weights(drift.thresholded(final, base, q).items())
        again = _evaluated_again(cfg, engine, test, "eval", n=min(cfg.eval_samples, 8), ks=(1,), step=last)
        assert entry["pass_at_1"] == again["pass_at_k"]["1"], q


def test_a_steps_row_describes_the_center_samples_it_was_measured_on(tiny_model_dir, tmp_path):
    """An ES row's pass_at_1, no_correct_share, truncated_share and mean_response_tokens, recomputed here from
    step_samples completions of its batch drawn again from the center it describes (the base for step 1, the
    checkpoint of step s for step s + 1) with the seed of (seed, step, "step-samples") (llm/train.py's module
    docstring): a reward that is 1 for completions holding a "+", so that the prompts' samples disagree. Each batch
    is batch_size distinct prompts of the train_pool, drawn anew each step (completions_kept = batch_size keeps every
    prompt of every batch): 4 of a pool of 5, so a draw with replacement repeats a prompt in a step with probability
    0.81, and draws from one seed would give every step one batch."""
    from escov.llm.engines import make_engine
    from escov.llm.rollout import derive_seed, rollout

    plus = CountdownScoredBy("plus", lambda c: float("+" in c))
    cfg = _config(
        tiny_model_dir,
        tmp_path / "run",
        batch_size=4,
        train_pool=5,
        step_samples=3,
        max_completion_length=4,
        completions_kept=4,
        checkpoint_every=1,
        checkpoint_dense=0,
        probe=False,
        heldout_task="",
        eval_problems=4,
        eval_samples=4,
        eval_ks=(1,),
        threshold_keep=(10.0, 60.0),
    )
    run = train(cfg, task=plus, show_progress=False)
    _check_thresholded(cfg, run, plus)
    assert 0 < rundir.read_eval(run)["final"]["pass_at_k"]["1"] < 1  # the thresholded Pass@1 can differ
    rows = rundir.read_steps(run)
    pool = {str(p.prompt): p for p in plus.problems("train", cfg.train_pool, seed=cfg.seed)}
    kept = rundir.read_completions(run)
    seen = {"pass": [], "truncated": [], "fitness": []}
    for row in rows:
        step = row["step"] - 1  # the row of step s + 1 describes the center after s updates
        batch = [r for r in kept if r["source"] == "train" and r["step"] == row["step"]]
        model = cfg.model if step == 0 else rundir.checkpoint_dir(run, step)
        engine = make_engine("hf", model, dtype=torch.float32, seed=cfg.seed)
        out = rollout(
            engine,
            plus,
            [pool[r["prompt"]] for r in batch],
            n=cfg.step_samples,
            temperature=cfg.temperature,
            max_new_tokens=cfg.max_completion_length,
            seed=derive_seed(cfg.seed, step, "step-samples"),
            step=step,
        )
        prompts = [r["prompt"] for r in batch]
        assert len(prompts) == len(set(prompts)) == cfg.batch_size, row["step"]
        texts = [[c.text for c in samples] for samples in out.completions]
        assert [r["completion"] for r in batch] == [t[0] for t in texts], row["step"]
        correct = [["+" in t for t in samples] for samples in texts]
        flat = [c for samples in correct for c in samples]
        truncated = [c.finish_reason == "length" for samples in out.completions for c in samples]
        lengths = [len(c.token_ids) for samples in out.completions for c in samples]
        assert row["pass_at_1"] == pytest.approx(sum(flat) / len(flat)), row["step"]
        no_correct = sum(not any(samples) for samples in correct) / len(correct)
        assert row["no_correct_share"] == pytest.approx(no_correct), row["step"]
        assert row["truncated_share"] == pytest.approx(sum(truncated) / len(truncated)), row["step"]
        assert row["mean_response_tokens"] == pytest.approx(sum(lengths) / len(lengths)), row["step"]
        # the row's reward_mean is the members' mean fitness (what ES ranks), center_reward_mean the center's
        assert row["center_reward_mean"] == pytest.approx(sum(flat) / len(flat)), row["step"]
        assert row["reward_mean"] == pytest.approx(sum(row["es_rewards"]) / len(row["es_rewards"])), row["step"]
        seen["fitness"].append(row["reward_mean"] != pytest.approx(row["center_reward_mean"]))
        seen["pass"].append(0 < sum(flat) < len(flat) and 0 < no_correct)
        seen["truncated"].append(0 < sum(truncated) < len(truncated))
    assert len(rows) == 4 and all(any(v) for v in seen.values()), seen  # the checks above compare something
    batches = {frozenset(r["prompt"] for r in kept if r["source"] == "train" and r["step"] == s) for s in (1, 2, 3, 4)}
    assert len(batches) > 1


DIGITS = CountdownScoredBy("digits", digit_share)  # a dense reward: members and samples differ


def _schedule(model, out, grpo: dict) -> TrainConfig:
    """es-grpo: 2 ES iterations (a GRPO step of budget), then 2 GRPO steps, a checkpoint after each, every batch's
    prompts kept (completions_kept = batch_size)."""
    return TrainConfig.from_dict(
        {"algo": "es-grpo", "model": str(model), "out": str(out)}
        | CHANGED
        | {
            "steps": 3,
            "switch_step": 1,
            "checkpoint_every": 1,
            "checkpoint_dense": 0,
            "completions_kept": 2,
            "probe": False,
            "heldout_task": "",
            "eval_problems": 1,
            "eval_samples": 1,
            "eval_ks": (1,),
            "threshold_keep": (),
        }
        | {"es": ES, "grpo": GRPO | {"learning_rate": 0.05} | grpo}
    )


def test_a_grpo_phase_after_es_starts_from_es_weights_with_them_as_its_kl_reference(tiny_model_dir, tmp_path):
    """The GRPO phase of es-grpo samples its first step from the ES phase's last weights (its kept completions drawn
    again here from checkpoint 2 at the run's training temperature, 0.9, with the seed of (seed, step,
    "grpo-rollout")), and its KL reference is those weights: KL 0 at its first step, before any update."""
    from safetensors.torch import load_file

    from escov.llm.engines import make_engine
    from escov.llm.rollout import derive_seed, rollout

    cfg = _schedule(tiny_model_dir, tmp_path / "run", {"beta": 0.1})
    run = train(cfg, task=DIGITS, show_progress=False)
    rows = rundir.read_steps(run)
    es_end, base = (load_file(str(Path(d) / "model.safetensors")) for d in (rundir.checkpoint_dir(run, 2), cfg.model))
    assert any(not torch.equal(es_end[n], base[n]) for n in es_end)  # ES moved the weights: a reference can differ
    assert [r["phase"] for r in rows] == ["es", "es", "grpo", "grpo"]
    assert rows[2]["grpo_kl"] == 0.0 and rows[3]["grpo_kl"] > 0  # measured, and 0 only against its own start
    kept = rundir.read_completions(run)
    first = [r for r in kept if r["source"] == "train" and r["step"] == 3]
    pool = {str(p.prompt): p for p in DIGITS.problems("train", cfg.train_pool, seed=cfg.seed)}
    out = rollout(
        make_engine("hf", rundir.checkpoint_dir(run, 2), dtype=torch.float32, seed=cfg.seed),
        DIGITS,
        [pool[r["prompt"]] for r in first],
        n=GRPO["num_generations"],
        temperature=cfg.temperature,
        max_new_tokens=cfg.max_completion_length,
        seed=derive_seed(cfg.seed, 2, "grpo-rollout"),
        step=2,
    )
    assert [r["completion"] for r in first] == [samples[0].text for samples in out.completions]
    assert cfg.temperature != cfg.eval_temperature  # which temperature GRPO samples at shows


def test_a_lora_checkpoint_of_a_grpo_phase_after_es_names_the_es_phases_weights_as_its_base(tiny_model_dir, tmp_path):
    cfg = _schedule(
        tiny_model_dir,
        tmp_path / "run",
        {"use_peft": True, "lora_r": 2, "lora_alpha": 4, "lora_target_modules": "q_proj,v_proj"},
    )
    run = train(cfg, task=DIGITS, show_progress=False)
    for step in (1, 2):  # the ES phase's checkpoints: full weights, no adapter
        assert not (rundir.checkpoint_dir(run, step) / "adapter").exists(), step
    for step in (3, 4):
        config = json.loads((rundir.checkpoint_dir(run, step) / "adapter" / "adapter_config.json").read_text())
        assert config["base_model_name_or_path"] == str(rundir.checkpoint_dir(run, 2)), step
