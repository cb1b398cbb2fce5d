"""Every member-evaluation strategy this machine can run gives OneByOne's rewards and update.

Each strategy gets the same plan from ES (llm/es/plan.py) and must hand back the same member rewards,
so the same z and, bit for bit, the same updated center, for greedy and for sampled members (sampled
members draw from their own rollout seeds on every path). On this CPU: one_by_one, batched_hf and ray
on the HF engine (ray with sampled members here; with greedy members in tests/llm/es/test_ray_actors.py,
which starts its actors once for all its checks); vllm_lora on vLLM's CPU build against one_by_one on the same vLLM
engine (vLLM samples with its own generator, so sampled members are compared on one engine kind), in
tests/llm/es/test_vllm_lora.py, which starts that engine once for all its checks. vllm_inplace needs CUDA:
tests/llm/test_gpu.py (scripts/gpu_check.sh)."""

import importlib.util

import numpy as np
import pytest
import torch

from escov.llm.engines.hf import HFEngine
from escov.llm.es import DistributedConfig, ESConfig, PopulationConfig, make_es, select_parameters
from escov.llm.es.factory import STRATEGIES
from tests.llm.tasks_for_tests import digit_share_task

pytestmark = pytest.mark.usefixtures("one_torch_thread")
SAMPLING = {"greedy": {}, "sampled": {"member_temperature": 1.0, "member_samples": 2}}
HF_STRATEGIES = {
    "one_by_one": (PopulationConfig(members="one_by_one"), None),
    "batched_hf": (PopulationConfig(members="batched_hf", max_rows=64), None),
    "ray": (PopulationConfig(members="ray"), DistributedConfig(workers=2)),
}
STEPS = 2


def _run(model_dir, es_over: dict, population, distributed, steps: int = STEPS):
    engine = HFEngine(model_dir)
    cfg = ESConfig(population_size=4, sigma=3e-2, alpha=2e-2, antithetic=True, **es_over)
    names = select_parameters(engine.model.named_parameters(), "")
    master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    es = make_es(
        cfg,
        engine,
        digit_share_task(),
        names,
        master,
        max_new_tokens=12,
        seed=7,
        population=population,
        distributed=distributed,
        model_dir=str(model_dir),
    )
    assert type(es.members) is STRATEGIES[population.members].evaluator  # the strategy table says what it builds
    problems = digit_share_task().problems("train", 4, 2)
    try:
        out = [es.step(problems, s) for s in range(steps)]
        return [o.rewards for o in out], es.center_weights()
    finally:
        es.close()


@pytest.fixture(scope="module")
def ray_local():
    from tests.llm import tasks_for_tests

    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(tasks_for_tests)  # actors cannot import the tests' task module
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 1024**2)
    yield ray
    ray.shutdown()


@pytest.mark.parametrize("sampling", list(SAMPLING))
def test_every_hf_strategy_gives_one_by_ones_rewards_and_update(tiny_model_dir, sampling, request):
    reference_rewards, reference = _run(tiny_model_dir, SAMPLING[sampling], *HF_STRATEGIES["one_by_one"])
    assert np.ptp(reference_rewards[0]) > 0, "members that all score the same give no update to compare"
    checked = []
    for name in ("batched_hf", "ray") if sampling == "sampled" else ("batched_hf",):
        if name == "ray":
            if importlib.util.find_spec("ray") is None:
                continue
            request.getfixturevalue("ray_local")
        rewards, weights = _run(tiny_model_dir, SAMPLING[sampling], *HF_STRATEGIES[name])
        for a, b in zip(reference_rewards, rewards):
            np.testing.assert_array_equal(a, b, err_msg=name)
        assert all(torch.equal(reference[n], weights[n]) for n in reference), name
        checked.append(name)
    assert "batched_hf" in checked


def test_one_setting_chooses_the_strategy_and_each_declares_its_engine():
    from escov.llm.es.factory import check_options, engine_settings
    from escov.llm.es.options import strategy_name

    auto = PopulationConfig()
    assert strategy_name(auto, None) == "one_by_one"
    assert strategy_name(PopulationConfig(batched=True), None) == "batched_hf"
    assert strategy_name(PopulationConfig(batched=True), DistributedConfig(workers=2)) == "ray"
    assert strategy_name(PopulationConfig(members="vllm_lora"), None) == "vllm_lora"
    cfg = ESConfig(population_size=6)
    lora = PopulationConfig(members="vllm_lora", noise_rank=4)
    assert engine_settings(cfg, lora, None) == {"enable_lora": True, "max_loras": 6, "max_lora_rank": 8}
    assert engine_settings(cfg, auto, None) == {}
    check_options(cfg, lora, "vllm")
    for population, engine, dist, match in (
        (lora, "hf", None, "vllm_lora needs engine = 'vllm'"),
        (PopulationConfig(members="vllm_lora"), "vllm", None, "noise_rank >= 1"),
        (PopulationConfig(members="ray"), "hf", None, "needs Ray workers"),
        (PopulationConfig(members="one_by_one", batched=True), "hf", None, "turn population.batched off"),
        (PopulationConfig(members="batched_hf"), "hf", DistributedConfig(workers=2), "with Ray workers use 'ray'"),
    ):
        with pytest.raises(ValueError, match=match):
            check_options(cfg, population, engine, dist)
