"""Population-batched generation and low-rank noise on a real tiny HF model: the batched population
equals member-by-member perturbation (the ES center's own perturb) in logits, greedy and sampled
rollouts, rewards and final weights; low-rank noise has rank r, unit-variance entries, and its update
is the sum of the members' materialized perturbations."""

import math

import numpy as np
import pytest
import torch

from escov.llm.engines.hf import HFEngine
from escov.llm.es import ESConfig, PopulationConfig, make_es, select_parameters
from escov.llm.es.batched_hf import BatchedHF, PopulationWeights, generate_population, population_forward
from escov.llm.es.members import OneByOne
from escov.llm.es.noise import PopulationNoise, check_rank
from tests.llm.tasks_for_tests import digit_share_task

pytestmark = pytest.mark.usefixtures("one_torch_thread")
SIGMA = 3e-2


def _trainer(engine, population=None, pattern="", **kw):
    cfg = ESConfig(
        population_size=kw.pop("population_size", 6),
        sigma=SIGMA,
        alpha=2e-2,
        antithetic=kw.pop("antithetic", True),
        param_pattern=pattern,
        **kw.pop("es", {}),
    )
    cfg.validate()
    names = select_parameters(engine.model.named_parameters(), pattern)
    master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters() if n in names}
    return make_es(
        cfg,
        engine,
        digit_share_task(),
        names,
        master,
        max_new_tokens=kw.pop("max_new_tokens", 12),
        seed=7,
        population=population,
    )


def _left_padded(engine, prompts):
    rows = [engine.prompt_token_ids(p) for p in prompts]
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), engine.tokenizer.pad_token_id)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r) :], mask[i, width - len(r) :] = torch.tensor(r), 1
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


@pytest.mark.parametrize("rank,factored", [(0, True), (2, True), (2, False)])
def test_batched_logits_equal_member_by_member_within_1e_5(tiny_model_dir, rank, factored):
    """All parameters perturbed (embeddings tied to lm_head, norms, every Linear), antithetic pairs."""
    engine = HFEngine(tiny_model_dir)
    es = _trainer(engine, population=PopulationConfig(batched=False, noise_rank=rank))
    prompts = [p.prompt for p in digit_share_task().problems("train", 3, 0)]
    ids, mask, pos = _left_padded(engine, prompts)
    plan = es.plan(3).subset([0, 1, 2, 5])
    members = plan.members
    with torch.no_grad():
        center = engine.model(input_ids=ids, attention_mask=mask, position_ids=pos).logits
        reference = []
        for m in members:  # the center's own member-by-member perturbation
            es.center.perturb(plan, m)
            reference.append(engine.model(input_ids=ids, attention_mask=mask, position_ids=pos).logits)
            es.center.restore(plan, m)
        weights = PopulationWeights.build(es.center.master, es.center.noise, plan, torch.float32, factored)
        with population_forward(engine.model, weights):
            batched = engine.model(
                input_ids=ids.repeat(len(members), 1),
                attention_mask=mask.repeat(len(members), 1),
                position_ids=pos.repeat(len(members), 1),
            ).logits
    for i, ref in enumerate(reference):
        got = batched[i * len(prompts) : (i + 1) * len(prompts)]
        assert (got - ref).abs().max().item() <= 1e-5
        assert (ref - center).abs().max().item() > 1e-3  # the members really differ from the center
    # the module tree is restored after the block
    assert type(engine.model.lm_head).__name__ == "Linear"


def _near_tie(engine, es, plan, member, prompt, a, b, gap=1e-4) -> bool:
    """Whether two greedy completions part at a step where the member's top-2 logits are within gap."""
    k = next(i for i, (x, y) in enumerate(zip(a + [-1], b + [-2])) if x != y)
    es.center.perturb(plan, member)
    with torch.no_grad():
        logits = engine.model(input_ids=torch.tensor([engine.prompt_token_ids(prompt) + a[:k]])).logits[0, -1]
    es.center.restore(plan, member)
    top = logits.topk(2).values
    return float(top[0] - top[1]) < gap


@pytest.mark.parametrize("rank,temperature,n", [(0, 0.0, 1), (3, 0.0, 1), (0, 1.0, 3)])
def test_rollouts_identical_to_member_by_member(tiny_model_dir, rank, temperature, n):
    engine = HFEngine(tiny_model_dir)
    es = _trainer(engine, population=PopulationConfig(batched=False, noise_rank=rank), population_size=4)
    prompts = [p.prompt for p in digit_share_task().problems("train", 4, 1)]
    plan = es.plan(5)
    seeds = [m.rollout_seed for m in plan.members]  # each member samples from its own seed
    weights = PopulationWeights.build(es.center.master, es.center.noise, plan, torch.float32)
    batched = generate_population(
        engine,
        weights,
        prompts,
        n=n,
        temperature=temperature,
        max_new_tokens=16,
        seed=seeds,
        max_rows=2 * len(prompts) * n,
    )  # two members per block
    texts, mismatched = set(), 0
    for m in range(4):
        es.center.perturb(plan, plan.members[m])
        own = engine.generate(prompts, n=n, temperature=temperature, max_new_tokens=16, seed=seeds[m])
        es.center.restore(plan, plan.members[m])
        for prompt, row_b, row_o in zip(prompts, batched[m], own):
            for cb, co in zip(row_b, row_o):
                texts.add(cb.text)
                if cb.token_ids != co.token_ids:
                    mismatched += 1
                    assert temperature == 0 and _near_tie(
                        engine, es, plan, plan.members[m], prompt, cb.token_ids, co.token_ids
                    )
                else:
                    assert cb.finish_reason == co.finish_reason
                    np.testing.assert_allclose(cb.logprobs, co.logprobs, atol=1e-4)
    assert mismatched <= 1
    assert len(texts) > 4  # members and samples really produce different completions


@pytest.mark.parametrize("sampling", [{}, {"member_temperature": 1.0, "member_samples": 2}], ids=["greedy", "sampled"])
def test_batched_es_step_equals_the_trainers_member_by_member_step(tiny_model_dir, sampling):
    """Full rank: ES with BatchedHF members gives OneByOne's rewards, z and (bit for bit) its updated weights;
    sampled members draw from their own seeds on both paths."""
    problems = digit_share_task().problems("train", 4, 2)
    runs = []
    for population in (PopulationConfig(), PopulationConfig(batched=True, max_rows=64)):
        engine = HFEngine(tiny_model_dir)
        es = _trainer(engine, population, population_size=4, es=sampling)
        steps = [es.step(problems, s) for s in range(2)]
        runs.append((steps, es.center_weights(), {n: p.detach().clone() for n, p in engine.model.named_parameters()}))
    (ref_steps, ref_w, _), (steps, w, live) = runs
    for a, b in zip(ref_steps, steps):
        np.testing.assert_array_equal(a.rewards, b.rewards)
        np.testing.assert_array_equal(a.z, b.z)
    assert np.ptp(ref_steps[0].rewards) > 0  # a real, non-zero update
    for name in ref_w:
        assert torch.equal(ref_w[name], w[name]), name
        assert torch.equal(live[name], w[name]), name  # the engine holds the new center


def test_lowrank_update_is_alpha_over_n_sum_z_of_member_perturbations(tiny_model_dir):
    """The update rebuilt from the factor seeds equals alpha/N sum_m z_m (theta_m - theta)/sigma, with theta_m
    read back from the engine while each member was written (materialized A B^T, independent of the update)."""
    engine = HFEngine(tiny_model_dir)
    es = _trainer(engine, population=PopulationConfig(batched=False, noise_rank=2), antithetic=False, population_size=5)
    theta = es.center_weights()
    plan, z = es.plan(0), np.array([1.2, -0.3, 0.0, -1.5, 0.6])
    expected = {n: torch.zeros_like(t, dtype=torch.float64) for n, t in theta.items()}
    for m in range(5):
        es.center.perturb(plan, plan.members[m])
        for n, p in engine.model.named_parameters():
            expected[n] += z[m] * (p.detach().double() - theta[n].double()) / SIGMA
        es.center.restore(plan, plan.members[m])
    es.center.apply(plan.update(z, es.cfg.alpha))
    for n, t in es.center_weights().items():
        delta = (t.double() - theta[n].double()) / (es.cfg.alpha / 5)
        torch.testing.assert_close(delta, expected[n], rtol=0, atol=2e-3 * expected[n].abs().max().item() + 1e-9)
        if expected[n].dim() == 2:  # a sum of 5 rank-2 matrices has rank <= 10
            assert torch.linalg.matrix_rank(expected[n], rtol=1e-3).item() <= 10


def test_lowrank_noise_has_rank_r_and_unit_variance_entries():
    noise = PopulationNoise(rank=4)
    e = noise.direction(5, 0, "layer.weight", (1024, 512))
    assert torch.linalg.matrix_rank(e, rtol=1e-4).item() == 4
    assert abs(e.pow(2).mean().item() - 1.0) < 0.2  # E[(A B^T)_ij^2] / r = 1
    a, b = noise.factors(5, 0, "layer.weight", (1024, 512))
    torch.testing.assert_close(e, a @ b.T / math.sqrt(4))
    assert not torch.equal(a[:512, :4], b[:, :4])  # the two factors have their own seeds
    other = noise.direction(5, 1, "layer.weight", (1024, 512))
    assert abs(torch.nn.functional.cosine_similarity(e.flatten(), other.flatten(), dim=0).item()) < 0.05
    bias = noise.direction(5, 0, "layer.bias", (64,))  # vectors keep full-rank noise
    assert bias.shape == (64,)


def test_bad_input_raises_before_work(tiny_model_dir):
    with pytest.raises(ValueError, match="noise_rank 33 is larger than parameter .* allows"):
        check_rank(33, {"a.weight": (64, 32), "b.weight": (100, 64)})
    with pytest.raises(ValueError, match="noise_rank must be an integer >= 0"):
        check_rank(-1, {"a.weight": (64, 32)})
    engine = HFEngine(tiny_model_dir)
    with pytest.raises(ValueError, match="noise_rank 40 is larger"):
        _trainer(engine, population=PopulationConfig(noise_rank=40))
    with pytest.raises(ValueError, match="inplace_bf16"):
        _trainer(engine, population=PopulationConfig(batched=True), es={"inplace_bf16": True})
    with pytest.raises(ValueError, match="max_rows"):
        _trainer(engine, population=PopulationConfig(max_rows=0))


def test_unsupported_module_is_named():
    """GPT-2's LayerNorm and Conv1D projections are not supported: the batched forward refuses them up front."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from escov.llm.es.batched_hf import check_supported

    model = GPT2LMHeadModel(
        GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=50, n_positions=32, bos_token_id=0, eos_token_id=0)
    )
    with pytest.raises(ValueError, match="cannot perturb .*ln_1.*LayerNorm"):
        check_supported(model, [n for n, _ in model.named_parameters()])
    with pytest.raises(ValueError, match="cannot perturb .*c_attn.*Conv1D"):
        check_supported(model, ["transformer.h.0.attn.c_attn.weight"])
    check_supported(model, ["transformer.wte.weight"])  # embeddings alone are fine


def test_make_es_picks_the_member_evaluation_and_check_setup_fails_early(tiny_model_dir):
    from escov.llm.es import DistributedConfig, check_setup

    engine = HFEngine(tiny_model_dir)
    cfg = ESConfig(population_size=6, sigma=SIGMA, alpha=1e-2)
    names = select_parameters(engine.model.named_parameters(), "")
    master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    kw = dict(max_new_tokens=4, seed=0)
    assert type(make_es(cfg, engine, digit_share_task(), names, master, **kw).members) is OneByOne
    es = make_es(cfg, engine, digit_share_task(), names, master, population=PopulationConfig(batched=False), **kw)
    assert type(es.members) is OneByOne and es.center.noise.kept is None  # plain ES keeps no noise
    es = make_es(cfg, engine, digit_share_task(), names, master, population=PopulationConfig(batched=True), **kw)
    assert type(es.members) is BatchedHF and es.center.noise.kept is not None
    check_setup(engine.model, names, cfg, PopulationConfig(noise_rank=4), DistributedConfig(workers=3))
    with pytest.raises(ValueError, match="divisible by workers"):
        check_setup(engine.model, names, cfg, PopulationConfig(), DistributedConfig(workers=4))
    with pytest.raises(ValueError, match="noise_rank 64 is larger"):
        check_setup(engine.model, names, cfg, PopulationConfig(noise_rank=64))


@pytest.mark.parametrize("rank", [0, 2])
def test_kept_noise_gives_the_update_drawn_again_from_the_seeds_within_its_budget(rank):
    """keep_bytes: the iteration's draws are reused up to the budget, the update equals the one drawn
    again from the seeds bit for bit, and a new iteration seed forgets the old draws."""
    shape, coef = (6, 5), np.array([0.7, -1.1, 0.0, 2.0])
    per_direction = 4 * (6 * 5 if rank == 0 else (6 + 5) * rank)  # fp32 bytes of E_d (or of A_d and B_d)
    fresh, kept = PopulationNoise(rank=rank), PopulationNoise(rank=rank, keep_bytes=3 * per_direction)
    for d in range(4):  # the members' draws
        assert torch.equal(kept.direction(11, d, "w", shape), fresh.direction(11, d, "w", shape))
    assert kept.kept.used_bytes == 3 * per_direction  # the fourth direction did not fit
    label, numel = ("w", 6 * 5) if rank == 0 else ("w/lowrank-A", 6 * rank)
    assert kept.run(11, 0, label, numel) is kept.run(11, 0, label, numel)
    assert kept.run(11, 3, label, numel) is not kept.run(11, 3, label, numel)
    assert torch.equal(kept.combined(11, "w", shape, coef), fresh.combined(11, "w", shape, coef))
    kept.direction(12, 0, "w", shape)
    assert kept.kept.seed == 12 and kept.kept.used_bytes == per_direction


def test_lowrank_layout_auto_stacks_while_the_stacked_matrices_fit():
    """auto: stacked W_m while N x (perturbed matrix elements) x element size <= 256 MiB, factored beyond."""
    small, large = [(256, 64)], [(4096, 1024)]
    auto = PopulationConfig(noise_rank=4)
    assert not auto.factored(16, small, torch.float32)
    assert not auto.factored(16, large, torch.float32)  # 16 x 4M x 4 B = 256 MiB: still fits
    assert auto.factored(17, large, torch.float32) and not auto.factored(17, large, torch.bfloat16)
    assert PopulationConfig(lowrank_layout="factored").factored(16, small, torch.float32)
    assert not PopulationConfig(lowrank_layout="stacked").factored(64, large, torch.float32)
    with pytest.raises(ValueError, match="lowrank_layout must be one of"):
        PopulationConfig(lowrank_layout="fused").validate()


def test_a_population_linear_keeps_an_unperturbed_bias_and_splits_rows_by_member():
    """Qwen's q/k/v projections carry a bias that ES may leave unperturbed: member m's rows are x W_m^T + b, with each
    member's own W_m (written here by hand with F.linear); a batch that does not split into the members is refused."""
    from torch.nn import functional as F

    from escov.llm.es.batched_hf import MemberParam, PopulationLinear, _rows

    torch.manual_seed(0)
    base = torch.nn.Linear(5, 3, bias=True)
    w = torch.randn(2, 3, 5)  # two members' weights, [out, in] each
    layer = PopulationLinear(base, MemberParam(stacked=w.transpose(1, 2).contiguous()), None, members=2)
    x = torch.randn(4, 5)  # rows 0-1: member 0, rows 2-3: member 1
    with torch.no_grad():
        out = layer(x)
        expected = torch.cat([F.linear(x[:2], w[0], base.bias), F.linear(x[2:], w[1], base.bias)])
    torch.testing.assert_close(out, expected)
    with pytest.raises(ValueError, match="a batch of 5 rows does not split into 2 members"):
        _rows(torch.zeros(5, 3), 2)
