"""VLLMEngine against HFEngine on the tiny model: same greedy outputs and log-probs, the same
sampling statistics within sampling error, and weight changes made through the engine that change
vLLM's outputs exactly as they change the HF model's, ES's member weights and their restore. One vLLM
engine per session (conftest)."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from escov.llm.engines.hf import HFEngine
from escov.llm.es import ESConfig, make_es
from escov.llm.es.options import PopulationConfig
from escov.llm.tasks import get_task
from escov.llm.tasks.countdown import Countdown

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def hf(tiny_model_dir):
    return HFEngine(tiny_model_dir)


@pytest.fixture(scope="module")
def prompts():
    return [p.prompt for p in get_task("countdown").problems("test", 16, seed=3)]


def greedy_ids(engine, prompts):
    return [row[0].token_ids for row in engine.generate(prompts, n=1, temperature=0, max_new_tokens=16, seed=0)]


def test_greedy_outputs_and_logprobs_match_hf(vllm_engine, hf, prompts):
    v = vllm_engine.generate(prompts, n=1, temperature=0, max_new_tokens=16, seed=0)
    h = hf.generate(prompts, n=1, temperature=0, max_new_tokens=16, seed=0)
    for a, b in zip(v, h):
        assert a[0].token_ids == b[0].token_ids
        assert a[0].text == b[0].text and a[0].finish_reason == b[0].finish_reason
        assert a[0].logprobs == pytest.approx(b[0].logprobs, abs=1e-3)


@pytest.mark.parametrize("temperature, top_p", [(1.0, 1.0), (0.7, 1.0), (1.0, 0.6)])
def test_sampled_logprobs_are_those_of_the_sampling_distribution(vllm_engine, hf, prompts, temperature, top_p):
    """vLLM's per-token log-probs equal log of the temperature-scaled (and nucleus-renormalized)
    probabilities computed independently from one HF forward pass of the sampled sequence."""
    out = vllm_engine.generate(prompts[:6], n=3, temperature=temperature, max_new_tokens=10, seed=1, top_p=top_p)
    for prompt, row in zip(prompts[:6], out):
        p_ids = hf.prompt_token_ids(prompt)
        for c in row:
            assert (c.finish_reason == "stop") == (c.token_ids[-1] == hf.tokenizer.eos_token_id)
            with torch.no_grad():
                logits = hf.model(input_ids=torch.tensor([p_ids + c.token_ids])).logits[0, len(p_ids) - 1 : -1]
            probs = F.softmax(logits / temperature, -1)
            for t, (tok, lp) in enumerate(zip(c.token_ids, c.logprobs)):
                p_sorted, order = probs[t].sort(descending=True)
                nucleus = order[(p_sorted.cumsum(0) - p_sorted) < top_p]
                assert tok in nucleus.tolist()
                assert lp == pytest.approx(math.log(probs[t, tok] / probs[t, nucleus].sum()), abs=2e-3)


def test_sampling_is_seeded(vllm_engine, prompts):
    a = vllm_engine.generate(prompts[:4], n=4, temperature=1.0, max_new_tokens=12, seed=7)
    b = vllm_engine.generate(prompts[:4], n=4, temperature=1.0, max_new_tokens=12, seed=7)
    c = vllm_engine.generate(prompts[:4], n=4, temperature=1.0, max_new_tokens=12, seed=8)
    ids = lambda out: [[s.token_ids for s in row] for row in out]  # noqa: E731
    assert ids(a) == ids(b) and ids(a) != ids(c)
    assert all(len({tuple(s) for s in row}) > 1 for row in ids(a))  # the n samples of a prompt differ


def stats(engine, task, problems, seed):
    out = engine.generate([p.prompt for p in problems], n=32, temperature=1.0, max_new_tokens=16, seed=seed)
    rewards = np.array([[task.score(p, c.text) for c in row] for p, row in zip(problems, out)])
    lengths = np.array([len(c.token_ids) for row in out for c in row])
    nll = np.array([-np.mean(c.logprobs) for row in out for c in row])
    return rewards.ravel(), lengths, nll


def test_same_statistics_as_hf_within_sampling_error(vllm_engine, hf):
    """Same prompts, different random streams: the mean reward (1 correct, 0.5 well-formed but
    wrong, 0 malformed), mean length and mean per-token NLL agree within 4.5 standard errors."""
    task = Countdown(format_reward=0.5)
    problems = task.problems("test", 32, seed=11)
    hf_stats = stats(hf, task, problems, seed=2)
    for a, b in zip(stats(vllm_engine, task, problems, seed=1), hf_stats):
        se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        assert abs(a.mean() - b.mean()) < 4.5 * se
    assert 0.05 < np.mean(hf_stats[0] > 0) < 0.95  # informative: neither all nor no completion well-formed


def perturbations(hf):
    g = torch.Generator().manual_seed(0)
    base = {n: p.detach().clone() for n, p in hf.model.named_parameters()}
    noisy = {n: p + 0.3 * torch.randn(p.shape, generator=g) for n, p in base.items()}
    layer0 = [n for n in base if n.startswith("model.layers.0.self_attn.q_proj")]
    return (
        base,
        noisy,
        {
            "all": list(base),
            "embedding (tied head)": ["model.embed_tokens.weight"],
            "one projection": layer0,
            "mlp of layer 1": [n for n in base if "layers.1.mlp" in n],
        },
    )


def test_weight_changes_act_identically_on_both_engines(vllm_engine, hf, prompts):
    before = greedy_ids(vllm_engine, prompts)
    assert before == greedy_ids(hf, prompts)
    base, noisy, subsets = perturbations(hf)
    try:
        for label, names in subsets.items():
            hf.load_weights((n, noisy[n]) for n in names)
            vllm_engine.load_weights((n, noisy[n]) for n in names)
            h, v = greedy_ids(hf, prompts), greedy_ids(vllm_engine, prompts)
            assert h != before, label
            assert v == h, label
            hf.load_weights(base.items())
            vllm_engine.load_weights((n, base[n]) for n in names)
            assert greedy_ids(vllm_engine, prompts) == before, label
    finally:
        hf.load_weights(base.items())
        vllm_engine.load_weights(base.items())


def test_greedy_with_several_samples_gives_copies(vllm_engine, hf, prompts):
    v = vllm_engine.generate(prompts[:3], n=3, temperature=0, max_new_tokens=12, seed=0)
    h = hf.generate(prompts[:3], n=3, temperature=0, max_new_tokens=12, seed=0)
    assert [[c.token_ids for c in row] for row in v] == [[c.token_ids for c in row] for row in h]
    assert all(len({tuple(c.token_ids) for c in row}) == 1 for row in v)


def test_one_open_engine_per_process(vllm_engine, tiny_model_dir):
    from escov.llm.engines.vllm_engine import VLLMEngine

    with pytest.raises(ValueError, match="another VLLMEngine is open in this process"):
        VLLMEngine(tiny_model_dir)


def test_bad_weight_names_and_shapes(vllm_engine):
    with pytest.raises(ValueError, match="no tensor named 'nope'"):
        vllm_engine.load_weights([("nope", torch.zeros(1))])
    with pytest.raises(ValueError, match="shape"):
        vllm_engine.load_weights([("model.norm.weight", torch.zeros(3))])
    with pytest.raises(ValueError, match="n "):
        vllm_engine.generate(["1,2->3:"], n=0, temperature=1.0, max_new_tokens=4, seed=0)


def test_members_and_restore_on_vllm(vllm_engine, tiny_model_dir):
    """On vLLM the member weights go in through load_weights; restoring the master gives the center back."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    master = {n: p.detach().clone() for n, p in model.named_parameters()}
    task = get_task("countdown")
    es = make_es(
        ESConfig(population_size=2, sigma=0.05, alpha=0.01),
        vllm_engine,
        task,
        list(master),
        master,
        max_new_tokens=8,
        seed=0,
    )
    texts = [p.prompt for p in task.problems("test", 8, seed=0)]
    greedy = lambda: [
        row[0].text for row in vllm_engine.generate(texts, n=1, temperature=0.0, max_new_tokens=8, seed=0)
    ]
    before = greedy()
    plan = es.plan(1)
    es.center.perturb(plan, plan.members[0])
    perturbed = greedy()
    es.center.restore(plan, plan.members[0])
    assert greedy() == before
    assert perturbed != before


def test_es_in_place_inside_vllm_is_refused_on_its_cpu_build(vllm_engine):
    """ES members written in place inside vLLM's workers (llm/es/vllm_inplace.py) would never reach generation on
    vLLM's CPU build, which repacks the linear weights: the strategy refuses it, naming why."""
    assert vllm_engine.cpu
    master = {n: t.float() for n, t in vllm_engine.weights.items()}
    with pytest.raises(ValueError, match="vLLM's CPU build repacks linear"):
        make_es(
            ESConfig(population_size=4),
            vllm_engine,
            None,
            list(master),
            master,
            max_new_tokens=4,
            seed=0,
            population=PopulationConfig(members="vllm_inplace"),
        )
