"""Population-batched ES generation against its limit and against member-by-member, side by side.

    python benchmarks/bench_population.py                       # the shipped base (trained), N = 8,16,32
    python benchmarks/bench_population.py --presets test,default  # random-init models of these shapes
    python benchmarks/bench_population.py --model RUN/checkpoints/step-40 --members 16 --repeats 5

The default model is the quick look's shipped base (paper_checks/reproduce/bases: the `paper` preset, the default's
shape, trained), so members' rewards differ and the ES update does real work. On a random-init model every
member scores 0, the update is zero and its cost is not measured: the benchmark counts such updates
and says so.

For each model and population size N, one ES iteration (greedy members, B prompts each, T new tokens) is
timed in four ways, interleaved repeat by repeat so that they share the machine's load:

    limit         plain batched generation of the same N x B sequences in one call, shared center weights,
                  and the verifier's scoring of them (work every ES iteration has too)
    member        member by member: the trainer's ES.step (write member, generate, restore; then update)
    batched-full  PopulationES.step, full-rank noise, all members in one batched generate
    batched-lowr  PopulationES.step, low-rank noise (rank r), all members in one batched generate,
                  applied factored: x W^T + (x B_m) A_m^T
    batched-lowr-stacked  the same low-rank members, stacked once per iteration (W_m), one grouped matmul

It prints median seconds, the ratios to the limit (generation only: iteration minus weight work) and
member / batched speed-ups, the ES overhead share (noise, perturb, restore, update over iteration time),
and how many greedy completions of the batched population differ from member by member at the first
iteration (floating-point near-ties). Writes population_bench.json and population_bench.png to --out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from common import random_model

from escov.llm.engines.hf import HFEngine
from escov.llm.es import ES, ESConfig, PopulationConfig, make_es, select_parameters
from escov.llm.es.batched_hf import PopulationWeights, generate_population
from escov.llm.rollout import rollout
from escov.llm.tasks import get_task

VARIANTS = ("limit", "member", "batched-full", "batched-lowr", "batched-lowr-stacked")


def shipped_base() -> Path:
    """The quick look's base model as it ships with the repository (paper_checks/reproduce/bases)."""
    from escov.paper_checks.reproduce.bases import SHIPPED_RECIPES, shipped_base_dir

    path = shipped_base_dir(*SHIPPED_RECIPES[0])
    if not (path / "config.json").exists():
        raise SystemExit(
            f"no shipped base at {path} (torch or code changed): run python -m escov.paper_checks bases, "
            "or give --model or --presets"
        )
    return path


def trainer(model_dir: str, n: int, batched: bool | None, rank: int, args, layout: str = "factored") -> ES:
    """ES on a fresh engine, fp32 master: plain (batched None: one by one, full rank, no kept noise) or with
    these population options."""
    engine = HFEngine(model_dir, max_batch_size=max(256, n * args.prompts))
    cfg = ESConfig(population_size=n, sigma=args.sigma, alpha=args.alpha, antithetic=args.antithetic)
    names = select_parameters(engine.model.named_parameters(), "")
    master = {k: p.detach().float().clone() for k, p in engine.model.named_parameters() if k in names}
    kw = dict(max_new_tokens=args.tokens, seed=0)
    population = (
        PopulationConfig()
        if batched is None
        else PopulationConfig(batched=batched, noise_rank=rank, max_rows=n * args.prompts, lowrank_layout=layout)
    )
    return make_es(cfg, engine, get_task("countdown"), names, master, population=population, **kw)


def greedy_mismatches(model_dir: str, n: int, rank: int, problems, args) -> tuple[int, int]:
    """(differing completions, all completions): batched population vs member by member, iteration 0."""
    es = trainer(model_dir, n, False, rank, args)
    plan = es.plan(0)
    prompts = [p.prompt for p in problems]
    weights = PopulationWeights.build(es.center.master, es.center.noise, plan, torch.float32)
    batched = generate_population(
        es.members.engine,
        weights,
        prompts,
        n=1,
        temperature=0.0,
        max_new_tokens=args.tokens,
        seed=0,
        max_rows=n * len(prompts),
    )
    differ = 0
    for m in plan.members:
        es.center.perturb(plan, m)
        own = es.members.engine.generate(prompts, n=1, temperature=0.0, max_new_tokens=args.tokens, seed=0)
        es.center.restore(plan, m)
        differ += sum(a[0].token_ids != b[0].token_ids for a, b in zip(batched[m.index], own))
    return differ, n * len(prompts)


def bench_one(model_dir: str, n: int, problems, args) -> dict:
    task = get_task("countdown")
    runners = {
        "member": trainer(model_dir, n, None, 0, args),
        "batched-full": trainer(model_dir, n, True, 0, args),
        "batched-lowr": trainer(model_dir, n, True, args.rank, args),
        "batched-lowr-stacked": trainer(model_dir, n, True, args.rank, args, layout="stacked"),
    }
    limit_engine = runners["member"].members.engine  # same weights as the center before the first update
    times = {v: [] for v in VARIANTS}
    weight = {v: [] for v in VARIANTS}
    zero_updates = 0  # recorded ES iterations whose fitness was all zero (no update work was done)
    for rep in range(-1, args.repeats):  # repeat -1 warms up and is not recorded
        for v in VARIANTS:
            t0 = time.perf_counter()
            if v == "limit":
                rollout(
                    limit_engine,
                    task,
                    problems * n,
                    n=1,
                    temperature=0.0,
                    max_new_tokens=args.tokens,
                    seed=rep + 1,
                    step=rep + 1,
                )
                seconds, weight_seconds = time.perf_counter() - t0, 0.0
            else:
                out = runners[v].step(problems, rep + 1)
                seconds, weight_seconds = out.seconds, out.weight_seconds
                zero_updates += rep >= 0 and not out.z.any()
            if rep >= 0:
                times[v].append(seconds)
                weight[v].append(weight_seconds)
    med = {v: statistics.median(times[v]) for v in VARIANTS}
    gen = {v: statistics.median([t - w for t, w in zip(times[v], weight[v])]) for v in VARIANTS}
    share = {v: statistics.median([w / t for t, w in zip(times[v], weight[v])]) for v in VARIANTS if v != "limit"}
    row = {
        "members": n,
        "rows": n * len(problems),
        "seconds": med,
        "generation_seconds": gen,
        "es_overhead_share": share,
        "gen_ratio_to_limit": {v: gen[v] / gen["limit"] for v in VARIANTS},
        "iteration_ratio_to_limit": {v: med[v] / med["limit"] for v in VARIANTS},
        "speedup_over_member": {v: med["member"] / med[v] for v in VARIANTS[2:]},
        "zero_updates": f"{zero_updates} of {args.repeats * (len(VARIANTS) - 1)}",
    }
    if n in args.check_members:
        row["greedy_mismatch_full"] = greedy_mismatches(model_dir, n, 0, problems, args)
        row["greedy_mismatch_lowr"] = greedy_mismatches(model_dir, n, args.rank, problems, args)
    return row


def summary(label: str, row: dict) -> str:
    r, s, o = row["gen_ratio_to_limit"], row["speedup_over_member"], row["es_overhead_share"]
    text = (
        f"{label} N={row['members']} rows={row['rows']} limit {row['seconds']['limit']:.3f}s\n"
        "  generation / limit:   " + "  ".join(f"{v} {r[v]:.2f}x" for v in VARIANTS[1:]) + "\n"
        "  iteration / limit:    "
        + "  ".join(f"{v} {row['iteration_ratio_to_limit'][v]:.2f}x" for v in VARIANTS[1:])
        + "\n"
        "  speed-up over member: " + "  ".join(f"{v} {s[v]:.2f}x" for v in VARIANTS[2:]) + "\n"
        "  ES overhead share:    "
        + "  ".join(f"{v} {o[v]:.1%}" for v in VARIANTS[1:])
        + f"\n  zero updates (all rewards equal: the update's cost not measured): {row['zero_updates']}"
    )
    if "greedy_mismatch_full" in row:
        (a, n), (b, _) = row["greedy_mismatch_full"], row["greedy_mismatch_lowr"]
        text += f"\n  greedy completions differing from member by member: full {a}/{n}  low rank {b}/{n}"
    return text


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.6), squeeze=False)
    for ax, (model, rows) in zip(axes[0], results.items()):
        ns = [r["members"] for r in rows]
        for v in VARIANTS[1:]:
            ax.plot(ns, [r["iteration_ratio_to_limit"][v] for r in rows], marker="o", label=v)
        ax.axhline(1.0, color="k", lw=0.8, ls="--", label="limit (shared weights, one call)")
        ax.set(
            xscale="log",
            xticks=ns,
            xticklabels=ns,
            xlabel="population size N",
            ylabel="iteration time / limit",
            title=model,
        )
        ax.minorticks_off()
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", default=[], help="model directory (repeatable); default: presets")
    ap.add_argument(
        "--presets", default="", help="tinymodel presets, random init (comma-separated), instead of the shipped base"
    )
    ap.add_argument("--members", default="8,16,32")
    ap.add_argument("--prompts", type=int, default=32, help="B: greedy rollouts (prompts) per member")
    ap.add_argument("--tokens", type=int, default=20, help="new tokens per rollout")
    ap.add_argument("--rank", type=int, default=4, help="low-rank noise rank r")
    ap.add_argument("--sigma", type=float, default=1.5e-3)
    ap.add_argument("--alpha", type=float, default=2.5e-4)
    ap.add_argument("--antithetic", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--check-members", default="16", help="N at which greedy rollouts are compared")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="bench_out")
    args = ap.parse_args()
    members = [int(x) for x in args.members.split(",")]
    args.check_members = {int(x) for x in args.check_members.split(",") if x}
    if args.repeats < 1 or args.prompts < 1 or args.tokens < 1:
        raise ValueError("--repeats, --prompts and --tokens must be >= 1")
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    problems = get_task("countdown").problems("train", args.prompts, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        models = {m: m for m in args.model} | {
            f"{p} preset (random init)": str(random_model(Path(tmp) / p, preset=p))
            for p in args.presets.split(",")
            if p
        }
        models = models or {"the shipped base (trained)": str(shipped_base())}
        results = {}
        for label, model_dir in models.items():
            params = sum(p.numel() for p in HFEngine(model_dir).model.parameters())
            label = f"{label}, {params / 1e6:.3f}M params"
            results[label] = []
            for n in members:
                row = bench_one(model_dir, n, problems, args)
                results[label].append(row)
                print(summary(label, row), flush=True)
    settings = {k: v for k, v in vars(args).items() if k not in ("check_members",)}
    (out / "population_bench.json").write_text(json.dumps({"settings": settings, "results": results}, indent=1))
    plot(results, out / "population_bench.png")
    print(f"wrote {out / 'population_bench.json'} and {out / 'population_bench.png'}")


if __name__ == "__main__":
    main()
