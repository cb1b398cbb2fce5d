"""Drift, update magnitudes and thresholded weights against direct numpy computations."""

import numpy as np
import torch
from safetensors.torch import save_file

from escov.llm import drift


def _pair(seed=0):
    g = torch.Generator().manual_seed(seed)
    base = {
        "model.layers.0.mlp.up_proj.weight": torch.randn(8, 4, generator=g),
        "model.layers.1.input_layernorm.weight": torch.ones(4),
        "model.embed_tokens.weight": torch.randn(10, 4, generator=g),
    }
    cur = {
        n: t + 1e-3 * torch.randn(t.shape, generator=g) * (torch.rand(t.shape, generator=g) < 0.5)
        for n, t in base.items()
    }
    cur["model.layers.1.input_layernorm.weight"] = base["model.layers.1.input_layernorm.weight"] + 0.05
    return cur, base


def test_relative_drift_total_and_per_layer():
    cur, base = _pair()
    total, layers = drift.relative_drift(cur, base)
    flat = lambda d: np.concatenate([d[n].numpy().ravel() for n in d]).astype(np.float64)
    assert np.isclose(total, np.linalg.norm(flat(cur) - flat(base)) / np.linalg.norm(flat(base)), rtol=1e-6)
    n1 = "model.layers.1.input_layernorm.weight"
    assert np.isclose(
        layers["layer.1"],
        np.linalg.norm(cur[n1].numpy() - base[n1].numpy()) / np.linalg.norm(base[n1].numpy()),
        rtol=1e-6,
    )
    assert set(layers) == {"layer.0", "layer.1", "embed"}


def test_update_analysis_shares_and_kinds():
    cur, base = _pair()
    a = drift.update_analysis(cur, base, alpha=2.5e-4, top_share=5.0)
    d = np.abs(np.concatenate([(cur[n] - base[n]).numpy().ravel() for n in cur]))
    nz = d[d > 0]
    assert a["nonzero_entries"] == nz.size
    assert np.isclose(a["share_nonzero_le_tau"]["0.0015"], np.mean(nz <= 1.5e-3))
    assert a["tau_scale"] == 1.0 and np.isclose(a["share_nonzero_le_tau"]["0.0015*scaled"], np.mean(nz <= 1.5e-3))
    assert sum(a["histogram"]["counts"]) == nz.size
    assert a["kinds"]["norm"]["max_abs"] == max(k["max_abs"] for k in a["kinds"].values())  # the +0.05 entries
    assert a["largest_tensors"][0]["name"] == "model.layers.1.input_layernorm.weight"


def test_thresholded_keeps_the_largest_entries_and_reverts_the_rest():
    cur, base = _pair(1)
    kept = drift.thresholded(cur, base, 22.0)
    delta = np.concatenate([(cur[n] - base[n]).numpy().ravel() for n in cur])
    new = np.concatenate([(kept[n] - base[n]).numpy().ravel() for n in cur])
    k = int(round(delta.size * 0.22))
    largest = np.argsort(-np.abs(delta), kind="stable")[:k]
    mask = np.zeros(delta.size, bool)
    mask[largest] = True
    np.testing.assert_allclose(new[mask], delta[mask], atol=1e-7)
    assert np.all(new[~mask] == 0)


def test_saved_weights_read_lazily_and_tied_head(tmp_path):
    w = {"model.embed_tokens.weight": torch.randn(5, 3), "model.norm.weight": torch.ones(3, dtype=torch.bfloat16)}
    save_file(w, str(tmp_path / "model.safetensors"))
    saved = drift.SavedWeights(tmp_path)
    assert saved["model.norm.weight"].dtype == torch.float32
    assert torch.equal(saved["lm_head.weight"], w["model.embed_tokens.weight"])
    assert set(saved) == set(w)


def test_tau_scale_follows_alpha_alone():
    """With 1/sigma folded into alpha the ES update does not depend on sigma: tau scales by alpha / 2.5e-4."""
    cur, base = _pair()
    a = drift.update_analysis(cur, base, alpha=5e-4)
    d = np.abs(np.concatenate([(cur[n] - base[n]).numpy().ravel() for n in cur]))
    nz = d[d > 0]
    assert a["tau_scale"] == 2.0
    assert np.isclose(a["share_nonzero_le_tau"]["0.0015*scaled"], np.mean(nz <= 3e-3))
    assert np.mean(nz <= 3e-3) != np.mean(nz <= 1.5e-3)  # the two taus tell apart on this data


def test_saved_weights_as_a_bf16_engine_stores_them(tmp_path):
    import torch
    from safetensors.torch import save_file

    w = torch.tensor([1.0 + 2**-10, 3.14159, -0.1])
    save_file({"w": w}, str(tmp_path / "model.safetensors"))
    assert torch.equal(drift.SavedWeights(tmp_path)["w"], w)
    bf16 = drift.SavedWeights(tmp_path, torch.bfloat16)["w"]
    assert bf16.dtype == torch.float32 and torch.equal(bf16, w.to(torch.bfloat16).float()) and not torch.equal(bf16, w)
