"""llm/es/factory.py: each strategy's own checks on the model and the machine, the engine settings it asks for, the
noise budget it gives the center, and what a Ray replica evaluates with (checked in process, without Ray)."""

import socket

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from escov.llm.engines.hf import HFEngine
from escov.llm.es import DistributedConfig, ESConfig, PopulationConfig, check_setup, select_parameters
from escov.llm.es.batched_hf import BatchedHF
from escov.llm.es.factory import engine_settings, local_evaluation, population_noise
from escov.llm.es.members import OneByOne, Sampling
from tests.llm.tasks_for_tests import digit_share_task

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize(
    "noise_rank, max_lora_rank",
    [(1, 1), (2, 8), (8, 8), (9, 16), (16, 16), (100, 128), (320, 320), (321, 512)],
)
def test_vllm_lora_asks_for_the_smallest_rank_vllm_accepts_that_holds_the_noise(noise_rank, max_lora_rank):
    """vLLM's max_lora_rank takes 1, 8, 16, 32, 64, 128, 256, 320 or 512 (its LoRAConfig); one adapter per member."""
    population = PopulationConfig(members="vllm_lora", noise_rank=noise_rank)
    settings = engine_settings(ESConfig(population_size=6), population, None)
    assert settings == {"enable_lora": True, "max_loras": 6, "max_lora_rank": max_lora_rank}


def _gpt2():
    """GPT-2's LayerNorm and Conv1D projections, which the population-batched forward does not support."""
    return GPT2LMHeadModel(
        GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=50, n_positions=32, bos_token_id=0, eos_token_id=0)
    )


def test_the_batched_strategies_refuse_a_model_the_batched_forward_lacks_and_the_others_do_not():
    model, cfg = _gpt2(), ESConfig(population_size=4)
    names = ["transformer.h.0.attn.c_attn.weight"]
    for population, distributed in (
        (PopulationConfig(members="batched_hf"), None),
        (PopulationConfig(batched=True), None),
        (PopulationConfig(members="ray", batched=True), DistributedConfig(workers=2)),
    ):
        with pytest.raises(ValueError, match="cannot perturb .*c_attn.*Conv1D"):
            check_setup(model, names, cfg, population, distributed)
    check_setup(model, names, cfg, PopulationConfig(), None)  # one by one: any module
    check_setup(model, names, cfg, PopulationConfig(members="ray"), DistributedConfig(workers=2))  # Ray, not batched


def test_vllm_lora_refuses_weights_outside_the_projections_lora_reaches(tiny_model_dir):
    engine = HFEngine(tiny_model_dir)
    cfg, population = ESConfig(population_size=4), PopulationConfig(members="vllm_lora", noise_rank=2)
    every = select_parameters(engine.model.named_parameters(), "")
    projections = [n for n in every if n.endswith(("q_proj.weight", "v_proj.weight", "down_proj.weight"))]
    assert projections and len(projections) < len(every)
    check_setup(engine.model, projections, cfg, population, engine="vllm")
    outside = sorted(set(every) - set(projections) - {n for n in every if "_proj.weight" in n})
    with pytest.raises(ValueError, match=r"vllm_lora can only perturb .*set es.param_pattern"):
        check_setup(engine.model, [*projections, outside[0]], cfg, population, engine="vllm")


def test_the_machine_is_checked_for_what_the_strategy_needs_before_the_engine_starts():
    cfg = ESConfig(population_size=4)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="vllm_inplace needs vLLM on a CUDA GPU"):
            engine_settings(cfg, PopulationConfig(members="vllm_inplace"), None)
    pytest.importorskip("ray")
    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    distributed = DistributedConfig(workers=2, address=f"127.0.0.1:{port}")
    with pytest.raises(ValueError, match="no Ray cluster reachable"):
        engine_settings(cfg, PopulationConfig(members="ray"), distributed)


def test_the_noise_budget_is_keep_noise_mb_mebibytes_and_none_for_plain_es():
    cfg = ESConfig(population_size=4)
    assert population_noise(cfg, PopulationConfig(batched=True, keep_noise_mb=3)).kept.budget_bytes == 3 * 1024 * 1024
    assert population_noise(cfg, PopulationConfig(keep_noise_mb=3)).kept is None  # plain: nothing kept


@pytest.mark.parametrize("batched, evaluator", [(True, BatchedHF), (False, OneByOne)])
def test_a_ray_replica_evaluates_batched_as_population_batched_says(tiny_model_dir, batched, evaluator):
    engine = HFEngine(tiny_model_dir)
    names = select_parameters(engine.model.named_parameters(), "")
    master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters() if n in names}
    center, members = local_evaluation(
        ESConfig(population_size=4),
        PopulationConfig(batched=batched),
        engine,
        digit_share_task(),
        Sampling(1, 0.0, 4),
        master,
        "cpu",
    )
    assert type(members) is evaluator and members.center is center
