"""A low-rank ES population as LoRA adapters in one vLLM call, against member-by-member weight swapping.

    python benchmarks/bench_population_vllm.py                  # random-init Llama, head size 32, N = 8,16
    python benchmarks/bench_population_vllm.py --model DIR --members 16 --rank 8

Same greedy rollouts (B prompts per member, T new tokens), same low-rank members (the attention and MLP
projections, LORA_PATTERN), timed side by side, repeat by repeat:

    limit        one VLLMEngine.generate of the N x B requests with shared center weights
    limit-lora   the same call on the LoRA-enabled engine, no adapter (what enabling LoRA costs)
    member       member by member, as the ES trainer does on vLLM: load_weights(theta + s sigma A B^T / sqrt r),
                 generate B requests, load_weights(theta)
    lora         all N members in one generate, member m as LoRA adapter m (written from the seeds)

Prints median seconds, ratios to the limit, the speed-up of lora over member, and how many greedy
completions of lora differ from member. vLLM's CPU attention needs a head size that is a multiple of 32.
Each engine lives in its own worker process (vLLM allows one in-process engine per process); the
driver sends the variants to them in turn, so the timings share the machine's load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import re
import statistics
import tempfile
import time
from pathlib import Path

from safetensors.torch import load_file

from escov.llm.engines.vllm_engine import VLLMEngine
from escov.llm.es.noise import PopulationNoise
from escov.llm.es.plan import IterationPlan
from escov.llm.es.vllm_lora import LORA_PATTERN, check_lora_population, generate_lora_population, linear_shapes
from escov.llm.tasks import get_task
from escov.llm.tinymodel import save_untrained_llama

VARIANTS = ("limit", "limit-lora", "member", "lora")
ENGINE_OF = {"limit": "plain", "member": "plain", "limit-lora": "lora", "lora": "lora"}


def worker(kind: str, args: argparse.Namespace, model_dir: str, conn) -> None:
    """One VLLMEngine (plain or LoRA-enabled) in its own process: runs the variants it is sent.

    vLLM keeps per-process state, so the two engines live in two processes; the driver sends each
    (variant, N, seed) in turn and gets back the seconds and the greedy token ids."""
    center = {k: v.float() for k, v in load_file(str(next(Path(model_dir).glob("*.safetensors")))).items()}
    names = [n for n in center if re.search(LORA_PATTERN, n)]
    shapes = linear_shapes(model_dir, names)
    noise = PopulationNoise(rank=args.rank)
    prompts = [p.prompt for p in get_task("countdown").problems("train", args.prompts, seed=0)]
    kv = dict(kv_cache_memory_bytes=1 << 29)
    members = max(int(x) for x in args.members.split(","))
    if kind == "plain":
        engine = VLLMEngine(model_dir, **kv)
    else:
        engine = VLLMEngine(model_dir, enable_lora=True, max_loras=members, max_lora_rank=max(8, args.rank), **kv)
        check_lora_population(noise, names, members, engine)
    gen = dict(temperature=0.0, max_new_tokens=args.tokens)

    def member_by_member(plan: IterationPlan):
        rows = []
        for m in plan.members:
            scale = m.sign * plan.sigma
            engine.load_weights(
                (k, center[k] + scale * noise.direction(plan.noise_seed, m.direction, k, shapes[k])) for k in names
            )
            rows.append(engine.generate(prompts, n=1, seed=0, **gen))
            engine.load_weights((k, center[k]) for k in names)
        return rows

    with tempfile.TemporaryDirectory() as workdir:
        conn.send("ready")
        while (job := conn.recv()) is not None:
            variant, n, seed = job
            plan = IterationPlan.derive(seed, 0, sigma=args.sigma, population_size=n, antithetic=False)
            t0 = time.perf_counter()
            if variant in ("limit", "limit-lora"):
                out = [engine.generate(prompts * n, n=1, seed=0, **gen)]
            elif variant == "member":
                out = member_by_member(plan)
            else:
                out = generate_lora_population(engine, noise, plan, shapes, prompts, n=1, workdir=workdir, **gen)
            seconds = time.perf_counter() - t0
            conn.send((seconds, [[c[0].token_ids for c in row] for row in out]))
    engine.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="model directory (head size a multiple of 32); default: random init")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--members", default="8,16")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=20)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--sigma", type=float, default=1.5e-3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="bench_out")
    args = ap.parse_args()

    members = [int(x) for x in args.members.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.TemporaryDirectory()
    model_dir = (
        Path(args.model)
        if args.model
        else save_untrained_llama(Path(tmp.name) / "model", args.hidden, args.layers, intermediate_size=4 * args.hidden)
    )
    ctx = mp.get_context("spawn")
    conns, procs = {}, []
    for kind in ("plain", "lora"):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker, args=(kind, args, str(model_dir), child))
        proc.start()
        if parent.recv() != "ready":
            raise RuntimeError(f"the {kind} engine did not start")
        conns[kind], procs = parent, procs + [proc]

    def run(variant: str, n: int, seed: int):
        conns[ENGINE_OF[variant]].send((variant, n, seed))
        return conns[ENGINE_OF[variant]].recv()

    results = []
    for n in members:
        times = {v: [] for v in VARIANTS}
        for rep in range(-1, args.repeats):  # -1: warm-up, not recorded
            for v in VARIANTS:
                seconds, tokens = run(v, n, rep + 1)
                if rep >= 0:
                    times[v].append(seconds)
                if v == "member":
                    by_member = tokens
                elif v == "lora":
                    batched = tokens
        differ = sum(a != b for bm, mm in zip(batched, by_member) for a, b in zip(bm, mm))
        med = {v: statistics.median(times[v]) for v in VARIANTS}
        row = {
            "members": n,
            "seconds": med,
            "ratio_to_limit": {v: med[v] / med["limit"] for v in VARIANTS},
            "lora_speedup_over_member": med["member"] / med["lora"],
            "greedy_differ": [differ, n * args.prompts],
        }
        results.append(row)
        print(
            f"N={n} rows={n * args.prompts} limit {med['limit']:.3f}s | / limit: "
            + "  ".join(f"{v} {row['ratio_to_limit'][v]:.2f}x" for v in VARIANTS[1:])
            + f" | lora over member {row['lora_speedup_over_member']:.2f}x"
            + f" | greedy completions differing lora vs member {differ}/{n * args.prompts}",
            flush=True,
        )
    for conn, proc in zip(conns.values(), procs):
        conn.send(None)
        proc.join()
    params = sum(t.numel() for t in load_file(str(next(model_dir.glob("*.safetensors")))).values())
    (out / "population_vllm_bench.json").write_text(
        json.dumps({"settings": vars(args), "parameters": params, "results": results}, indent=1)
    )
    print(f"{params / 1e6:.3f}M parameters; wrote {out / 'population_vllm_bench.json'}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
