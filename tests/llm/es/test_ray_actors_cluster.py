"""ES on a real Ray cluster of two nodes started the usual way (tests/llm/es/ray_cluster.py: `ray start --head`, then
`ray start --address`, each node with one CPU, its own raylet and object store, so the two actors of `--workers 2`
live on different nodes): `llm train --ray_address ADDRESS --workers 2` ends with the weights of the one-process run,
bit for bit, with sampled members at N = 32; the bytes per actor after the first iteration stay under 1 KB while
the first carries the weights; `llm replay` rebuilds a middle checkpoint from the base and replay.jsonl alone; and a
node lost in the middle of the run leaves it going, with the same final weights."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

from tests.llm.es.ray_cluster import REPO, LocalCluster, ray_command

pytestmark = [pytest.mark.ray]
pytest.importorskip("ray")

STEPS = 4
FLAGS = [
    "--algo",
    "es",
    "--task",
    "countdown",
    "--steps",
    str(STEPS),
    "--batch_size",
    "4",
    "--train_pool",
    "16",
    "--threads",
    "1",
    "--max_completion_length",
    "8",
    "--checkpoint_every",
    "2",
    "--step_samples",
    "1",
    "--probe",
    "false",
    "--eval_problems",
    "2",
    "--eval_samples",
    "2",
    "--eval_ks",
    "1",
    "--heldout_task",
    "",
    "--threshold_keep",
    "50",
    "--format_reward",
    "0.1",
    "--es.population_size",
    "32",
    "--es.sigma",
    "0.02",
    "--es.alpha",
    "0.01",
    "--es.member_temperature",
    "1.0",
    "--es.member_samples",
    "1",
    "--population.batched",
    "true",
    "--no-progress",
]


def _env(cluster: LocalCluster | None = None) -> dict:
    return (cluster.env if cluster is not None else os.environ) | {
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "TQDM_DISABLE": "1",
    }


def _train(model_dir, out: Path, *extra: str, cluster: LocalCluster | None = None) -> subprocess.Popen:
    """`llm train` in a process of its own; with a cluster: over it (--workers 2), in its environment."""
    extra += ("--ray_address", cluster.address, "--workers", "2") if cluster is not None else ()
    return subprocess.Popen(
        [sys.executable, "-m", "escov.llm", "train", "--model", str(model_dir), "--out", str(out), *FLAGS, *extra],
        env=_env(cluster),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen, timeout: float = 400) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return err


def _rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def _weights(run: Path, step: int) -> dict:
    return load_file(run / "checkpoints" / f"step-{step}" / "model.safetensors")


def _equal(a: dict, b: dict) -> bool:
    import torch

    return a.keys() == b.keys() and all(torch.equal(a[n], b[n]) for n in a)


@pytest.fixture(scope="module")
def cluster():
    if ray_command() is None:
        pytest.skip("the `ray` command is not installed")
    nodes = LocalCluster()
    try:
        try:
            nodes.add_node(cpus=1)
            nodes.add_node(cpus=1)
        except RuntimeError as err:
            pytest.skip(f"a Ray cluster cannot start here: {str(err)[:300]}")
        yield nodes
    finally:
        nodes.stop()


@pytest.fixture(scope="module")
def one_process(tiny_model_dir, tmp_path_factory):
    run = tmp_path_factory.mktemp("one-process") / "run"
    _finish(_train(tiny_model_dir, run))
    return run


@pytest.mark.slow  # a two-node Ray cluster started and trained on (45 s); one node's actors: test_ray_actors.py
def test_two_nodes_train_the_one_process_weights_with_a_kilobyte_per_actor_and_replay(
    tiny_model_dir, cluster, one_process, tmp_path
):
    run = tmp_path / "cluster"
    _finish(_train(tiny_model_dir, run, cluster=cluster))
    reference, rows = _rows(one_process), _rows(run)
    rewards = [r["es_rewards"] for r in reference]
    assert any(len(set(r)) > 1 for r in rewards), "members that all score the same would test nothing"
    assert [r["es_rewards"] for r in rows] == rewards
    assert _equal(_weights(run, STEPS), _weights(one_process, STEPS))
    # traffic: the first iteration carries each actor's starting weights (every float32 of the model), later ones
    # only the plan's step and sigma, member indices, pool positions, the update's coefficients, rewards and a hash
    weight_bytes = sum(t.numel() * 4 for t in load_file(Path(tiny_model_dir) / "model.safetensors").values())
    assert "actor_bytes" not in reference[0]
    assert rows[0]["actor_bytes_to"] > weight_bytes
    later = [r["actor_bytes"] for r in rows[1:]]
    assert all(0 < b <= 1024 for b in later), later
    assert all(r["actor_bytes"] == r["actor_bytes_to"] + r["actor_bytes_from"] for r in rows)
    # the middle checkpoint rebuilt from the base model and replay.jsonl alone (its checkpoints set aside)
    kept = tmp_path / "kept-checkpoints"
    (run / "checkpoints").rename(kept)
    rebuilt = tmp_path / "rebuilt"
    subprocess.run(
        [sys.executable, "-m", "escov.llm", "replay", str(run), "--step", "2", "--out", str(rebuilt)],
        env=_env(),
        check=True,
        capture_output=True,
        text=True,
    )
    assert (rebuilt / "model.safetensors").read_bytes() == (kept / "step-2" / "model.safetensors").read_bytes()
    assert not _equal(load_file(rebuilt / "model.safetensors"), _weights(one_process, STEPS))  # step 2, not 4


@pytest.mark.slow  # 45 s more here; a killed actor's members re-run: test_ray_actors.py, in the fast suite
def test_a_node_lost_in_the_middle_of_the_run_leaves_it_going_with_the_same_weights(
    tiny_model_dir, cluster, one_process, tmp_path
):
    """The second node (raylet, object store, the actor living there) is SIGKILLed once the run's first row is
    written: the run goes on, the lost actor's members run again on the head node's actor, and the final weights
    are the one-process run's."""
    run = tmp_path / "lost-node"
    proc = _train(tiny_model_dir, run, cluster=cluster)
    deadline = time.monotonic() + 300
    while not (run / "metrics.jsonl").is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    cluster.kill_node(cluster.nodes[1])
    err = _finish(proc)
    assert "is lost" in err and "run again on actor 0" in err
    assert [r["es_rewards"] for r in _rows(run)] == [r["es_rewards"] for r in _rows(one_process)]
    assert _equal(_weights(run, STEPS), _weights(one_process, STEPS))
