"""Distributed ES on a real local Ray with two actors: the same rewards and bit-identical final weights as
the single-process run with the same seed, a killed actor's members re-run on the other, a diverged
replica caught by the weight hash, clear errors before any work, and the cause of death of actors that all
died (their constructors' errors) in the error that ends the step."""

import sys

import numpy as np
import pytest
import torch

from escov.llm.engines.hf import HFEngine
from escov.llm.es import DistributedConfig, ESConfig, PopulationConfig, make_es, select_parameters
from escov.llm.es.algorithm import ES
from escov.llm.tasks import get_task
from tests.llm import tasks_for_tests
from tests.llm.tasks_for_tests import digit_share_task

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("one_torch_thread")]
BATCHED = PopulationConfig(batched=True)  # each actor evaluates its members in one batched generate
pytest.importorskip("ray")
STEPS = 2


def _parts(model_dir, population_size=4):
    engine = HFEngine(model_dir)
    cfg = ESConfig(population_size=population_size, sigma=3e-2, alpha=3e-2, antithetic=True)
    names = select_parameters(engine.model.named_parameters(), "")
    master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    return cfg, engine, digit_share_task(), names, master


def _problems():
    return get_task("countdown").problems("train", 4, 2)


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(tasks_for_tests)  # actors cannot import the tests' task module
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 1024**2)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def single_process(tiny_model_dir):
    cfg, engine, task, names, master = _parts(tiny_model_dir)
    es = make_es(cfg, engine, task, names, master, max_new_tokens=10, seed=3, population=BATCHED)
    steps = [es.step(_problems(), s) for s in range(STEPS)]
    return steps, es.center_weights()


def test_two_actors_equal_single_process_and_dead_actor_members_rerun(tiny_model_dir, ray_local, single_process):
    from escov.llm.es.members import weight_hash

    ref_steps, ref_weights = single_process
    assert np.ptp(ref_steps[0].rewards) > 0  # the run really moves the weights
    cfg, engine, task, names, master = _parts(tiny_model_dir)
    dist = make_es(
        cfg,
        engine,
        task,
        names,
        master,
        max_new_tokens=10,
        seed=3,
        model_dir=tiny_model_dir,
        population=BATCHED,
        distributed=DistributedConfig(workers=2, cpus_per_worker=0.5, threads_per_worker=2),
    )
    actors = dist.members
    try:
        assert actors.member_blocks([0, 1, 2, 3]) == {0: [0, 1], 1: [2, 3]}
        # each actor holds cpus_per_worker of the 2 Ray CPUs and runs threads_per_worker torch threads
        assert [ray_local.get(a.__ray_call__.remote(lambda actor: torch.get_num_threads())) for a in actors.actors] == [
            2,
            2,
        ]
        assert ray_local.available_resources().get("CPU", 0.0) == pytest.approx(2 - 2 * 0.5)
        steps = [dist.step(_problems(), 0)]
        first = steps[0].traffic  # the starting weights went to each actor with the first call
        weight_bytes = sum(t.numel() * 4 for t in master.values())
        assert first["actor_bytes_to"] > weight_bytes and 0 < first["actor_bytes_from"] < 4096
        assert first["actor_bytes"] == first["actor_bytes_to"] + first["actor_bytes_from"]
        ray_local.kill(actors.actors[1])  # actor 1 dies between iterations
        steps += [dist.step(_problems(), s) for s in range(1, STEPS)]
        assert actors.reruns == [{"step": 1, "worker": 1, "members": [2, 3], "rerun_on": 0}]
        # later iterations send each call's plan and positions (bytes, not weights) and receive the rewards
        assert all(0 < s.traffic["actor_bytes_to"] < 4096 and s.traffic["actor_bytes_from"] > 0 for s in steps[1:])
        assert actors.alive == [0]
        for a, b in zip(ref_steps, steps):
            np.testing.assert_array_equal(a.rewards, b.rewards)
            np.testing.assert_array_equal(a.z, b.z)
            assert b.n_tokens == a.n_tokens  # every block's tokens, the re-run one's included
        final = dist.center_weights()
        for name in ref_weights:
            assert torch.equal(final[name], ref_weights[name]), name
        assert ray_local.get(actors.actors[0].weight_hash.remote()) == weight_hash(ref_weights)
        # a plan the actors would not rebuild (another run seed) is refused before any member runs
        with pytest.raises(RuntimeError, match="is not the one its Ray actors rebuild from"):
            actors.rewards(ES.planner(cfg, 4)(STEPS, sigma=cfg.sigma), _problems())
        # a replica that applies a different update is caught at the next iteration
        wrong = dist.plan(STEPS).update(np.array([1.0, -1.0, 0.0, 0.0]), cfg.alpha)
        ray_local.get(actors.actors[0].update.remote(wrong))
        with pytest.raises(RuntimeError, match=r"replicas of workers \[0\] differ"):
            dist.step(_problems(), STEPS)
    finally:
        dist.close()


def test_errors_before_any_work(tiny_model_dir, monkeypatch):
    cfg, engine, task, names, master = _parts(tiny_model_dir, population_size=6)
    kw = dict(max_new_tokens=4, seed=0, model_dir=tiny_model_dir)
    with pytest.raises(ValueError, match=r"population_size \(6\) must be divisible by workers \(4\)"):
        make_es(cfg, engine, task, names, master, distributed=DistributedConfig(workers=4), **kw)
    with pytest.raises(ValueError, match="no Ray cluster reachable"):
        make_es(cfg, engine, task, names, master, distributed=DistributedConfig(workers=2, address="127.0.0.1:1"), **kw)
    with pytest.raises(ValueError, match="noise_rank 99 is larger"):
        make_es(
            cfg,
            engine,
            task,
            names,
            master,
            population=PopulationConfig(noise_rank=99),
            distributed=DistributedConfig(workers=2),
            **kw,
        )
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(ImportError, match="pip install 'ray>=2.30'"):
        make_es(cfg, engine, task, names, master, distributed=DistributedConfig(workers=2), **kw)


def test_when_every_actor_dies_the_error_keeps_their_cause(tiny_model_dir, ray_local, tmp_path):
    cfg, engine, task, names, master = _parts(tiny_model_dir)
    missing = tmp_path / "no-model-here"  # each actor's HFEngine fails in its constructor
    with pytest.raises(RuntimeError, match="every Ray actor is dead") as err:
        make_es(
            cfg,
            engine,
            task,
            names,
            master,
            max_new_tokens=4,
            seed=0,
            model_dir=missing,
            distributed=DistributedConfig(workers=2, actor_timeout_s=120.0),
        )
    message = str(err.value)
    assert "worker 0: " in message and "worker 1: " in message and "creation task" in message
    assert "no-model-here" in message  # the constructor's own error, which log_to_driver=False would hide


def test_a_call_not_answered_within_the_actor_timeout_drops_the_actor(tiny_model_dir, ray_local):
    """actor_timeout_s far below an actor's start-up: the first call (the replicas' weight hash) is not
    answered in time, so every actor is dropped, and the error names the timeout."""
    cfg, engine, task, names, master = _parts(tiny_model_dir)
    with pytest.raises(RuntimeError, match="every Ray actor is dead.*GetTimeoutError"):
        make_es(
            cfg,
            engine,
            task,
            names,
            master,
            max_new_tokens=4,
            seed=0,
            model_dir=tiny_model_dir,
            distributed=DistributedConfig(workers=2, actor_timeout_s=1e-3),
        )


def test_a_cluster_too_small_for_the_actors_is_refused_before_any_starts(tiny_model_dir, ray_local):
    """Two actors reserving 2 CPUs each on the 2-CPU Ray of this module would wait forever for their CPUs."""
    cfg, engine, task, names, master = _parts(tiny_model_dir)
    with pytest.raises(ValueError, match=r"the Ray cluster has 2 CPUs; 2 actors reserving 2 each \(--threads\) need 4"):
        make_es(
            cfg,
            engine,
            task,
            names,
            master,
            max_new_tokens=4,
            seed=0,
            model_dir=tiny_model_dir,
            distributed=DistributedConfig(workers=2, cpus_per_worker=2.0),
        )
