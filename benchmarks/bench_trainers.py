"""Memory and time of the trainers, as ratios measured side by side in one run (not a timing test).

    python benchmarks/bench_trainers.py [--model DIR] [--hidden 64 --layers 4] [--iterations 3]

Each workload runs in its own fresh process (peak resident memory is per process), on the same
model and the same batch:
  inference   the engine generating what one ES iteration generates (N greedy rollouts of the batch)
  es          ES iterations (fp32 master + engine weights; no gradients, no optimizer state)
  grpo        GRPO steps (fp32 policy, gradients, AdamW state, frozen reference)
Printed: each peak, its ratio to the inference peak (target for ES: <= 1.25x), the same ratios of
the memory above the process's baseline (after imports, before the model is loaded), and the
share of an ES iteration spent perturbing, restoring and updating weights (target: <= 10%).
Without --model a randomly initialized Llama with the tiny model's tokenizer is built (--hidden,
--layers set its size): no training is needed to measure memory and time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import peak_mb, random_model


def worker(kind: str, model: str, args) -> dict:
    """One workload in this process; returns its peaks and timings."""
    import torch

    from escov.llm.engines.hf import HFEngine
    from escov.llm.es import ESConfig, make_es, select_parameters
    from escov.llm.grpo import GRPO, GRPOConfig
    from escov.llm.rollout import derive_seed, rollout
    from escov.llm.tasks import get_task

    torch.set_num_threads(args.threads)
    baseline = peak_mb()
    task = get_task("countdown")
    problems = task.problems("train", args.batch, seed=0)
    engine = HFEngine(model, dtype=getattr(torch, args.dtype))
    out: dict = {"kind": kind, "baseline_mb": baseline}
    if kind == "inference":
        t0 = time.perf_counter()
        for it in range(args.iterations):
            for m in range(args.population):
                rollout(
                    engine,
                    task,
                    problems,
                    n=1,
                    temperature=0.0,
                    max_new_tokens=args.max_new_tokens,
                    seed=derive_seed(it, m),
                    step=it,
                )
        out["seconds"] = time.perf_counter() - t0
    elif kind == "es":
        cfg = ESConfig(population_size=args.population)
        names = select_parameters(engine.model.named_parameters(), "")
        master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
        es = make_es(cfg, engine, task, names, master, max_new_tokens=args.max_new_tokens, seed=0)
        weight_s = total_s = 0.0
        for it in range(args.iterations):
            step = es.step(problems, it)
            weight_s, total_s = weight_s + step.weight_seconds, total_s + step.seconds
        out |= {"seconds": total_s, "weight_seconds": weight_s}
    else:
        from transformers import AutoModelForCausalLM

        policy = (
            engine.model
            if args.dtype == "float32"
            else AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
        )
        reference = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
        cfg = GRPOConfig(num_generations=args.population // 4)
        grpo = GRPO(
            cfg,
            engine,
            task,
            policy,
            reference,
            engine.prompt_token_ids,
            temperature=1.0,
            max_new_tokens=args.max_new_tokens,
            seed=0,
            pad_id=engine.tokenizer.pad_token_id,
        )
        t0 = time.perf_counter()
        for it in range(args.iterations):
            grpo.step(problems, it)
        out["seconds"] = time.perf_counter() - t0
    out["peak_mb"] = peak_mb()
    out["parameters"] = sum(p.numel() for p in engine.model.parameters())
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory (default: a random Llama of --hidden/--layers)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--population", type=int, default=32, help="ES N (GRPO uses G = N / 4: the FLOP match)")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.model, args)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or str(
            random_model(
                Path(tmp) / "model", hidden_size=args.hidden, num_layers=args.layers, intermediate_size=4 * args.hidden
            )
        )
        forwarded = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k not in ("model", "worker")]
        results = {}
        for kind in ("inference", "es", "grpo"):
            cmd = [sys.executable, __file__, "--worker", kind, "--model", model, *forwarded]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            results[kind] = json.loads(done.stdout.strip().splitlines()[-1])
    inf = results["inference"]
    print(
        f"model: {inf['parameters']:,} parameters, {args.dtype}; N = {args.population}, G = {args.population // 4}, "
        f"batch {args.batch}, {args.max_new_tokens} new tokens, {args.iterations} iterations"
    )
    for kind in ("inference", "es", "grpo"):
        r = results[kind]
        print(
            f"{kind:>9}: peak {r['peak_mb']:8.1f} MB  ratio {r['peak_mb'] / inf['peak_mb']:.3f}x   "
            f"above baseline {r['peak_mb'] - r['baseline_mb']:8.1f} MB  ratio "
            f"{(r['peak_mb'] - r['baseline_mb']) / max(inf['peak_mb'] - inf['baseline_mb'], 1e-9):.3f}x"
        )
    es = results["es"]
    print(
        f"ES peak memory / inference peak: {es['peak_mb'] / inf['peak_mb']:.3f}x (target <= 1.25x); "
        f"GRPO: {results['grpo']['peak_mb'] / inf['peak_mb']:.3f}x"
    )
    print(
        f"ES perturb + restore + update share of iteration time: {es['weight_seconds'] / es['seconds']:.3f} "
        f"(target <= 0.10); ES iteration {es['seconds'] / args.iterations:.2f} s, "
        f"inference of the same rollouts {inf['seconds'] / args.iterations:.2f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
