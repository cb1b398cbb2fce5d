"""HFEngine on the tiny model: shapes, determinism, log-probs against an independent forward pass,
top-p, stop handling, in-place weight loads, and bad input."""

import math

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer

from escov.llm.engines import make_engine
from escov.llm.engines.hf import HFEngine
from escov.llm.tasks import get_task


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return HFEngine(tiny_model_dir)


@pytest.fixture(scope="module")
def prompts():
    return [p.prompt for p in get_task("countdown").problems("test", 6, seed=0)]


def test_saved_model_loads_with_auto_classes(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    ids = tok("3,7,25->46:")["input_ids"]
    assert tok.decode(ids) == "3,7,25->46:"
    assert tok.pad_token_id is not None and tok.eos_token_id is not None and tok.pad_token_id != tok.eos_token_id
    assert model.config.architectures == ["LlamaForCausalLM"]


def test_generate_shapes_and_determinism(engine, prompts):
    out = engine.generate(prompts, n=3, temperature=1.0, max_new_tokens=16, seed=5)
    assert len(out) == len(prompts) and all(len(row) == 3 for row in out)
    again = engine.generate(prompts, n=3, temperature=1.0, max_new_tokens=16, seed=5)
    other = engine.generate(prompts, n=3, temperature=1.0, max_new_tokens=16, seed=6)
    ids = [[c.token_ids for c in row] for row in out]
    assert ids == [[c.token_ids for c in row] for row in again]
    assert ids != [[c.token_ids for c in row] for row in other]
    eos = engine.tokenizer.eos_token_id
    for row in out:
        for c in row:
            assert len(c.token_ids) == len(c.logprobs) <= 16
            assert c.finish_reason in ("stop", "length")
            assert (c.finish_reason == "stop") == (c.token_ids[-1] == eos)
            assert eos not in c.token_ids[:-1]
            assert c.text == engine.tokenizer.decode(c.token_ids, skip_special_tokens=True)
            assert all(lp <= 0 for lp in c.logprobs)


def reference_logprobs(model, prompt_ids, completion_ids, temperature):
    """log softmax(logits / T) of each completion token from one full forward pass (no cache, no padding)."""
    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt_ids) - 1 : -1].float()
    if temperature > 0:
        logits = logits / temperature
    return F.log_softmax(logits, -1).gather(1, torch.tensor(completion_ids)[:, None])[:, 0].tolist()


@pytest.mark.parametrize("temperature", [0.0, 0.7, 1.0])
def test_logprobs_match_a_full_forward_pass(engine, prompts, temperature):
    """Batched, left-padded, KV-cached generation gives the same per-token log-probs as an
    unpadded full forward pass of each sequence alone (prompts have different lengths)."""
    out = engine.generate(prompts, n=2, temperature=temperature, max_new_tokens=12, seed=1)
    for prompt, row in zip(prompts, out):
        p_ids = engine.prompt_token_ids(prompt)
        for c in row:
            ref = reference_logprobs(engine.model, p_ids, c.token_ids, temperature)
            assert c.logprobs == pytest.approx(ref, abs=1e-4)
            if temperature == 0:
                with torch.no_grad():
                    logits = engine.model(input_ids=torch.tensor([p_ids + c.token_ids])).logits[0]
                assert c.token_ids == logits[len(p_ids) - 1 : -1].argmax(-1).tolist()


def _sampled_tokens(engine, prompts, n: int, max_new_tokens: int, seed: int, temperature: float, **sampling):
    """(the full-forward distribution at temperature, the token sampled there, its log-prob) for every token the
    engine sampled for the prompts."""
    out = engine.generate(prompts, n=n, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, **sampling)
    for prompt, row in zip(prompts, out):
        p_ids = engine.prompt_token_ids(prompt)
        for c in row:
            with torch.no_grad():
                logits = engine.model(input_ids=torch.tensor([p_ids + c.token_ids])).logits[0, len(p_ids) - 1 : -1]
            probs = F.softmax(logits / temperature, -1)
            yield from zip(probs, c.token_ids, c.logprobs)


def test_top_p_samples_only_from_the_nucleus(engine, prompts):
    """With top_p, every sampled token lies in the nucleus of the full-forward distribution, and its
    log-prob is the renormalized nucleus log-prob."""
    top_p = 0.5
    for probs, tok, lp in _sampled_tokens(engine, prompts[:3], 4, 8, 2, 1.0, top_p=top_p):
        p_sorted, order = probs.sort(descending=True)
        before = p_sorted.cumsum(0) - p_sorted
        nucleus = order[before < top_p]
        assert tok in nucleus.tolist()
        assert lp == pytest.approx(math.log(probs[tok] / probs[nucleus].sum()), abs=1e-4)


@pytest.mark.parametrize("setting, value", [("top_k", 3), ("min_p", 0.2)])
def test_top_k_and_min_p_sample_only_from_their_sets(engine, prompts, setting, value):
    """With top_k (the k most likely tokens) or min_p (tokens at least min_p times the most likely one's
    probability), every sampled token lies in that set of the full-forward distribution, its log-prob is the
    renormalized one, and more than one token of a set is drawn (not the most likely alone)."""
    kept_sets = []
    for probs, tok, lp in _sampled_tokens(engine, prompts[:3], 6, 6, 5, 1.0, **{setting: value}):
        kept = probs.topk(value).indices if setting == "top_k" else (probs >= value * probs.max()).nonzero()[:, 0]
        assert tok in kept.tolist()
        assert lp == pytest.approx(math.log(probs[tok] / probs[kept].sum()), abs=1e-4)
        kept_sets.append((len(kept), tok != int(probs.argmax())))
    assert any(n > 1 for n, _ in kept_sets) and any(other for _, other in kept_sets)


def test_max_new_tokens_and_length_finish(engine, prompts):
    out = engine.generate(prompts[:2], n=4, temperature=1.0, max_new_tokens=1, seed=0)
    for row in out:
        for c in row:
            assert len(c.token_ids) == 1
            assert c.finish_reason == ("stop" if c.token_ids == [engine.tokenizer.eos_token_id] else "length")


def test_load_weights_changes_outputs_and_restores(tiny_model_dir, prompts):
    engine = HFEngine(tiny_model_dir)
    before = engine.generate(prompts, n=1, temperature=0, max_new_tokens=12, seed=0)
    params = dict(engine.model.named_parameters())
    saved = {n: p.detach().clone() for n, p in params.items()}
    g = torch.Generator().manual_seed(0)
    engine.load_weights((n, p + 0.5 * torch.randn(p.shape, generator=g)) for n, p in saved.items())
    assert not torch.equal(params["model.embed_tokens.weight"], saved["model.embed_tokens.weight"])
    changed = engine.generate(prompts, n=1, temperature=0, max_new_tokens=12, seed=0)
    assert [r[0].token_ids for r in changed] != [r[0].token_ids for r in before]
    engine.load_weights(saved.items())
    restored = engine.generate(prompts, n=1, temperature=0, max_new_tokens=12, seed=0)
    assert [r[0].token_ids for r in restored] == [r[0].token_ids for r in before]
    with pytest.raises(ValueError, match="no parameter named 'nope'"):
        engine.load_weights([("nope", torch.zeros(1))])
    with pytest.raises(ValueError, match="shape"):
        engine.load_weights([("model.embed_tokens.weight", torch.zeros(3, 3))])


def test_loaded_model_and_tokenizer(tiny_model_dir, prompts):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    a = HFEngine(model, tok).generate(prompts[:2], n=2, temperature=1.0, max_new_tokens=8, seed=3)
    b = HFEngine(tiny_model_dir).generate(prompts[:2], n=2, temperature=1.0, max_new_tokens=8, seed=3)
    assert [[c.token_ids for c in r] for r in a] == [[c.token_ids for c in r] for r in b]
    with pytest.raises(ValueError, match="tokenizer is required"):
        HFEngine(model)


def test_bad_inputs(tmp_path, engine, prompts):
    with pytest.raises(ValueError, match="does not exist"):
        HFEngine(tmp_path / "missing")
    with pytest.raises(ValueError, match="no config.json"):
        HFEngine(tmp_path)
    with pytest.raises(ValueError, match="engine must be one of"):
        make_engine("tgi", tmp_path)
    for kwargs, match in [
        ({"n": 0}, "n "),
        ({"temperature": -1}, "temperature"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
    ]:
        args = dict(n=1, temperature=1.0, max_new_tokens=4, seed=0) | kwargs
        with pytest.raises(ValueError, match=match):
            engine.generate(prompts, **args)
    with pytest.raises(ValueError, match="prompts"):
        engine.generate([], n=1, temperature=1.0, max_new_tokens=4, seed=0)


def test_pad_token_fallback_and_chat_template(tiny_model_dir, prompts):
    """A tokenizer without a pad token pads with EOS; a tokenizer with a chat template gets it applied."""
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    tok.pad_token = None
    engine = HFEngine(model, tok)
    assert engine.tokenizer.pad_token_id == engine.tokenizer.eos_token_id
    engine.tokenizer.chat_template = "{% for m in messages %}<{{ m['content'] }}>{% endfor %}"
    ids = engine.prompt_token_ids("abc")
    assert engine.tokenizer.decode(ids) == "<abc>"
    out = engine.generate(["abc", "1,2->3:"], n=2, temperature=1.0, max_new_tokens=4, seed=0)
    assert len(out) == 2


def test_top_k_of_all_tokens_but_one_drops_the_least_likely():
    """sample_next on logits 3, 2, 1, 0 with top_k = 3 (all but one): the last token is never drawn, and a drawn
    token's log-prob is renormalized over the three kept; top_k = 4 (every token) keeps them all."""
    from escov.llm.engines.hf import sample_next

    logits = torch.tensor([[3.0, 2.0, 1.0, 0.0]]).repeat(400, 1)
    generator = torch.Generator().manual_seed(0)
    token, logp = sample_next(logits, 1.0, 1.0, generator, top_k=3)
    assert set(token.tolist()) == {0, 1, 2}
    kept = torch.logsumexp(logits[0, :3], 0)
    assert torch.allclose(logp, logits[0, token] - kept)
    token, logp = sample_next(logits, 1.0, 1.0, generator, top_k=4)
    assert 3 in token.tolist() and torch.allclose(logp, logits[0, token] - torch.logsumexp(logits[0], 0))
