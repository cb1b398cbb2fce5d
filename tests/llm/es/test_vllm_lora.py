"""A low-rank ES population as LoRA adapters in one vLLM generate (CPU build): the same greedy completions
as the HF engine with each member's weights written member by member, and, as a member-evaluation strategy
(vllm_lora), the same rewards and update as one_by_one on the same vLLM engine, greedy and sampled (the other
strategies' conformance: tests/llm/es/test_conformance.py). One vLLM engine, in a fresh process, serves both."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from escov.llm.engines.hf import HFEngine
from escov.llm.es import ESConfig, PopulationConfig, make_es, select_parameters
from escov.llm.es.noise import PopulationNoise
from escov.llm.tasks import get_task
from tests.llm.tasks_for_tests import digit_share_task

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")
MEMBERS, RANK = 4, 4


@pytest.fixture(scope="module")
def model_dir_head32(tmp_path_factory):
    """A random-init Llama with head size 32 (vLLM's CPU attention needs a multiple of 32), sharp logits."""
    from escov.llm.tinymodel import save_untrained_llama

    return save_untrained_llama(tmp_path_factory.mktemp("head32"), hidden_size=64, num_layers=2, intermediate_size=128)


def test_lora_population_refuses_what_lora_cannot_express(model_dir_head32):
    from escov.llm.es.vllm_lora import check_lora_population

    hf = HFEngine(model_dir_head32)
    with pytest.raises(ValueError, match="noise_rank >= 1"):
        check_lora_population(PopulationNoise(rank=0), ["model.layers.0.self_attn.q_proj.weight"], 4, hf)
    with pytest.raises(ValueError, match="can only perturb"):
        check_lora_population(PopulationNoise(rank=2), ["model.embed_tokens.weight"], 4, hf)
    with pytest.raises(ValueError, match="enable_lora=True"):
        check_lora_population(PopulationNoise(rank=2), ["model.layers.0.self_attn.q_proj.weight"], 4, hf)


IN_SUBPROCESS = "ESCOV_LORA_IN_SUBPROCESS"  # set for the fresh process that runs the checks below
in_subprocess_only = pytest.mark.skipif(
    os.environ.get(IN_SUBPROCESS) != "1", reason="run through test_lora_checks_in_a_fresh_process"
)


def test_lora_checks_in_a_fresh_process():
    """Runs the checks below in one fresh process: vLLM keeps per-process state, and this session may
    already hold an engine (one open VLLMEngine per process)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k", "in_this_process"],
        env=dict(os.environ, **{IN_SUBPROCESS: "1"}),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def lora_engine(model_dir_head32):
    """vLLM with LoRA on, as the vllm_lora strategy declares it for MEMBERS members of rank RANK; compiled, as
    vLLM starts by default (the suite's shared engine in conftest.py is eager)."""
    from escov.llm.engines.vllm_engine import VLLMEngine
    from escov.llm.es.factory import engine_settings

    settings = engine_settings(
        ESConfig(population_size=MEMBERS), PopulationConfig(members="vllm_lora", noise_rank=RANK), None
    )
    engine = VLLMEngine(model_dir_head32, kv_cache_memory_bytes=1 << 28, **settings)
    yield engine
    engine.close()


@in_subprocess_only
def test_lora_population_in_this_process(model_dir_head32, lora_engine, tmp_path):
    from escov.llm.es.members import Sampling
    from escov.llm.es.vllm_lora import (
        LORA_PATTERN,
        VLLMLoRA,
        check_lora_population,
        generate_lora_population,
        linear_shapes,
    )

    hf = HFEngine(model_dir_head32)
    cfg = ESConfig(population_size=MEMBERS, sigma=5e-2, alpha=1e-2, antithetic=True, param_pattern=LORA_PATTERN)
    names = select_parameters(hf.model.named_parameters(), LORA_PATTERN)
    master = {n: p.detach().float().clone() for n, p in hf.model.named_parameters() if n in names}
    es = make_es(
        cfg,
        hf,
        get_task("countdown"),
        names,
        master,
        max_new_tokens=12,
        seed=0,
        population=PopulationConfig(batched=False, noise_rank=RANK),
    )
    prompts = [p.prompt for p in get_task("countdown").problems("train", 6, 0)]
    problems = digit_share_task().problems("train", 6, 0)
    plan = es.plan(21)
    noise = es.center.noise
    check_lora_population(noise, names, MEMBERS, lora_engine)
    batched = generate_lora_population(
        lora_engine,
        noise,
        plan,
        linear_shapes(model_dir_head32, names),
        prompts,
        n=1,
        temperature=0.0,
        max_new_tokens=12,
        workdir=tmp_path,
    )
    # the same members as an ES member-evaluation strategy on the vLLM engine, against one by one on HF
    on_vllm = VLLMLoRA(lora_engine, digit_share_task(), Sampling(1, 0.0, 12), noise, names, MEMBERS)
    lora_rewards, lora_tokens, _ = on_vllm.rewards(plan, problems)
    on_vllm.close()
    hf_es = make_es(
        cfg,
        hf,
        digit_share_task(),
        names,
        master,
        max_new_tokens=12,
        seed=0,
        population=PopulationConfig(batched=False, noise_rank=RANK),
    )
    hf_rewards, hf_tokens, _ = hf_es.members.rewards(plan, problems)
    np.testing.assert_array_equal(lora_rewards, hf_rewards)
    assert lora_tokens == hf_tokens > 0
    center = hf.generate(prompts, n=1, temperature=0.0, max_new_tokens=12, seed=0)
    moved = 0
    for m in range(MEMBERS):
        es.center.perturb(plan, plan.members[m])
        own = hf.generate(prompts, n=1, temperature=0.0, max_new_tokens=12, seed=0)
        es.center.restore(plan, plan.members[m])
        assert [r[0].token_ids for r in batched[m]] == [r[0].token_ids for r in own]
        moved += sum(a[0].token_ids != c[0].token_ids for a, c in zip(own, center))
    assert moved > 0  # the adapters really change the members' completions


SAMPLING = {"greedy": {}, "sampled": {"member_temperature": 1.0, "member_samples": 2}}
STEPS = 2


@in_subprocess_only
def test_vllm_lora_gives_one_by_ones_rewards_and_update_on_vllm_in_this_process(lora_engine):
    """vllm_lora as a member-evaluation strategy: the same member rewards, and bit for bit the same updated center,
    as one_by_one on the same vLLM engine (members written by reload), over STEPS steps, greedy and sampled."""
    from escov.llm.es.vllm_lora import LORA_PATTERN

    lora = PopulationConfig(members="vllm_lora", noise_rank=RANK)
    task, problems = digit_share_task(), digit_share_task().problems("train", 6, 0)
    base = {n: t.float().clone() for n, t in lora_engine.weights.items()}
    names = [n for n in base if n in select_parameters(((n, None) for n in base), LORA_PATTERN)]
    try:
        for sampling, es_over in SAMPLING.items():
            cfg = ESConfig(
                population_size=MEMBERS, sigma=5e-2, alpha=1e-2, antithetic=True, param_pattern=LORA_PATTERN, **es_over
            )
            runs = {}
            for name, population in (
                ("vllm_lora", lora),
                ("one_by_one", PopulationConfig(members="one_by_one", noise_rank=RANK)),
            ):
                lora_engine.load_weights(base.items())
                es = make_es(
                    cfg,
                    lora_engine,
                    task,
                    names,
                    {n: base[n].clone() for n in names},
                    max_new_tokens=12,
                    seed=0,
                    population=population,
                )
                runs[name] = ([es.step(problems, s).rewards for s in range(STEPS)], es.center_weights())
                es.close()
            (lora_rewards, lora_w), (ref_rewards, ref_w) = runs["vllm_lora"], runs["one_by_one"]
            assert np.ptp(ref_rewards[0]) > 0, sampling
            for a, b in zip(ref_rewards, lora_rewards):
                np.testing.assert_array_equal(a, b, err_msg=sampling)
            assert all(torch.equal(ref_w[n], lora_w[n]) for n in ref_w), sampling
    finally:
        lora_engine.load_weights(base.items())
