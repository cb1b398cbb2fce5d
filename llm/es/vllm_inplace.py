"""ES members perturbed in place inside vLLM's workers (`VLLMInPlace`): no weight reload per member.

The paper's code and es-at-scale evaluate a population on vLLM by editing the engine's weights in place
through a worker extension; this is that path as one member-evaluation strategy of llm/es/algorithm.py:

    driver (ES with VLLMInPlace)                      vLLM worker (ESWorkerExtension mixed in)
      setup: the fp32 master of the perturbed names ->  views into vLLM's (fused, padded) parameters for
                                                        every HF name; the master kept as given
      member: (the plan, the member) -------------->   view <- master + s sigma E_d  (E_d regenerated here
                                                        from (seed, d, name): llm/es/noise.py, per tensor)
              generate the batch (one vLLM call, the member's own rollout seed)
              (the plan, the member) --------------->   view <- master (exact restore)
      update (MasterCenter.apply on the master), then
        shared master: ---------------------------->   views <- master
        own master: the Update (seed, c_d) -------->   master <- master + alpha/N sum_d c_d E_d (MasterCenter.apply,
              <--- SHA-256 of the worker's master        the driver's code), views <- master; the hash must equal
                                                        the driver's, every iteration

vLLMEngine runs its engine core in this process, so `collective_rpc` hands the worker the driver's
master tensors themselves: the master is shared (one fp32 copy on the GPU, no update to redo). Setup
tells which it is (the tensors' addresses); a worker in another process keeps the copy it received
and redoes each update from the seeds. Only seeds and coefficients cross, never weights (after setup).
vLLM fuses q/k/v into qkv_proj and gate/up into gate_up_proj and pads the vocabulary: `param_slices`
maps every HF name to its rows of the vLLM parameter. The engine runs with prefix caching off
(keys/values computed under one member must never serve another). Tensor parallelism is not supported
(each rank would hold a shard).

The worker methods are plain functions of a model (`es_setup` ... `es_hash` on `ESWorkerExtension`,
which reads `self.model_runner.model` as vLLM's GPU worker holds it), so they run, and are tested, on a
torch module standing in for the worker's model. On vLLM's CPU build this path cannot work: linear
weights are repacked into kernel formats and the originals dropped, so an in-place edit never reaches
generation; there the strategy refuses to start, and ES keeps the reload path (members.py, OneByOne).

The paper's bf16 in-place arithmetic (es.inplace_bf16) runs on the HF engine only (center.py, InPlaceBF16).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import numpy as np
import torch

from escov.llm.es.center import MasterCenter
from escov.llm.es.members import MemberEvaluator, Sampling, weight_hash
from escov.llm.es.noise import NOISE_CHUNK, PopulationNoise
from escov.llm.es.plan import IterationPlan, Member, Update
from escov.llm.rollout import rollout
from escov.llm.tasks.base import Problem, Task

if TYPE_CHECKING:
    from escov.llm.engines.vllm_engine import VLLMEngine

WORKER_EXTENSION = "escov.llm.es.vllm_inplace.ESWorkerExtension"  # LLM(worker_extension_cls=...)
ENGINE_KWARGS = {"worker_extension_cls": WORKER_EXTENSION, "enable_prefix_caching": False}
# HF projection -> (vLLM's fused parameter, the projections it stacks along its rows, in order)
FUSED = {
    proj: (fused, order)
    for fused, order in (("qkv_proj", ("q_proj", "k_proj", "v_proj")), ("gate_up_proj", ("gate_proj", "up_proj")))
    for proj in order
}


def param_slices(
    hf_shapes: dict[str, tuple[int, ...]], names: list[str], vllm_shapes: dict[str, tuple[int, ...]]
) -> dict[str, tuple[str, int, int]]:
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
                raise ValueError(
                    f"vLLM in-place ES: cannot map {name} onto vLLM's {target} (missing: {missing or [target]})"
                )
            start = sum(hf_shapes[s][0] for s in siblings[: order.index(proj)])
            total = sum(hf_shapes[s][0] for s in siblings)
            if vllm_shapes[target][0] != total:
                raise ValueError(
                    f"vLLM in-place ES: {target} has {vllm_shapes[target][0]} rows, the HF projections "
                    f"{order} {total} (tensor parallelism, or another fusion layout)"
                )
        else:
            target, start = name, 0
            if target not in vllm_shapes:
                raise ValueError(f"vLLM in-place ES: the vLLM model has no parameter {name!r} (nor a fused one)")
            if vllm_shapes[target][0] < shape[0]:
                raise ValueError(
                    f"vLLM in-place ES: {target} has {vllm_shapes[target][0]} rows, HF's {name} {shape[0]}"
                )
        if tuple(vllm_shapes[target][1:]) != shape[1:]:
            raise ValueError(f"vLLM in-place ES: {target} has shape {tuple(vllm_shapes[target])}, HF's {name} {shape}")
        out[name] = (target, start, start + shape[0])
    return out


class ESWorkerExtension:
    """Methods added to vLLM's worker (called through `LLM.collective_rpc`): the member perturbation,
    restore and update, with the noise regenerated in the worker on the model's device."""

    def es_model(self) -> torch.nn.Module:
        return self.model_runner.model

    def es_setup(
        self,
        center: dict[str, torch.Tensor],
        hf_shapes: dict[str, tuple[int, ...]],
        rank: int = 0,
        chunk: int = NOISE_CHUNK,
    ) -> dict:
        """Views of the perturbed HF names into the model, the master written into them: center itself when
        it is fp32 on the model's device (not copied), else an fp32 copy. The worker's center
        (llm/es/center.py's MasterCenter) writes into the views. Returns this process's id and the
        master's tensor addresses (the driver's own when shared)."""
        model = self.es_model()
        params = dict(model.named_parameters())
        slices = param_slices(hf_shapes, list(center), {n: tuple(p.shape) for n, p in params.items()})
        self.es_views = {n: params[target].data[a:b] for n, (target, a, b) in slices.items()}
        device = next(iter(self.es_views.values())).device
        master = {n: t.to(device, torch.float32) for n, t in center.items()}
        self.es_center = MasterCenter(master, PopulationNoise(rank, chunk, device=device), self.es_write)
        self.es_center.load_center()
        return {"pid": os.getpid(), "addresses": {n: t.data_ptr() for n, t in master.items()}}

    def es_write(self, named_tensors) -> None:
        """views <- the given tensors (the center's `load`)."""
        with torch.no_grad():
            for n, t in named_tensors:
                self.es_views[n].copy_(t)

    def es_load_master(self) -> None:
        """views <- master (after the driver updated a shared master)."""
        self.es_center.load_center()

    def es_perturb(self, plan: IterationPlan, member: Member) -> None:
        """Weights of the member: views <- master + s sigma E_d."""
        self.es_center.perturb(plan, member)

    def es_restore(self, plan: IterationPlan, member: Member) -> None:
        """The center again: views <- master (exact)."""
        self.es_center.restore(plan, member)

    def es_update(self, update: Update) -> str:
        """master <- master + (alpha / N) sum_d c_d E_d (MasterCenter.apply, the driver's code, so the same
        result bit for bit on the same kind of device), written into the views; returns the hash."""
        self.es_center.apply(update)
        return self.es_hash()

    def es_hash(self) -> str:
        return weight_hash(self.es_center.master)


def check_inplace_engine(engine) -> None:
    """ValueError unless the engine is a VLLMEngine on CUDA made with ENGINE_KWARGS and one tensor-parallel rank."""
    from escov.llm.engines.vllm_engine import VLLMEngine

    if not isinstance(engine, VLLMEngine):
        raise ValueError("population.members vllm_inplace needs engine = 'vllm'")
    if engine.cpu:
        raise ValueError(
            "population.members vllm_inplace needs vLLM on a CUDA GPU: vLLM's CPU build repacks linear "
            "weights into kernel formats and drops the originals, so in-place edits never reach "
            "generation; on a CPU leave population.members at 'auto' (members written by reload)"
        )
    vcfg = engine.llm.llm_engine.vllm_config
    if vcfg.parallel_config.tensor_parallel_size != 1:
        raise ValueError("population.members vllm_inplace supports tensor_parallel_size 1 only")
    if vcfg.cache_config.enable_prefix_caching:
        raise ValueError(
            "population.members vllm_inplace needs the engine made with enable_prefix_caching=False "
            "(llm.es.vllm_inplace.ENGINE_KWARGS)"
        )


def shares_master(master: dict[str, torch.Tensor], setups: list[dict]) -> bool:
    """Whether every worker (its es_setup answer) holds the driver's master tensors themselves: in this
    process, at the same addresses, rather than copies."""
    own = {n: t.data_ptr() for n, t in master.items()}
    return all(s["pid"] == os.getpid() and s["addresses"] == own for s in setups)


class VLLMInPlace(MemberEvaluator):
    """Member evaluation inside vLLM's workers: perturb, generate, restore, member by member; after the
    update the workers load the shared master, or redo the update and are checked by hash.

    ES's own center (`center`) is the driver's fp32 master with no model to write (load None): the
    workers write their views themselves."""

    def __init__(self, engine: VLLMEngine, task: Task, sampling: Sampling, center: MasterCenter):
        check_inplace_engine(engine)
        self.engine, self.task, self.sampling, self.center = engine, task, sampling, center
        master = center.master
        shapes = {n: tuple(t.shape) for n, t in engine.weights.items()}
        setups = engine.llm.collective_rpc("es_setup", args=(master, shapes, center.noise.rank, center.noise.chunk))
        self.shared = shares_master(master, setups)
        if not self.shared:
            self.check(-1, master, engine.llm.collective_rpc("es_hash"))
        engine.track_center(master)

    @staticmethod
    def check(step: int, master: dict[str, torch.Tensor], hashes: list[str]) -> None:
        expected = weight_hash(master)
        if any(h != expected for h in hashes):
            raise RuntimeError(
                f"step {step}: the vLLM workers' master weights differ from the driver's "
                f"(hash {expected[:12]}); the in-place update is no longer the driver's"
            )

    def rewards(self, plan: IterationPlan, problems: list[Problem]) -> tuple[np.ndarray, int, float]:
        s = self.sampling
        rewards, tokens, weight_s = np.zeros(len(plan.members)), 0, 0.0
        for i, member in enumerate(plan.members):
            tw = time.perf_counter()
            self.engine.llm.collective_rpc("es_perturb", args=(plan, member))
            weight_s += time.perf_counter() - tw
            out = rollout(
                self.engine,
                self.task,
                problems,
                n=s.n,
                temperature=s.temperature,
                max_new_tokens=s.max_new_tokens,
                seed=member.rollout_seed,
                step=plan.step,
            )
            rewards[i], tokens = out.rewards.mean(), tokens + out.n_tokens
            tw = time.perf_counter()
            self.engine.llm.collective_rpc("es_restore", args=(plan, member))
            weight_s += time.perf_counter() - tw
        return rewards, tokens, weight_s

    def after_update(self, update: Update) -> None:
        if self.shared:
            self.engine.llm.collective_rpc("es_load_master")
        else:
            self.check(update.step, self.center.master, self.engine.llm.collective_rpc("es_update", args=(update,)))
        self.engine.track_center(self.center.master)
