"""What low-rank (EGGROLL) noise does to ES learning, against full-rank ES at equal budget.

    python benchmarks/bench_lowrank_learning.py --model BASE_DIR [--ranks 0,1,4 --steps 30 --members 16]

Every variant starts from the same base model and runs the same iterations (same N, sigma, alpha,
prompt batches, seeds; greedy members; population-batched generation): only the noise rank differs
(0 = full rank). Each iteration's population reward, the center's greedy accuracy on held-out test
prompts before and after, and each variant's seconds per iteration are printed and written to
lowrank_learning.json / lowrank_learning.png in --out.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from escov.llm.engines.hf import HFEngine
from escov.llm.es import ESConfig, PopulationConfig, make_es, select_parameters
from escov.llm.rollout import derive_seed, rollout
from escov.llm.tasks import get_task


def greedy_accuracy(engine: HFEngine, task, problems, tokens: int) -> float:
    return float(
        rollout(engine, task, problems, n=1, temperature=0.0, max_new_tokens=tokens, seed=0, step=0).rewards.mean()
    )


def run_variant(rank: int, args, task, pool, test) -> dict:
    torch.manual_seed(0)
    engine = HFEngine(args.model, max_batch_size=4096)
    cfg = ESConfig(population_size=args.members, sigma=args.sigma, alpha=args.alpha, antithetic=args.antithetic)
    names = select_parameters(engine.model.named_parameters(), "")
    master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
    es = make_es(
        cfg,
        engine,
        task,
        names,
        master,
        max_new_tokens=args.tokens,
        seed=args.seed,
        population=PopulationConfig(batched=True, noise_rank=rank),
    )
    before = greedy_accuracy(engine, task, test, args.tokens)
    rewards, seconds = [], []
    for step in tqdm(range(args.steps), desc=f"rank {rank}", leave=False):
        idx = np.random.default_rng(derive_seed(args.seed, step, "batch")).choice(len(pool), args.batch, replace=False)
        out = es.step([pool[i] for i in sorted(idx)], step)
        rewards.append(float(out.rewards.mean()))
        seconds.append(out.seconds)
    return {
        "rank": rank,
        "population_reward": rewards,
        "test_greedy_before": before,
        "test_greedy_after": greedy_accuracy(engine, task, test, args.tokens),
        "seconds_per_iteration": float(np.median(seconds)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="base model directory (a trained tinymodel preset)")
    ap.add_argument("--task", default="countdown")
    ap.add_argument("--ranks", default="0,1,4", help="noise ranks to compare (0 = full rank)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--members", type=int, default=16)
    ap.add_argument("--batch", type=int, default=32, help="prompts per iteration")
    ap.add_argument("--tokens", type=int, default=20)
    ap.add_argument("--sigma", type=float, default=1e-2)
    ap.add_argument("--alpha", type=float, default=5e-3)
    ap.add_argument("--antithetic", action="store_true")
    ap.add_argument("--test-problems", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="bench_out")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    task = get_task(args.task)
    pool = task.problems("train", 512, seed=args.seed)
    test = task.problems("test", args.test_problems, seed=args.seed)
    results = []
    for rank in (int(r) for r in args.ranks.split(",")):
        res = run_variant(rank, args, task, pool, test)
        results.append(res)
        r = res["population_reward"]
        print(
            f"rank {rank or 'full':>4}: population reward first 5 iters {np.mean(r[:5]):.3f} -> "
            f"last 5 {np.mean(r[-5:]):.3f} | "
            f"test greedy {res['test_greedy_before']:.3f} -> {res['test_greedy_after']:.3f} | "
            f"{res['seconds_per_iteration']:.2f} s/iteration",
            flush=True,
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lowrank_learning.json").write_text(json.dumps({"settings": vars(args), "results": results}, indent=1))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for res in results:
        ax.plot(res["population_reward"], label=f"rank {res['rank']}" if res["rank"] else "full rank")
    ax.set(xlabel="ES iteration", ylabel="mean population reward", title=f"{args.task}: ES noise rank, equal budget")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "lowrank_learning.png", dpi=110)
    print(f"wrote {out / 'lowrank_learning.json'} and {out / 'lowrank_learning.png'}")


if __name__ == "__main__":
    main()
