"""ES members evaluated on Ray (`RayActors`): the population spread over K actors, each with its own replica.

    driver (ES with RayActors, itself a replica)      K actors (ESWorker, one replica each)
      (step, sigma, its members, the batch) ------->   the plan rebuilt with IterationPlan.derive (the same
                                                       rule, the run's seed); the batch as positions in the
                                                       train pool; rewards of its members
              <--- scalar rewards, token counts
      z = standardize(rewards); update own replica
              the Update (seed, c_d, alpha, N) ----->   the same update (center.py, the same code)
              <--- SHA-256 of the replica's weights     must equal the driver's, every iteration

Weights and the train pool cross once, when the actors start from the driver's center; afterwards only
seeds, positions, coefficients and scalars do: the driver checks that its plan is the one the actors rebuild
(the run's seed, sigma, N, antithetic pairs), and a problem that is not in the pool is sent whole. The
bytes crossing to and from each actor are counted per iteration (traffic.py; `traffic()`). On GPUs each
actor reserves one (distributed.gpus_per_worker; Ray sets its CUDA_VISIBLE_DEVICES) and keeps its engine,
master and noise on it: one engine per GPU. The driver must then compute on CUDA too, since the hash check
needs the same arithmetic on every replica. The update is the same code on every replica
(`MasterCenter.apply`), so the replicas stay bit-identical, and the run equals the single-process run with
the same seed. Members are dealt in contiguous blocks of N / K. A dead actor (a call raising RayActorError,
or not answering within actor_timeout_s) is dropped and its members re-run on a live actor in the same
iteration, never silently lost (`RayActors.reruns` records it); with no actor left the step fails, naming
each actor's cause of death (`RayActors.deaths`: the error Ray raised, which carries a failed constructor's
traceback).
"""

from __future__ import annotations

import sys
from typing import Callable

import numpy as np
import torch

from escov.llm.es.center import MasterCenter
from escov.llm.es.members import MemberEvaluator, Sampling, weight_hash
from escov.llm.es.options import DistributedConfig, check_ray, token_auth_as_ray_start
from escov.llm.es.plan import IterationPlan, Update
from escov.llm.es.traffic import Traffic, serialized_bytes
from escov.llm.tasks.base import Problem, Task

Planner = Callable[..., IterationPlan]  # planner(step, sigma=...): IterationPlan.derive with the run's seed, N, pairs


class ESWorker:
    """One replica (run as a Ray actor): its own HF engine on its device ("cpu", or "cuda": the GPU Ray gave
    it), started from the driver's weights (start["weights"]); `local` builds its in-process member evaluation
    and center (factory.py: one by one or batched, as the driver's options ask); `planner` rebuilds an
    iteration's plan; start["pool"]: the problems a batch names by position."""

    def __init__(
        self,
        model_dir: str,
        task: Task,
        names: list[str],
        sampling: Sampling,
        local,
        planner: Planner,
        start: dict,
        threads: int,
        device: str = "cpu",
    ):
        from escov.llm.engines.hf import HFEngine

        torch.set_num_threads(threads)
        weights = start["weights"]
        engine = HFEngine(model_dir, device=device)
        engine.load_weights(weights.items())
        master = {n: weights[n].to(device, torch.float32, copy=True) for n in names}
        self.center, self.members = local(engine, task, sampling, master, device)
        self.planner, self.pool = planner, start["pool"]

    def rewards(self, step: int, sigma: float, block: list[int], batch: list) -> tuple[list[float], int]:
        """The fitness of the members at these population indices on the batch (pool positions or problems)."""
        plan = self.planner(step, sigma=sigma).subset(block)
        problems = [self.pool[p] if isinstance(p, int) else p for p in batch]
        rewards, tokens, _ = self.members.rewards(plan, problems)
        return rewards.tolist(), tokens

    def update(self, update: Update) -> str:
        self.center.apply(update)
        return weight_hash(self.center.master)

    def weight_hash(self) -> str:
        return weight_hash(self.center.master)


class RayActors(MemberEvaluator):
    """Member evaluation on K Ray actors; the driver's ES keeps the center replica and applies the update."""

    def __init__(
        self,
        task: Task,
        sampling: Sampling,
        center: MasterCenter,
        local,
        *,
        model_dir: str,
        weights: dict[str, torch.Tensor],
        distributed: DistributedConfig,
        planner: Planner,
        pool: list[Problem] | None = None,
    ):
        """weights: the full center the actors start from (center: the driver's fp32 perturbed parameters);
        local(engine, task, sampling, master, device) -> (center, members): each actor's own evaluation;
        planner: ES's rule for an iteration's plan; pool: the problems the batches are drawn from (sent once)."""
        self.dist, self.center, self.planner = distributed, center, planner
        self.pool = list(pool or [])
        self.position = {id(p): i for i, p in enumerate(self.pool)}  # the pool's objects, alive as long as self.pool
        self.traffic_count = Traffic()
        master, names = center.master, center.names
        ray = check_ray(distributed)
        weights = {n: t.cpu() for n, t in (weights | {n: master[n] for n in names}).items()}  # crosses to the actors
        if not ray.is_initialized():
            if self.dist.address:
                token_auth_as_ray_start()
                ray.init(address=self.dist.address, log_to_driver=False)
            else:
                ray.init(
                    num_cpus=max(1, int(np.ceil(self.dist.workers * self.dist.cpus_per_worker))),
                    include_dashboard=False,
                    log_to_driver=False,
                    object_store_memory=200 * 1024**2,
                )
        self.ray = ray
        self._check_resources()
        actor = ray.remote(num_cpus=self.dist.cpus_per_worker, num_gpus=self.dist.gpus_per_worker, max_restarts=0)(
            ESWorker
        )
        start = {"weights": weights, "pool": self.pool}
        shared = ray.put(start)
        device = "cuda" if self.dist.gpus_per_worker > 0 else "cpu"
        args = (str(model_dir), task, names, sampling, local, planner, start, self.dist.threads_per_worker, device)
        setup_bytes = serialized_bytes(args)  # what each actor receives: start pulled from the object store
        self.actors = [actor.remote(*args[:6], shared, *args[7:]) for _ in range(self.dist.workers)]
        for w in range(self.dist.workers):
            self.traffic_count.sent(w, setup_bytes)
        self.alive = list(range(self.dist.workers))
        self.reruns: list[dict] = []  # {"step", "worker", "members", "rerun_on"} for every re-run block
        self.deaths: dict[int, str] = {}  # worker -> why it was dropped (the error Ray raised, or the timeout)
        self._check_replicas(-1, {w: self._call(w, "weight_hash") for w in self.alive})

    def _check_resources(self) -> None:
        """ValueError when the cluster has fewer CPUs (GPUs) than the K actors reserve: they would never start."""
        total, d = self.ray.cluster_resources(), self.dist
        for kind, each, flag in (("CPU", d.cpus_per_worker, "--threads"), ("GPU", d.gpus_per_worker, "--device")):
            if each > 0 and total.get(kind, 0.0) + 1e-9 < d.workers * each:
                raise ValueError(
                    f"the Ray cluster has {total.get(kind, 0.0):g} {kind}s; {d.workers} actors reserving "
                    f"{each:g} each ({flag}) need {d.workers * each:g}: start its nodes with more "
                    f"(ray start --num-cpus / --num-gpus), or lower --workers or {flag}"
                )

    # -- calls, counted -----------------------------------------------------------------------
    def _call(self, worker: int, method: str, *args):
        """actors[worker].method.remote(*args), its arguments' bytes counted."""
        self.traffic_count.sent(worker, serialized_bytes(args))
        return getattr(self.actors[worker], method).remote(*args)

    def traffic(self) -> dict[str, float]:
        """The bytes to and from each actor since the last call (traffic.py)."""
        return self.traffic_count.take()

    # -- faults -----------------------------------------------------------------------------
    def _get(self, worker: int, ref):
        """The call's result, or None after marking the actor dead (RayActorError or timeout)."""
        from ray.exceptions import GetTimeoutError, RayActorError

        try:
            result = self.ray.get(ref, timeout=self.dist.actor_timeout_s)
            self.traffic_count.received(worker, serialized_bytes(result))
            return result
        except (RayActorError, GetTimeoutError) as err:
            self.deaths.setdefault(worker, f"{type(err).__name__}: {err}"[-2000:])
            if worker in self.alive:
                self.alive.remove(worker)
                self.ray.kill(self.actors[worker], no_restart=True)
            return None

    def death_causes(self) -> str:
        """Why each dropped actor died, for the error that ends a step."""
        return "; ".join(f"worker {w}: {why}" for w, why in sorted(self.deaths.items())) or "no cause recorded"

    def _check_replicas(self, step: int, refs: dict[int, object]) -> None:
        expected = self.center.sha256()
        hashes = {w: self._get(w, ref) for w, ref in refs.items()}
        diverged = [w for w, h in hashes.items() if h is not None and h != expected]
        if diverged:
            raise RuntimeError(
                f"step {step}: the replicas of workers {diverged} differ from the driver's weights "
                f"(hash {expected[:12]}); the update is no longer reproducible on every replica"
            )
        if not self.alive:
            raise RuntimeError(f"step {step}: every Ray actor is dead; {self.death_causes()}")

    # -- one iteration -----------------------------------------------------------------------
    def member_blocks(self, members: list[int]) -> dict[int, list[int]]:
        """Contiguous blocks of the members (population indices) over the live actors."""
        parts = np.array_split(np.asarray(members), len(self.alive))
        return {w: part.tolist() for w, part in zip(self.alive, parts)}

    def rewards(self, plan: IterationPlan, problems: list[Problem]) -> tuple[np.ndarray, int, float]:
        """Each actor evaluates its block of the plan; a dead actor's block runs again on a live one."""
        step, members = plan.step, [m.index for m in plan.members]
        if self.planner(step, sigma=plan.sigma).subset(members) != plan:
            raise RuntimeError(
                f"step {step}: ES's plan is not the one its Ray actors rebuild from (step, sigma); "
                "the planner handed to RayActors must be the rule ES plans with"
            )
        batch = [self.position.get(id(p), p) for p in problems]
        position = {m: i for i, m in enumerate(members)}
        rewards, tokens = np.full(len(members), np.nan), 0
        pending = self.member_blocks(members)
        while pending:
            refs = {
                w: (block, self._call(w, "rewards", step, plan.sigma, block, batch)) for w, block in pending.items()
            }
            pending = {}
            for w, (block, ref) in refs.items():
                result = self._get(w, ref)
                if result is None:  # dead: its members run again on a live actor
                    if not self.alive:
                        raise RuntimeError(
                            f"step {step}: every Ray actor is dead; members {block} have no rewards; "
                            f"{self.death_causes()}"
                        )
                    target = self.alive[len(self.reruns) % len(self.alive)]
                    pending.setdefault(target, []).extend(block)
                    self.reruns.append({"step": step, "worker": w, "members": block, "rerun_on": target})
                    print(
                        f"warning: ES step {step + 1}: Ray actor {w} is lost ({self.deaths[w][:200]}); its members "
                        f"{block[0]}-{block[-1]} run again on actor {target}",
                        file=sys.stderr,
                        flush=True,
                    )
                    continue
                rewards[[position[m] for m in block]], tokens = result[0], tokens + result[1]
        return rewards, tokens, 0.0

    def after_update(self, update: Update) -> None:
        """Every live replica applies the same update; their weight hashes must equal the driver's."""
        self._check_replicas(update.step, {w: self._call(w, "update", update) for w in self.alive})

    def close(self) -> None:
        """Stop the actors (the Ray runtime itself is left running for the caller)."""
        for w in self.alive:
            self.ray.kill(self.actors[w], no_restart=True)
        self.alive = []
