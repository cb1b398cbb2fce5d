"""ES members evaluated on Ray (`RayActors`): the population spread over K actors, each with its own replica.

    driver (ES with RayActors, itself a replica)      K actors (ESWorker, one replica each)
      step s: (s, prompts of the batch, members) --->   rewards of its members (seeds regenerate the noise)
              <--- scalar rewards, token counts
      z = standardize(rewards); update own replica
              (s, z) ------------------------------->   the same update from (seeds, z)
              <--- SHA-256 of the replica's weights     must equal the driver's, every iteration

Weights cross once, when the actors start from the driver's center; afterwards only seeds, prompts,
z and scalars do. On GPUs each actor reserves one (distributed.gpus_per_worker; Ray sets its
CUDA_VISIBLE_DEVICES) and keeps its engine, master and noise on it: one engine per GPU. The driver must
then compute on CUDA too, since the hash check needs the same generator streams on every replica. The update is the same code on every replica (`ES.apply_update`), so the
replicas stay bit-identical, and the run equals the single-process run with the same seed. Members are
dealt in contiguous blocks of N / K. A dead actor (a call raising RayActorError, or not answering
within actor_timeout_s) is dropped and its members re-run on a live actor in the same iteration, never
silently lost (`RayActors.reruns` records it); with no actor left the step fails, naming each actor's
cause of death (`RayActors.deaths`: the error Ray raised, which carries a failed constructor's traceback).
"""
from __future__ import annotations


import numpy as np
import torch

from llm.es.algorithm import ES, ESConfig
from llm.es.members import MemberEvaluator, weight_hash
from llm.es.noise import iteration_seeds
from llm.es.options import DistributedConfig, PopulationConfig, check_ray, local_members, population_noise
from llm.tasks.base import Problem, Task

class ESWorker:
    """One replica (run as a Ray actor): its own HF engine on its device ("cpu", or "cuda": the GPU Ray gave
    it), started from the driver's weights."""

    def __init__(self, model_dir: str, task: Task, names: list[str], cfg: ESConfig, population: PopulationConfig,
                 weights: dict[str, torch.Tensor], max_new_tokens: int, seed: int, threads: int, device: str = "cpu"):
        from llm.engines.hf import HFEngine

        torch.set_num_threads(threads)
        engine = HFEngine(model_dir, device=device)
        engine.load_weights(weights.items())
        master = {n: weights[n].to(device, torch.float32, copy=True) for n in names}
        members = local_members(cfg, population, engine, names, {n: tuple(t.shape) for n, t in master.items()})
        self.es = ES(cfg, engine, task, names, master, max_new_tokens=max_new_tokens, seed=seed,
                     noise=population_noise(cfg, population, device), members=members)

    def rewards(self, step: int, problems: list[Problem], members: list[int]) -> tuple[list[float], int]:
        it_seed, gen_seed = iteration_seeds(self.es.seed, step)
        rewards, tokens, _ = self.es.members.rewards(self.es, it_seed, gen_seed, problems, members, step)
        return rewards.tolist(), tokens

    def update(self, step: int, z: list[float]) -> str:
        self.es.apply_update(iteration_seeds(self.es.seed, step)[0], np.asarray(z), step)
        return weight_hash(self.es.master)

    def weight_hash(self) -> str:
        return weight_hash(self.es.master)


class RayActors(MemberEvaluator):
    """Member evaluation on K Ray actors; the driver's ES keeps the center replica and applies the update."""

    def __init__(self, cfg: ESConfig, task: Task, names: list[str], master: dict[str, torch.Tensor], *,
                 max_new_tokens: int, seed: int, model_dir: str, weights: dict[str, torch.Tensor],
                 population: PopulationConfig, distributed: DistributedConfig):
        """weights: the full center the actors start from (master: the driver's fp32 perturbed parameters)."""
        self.dist = distributed
        ray = check_ray(distributed)
        weights = {n: t.cpu() for n, t in (weights | {n: master[n] for n in names}).items()}  # crosses to the actors
        if not ray.is_initialized():
            if self.dist.address:
                ray.init(address=self.dist.address, log_to_driver=False)
            else:
                ray.init(num_cpus=max(1, int(np.ceil(self.dist.workers * self.dist.cpus_per_worker))),
                         include_dashboard=False, log_to_driver=False, object_store_memory=200 * 1024 ** 2)
        self.ray = ray
        actor = ray.remote(num_cpus=self.dist.cpus_per_worker, num_gpus=self.dist.gpus_per_worker,
                           max_restarts=0)(ESWorker)
        shared = ray.put(weights)
        device = "cuda" if self.dist.gpus_per_worker > 0 else "cpu"
        self.actors = [actor.remote(str(model_dir), task, names, cfg, population, shared, max_new_tokens, seed,
                                    self.dist.threads_per_worker, device) for _ in range(self.dist.workers)]
        self.alive = list(range(self.dist.workers))
        self.reruns: list[dict] = []  # {"step", "worker", "members", "rerun_on"} for every re-run block
        self.deaths: dict[int, str] = {}  # worker -> why it was dropped (the error Ray raised, or the timeout)
        self._check_replicas(-1, master, {w: self.actors[w].weight_hash.remote() for w in self.alive})

    # -- faults -----------------------------------------------------------------------------
    def _get(self, worker: int, ref):
        """The call's result, or None after marking the actor dead (RayActorError or timeout)."""
        from ray.exceptions import GetTimeoutError, RayActorError

        try:
            return self.ray.get(ref, timeout=self.dist.actor_timeout_s)
        except (RayActorError, GetTimeoutError) as err:
            self.deaths.setdefault(worker, f"{type(err).__name__}: {err}"[-2000:])
            if worker in self.alive:
                self.alive.remove(worker)
                self.ray.kill(self.actors[worker], no_restart=True)
            return None

    def death_causes(self) -> str:
        """Why each dropped actor died, for the error that ends a step."""
        return "; ".join(f"worker {w}: {why}" for w, why in sorted(self.deaths.items())) or "no cause recorded"

    def _check_replicas(self, step: int, master: dict[str, torch.Tensor], refs: dict[int, object]) -> None:
        expected = weight_hash(master)
        hashes = {w: self._get(w, ref) for w, ref in refs.items()}
        diverged = [w for w, h in hashes.items() if h is not None and h != expected]
        if diverged:
            raise RuntimeError(f"step {step}: the replicas of workers {diverged} differ from the driver's weights "
                               f"(hash {expected[:12]}); the update is no longer reproducible on every replica")
        if not self.alive:
            raise RuntimeError(f"step {step}: every Ray actor is dead; {self.death_causes()}")

    # -- one iteration -----------------------------------------------------------------------
    def member_blocks(self, members: list[int]) -> dict[int, list[int]]:
        """Contiguous blocks of the members over the live actors."""
        parts = np.array_split(np.asarray(members), len(self.alive))
        return {w: part.tolist() for w, part in zip(self.alive, parts)}

    def rewards(self, es: ES, it_seed: int, gen_seed: int, problems: list[Problem], members: list[int],
                step: int) -> tuple[np.ndarray, int, float]:
        """Each actor evaluates its block (seeds from the step); a dead actor's block runs again on a live one."""
        position = {m: i for i, m in enumerate(members)}
        rewards, tokens = np.full(len(members), np.nan), 0
        pending = self.member_blocks(members)
        while pending:
            refs = {w: (block, self.actors[w].rewards.remote(step, problems, block)) for w, block in pending.items()}
            pending = {}
            for w, (block, ref) in refs.items():
                result = self._get(w, ref)
                if result is None:  # dead: its members run again on a live actor
                    if not self.alive:
                        raise RuntimeError(f"step {step}: every Ray actor is dead; members {block} have no rewards; "
                                           f"{self.death_causes()}")
                    target = self.alive[len(self.reruns) % len(self.alive)]
                    pending.setdefault(target, []).extend(block)
                    self.reruns.append({"step": step, "worker": w, "members": block, "rerun_on": target})
                    continue
                rewards[[position[m] for m in block]], tokens = result[0], tokens + result[1]
        return rewards, tokens, 0.0

    def after_update(self, es: ES, step: int, z: np.ndarray) -> None:
        """Every live replica applies the same update; their weight hashes must equal the driver's."""
        self._check_replicas(step, es.master, {w: self.actors[w].update.remote(step, z.tolist()) for w in self.alive})

    def close(self) -> None:
        """Stop the actors (the Ray runtime itself is left running for the caller)."""
        for w in self.alive:
            self.ray.kill(self.actors[w], no_restart=True)
        self.alive = []
