"""ES members in place inside vLLM's workers (llm/es/vllm_inplace.py), as far as a CPU allows.

What runs here: the HF -> vLLM name and row mapping (fused qkv_proj / gate_up_proj, the padded
vocabulary) on a random Qwen2 with q/k/v biases and GQA; the worker-extension methods themselves
(`ESWorkerExtension.es_setup/es_perturb/es_restore/es_update`) on a plain torch module laid out as
vLLM's Qwen2 model (fused and padded parameters) standing in for the worker's model: member weights
against theta + s sigma eps computed here from escov.llm.es.noise, exact restore, the update against the
closed form and bit for bit against the reload path's update (the same MasterCenter class); the
option rules and the refusal on a
machine without CUDA. What does not run here: the extension inside a real vLLM worker (vLLM's CPU
build repacks linear weights) -- that is tests/llm/test_gpu.py, marked `gpu`; the strategy's refusal of
vLLM's CPU build is tested on the suite's vLLM engine, in tests/llm/engines/test_vllm_engine.py."""

import copy
import types

import numpy as np
import pytest
import torch

from escov.llm.engines.hf import HFEngine
from escov.llm.es import ESConfig, make_es
from escov.llm.es.factory import check_options, engine_settings
from escov.llm.es.members import weight_hash
from escov.llm.es.noise import noise
from escov.llm.es.options import DistributedConfig, PopulationConfig
from escov.llm.es.plan import IterationPlan
from escov.llm.es.vllm_inplace import ESWorkerExtension, VLLMInPlace, param_slices, shares_master
from escov.llm.random_models import build_random_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")
PAD_VOCAB = 64  # vLLM pads the vocabulary of its embedding to a multiple of 64


def _vllm_layout(hf: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The parameters of vLLM's Qwen2/Llama model built from HF tensors: q/k/v and gate/up stacked, the
    vocabulary padded with zero rows."""
    out = {}
    for name, t in hf.items():
        parts = name.split(".")
        if parts[-2] in ("k_proj", "v_proj", "up_proj"):
            continue
        if parts[-2] == "q_proj":
            sib = [".".join(parts[:-2] + [p, parts[-1]]) for p in ("q_proj", "k_proj", "v_proj")]
            out[".".join(parts[:-2] + ["qkv_proj", parts[-1]])] = torch.cat([hf[s] for s in sib])
        elif parts[-2] == "gate_proj":
            sib = [".".join(parts[:-2] + [p, parts[-1]]) for p in ("gate_proj", "up_proj")]
            out[".".join(parts[:-2] + ["gate_up_proj", parts[-1]])] = torch.cat([hf[s] for s in sib])
        elif parts[-2] == "embed_tokens":
            rows = -(-t.shape[0] // PAD_VOCAB) * PAD_VOCAB
            out[name] = torch.cat([t, torch.zeros(rows - t.shape[0], *t.shape[1:], dtype=t.dtype)])
        else:
            out[name] = t.clone()
    return out


def _module(params: dict[str, torch.Tensor]) -> torch.nn.Module:
    """A torch module whose named_parameters are exactly these (dotted names become submodules)."""
    root = torch.nn.Module()
    for name, t in params.items():
        *path, leaf = name.split(".")
        mod = root
        for p in path:
            if not hasattr(mod, p):
                mod.add_module(p, torch.nn.Module())
            mod = getattr(mod, p)
        mod.register_parameter(leaf, torch.nn.Parameter(t.clone(), requires_grad=False))
    return root


class StandInWorker(ESWorkerExtension):
    """The extension as vLLM mixes it into a worker: `self.model_runner.model` is the model."""

    def __init__(self, model: torch.nn.Module):
        self.model_runner = types.SimpleNamespace(model=model)


@pytest.fixture(scope="module")
def qwen():
    model, tokenizer = build_random_model("qwen2", "tiny", seed=3)
    hf = {n: p.detach().clone() for n, p in model.named_parameters()}
    return model, tokenizer, hf


def _views(worker: StandInWorker, hf_shapes, names):
    params = dict(worker.es_model().named_parameters())
    return {
        n: params[t].data[a:b]
        for n, (t, a, b) in param_slices(hf_shapes, names, {k: tuple(p.shape) for k, p in params.items()}).items()
    }


def test_every_hf_tensor_maps_onto_its_rows_of_the_vllm_layout(qwen):
    _, _, hf = qwen
    assert any(n.endswith("q_proj.bias") for n in hf) and hf["model.embed_tokens.weight"].shape[0] % PAD_VOCAB
    layout = _vllm_layout(hf)
    shapes = {n: tuple(t.shape) for n, t in hf.items()}
    slices = param_slices(shapes, list(hf), {n: tuple(t.shape) for n, t in layout.items()})
    assert set(slices) == set(hf)
    for name, (target, a, b) in slices.items():
        assert torch.equal(layout[target][a:b], hf[name]), name
    q, k, v = (slices[f"model.layers.1.self_attn.{p}_proj.weight"] for p in "qkv")
    assert q[1:] == (0, 64) and k[1:] == (64, 96) and v[1:] == (96, 128)  # 2 heads of 32, 1 kv head of 32
    with pytest.raises(ValueError, match="has 100 rows, the HF projections"):
        param_slices(
            shapes, ["model.layers.0.mlp.up_proj.weight"], {"model.layers.0.mlp.gate_up_proj.weight": (100, 64)}
        )
    with pytest.raises(ValueError, match="no parameter 'model.norm.weight'"):
        param_slices(shapes, ["model.norm.weight"], {})


def _es(cfg, model, tokenizer, names):
    """ES on the HF engine (the reload path), on a copy of the model (its update writes the engine)."""
    engine = HFEngine(copy.deepcopy(model), tokenizer)
    master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters() if n in names}
    return make_es(cfg, engine, None, names, master, max_new_tokens=4, seed=7)


def test_worker_members_restore_and_update_match_the_closed_form_and_the_reload_path(qwen):
    model, tokenizer, hf = qwen
    names = [n for n in hf if "layers.0" in n or "embed" in n]  # a subset: siblings outside it stay put
    shapes = {n: tuple(t.shape) for n, t in hf.items()}
    cfg = ESConfig(population_size=4, sigma=0.05, alpha=0.02, noise_chunk=50)
    worker = StandInWorker(_module(_vllm_layout(hf)))
    before = {n: p.detach().clone() for n, p in worker.es_model().named_parameters()}
    center = {n: hf[n].clone() for n in names}  # the worker's own master, as a worker in another process has
    worker.es_setup(center, shapes, 0, cfg.noise_chunk)
    assert worker.es_hash() == weight_hash(center)
    views = _views(worker, shapes, names)
    plan = IterationPlan.derive(7, 2, sigma=cfg.sigma, population_size=4, antithetic=False)
    for m in (0, 3):
        worker.es_perturb(plan, plan.members[m])
        for n in names:
            eps = noise(plan.noise_seed, m, n, hf[n].shape, chunk=50)
            assert eps.std() > 0.5
            assert torch.allclose(views[n], hf[n] + cfg.sigma * eps, atol=1e-6), n
        worker.es_restore(plan, plan.members[m])
        assert all(torch.equal(views[n], hf[n]) for n in names)  # exact restore from the fp32 master
    after = dict(worker.es_model().named_parameters())
    assert all(torch.equal(after[n].data, before[n]) for n in before)  # padding rows and siblings untouched

    z = np.array([1.2, -0.4, 0.0, -0.8])
    update = plan.update(z, cfg.alpha)
    worker_hash = worker.es_update(update)
    reference = _es(cfg, model, tokenizer, names)  # the reload path's update on the same center
    reference.center.apply(update)
    master = reference.center.master
    assert worker_hash == weight_hash(master)
    for n in names:
        assert torch.equal(worker.es_center.master[n], master[n]) and torch.equal(views[n], master[n])
        closed = hf[n] + cfg.alpha / 4 * sum(
            z[m] * noise(plan.noise_seed, m, n, hf[n].shape, chunk=50) for m in range(4)
        )
        assert torch.allclose(worker.es_center.master[n], closed, atol=1e-6)
        assert not torch.equal(worker.es_center.master[n], hf[n])


def test_a_shared_master_is_detected_and_loaded_after_the_drivers_update(qwen):
    model, tokenizer, hf = qwen
    names = [n for n in hf if "layers.1.mlp" in n]
    shapes = {n: tuple(t.shape) for n, t in hf.items()}
    cfg = ESConfig(population_size=2, sigma=0.05, alpha=0.05)
    driver = _es(cfg, model, tokenizer, names).center  # its master: fp32 on the worker's device, so handed over as is
    worker = StandInWorker(_module(_vllm_layout(hf)))
    setup = worker.es_setup(driver.master, shapes)
    assert shares_master(driver.master, [setup])
    assert not shares_master({n: t.clone() for n, t in driver.master.items()}, [setup])
    assert not shares_master(driver.master, [setup | {"pid": -1}])  # another process
    views = _views(worker, shapes, names)
    plan = IterationPlan.derive(7, 0, sigma=cfg.sigma, population_size=2, antithetic=False)
    driver.apply(plan.update(np.array([1.0, -1.0]), cfg.alpha))
    assert any(not torch.equal(views[n], driver.master[n]) for n in names)  # not loaded yet
    worker.es_load_master()
    assert all(torch.equal(views[n], driver.master[n]) for n in names)
    assert all(worker.es_center.master[n] is driver.master[n] for n in names)


def test_a_worker_that_diverged_from_the_driver_is_an_error(qwen):
    _, _, hf = qwen
    master = {"model.norm.weight": hf["model.norm.weight"]}
    VLLMInPlace.check(3, master, [weight_hash(master)])
    with pytest.raises(RuntimeError, match="step 3: the vLLM workers' master weights differ"):
        VLLMInPlace.check(3, master, [weight_hash({"model.norm.weight": master["model.norm.weight"] + 1e-3})])


@pytest.mark.parametrize(
    "over, engine, dist, match",
    [
        ({}, "hf", None, "needs engine = 'vllm', got 'hf'"),
        ({"batched": True}, "vllm", None, "turn population.batched off"),
        ({}, "vllm", DistributedConfig(workers=2), "does not combine with Ray workers"),
        ({"inplace_bf16": True}, "vllm", None, "es.inplace_bf16"),
        ({"members": "inplace"}, "vllm", None, "population.members must be one of"),
    ],
)
def test_the_validator_names_what_does_not_go_with_vllm_inplace(over, engine, dist, match):
    es_over = {k: v for k, v in over.items() if k == "inplace_bf16"}
    pop = PopulationConfig(**({"members": "vllm_inplace"} | {k: v for k, v in over.items() if k != "inplace_bf16"}))
    with pytest.raises(ValueError, match=match):
        check_options(ESConfig(population_size=4, **es_over), pop, engine, dist)
    check_options(ESConfig(population_size=4), PopulationConfig(members="vllm_inplace"), "vllm")


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal of a machine without CUDA")
def test_vllm_inplace_is_refused_on_a_machine_without_cuda_before_any_work(tiny_model_dir, tmp_path, capsys):
    from escov.llm.cli import main

    with pytest.raises(ValueError, match="needs vLLM on a CUDA GPU"):
        engine_settings(ESConfig(population_size=4), PopulationConfig(members="vllm_inplace"), None)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:  # in this process: refused before an engine starts or a file is written
        main(
            [
                "train",
                "--algo",
                "es",
                "--engine",
                "vllm",
                "--model",
                str(tiny_model_dir),
                "--out",
                str(out),
                "--population.members",
                "vllm_inplace",
                "--es.population_size",
                "4",
            ]
        )
    assert exit_.value.code == 2 and "needs vLLM on a CUDA GPU" in capsys.readouterr().err
    assert not out.exists()
