"""The GPU paths (every test marked `gpu`: skipped cleanly without CUDA; `bash scripts/gpu_check.sh` runs
them on one GPU): noise drawn on the device, a whole ES -> GRPO run with every tensor on CUDA and bf16
engine weights over an fp32 master, ES in place inside vLLM's workers against the reload path with the
same seeds, and Ray actors with a GPU share each against the single-process run.

`ESCOV_GPU_STANDIN=cpu` (llm/gpu_standin.py) runs them on the CPU instead, from the repository root:

    ESCOV_GPU_STANDIN=cpu PYTHONPATH=$PWD python -m pytest -q -m gpu tests/llm/test_gpu.py

(the CUDA noise and vLLM in place, which have nothing to stand in for on a CPU, are skipped there)."""

import dataclasses
import json

import numpy as np
import pytest
import torch

from escov.llm import gpu_standin
from escov.llm.config import TrainConfig
from escov.llm.es import ESConfig, PopulationConfig, make_es
from escov.llm.es.noise import noise
from tests.llm import tasks_for_tests
from tests.llm.tasks_for_tests import digit_share_task

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("one_torch_thread")]
DEVICE = gpu_standin.device()  # "cuda:0", or "cpu" under the stand-in
KIND = DEVICE.partition(":")[0]
cuda_only = pytest.mark.skipif(
    gpu_standin.active(), reason="CUDA itself is the subject: nothing to stand in for on a CPU"
)
RAY_ACTOR_TIMEOUT_S = 90.0  # a call not answered by then is a dead actor (the default 600 s is past the check's budget)

SMALL = dict(
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
)


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    from escov.llm.random_models import save_random_model

    return save_random_model(tmp_path_factory.mktemp("qwen"), "qwen2", "tiny", seed=1)


@cuda_only
def test_noise_is_drawn_on_the_gpu_reproducibly_and_independently_per_tensor():
    a = noise(5, 1, "w1", torch.Size([4096]), device="cuda")
    assert a.device.type == "cuda" and 0.9 < float(a.std()) < 1.1
    assert torch.equal(a, noise(5, 1, "w1", torch.Size([4096]), device="cuda"))
    assert not torch.equal(a, noise(5, 1, "w2", torch.Size([4096]), device="cuda"))
    assert not torch.equal(a.cpu(), noise(5, 1, "w1", torch.Size([4096])))  # why a resume across kinds is refused


def test_an_es_then_grpo_run_keeps_every_tensor_on_cuda(tiny_model_dir, tmp_path):
    from escov.llm.train import TrainingRun, train

    cfg = TrainConfig(
        algo="es-grpo",
        model=str(tiny_model_dir),
        out=str(tmp_path / "run"),
        device=KIND,
        dtype="bfloat16",
        steps=2,
        switch_step=1,
        **SMALL,
        es=ESConfig(population_size=8, sigma=0.1, alpha=0.05, member_temperature=1.0, member_samples=2),
    )
    run = TrainingRun(cfg, task=digit_share_task(), show_progress=False)
    assert cfg.device == DEVICE
    engine_param = next(run.engine.model.parameters())
    assert engine_param.device.type == KIND and engine_param.dtype == torch.bfloat16
    assert all(p.device.type == KIND and p.dtype == torch.float32 for p in run.hf_model.parameters())
    run.start_phase(run.phases[0], {n: run.base[n] for n in run.all_names})
    assert all(t.device.type == KIND and t.dtype == torch.float32 for t in run.trainer.center.master.values())
    assert run.trainer.center.noise.device.type == KIND
    row = run.step(0)
    assert row["es_reward_std"] > 0 and row["drift_rel"] > 0
    run.close_trainer()

    out = train(
        dataclasses.replace(cfg, out=str(tmp_path / "full"), device=KIND), task=digit_share_task(), show_progress=False
    )
    saved = json.loads((out / "config.json").read_text())
    assert saved["device"] == DEVICE
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert {r["phase"] for r in rows} == {"es", "grpo"} and all(np.isfinite(r["drift_rel"]) for r in rows)


@cuda_only
@pytest.mark.vllm
@pytest.mark.parametrize("sampling", [{}, {"member_temperature": 1.0, "member_samples": 2}], ids=["greedy", "sampled"])
def test_vllm_inplace_gives_the_reload_paths_rewards_and_update(qwen_dir, sampling):
    """The GPU part of tests/llm/es/test_conformance.py: in place gives one_by_one's rewards and update;
    sampled members draw from their own rollout seeds on both paths."""
    pytest.importorskip("vllm")
    from escov.llm.engines.vllm_engine import VLLMEngine
    from escov.llm.es.vllm_inplace import ENGINE_KWARGS

    engine = VLLMEngine(
        qwen_dir, dtype=torch.float32, seed=0, gpu_memory_utilization=0.3, enforce_eager=True, **ENGINE_KWARGS
    )
    try:
        base = {n: t.float().cuda() for n, t in engine.weights.items()}
        names = sorted(base)
        task = digit_share_task()
        problems = task.problems("train", 4, seed=0)
        cfg = ESConfig(population_size=4, sigma=0.05, alpha=0.05, **sampling)
        runs = {}
        for members in ("vllm_inplace", "one_by_one"):  # in place, then the reload path from the same center
            engine.load_weights((n, base[n]) for n in names)
            es = make_es(
                cfg,
                engine,
                task,
                names,
                {n: base[n].clone() for n in names},
                max_new_tokens=8,
                seed=3,
                population=PopulationConfig(members=members),
            )
            runs[members] = (es, [es.step(problems, s) for s in range(2)])
        (inplace, steps_a), (reload, steps_b) = runs["vllm_inplace"], runs["one_by_one"]
        assert inplace.members.shared  # the in-process worker holds the driver's master itself: one copy
        assert steps_a[0].rewards.std() > 0
        for a, b in zip(steps_a, steps_b):
            np.testing.assert_array_equal(a.rewards, b.rewards)
        assert all(torch.equal(inplace.center.master[n], reload.center.master[n]) for n in names)
        assert any(not torch.equal(inplace.center.master[n], base[n]) for n in names)
    finally:
        engine.close()


@pytest.fixture(scope="module")
def ray_for_this_machine():
    """A local Ray told how many GPUs are visible (so that actors asking for a GPU share do not wait for one
    it cannot see), with the tests' task module sent by value (actors cannot import tests/llm)."""
    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(tasks_for_tests)
    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=2,
            num_gpus=torch.cuda.device_count(),
            include_dashboard=False,
            log_to_driver=False,
            object_store_memory=200 * 1024**2,
        )
    yield ray
    if started:
        ray.shutdown()


@pytest.mark.ray
def test_ray_actors_sharing_the_gpu_train_the_single_process_weights(tiny_model_dir, ray_for_this_machine):
    from escov.llm.engines.hf import HFEngine
    from escov.llm.es.options import DistributedConfig

    task = digit_share_task()
    problems = task.problems("train", 2, seed=0)
    cfg = ESConfig(population_size=4, sigma=0.1, alpha=0.05, member_temperature=1.0, member_samples=2)
    gpu_share = 0.5 if KIND == "cuda" else 0.0  # two actors on the one GPU (none on the CPU stand-in)
    results = {}
    for dist in (None, DistributedConfig(workers=2, gpus_per_worker=gpu_share, actor_timeout_s=RAY_ACTOR_TIMEOUT_S)):
        engine = HFEngine(tiny_model_dir, device=DEVICE)
        weights = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
        names = sorted(weights)
        es = make_es(
            cfg,
            engine,
            task,
            names,
            {n: weights[n].clone() for n in names},
            max_new_tokens=6,
            seed=2,
            distributed=dist,
            model_dir=str(tiny_model_dir),
            weights=weights,
        )
        try:
            results[dist is None] = (es.step(problems, 0).rewards, es.center_weights())
        finally:
            es.close()
    (r_ray, w_ray), (r_one, w_one) = results[False], results[True]
    assert r_one.std() > 0
    np.testing.assert_array_equal(r_ray, r_one)
    assert all(torch.equal(w_ray[n], w_one[n]) for n in w_one)
