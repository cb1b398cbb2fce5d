"""ES members perturbed in place inside vLLM's workers (`VLLMInPlace`): no weight reload per member.

The paper's code and es-at-scale evaluate a population on vLLM by editing the engine's weights in place
through a worker extension; this is that path as one member-evaluation strategy of llm/es/algorithm.py:

    driver (ES with VLLMInPlace)                      vLLM worker (ESWorkerExtension mixed in)
      setup: the fp32 master of the perturbed names ->  views into vLLM's (fused, padded) parameters for
                                                        every HF name; the master kept as given
      member m: (iteration seed, m) --------------->   view <- master + s sigma E_d  (E_d regenerated here
                                                        from (seed, d, name): llm/es/noise.py, per tensor)
              generate the batch (one vLLM call)
              (iteration seed, m) ------------------>   view <- master (exact restore)
      update (ES.apply_update on the master), then
        shared master: ---------------------------->   views <- master
        own master: (iteration seed, c) ----------->   master <- master + alpha/N sum_d c_d E_d (ES.apply_update's
              <--- SHA-256 of the worker's master        code and order), views <- master; the hash must equal
                                                        the driver's, every iteration

vLLMEngine runs its engine core in this process, so `collective_rpc` hands the worker the driver's
master tensors themselves: the master is shared (one fp32 copy on the GPU, no update to redo). Setup
tells which it is (the tensors' addresses); a worker in another process keeps the copy it received
and redoes each update from the seeds. Only seeds and coefficients cross, never weights (after setup). vLLM fuses q/k/v into qkv_proj and
gate/up into gate_up_proj and pads the vocabulary: `param_slices` maps every HF name to its rows of
the vLLM parameter. The engine runs with prefix caching off (keys/values computed under one member
must never serve another). Tensor parallelism is not supported (each rank would hold a shard).

The worker methods are plain functions of a model (`es_setup` ... `es_hash` on `ESWorkerExtension`,
which reads `self.model_runner.model` as vLLM's GPU worker holds it), so they run, and are tested, on a
torch module standing in for the worker's model. On vLLM's CPU build this path cannot work: linear
weights are repacked into kernel formats and the originals dropped, so an in-place edit never reaches
generation; there the strategy refuses to start, and ES keeps the reload path (members.py, OneByOne).

With `inplace_bf16` the worker reproduces the paper's code instead: add sigma E_d to its bf16 weights,
evaluate, subtract it again (leaving the rounding residue), no fp32 master.
"""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import numpy as np
import torch

from llm.es.members import MemberEvaluator, weight_hash
from llm.es.noise import NOISE_CHUNK, PopulationNoise, iteration_seeds, member_direction
from llm.rollout import rollout
from llm.tasks.base import Problem

if TYPE_CHECKING:
    from llm.es.algorithm import ES

WORKER_EXTENSION = "llm.es.vllm_inplace.ESWorkerExtension"  # LLM(worker_extension_cls=...)
ENGINE_KWARGS = {"worker_extension_cls": WORKER_EXTENSION, "enable_prefix_caching": False}
# HF projection -> (vLLM's fused parameter, the projections it stacks along its rows, in order)
FUSED = {proj: (fused, order) for fused, order in (("qkv_proj", ("q_proj", "k_proj", "v_proj")),
                                                   ("gate_up_proj", ("gate_proj", "up_proj")))
         for proj in order}


def param_slices(hf_shapes: dict[str, tuple[int, ...]], names: list[str],
                 vllm_shapes: dict[str, tuple[int, ...]]) -> dict[str, tuple[str, int, int]]:
    """HF name -> (vLLM parameter name, first row, end row) for every name: fused projections take their
    rows in the fused order; other tensors the first rows of the same name (vLLM pads the vocabulary).
    hf_shapes: every tensor of the HF checkpoint (the sizes of unperturbed siblings are needed too)."""
    out = {}
    for name in names:
        parts = name.split(".")
        shape = tuple(hf_shapes[name])
        proj = parts[-2] if len(parts) >= 2 else ""
        if proj in FUSED and name not in vllm_shapes:
            fused, order = FUSED[proj]
            siblings = [".".join(parts[:-2] + [o, parts[-1]]) for o in order]
            target = ".".join(parts[:-2] + [fused, parts[-1]])
            missing = [s for s in siblings if s not in hf_shapes]
            if missing or target not in vllm_shapes:
                raise ValueError(f"vLLM in-place ES: cannot map {name} onto vLLM's {target} "
                                 f"(missing: {missing or [target]})")
            start = sum(hf_shapes[s][0] for s in siblings[:order.index(proj)])
            total = sum(hf_shapes[s][0] for s in siblings)
            if vllm_shapes[target][0] != total:
                raise ValueError(f"vLLM in-place ES: {target} has {vllm_shapes[target][0]} rows, the HF projections "
                                 f"{order} {total} (tensor parallelism, or another fusion layout)")
        else:
            target, start = name, 0
            if target not in vllm_shapes:
                raise ValueError(f"vLLM in-place ES: the vLLM model has no parameter {name!r} (nor a fused one)")
            if vllm_shapes[target][0] < shape[0]:
                raise ValueError(f"vLLM in-place ES: {target} has {vllm_shapes[target][0]} rows, HF's {name} {shape[0]}")
        if tuple(vllm_shapes[target][1:]) != shape[1:]:
            raise ValueError(f"vLLM in-place ES: {target} has shape {tuple(vllm_shapes[target])}, HF's {name} {shape}")
        out[name] = (target, start, start + shape[0])
    return out


class ESWorkerExtension:
    """Methods added to vLLM's worker (called through `LLM.collective_rpc`): the member perturbation,
    restore and update, with the noise regenerated in the worker on the model's device."""

    def es_model(self) -> torch.nn.Module:
        return self.model_runner.model

    def es_setup(self, center: dict[str, torch.Tensor], hf_shapes: dict[str, tuple[int, ...]], sigma: float,
                 antithetic: bool, rank: int = 0, chunk: int = NOISE_CHUNK,
                 inplace_bf16: bool = False) -> dict:
        """Views of the perturbed HF names into the model, the master written into them: center itself when
        it is fp32 on the model's device (not copied), else an fp32 copy; none with inplace_bf16 (the
        views are the center). Returns this process's id and the master's tensor addresses (the driver's
        own when shared)."""
        model = self.es_model()
        params = dict(model.named_parameters())
        slices = param_slices(hf_shapes, list(center), {n: tuple(p.shape) for n, p in params.items()})
        self.es_views = {n: params[target].data[a:b] for n, (target, a, b) in slices.items()}
        device = next(iter(self.es_views.values())).device
        self.es_noise = PopulationNoise(sigma, antithetic, rank, chunk, device=device)
        self.es_inplace_bf16 = inplace_bf16
        self.es_master = None if inplace_bf16 else {n: t.to(device, torch.float32) for n, t in center.items()}
        with torch.no_grad():
            for n, view in self.es_views.items():
                view.copy_(center[n])
        return {"pid": os.getpid(), "addresses": {} if inplace_bf16 else {n: t.data_ptr() for n, t in self.es_master.items()}}

    def es_load_master(self) -> None:
        """views <- master (after the driver updated a shared master)."""
        with torch.no_grad():
            for n, view in self.es_views.items():
                view.copy_(self.es_master[n])

    def es_perturb(self, it_seed: int, member: int) -> None:
        """Weights of member m: view <- master + s sigma E_d (inplace_bf16: view += s sigma E_d in bf16)."""
        d, sign = member_direction(member, self.es_noise.antithetic)
        sigma = self.es_noise.sigma
        with torch.no_grad():
            for n, view in self.es_views.items():
                eps = self.es_noise.direction(it_seed, d, n, view.shape)
                if self.es_inplace_bf16:
                    view.add_(eps.to(view.dtype), alpha=sign * sigma)
                else:
                    view.copy_(self.es_master[n] + (sign * sigma) * eps)

    def es_restore(self, it_seed: int, member: int) -> None:
        """The center again: copied from the master (exact), or the same s sigma E_d subtracted (inplace_bf16)."""
        with torch.no_grad():
            if not self.es_inplace_bf16:
                for n, view in self.es_views.items():
                    view.copy_(self.es_master[n])
                return
            d, sign = member_direction(member, self.es_noise.antithetic)
            for n, view in self.es_views.items():
                view.add_(self.es_noise.direction(it_seed, d, n, view.shape).to(view.dtype), alpha=-sign * self.es_noise.sigma)

    def es_update(self, it_seed: int, coef: list[float], scale: float) -> str:
        """master <- master + scale * sum_d c_d E_d (scale = alpha / N; ES.apply_update's arithmetic, so the
        same result bit for bit on the same kind of device), written into the views; returns the hash.
        inplace_bf16: each c_d E_d added to the bf16 weights in turn, as the paper's code does."""
        coef = np.asarray(coef, dtype=np.float64)
        with torch.no_grad():
            for n, view in self.es_views.items():
                if self.es_inplace_bf16:
                    for d, c in enumerate(coef):
                        if c != 0.0:
                            view.add_(self.es_noise.direction(it_seed, d, n, view.shape).to(view.dtype), alpha=scale * c)
                    continue
                theta = self.es_master[n]
                theta.copy_(theta + scale * self.es_noise.combined(it_seed, n, theta.shape, coef))
                view.copy_(theta)
        return self.es_hash()

    def es_hash(self) -> str:
        return weight_hash(self.es_views if self.es_inplace_bf16 else self.es_master)


def check_inplace_engine(engine) -> None:
    """ValueError unless the engine is a VLLMEngine on CUDA made with ENGINE_KWARGS and one tensor-parallel rank."""
    from llm.engines.vllm_engine import VLLMEngine

    if not isinstance(engine, VLLMEngine):
        raise ValueError("population.members vllm_inplace needs engine = 'vllm'")
    if engine.cpu:
        raise ValueError("population.members vllm_inplace needs vLLM on a CUDA GPU: vLLM's CPU build repacks linear "
                         "weights into kernel formats and drops the originals, so in-place edits never reach "
                         "generation; on a CPU leave population.members at 'auto' (members written by reload)")
    vcfg = engine.llm.llm_engine.vllm_config
    if vcfg.parallel_config.tensor_parallel_size != 1:
        raise ValueError("population.members vllm_inplace supports tensor_parallel_size 1 only")
    if vcfg.cache_config.enable_prefix_caching:
        raise ValueError("population.members vllm_inplace needs the engine made with enable_prefix_caching=False "
                         "(llm.es.vllm_inplace.ENGINE_KWARGS)")


def shares_master(master: dict[str, torch.Tensor], setups: list[dict]) -> bool:
    """Whether every worker (its es_setup answer) holds the driver's master tensors themselves: in this
    process, at the same addresses, rather than copies."""
    own = {n: t.data_ptr() for n, t in master.items()}
    return all(s["pid"] == os.getpid() and s["addresses"] == own for s in setups)


class VLLMInPlace(MemberEvaluator):
    """Member evaluation inside vLLM's workers: perturb, generate, restore, member by member; after the
    update the workers load the shared master, or redo the update from the seeds and are checked by hash."""

    def __init__(self, es_cfg, engine, master: dict[str, torch.Tensor], rank: int = 0):
        """master: the driver's fp32 center of the perturbed names; rank: population.noise_rank."""
        check_inplace_engine(engine)
        self.engine = engine
        shapes = {n: tuple(t.shape) for n, t in engine.weights.items()}
        setups = engine.llm.collective_rpc("es_setup", args=(master, shapes, es_cfg.sigma, es_cfg.antithetic, rank,
                                                             es_cfg.noise_chunk, False))
        self.shared = shares_master(master, setups)
        if not self.shared:
            self.check(-1, master, engine.llm.collective_rpc("es_hash"))
        engine.track_center(master)

    @staticmethod
    def check(step: int, master: dict[str, torch.Tensor], hashes: list[str]) -> None:
        expected = weight_hash(master)
        if any(h != expected for h in hashes):
            raise RuntimeError(f"step {step}: the vLLM workers' master weights differ from the driver's "
                               f"(hash {expected[:12]}); the in-place update is no longer the driver's")

    def rewards(self, es: ES, it_seed: int, gen_seed: int, problems: list[Problem], members: list[int],
                step: int) -> tuple[np.ndarray, int, float]:
        kw = dict(n=es.cfg.member_samples, temperature=es.cfg.member_temperature,
                  max_new_tokens=es.max_new_tokens, seed=gen_seed, step=step)
        rewards, tokens, weight_s = np.zeros(len(members)), 0, 0.0
        for i, m in enumerate(members):
            tw = time.perf_counter()
            self.engine.llm.collective_rpc("es_perturb", args=(it_seed, m))
            weight_s += time.perf_counter() - tw
            out = rollout(es.engine, es.task, problems, **kw)
            rewards[i], tokens = out.rewards.mean(), tokens + out.n_tokens
            tw = time.perf_counter()
            self.engine.llm.collective_rpc("es_restore", args=(it_seed, m))
            weight_s += time.perf_counter() - tw
        return rewards, tokens, weight_s

    def load_center(self, es: ES) -> None:
        """Nothing to reload: the workers apply the update themselves (after_update)."""

    def after_update(self, es: ES, step: int, z: np.ndarray) -> None:
        from llm.es.algorithm import direction_coefficients

        if self.shared:
            self.engine.llm.collective_rpc("es_load_master")
        else:
            coef = direction_coefficients(z, es.cfg.antithetic)
            hashes = self.engine.llm.collective_rpc("es_update", args=(iteration_seeds(es.seed, step)[0], coef.tolist(),
                                                                       es.cfg.alpha / len(z)))
            self.check(step, es.master, hashes)
        self.engine.track_center(es.master)
