"""ES iteration time on Ray actors (llm/es/ray_actors.py) at K = 1, 2, 4 actors against one process, side by side.

    python benchmarks/bench_ray_actors.py --model DIR                    # a trained base (members' rewards differ)
    python benchmarks/bench_ray_actors.py --preset default --members 32  # a random-init model of a preset's shape

One ES iteration (N members, B prompts, T new tokens, each actor batching its block of members: population.batched)
is timed in every way, interleaved repeat by repeat so that they share the machine's load:

    one process   ES in this process (batched_hf), no Ray
    ray K         K actors on a local Ray (one CPU and one torch thread each), each evaluating N / K members

and prints the median seconds per iteration, the speed-up over one actor (T_1 / T_K), the parallel efficiency
(T_1 / (K T_K)), Ray's cost against one process (T_ray1 / T_one), the bytes per actor per iteration (first and
later), and the machine's load average before and after (the machine may be shared: read ratios, not seconds).
On a random-init model every member scores the same, so the update is zero (its cost is left out alike everywhere).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from escov.llm.engines.hf import HFEngine
from escov.llm.es import DistributedConfig, ESConfig, PopulationConfig, make_es, select_parameters
from escov.llm.tasks import get_task


def build(model_dir: str, members: int, workers: int, tokens: int, pool, address: str = ""):
    engine = HFEngine(model_dir)
    cfg = ESConfig(population_size=members, sigma=0.02, alpha=0.01, member_temperature=1.0, member_samples=1)
    names = select_parameters(engine.model.named_parameters(), "")
    master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    dist = (
        DistributedConfig(workers=workers, address=address, cpus_per_worker=1.0, threads_per_worker=1)
        if workers
        else None
    )
    return make_es(
        cfg,
        engine,
        get_task("countdown"),
        names,
        master,
        max_new_tokens=tokens,
        seed=0,
        population=PopulationConfig(batched=True),
        distributed=dist,
        model_dir=model_dir,
        problem_pool=pool,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="a save_pretrained model folder (default: a random --preset model)")
    ap.add_argument("--preset", default="test", help="tinymodel preset of the random-init model without --model")
    ap.add_argument("--actors", default="1,2,4")
    ap.add_argument("--members", type=int, default=32)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    import ray
    from common import random_model

    torch.set_num_threads(1)
    model = args.model or str(random_model(Path(tempfile.mkdtemp()) / "model", preset=args.preset))
    counts = [int(k) for k in args.actors.split(",")]
    params = sum(t.numel() for t in HFEngine(model).model.parameters())
    ray.init(num_cpus=sum(counts), include_dashboard=False, log_to_driver=False, object_store_memory=200 * 2**20)
    pool = get_task("countdown").problems("train", 64, seed=0)
    load_before = os.getloadavg()
    ways = {"one process": build(model, args.members, 0, args.tokens, pool)}
    address = ray.get_runtime_context().gcs_address  # the local Ray, by address: one actor is Ray too
    ways |= {f"ray {k}": build(model, args.members, k, args.tokens, pool, address) for k in counts}
    seconds = {name: [] for name in ways}
    traffic = {name: [] for name in ways}
    for step in range(args.repeats + 1):  # the first iteration warms up (and carries the weights)
        batch = [pool[i] for i in range(step * args.prompts, (step + 1) * args.prompts)]
        for name, es in ways.items():
            t0 = time.perf_counter()
            out = es.step(batch, step)
            if step:
                seconds[name].append(time.perf_counter() - t0)
            traffic[name].append(out.traffic.get("actor_bytes", 0.0))
    load_after = os.getloadavg()
    for es in ways.values():
        es.close()
    ray.shutdown()
    median = {name: statistics.median(s) for name, s in seconds.items()}
    print(
        f"model {model} ({params:,} parameters), N = {args.members}, {args.prompts} prompts x {args.tokens} tokens, "
        f"{args.repeats} timed iterations each; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after, "
        f"{os.cpu_count()} CPUs"
    )
    t1 = median[f"ray {counts[0]}"] * counts[0]
    print(f"{'way':>12} {'s/iter':>8} {'speed-up':>9} {'efficiency':>11} {'bytes/actor first':>18} {'later':>7}")
    for name, t in median.items():
        k = int(name.split()[1]) if name.startswith("ray") else 0
        speed = f"{t1 / t:9.2f}" if k else f"{'':9}"
        eff = f"{t1 / (k * t):11.2f}" if k else f"{'':11}"
        first, later = traffic[name][0], max(traffic[name][1:], default=0.0)
        print(f"{name:>12} {t:8.3f} {speed} {eff} {first:18,.0f} {later:7,.0f}")
    print(f"Ray's cost with one actor: {median[f'ray {counts[0]}'] / median['one process']:.2f}x one process")


if __name__ == "__main__":
    main()
