"""How far training moved the weights, and where: drift, update magnitudes, thresholded checkpoints.

- relative drift D_rel = ||theta - theta_0|| / ||theta_0|| (fp32, over the trained parameters), and
  the same per layer (parameters grouped by transformer block: embed, layer.i, norm, lm_head).
- update magnitudes |delta| = |theta - theta_0|: histogram; the share of non-zero entries with
  |delta| <= tau (the paper's tau = 1e-3, 1.5e-3, 2e-3, and tau scaled by the run's alpha relative
  to the paper's 2.5e-4: with 1/sigma folded into alpha, an ES update alpha (1/N) sum z_i eps_i does
  not depend on sigma); which parameter kinds (embedding, attention, MLP, norm,
  head) hold the largest entries.
- magnitude-thresholded weights: keep the largest q% of the update entries, revert the rest to
  theta_0 (the paper's "about 78% sparsity" is q = 22).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open

from escov.theory.paper import PAPER_ALPHA, PAPER_TAUS

KINDS = ("embed", "attention", "mlp", "norm", "lm_head", "other")


class SavedWeights(Mapping):
    """fp32 weights of a save_pretrained directory by HF parameter name, each read from disk when asked for.

    stored_dtype: the weights as an engine of that dtype holds them (bf16 for the paper code's in-place
    ES, whose theta_0 is bf16(base)), returned in fp32.

    Holding one costs no memory; tied output embeddings (lm_head.weight absent from the file) are
    read from the input embeddings."""

    def __init__(self, model_dir: str | Path, stored_dtype: torch.dtype = torch.float32):
        self.dir, self.stored_dtype = Path(model_dir), stored_dtype
        index = self.dir / "model.safetensors.index.json"
        if index.is_file():
            self.where = {k: self.dir / f for k, f in json.loads(index.read_text())["weight_map"].items()}
        elif (self.dir / "model.safetensors").is_file():
            with safe_open(self.dir / "model.safetensors", "pt") as fh:
                self.where = {k: self.dir / "model.safetensors" for k in fh.keys()}
        else:
            raise ValueError(f"model_dir {self.dir} holds no model.safetensors (save_pretrained format expected)")

    def _key(self, name: str) -> str:
        if name in self.where:
            return name
        if name == "lm_head.weight" and "model.embed_tokens.weight" in self.where:
            return "model.embed_tokens.weight"
        raise KeyError(f"weight {name} not found in {self.dir}")

    def __getitem__(self, name: str) -> torch.Tensor:
        key = self._key(name)
        with safe_open(self.where[key], "pt") as fh:
            return fh.get_tensor(key).to(self.stored_dtype).float()

    def __iter__(self):
        return iter(self.where)

    def __len__(self) -> int:
        return len(self.where)


def layer_of(name: str) -> str:
    """Group of a parameter for per-layer drift: 'layer.i' for block i, else embed / norm / lm_head / other."""
    m = re.search(r"layers\.(\d+)\.", name)
    if m:
        return f"layer.{int(m.group(1))}"
    if "embed" in name:
        return "embed"
    if "lm_head" in name:
        return "lm_head"
    return "norm" if "norm" in name else "other"


def kind_of(name: str) -> str:
    """Kind of a parameter: embed, attention, mlp, norm (LayerNorm/RMSNorm), lm_head, other."""
    if "norm" in name:
        return "norm"
    if "embed" in name:
        return "embed"
    if "lm_head" in name:
        return "lm_head"
    if "attn" in name or "attention" in name:
        return "attention"
    return "mlp" if "mlp" in name else "other"


def relative_drift(
    current: Mapping[str, torch.Tensor], base: Mapping[str, torch.Tensor]
) -> tuple[float, dict[str, float]]:
    """D_rel over all given parameters and per layer group (fp32 sums in float64)."""
    num, den = {}, {}
    for name, theta in current.items():
        g = layer_of(name)
        theta0 = base[name].to(theta.device)  # the current weights may live on the run's GPU
        num[g] = num.get(g, 0.0) + float(((theta.float() - theta0) ** 2).sum(dtype=torch.float64))
        den[g] = den.get(g, 0.0) + float((theta0**2).sum(dtype=torch.float64))
    total = (sum(num.values()) / max(sum(den.values()), 1e-300)) ** 0.5
    return total, {g: (num[g] / max(den[g], 1e-300)) ** 0.5 for g in sorted(num)}


def _abs_deltas(current: dict[str, torch.Tensor], base: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {n: (current[n].float() - base[n]).abs().reshape(-1) for n in current}


def keep_threshold(abs_delta: torch.Tensor, keep_percent: float) -> float:
    """The |delta| value at or above which the largest keep_percent % of entries lie."""
    k = max(1, int(round(abs_delta.numel() * keep_percent / 100.0)))
    return float(torch.topk(abs_delta, k, sorted=False).values.min())


def thresholded(
    current: dict[str, torch.Tensor], base: dict[str, torch.Tensor], keep_percent: float
) -> dict[str, torch.Tensor]:
    """theta_0 + delta * [|delta| >= threshold]: the largest keep_percent % of update entries, the rest reverted."""
    deltas = {n: current[n].float() - base[n] for n in current}
    thr = keep_threshold(torch.cat([d.abs().reshape(-1) for d in deltas.values()]), keep_percent)
    return {n: base[n] + torch.where(d.abs() >= thr, d, torch.zeros_like(d)) for n, d in deltas.items()}


def update_analysis(
    current: dict[str, torch.Tensor],
    base: dict[str, torch.Tensor],
    *,
    alpha: float,
    n_bins: int = 60,
    top_share: float = 1.0,
) -> dict:
    """Histogram of |delta|, share of non-zero entries <= tau, and where the largest entries sit."""
    abs_d = _abs_deltas(current, base)
    flat = torch.cat(list(abs_d.values()))
    nonzero = flat[flat > 0]
    scale = alpha / PAPER_ALPHA
    taus = {f"{t:g}": t for t in PAPER_TAUS} | {f"{t:g}*scaled": t * scale for t in PAPER_TAUS}
    share = {k: float((nonzero <= t).float().mean()) if nonzero.numel() else 0.0 for k, t in taus.items()}
    if nonzero.numel():
        lo, hi = float(nonzero.min()), float(nonzero.max())
        edges = np.logspace(np.log10(lo), np.log10(hi) + 1e-12, n_bins + 1) if hi > lo else np.array([lo, hi + 1e-30])
        edges[0], edges[-1] = lo, max(edges[-1], hi)  # 10 ** log10(lo) may round above lo and drop the smallest entry
        counts = np.histogram(nonzero.numpy(), bins=edges)[0]
    else:
        edges, counts = np.array([0.0, 1.0]), np.array([0])
    thr = keep_threshold(flat, top_share)
    kinds = {}
    for name, d in abs_d.items():
        k = kinds.setdefault(kind_of(name), {"entries": 0, "top_entries": 0, "max_abs": 0.0, "sum_abs": 0.0})
        k["entries"] += d.numel()
        k["top_entries"] += int((d >= thr).sum())
        k["max_abs"] = max(k["max_abs"], float(d.max()) if d.numel() else 0.0)
        k["sum_abs"] += float(d.sum(dtype=torch.float64))
    n_top = max(sum(k["top_entries"] for k in kinds.values()), 1)
    for k in kinds.values():
        k["share_of_top"] = k["top_entries"] / n_top
        k["mean_abs"] = k.pop("sum_abs") / max(k["entries"], 1)
    largest = sorted(((float(d.max()), n) for n, d in abs_d.items() if d.numel()), reverse=True)[:10]
    return {
        "entries": int(flat.numel()),
        "nonzero_entries": int(nonzero.numel()),
        "max_abs": float(flat.max()) if flat.numel() else 0.0,
        "tau_scale": scale,
        "share_nonzero_le_tau": share,
        "histogram": {"edges": edges.tolist(), "counts": counts.tolist()},
        "top_share_percent": top_share,
        "top_threshold": thr,
        "kinds": kinds,
        "largest_tensors": [{"name": n, "max_abs": v} for v, n in largest],
    }


def plot_histogram(analysis: dict, path: str | Path, title: str) -> None:
    """|delta| histogram on log axes, the paper's tau values marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edges = np.asarray(analysis["histogram"]["edges"])
    counts = np.asarray(analysis["histogram"]["counts"])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    if counts.sum() == 0:  # nothing to draw on a log axis: say why in words
        ax.axis("off")
        ax.text(
            0.5,
            0.5,
            "no entry changed: theta = theta_0 (a zero update)\nnothing to histogram",
            ha="center",
            va="center",
            fontsize=11,
            transform=ax.transAxes,
        )
        ax.set_title(title, fontsize=9)
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return
    ax.stairs(counts, edges, fill=True, alpha=0.6)
    for t in PAPER_TAUS:
        ax.axvline(t, color="k", ls=":", lw=0.8)
    for t in PAPER_TAUS:
        ax.axvline(t * analysis["tau_scale"], color="r", ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("|theta - theta_0| (non-zero entries)")
    ax.set_ylabel("entries")
    ax.set_title(title + "  (dotted: paper tau; dashed: tau * alpha / paper's)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
