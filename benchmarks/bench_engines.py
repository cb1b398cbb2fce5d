"""Generated tokens per second of HFEngine and VLLMEngine, side by side in one run (not a timing test).

    python benchmarks/bench_engines.py [--model DIR] [--batch-sizes 1,32,256] [--max-new-tokens 32]

Each engine runs in its own fresh process (an in-process vLLM changes torch's threading for the
rest of its process), on the same model, the same Countdown prompts and the same settings:
temperature 1, one sample per prompt, `--repeats` timed calls per batch size after one warm-up
call. Printed per batch size: tokens/s of each engine and the ratio vLLM / HF; also the engine
start-up time and the time of one `load_weights` of every parameter (what an ES member costs).
Without --model a randomly initialized model of the "default" tiny preset is built (speed does
not depend on training; an untrained model rarely stops early, so rows are near max length).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import random_model


def worker(kind: str, model: str, batch_sizes: list[int], max_new_tokens: int, repeats: int, threads: int) -> dict:
    import torch

    from escov.llm.engines import make_engine
    from escov.llm.engines.vllm_engine import read_checkpoint
    from escov.llm.tasks import get_task

    torch.set_num_threads(threads)
    prompts = [p.prompt for p in get_task("countdown").problems("test", max(batch_sizes), seed=0)]
    start = time.perf_counter()
    engine = make_engine(kind, model, dtype=torch.float32, seed=0)
    result = {"engine": kind, "startup_s": time.perf_counter() - start, "tokens_per_s": {}}
    for b in batch_sizes:
        engine.generate(prompts[:b], n=1, temperature=1.0, max_new_tokens=max_new_tokens, seed=0)  # warm-up
        tokens, seconds = 0, 0.0
        for r in range(repeats):
            t = time.perf_counter()
            out = engine.generate(prompts[:b], n=1, temperature=1.0, max_new_tokens=max_new_tokens, seed=r + 1)
            seconds += time.perf_counter() - t
            tokens += sum(len(c.token_ids) for row in out for c in row)
        result["tokens_per_s"][str(b)] = tokens / seconds
    weights = read_checkpoint(Path(model))
    t = time.perf_counter()
    for _ in range(repeats):
        engine.load_weights(weights.items())
    result["load_weights_s"] = (time.perf_counter() - t) / repeats
    engine.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory (default: a random model of the default preset)")
    parser.add_argument("--batch-sizes", default="1,32,256")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each engine process")
    parser.add_argument("--engines", default="hf,vllm")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    if args.worker:
        print(json.dumps(worker(args.worker, args.model, batch_sizes, args.max_new_tokens, args.repeats, args.threads)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or str(random_model(Path(tmp)))
        results = {}
        for kind in args.engines.split(","):
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                kind,
                "--model",
                model,
                "--batch-sizes",
                args.batch_sizes,
                "--max-new-tokens",
                str(args.max_new_tokens),
                "--repeats",
                str(args.repeats),
                "--threads",
                str(args.threads),
            ]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{kind} worker failed:\n{done.stderr[-3000:]}")
            results[kind] = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"model: {args.model or 'random default preset'}; {args.max_new_tokens} new tokens, T=1, "
        f"{args.threads} torch thread(s), {args.repeats} timed calls per row"
    )
    print(
        f"{'batch':>6} "
        + " ".join(f"{k + ' tok/s':>12}" for k in results)
        + ("   vllm/hf" if {"hf", "vllm"} <= results.keys() else "")
    )
    for b in batch_sizes:
        rates = {k: r["tokens_per_s"][str(b)] for k, r in results.items()}
        ratio = f"   {rates['vllm'] / rates['hf']:7.2f}x" if {"hf", "vllm"} <= rates.keys() else ""
        print(f"{b:>6} " + " ".join(f"{v:>12,.0f}" for v in rates.values()) + ratio)
    for k, r in results.items():
        print(f"{k}: start-up {r['startup_s']:.1f} s, load_weights (all parameters) {r['load_weights_s'] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
