"""llm/drift.py's readings by hand: each parameter's layer group and kind from its Hugging Face name, the update
analysis of a small set of tensors whose every number is written out below (the share at or below the paper's
tau, the top entries and their kinds, the mean and largest |delta| per kind), and tied output embeddings read
from the input embeddings only where the file has no output head."""

import pytest
import torch
from safetensors.torch import save_file

from escov.llm import drift
from escov.theory.paper import PAPER_ALPHA

NAMES = {
    "model.layers.3.self_attn.q_proj.weight": ("layer.3", "attention"),
    "model.layers.12.self_attn.o_proj.bias": ("layer.12", "attention"),
    "transformer.h.2.attn.c_attn.weight": ("other", "attention"),  # GPT-2's names: no "layers." block index
    "model.layers.0.mlp.gate_proj.weight": ("layer.0", "mlp"),
    "model.layers.1.input_layernorm.weight": ("layer.1", "norm"),
    "model.embed_tokens.weight": ("embed", "embed"),
    "lm_head.weight": ("lm_head", "lm_head"),
    "model.norm.weight": ("norm", "norm"),
    "model.rotary_emb.inv_freq": ("other", "other"),
}


@pytest.mark.parametrize("name, groups", NAMES.items())
def test_a_parameters_layer_group_and_kind_come_from_its_name(name, groups):
    assert (drift.layer_of(name), drift.kind_of(name)) == groups


def test_the_update_analysis_by_hand():
    """Deltas: attention q [0.5, 0, 1e-3, 2], attention k [0.01], mlp [0.25, 0.25, 0], norm [0, 0.1] (10 entries, 7
    non-zero). tau = 1e-3 (the paper's first) counts the entry equal to it; the top 50% (5 entries: 2, 0.5, 0.25,
    0.25, 0.1) have threshold 0.1, an entry equal to it counted."""
    names = ["model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.k_proj.weight"]
    names += ["model.layers.0.mlp.up_proj.weight", "model.norm.weight"]
    deltas = [[0.5, 0.0, 1e-3, 2.0], [0.01], [0.25, 0.25, 0.0], [0.0, 0.1]]
    base = {n: torch.zeros(len(d)) for n, d in zip(names, deltas)}
    current = {n: -torch.tensor(d) for n, d in zip(names, deltas)}  # float32 deltas, 1e-3 exactly as tau in float32
    a = drift.update_analysis(current, base, alpha=PAPER_ALPHA, top_share=50.0)
    assert (a["entries"], a["nonzero_entries"]) == (10, 7)
    assert a["tau_scale"] == 1.0
    assert a["share_nonzero_le_tau"]["0.001"] == pytest.approx(1 / 7)  # the entry equal to tau
    assert a["share_nonzero_le_tau"]["0.002"] == pytest.approx(1 / 7)
    assert a["share_nonzero_le_tau"]["0.001*scaled"] == pytest.approx(1 / 7)
    assert a["top_threshold"] == pytest.approx(0.1, rel=1e-6)
    kinds = a["kinds"]
    assert {k: v["top_entries"] for k, v in kinds.items()} == {"attention": 2, "mlp": 2, "norm": 1}
    shares = {k: v["share_of_top"] for k, v in kinds.items()}
    assert shares == pytest.approx({"attention": 0.4, "mlp": 0.4, "norm": 0.2})
    assert {k: v["entries"] for k, v in kinds.items()} == {"attention": 5, "mlp": 3, "norm": 2}
    assert {k: v["mean_abs"] for k, v in kinds.items()} == pytest.approx(
        {"attention": (0.5 + 1e-3 + 2.0 + 0.01) / 5, "mlp": 0.5 / 3, "norm": 0.1 / 2}, rel=1e-6
    )
    assert {k: v["max_abs"] for k, v in kinds.items()} == pytest.approx({"attention": 2.0, "mlp": 0.25, "norm": 0.1})
    assert [t["name"] for t in a["largest_tensors"]] == names[:1] + names[2:] + names[1:2]


def test_tied_output_embeddings_are_read_from_the_input_embeddings_only_when_the_head_is_absent(tmp_path):
    save_file({"model.embed_tokens.weight": torch.ones(2, 3)}, str(tmp_path / "model.safetensors"))
    tied = drift.SavedWeights(tmp_path)
    assert torch.equal(tied["lm_head.weight"], torch.ones(2, 3))
    untied = tmp_path / "untied"
    untied.mkdir()
    save_file({"model.norm.weight": torch.ones(3)}, str(untied / "model.safetensors"))
    with pytest.raises(KeyError, match="weight lm_head.weight not found in"):
        drift.SavedWeights(untied)["lm_head.weight"]
