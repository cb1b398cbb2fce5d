"""Our ES against two outside ES implementations on the same CPU vLLM engine: time, memory, update.

    python benchmarks/bench_outside_es.py --model DIR --understanding-es CHECKOUT --es-at-scale CHECKOUT

Each implementation runs in its own fresh process (peak resident memory is per process), on the same
model, population N, Countdown prompts, greedy member rollouts, max new tokens, sigma and alpha, with
our Countdown verifier as the reward, and the same engine settings (fp32, no prefix caching):

  ours              llm.es.ES on VLLMEngine, stock CPU vLLM (packed GEMM kernels, members written by reload)
  ours-plain-gemm   the same on the engine the outside codes get (adaptation 1 below)
  understanding-es  the paper's code: its vLLM worker extension (in-place perturb / revert, update from
                    seeds) driven by its EngineEvaluator and the loop body of its run_training
  es-at-scale       EvolutionStrategiesTrainer.train_step with its worker extension
  ours-batched-hf   our fast path for comparison: llm.es.make_es with population.batched, all members in one
                    batched generate on the HF engine (torch threads: --threads, default as vLLM's)

Run-time adaptations (their checkouts are imported, never modified or copied):
  1. Plain GEMM. vLLM's CPU build repacks every linear weight into a kernel format and leaves the layer's
     `weight` empty, so in-place edits of named_parameters() (how both outside codes perturb) reach only
     the embedding and the norms. Their engines use vLLM's own torch-linear fallback on the live weight.
  2. Ray. Both start one engine per GPU as Ray actors (placement groups asking for a GPU, which a CPU
     machine never grants). Here the engine lives in the process behind a stand-in handle whose
     `handle.method.remote(...)` calls the method at once, and ray.get returns its argument.
     es-at-scale's NCCL broadcast from engine 0 to the others is skipped (there is one engine) and
     torch.cuda.synchronize is a no-op. Its grading pool (multiprocessing, 8 workers) has 2 workers here,
     forked after the engine starts (forked before, this machine's vLLM forward ran about 40x slower).
  3. Rewards. Their graders (GSM8K boxed answer; Countdown answer tags) are replaced by our verifier:
     understanding-es's score_training_response, es-at-scale's reward_function argument.
  4. Python 3.11. es-at-scale's reward_shaping.py nests equal quotes in an f-string (Python >= 3.12); the
     module is compiled from its source with those inner quotes swapped.

Update match on the same seeds: their seeding differs from ours, so ours is driven with THEIR noise.
For their member seeds s_1..s_N, eps_i is what their own perturbation function adds to a zero copy of
each vLLM parameter with seed s_i and scale 1, sliced back to HF tensors (vLLM fuses q/k/v and
gate/up and pads the vocabulary), and injected into llm.es.noise in place of our seed-derived noise. From the
same center, one iteration of theirs and one of ours: member rewards compared, and the weight change
theta_after - theta_before compared tensor by tensor (max |diff| and ||diff|| / ||update||).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from common import peak_mb

OUTSIDE = ("understanding-es", "es-at-scale")
FUSED_ROWS = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")


# ----------------------------------------------------------------------------- engine and adaptations


def use_plain_cpu_gemm() -> None:
    """Adaptation 1: CPU linear layers compute F.linear on their live `weight` (vLLM's own fallback)."""
    import torch
    from vllm.model_executor.layers import utils

    def plain(layer, remove_weight):
        layer.cpu_linear = torch.nn.functional.linear

    utils.dispatch_cpu_unquantized_gemm = plain


def make_engine(model: str, plain_gemm: bool, extension: str | None = None):
    from escov.llm.engines.vllm_engine import VLLMEngine

    if plain_gemm:
        use_plain_cpu_gemm()
    extra = {"worker_extension_cls": extension} if extension else {}
    return VLLMEngine(model, kv_cache_memory_bytes=1 << 28, enable_prefix_caching=False, **extra)


class InProcessActor:
    """Adaptation 2: stands in for a Ray actor handle of an LLM: `h.method.remote(...)` runs it now."""

    def __init__(self, llm, skipped_rpcs: tuple[str, ...] = ()):
        self.llm, self.skipped = llm, set(skipped_rpcs)

    def __getattr__(self, name: str):
        return SimpleNamespace(remote=self._rpc if name == "collective_rpc" else getattr(self.llm, name))

    def _rpc(self, method: str, args=(), kwargs=None):
        return [True] if method in self.skipped else self.llm.collective_rpc(method, args=tuple(args), kwargs=kwargs)


def run_without_ray() -> None:
    import ray
    import torch

    ray.get = lambda refs, **_: refs
    torch.cuda.synchronize = lambda *a, **k: None


_TASK = None


def countdown_reward(response: str, target) -> tuple[str, float]:
    """Adaptation 3, es-at-scale's reward_function signature: (format label, reward) by our verifier."""
    global _TASK
    if _TASK is None:
        from escov.llm.tasks import get_task

        _TASK = get_task("countdown")
    return "", float(_TASK.score(target, response))


def import_es_at_scale(root: Path):
    """es_at_scale.trainer.es_trainer, importable on this vLLM and Python (adaptations 2 and 4)."""
    import importlib.util

    import vllm.utils
    from vllm.utils import network_utils

    sys.path.insert(0, str(root))
    vllm.utils.get_ip, vllm.utils.get_open_port = network_utils.get_ip, network_utils.get_open_port  # moved there
    path = root / "es_at_scale" / "utils" / "reward_shaping.py"
    source = path.read_text()
    fixed = source.replace('{seeds_perf[k]["avg_reward"]}', "{seeds_perf[k]['avg_reward']}")
    if fixed == source and sys.version_info < (3, 12):
        raise ValueError(f"{path}: the f-string this benchmark knows how to fix is not there (other version?)")
    spec = importlib.util.spec_from_loader("es_at_scale.utils.reward_shaping", loader=None, origin=str(path))
    module = importlib.util.module_from_spec(spec)
    exec(compile(fixed, str(path), "exec"), module.__dict__)  # their source, not model output
    sys.modules[spec.name] = module
    from es_at_scale.trainer import es_trainer

    return es_trainer


# ----------------------------------------------------------------------------- weights by HF name


def live_weights(engine) -> dict:
    """Copies of the engine's live vLLM parameters by vLLM name."""
    return engine.llm.apply_model(lambda m: {n: p.detach().clone() for n, p in m.named_parameters()})[0]


def hf_rows(hf_shapes: dict, config: dict) -> dict[str, tuple[str, int, int]]:
    """HF tensor name -> (vLLM tensor name, first row, end row): q/k/v and gate/up are row blocks of
    the fused qkv_proj / gate_up_proj; the embedding is the first vocab rows of vLLM's padded one."""
    head = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    q, kv, inter = (
        config["num_attention_heads"] * head,
        config["num_key_value_heads"] * head,
        config["intermediate_size"],
    )
    blocks = {
        "q_proj": ("qkv_proj", 0, q),
        "k_proj": ("qkv_proj", q, q + kv),
        "v_proj": ("qkv_proj", q + kv, q + 2 * kv),
        "gate_proj": ("gate_up_proj", 0, inter),
        "up_proj": ("gate_up_proj", inter, 2 * inter),
    }
    out = {}
    for name, shape in hf_shapes.items():
        module = name.split(".")[-2]
        if module in blocks:
            fused, start, end = blocks[module]
            out[name] = (name.replace(f".{module}.", f".{fused}."), start, end)
        else:
            out[name] = (name, 0, shape[0])
    return out


def by_hf_name(vllm_tensors: dict, rows: dict, hf_shapes: dict) -> dict:
    out = {}
    for name, (vname, start, end) in rows.items():
        if vname not in vllm_tensors or tuple(vllm_tensors[vname][start:end].shape) != tuple(hf_shapes[name]):
            raise ValueError(f"cannot map HF tensor {name} {tuple(hf_shapes[name])} onto vLLM tensor {vname}")
        out[name] = vllm_tensors[vname][start:end]
    return out


def their_noise(kind: str, checkout: Path, seed: int, shapes: dict) -> dict:
    """What their perturbation function adds to a zero copy of every vLLM tensor with this seed and scale 1."""
    import torch

    zeros = {n: torch.zeros(s) for n, s in shapes.items()}
    if kind == "understanding-es":
        from es_reproduction.worker import _apply_seeded_noise, _stable_tensor_id

        _apply_seeded_noise([(n, _stable_tensor_id(n), z) for n, z in zeros.items()], seed=seed, sigma=1.0)
    else:
        from es_at_scale.utils.worker_extension import WorkerExtension

        worker = WorkerExtension()  # its methods on a stand-in model whose parameters are the zero copies
        worker.model_runner = SimpleNamespace(model=SimpleNamespace(named_parameters=lambda: iter(zeros.items())))
        worker.perturb_self_weights(seed, 1.0)
    return zeros


def inject_noise(es_module, eps_of) -> Callable:
    """Make llm.es.noise take eps_d of every tensor from eps_of(direction, name) (in the parameter's shape),
    for the member writes and the update: its one source, noise_run, gives the run whose parameter layout
    is that eps (a matrix's run is its transpose, row by row). Returns what to put back."""
    saved = es_module.noise_run

    def run(seed, direction, name, numel, chunk=0, device="cpu"):
        eps = eps_of(direction, name)
        return (eps.T if eps.dim() == 2 else eps).contiguous().view(-1)

    es_module.noise_run = run
    return saved


def compare_updates(theirs: dict, ours: dict) -> dict:
    import torch

    diff = max(float((theirs[n] - ours[n]).abs().max()) for n in ours)
    sq = lambda d: sum(float((t.double() ** 2).sum()) for t in d.values())  # noqa: E731
    norm = sq(ours) ** 0.5
    rel = sq({n: theirs[n] - ours[n] for n in ours}) ** 0.5 / max(norm, 1e-30)
    cos = sum(float((theirs[n].double() * ours[n].double()).sum()) for n in ours) / max(norm * sq(theirs) ** 0.5, 1e-30)
    return {
        "max_abs_diff": diff,
        "rel_diff": rel,
        "cosine": cos,
        "update_norm_ours": norm,
        "update_norm_theirs": sq(theirs) ** 0.5,
        "max_abs_update": max(float(t.abs().max()) for t in ours.values()),
        "identical": all(torch.equal(theirs[n], ours[n]) for n in ours),
    }


# ----------------------------------------------------------------------------- one implementation per process


def worker(kind: str, args) -> dict:
    import numpy as np

    import escov.llm.es.noise as es_module
    from escov.llm.es import ESConfig, make_es
    from escov.llm.tasks import get_task

    checkout = Path(getattr(args, kind.replace("-", "_"), "") or ".")
    task = get_task("countdown")
    problems = task.problems("train", args.prompts, seed=0)
    prompts = [p.prompt for p in problems]
    es_cfg = ESConfig(population_size=args.members, sigma=args.sigma, alpha=args.alpha)
    pool = None
    if kind == "understanding-es":
        sys.path.insert(0, str(checkout / "src"))
        import es_reproduction.train as ue_train

        ue_train.score_training_response = lambda response, gold, format_reward: float(task.score(gold, response))
        run_without_ray()
    elif kind == "es-at-scale":
        from multiprocessing import Pool

        es_trainer = import_es_at_scale(checkout)
        run_without_ray()
    baseline = peak_mb()
    if kind == "ours-batched-hf":  # our fast path: every member in one batched generate on the HF engine
        import torch

        from escov.llm.engines.hf import HFEngine
        from escov.llm.es import PopulationConfig, make_es

        if args.threads:
            torch.set_num_threads(args.threads)
        engine = HFEngine(args.model)
        master = {n: p.detach().float().clone() for n, p in engine.model.named_parameters()}
        es = make_es(
            es_cfg,
            engine,
            task,
            list(master),
            master,
            max_new_tokens=args.tokens,
            seed=0,
            population=PopulationConfig(batched=True),
        )
        times = []
        for it in range(args.warmup + args.iterations):
            step = es.step(problems, it)
            if it >= args.warmup:
                times.append(step.seconds)
        n_params = sum(t.numel() for t in master.values())
        return {
            "kind": kind,
            "baseline_mb": baseline,
            "parameters": n_params,
            "live_parameter_elements": n_params,
            "seconds": times,
            "peak_mb": peak_mb(),
        }
    extension = {
        "understanding-es": "es_reproduction.worker.WorkerExtension",
        "es-at-scale": "es_at_scale.utils.worker_extension.WorkerExtension",
    }.get(kind)
    engine = make_engine(args.model, plain_gemm=kind != "ours", extension=extension)
    center = {n: t.float().clone() for n, t in engine.weights.items()}
    out: dict = {"kind": kind, "baseline_mb": baseline, "parameters": sum(t.numel() for t in center.values())}
    out["live_parameter_elements"] = sum(t.numel() for t in live_weights(engine).values())
    handle = InProcessActor(engine.llm, skipped_rpcs=("broadcast_all_weights",))
    if kind == "es-at-scale":
        pool = Pool(2)  # its grading pool (8 processes in its code)

    if kind in ("ours", "ours-plain-gemm"):
        master = {n: t.clone() for n, t in center.items()}
        es = make_es(es_cfg, engine, task, list(master), master, max_new_tokens=args.tokens, seed=0)
        iteration = lambda it: es.step(problems, it)  # noqa: E731
    elif kind == "understanding-es":
        handle.collective_rpc.remote("init_es")
        evaluator = ue_train.EngineEvaluator(handle, format_reward=0.0)
        rng = np.random.default_rng(42)

        def iteration(it, seeds=None):  # the loop body of their run_training, one engine
            seeds = seeds or rng.integers(0, 2**32, size=args.members).tolist()
            rewards = np.array(evaluator.evaluate_perturbations(seeds, args.sigma, prompts, problems, args.tokens))
            z = ue_train.normalize_population_rewards(rewards, ddof=0, epsilon=1e-8)
            handle.collective_rpc.remote("apply_population_update", args=[seeds, z.tolist(), args.alpha])
            return rewards
    else:
        trainer = object.__new__(es_trainer.EvolutionStrategiesTrainer)  # its __init__ starts Ray on GPUs
        trainer.__dict__.update(
            engines=[handle],
            n_vllm_engines=1,
            population_size=args.members,
            sigma=args.sigma,
            alpha=args.alpha,
            max_tokens=args.tokens,
            mini_batch_size=args.prompts,
            n_samples=1,
            rollout_reduce="mean",
            train_temperature=0.0,
            train_top_p=1.0,
            global_seed=42,
            logging="none",
            wandb=None,
            task=countdown_reward,
            reward_function_timeout=60,
            mp_pool=pool,
            tokenizer=engine.tokenizer,
        )
        captured: dict = {}
        z_score = es_trainer.z_score
        es_trainer.z_score = lambda perf, **kw: (
            captured.update(rewards=[v["avg_reward"] for v in perf.values()]) or z_score(perf, **kw)
        )

        def iteration(it, seeds=None):  # the seed list of their fit(), then train_step
            seeds = (
                seeds or np.random.default_rng(42 + it).integers(0, 2**30, size=args.members, dtype=np.int64).tolist()
            )
            trainer.train_step(it, seeds, prompts, problems)
            return np.array(captured["rewards"])

    times = []
    for it in range(args.warmup + args.iterations):
        t0 = time.perf_counter()
        iteration(it)
        if it >= args.warmup:
            times.append(time.perf_counter() - t0)
    out |= {"seconds": times, "peak_mb": peak_mb()}

    if kind in OUTSIDE and args.match:
        out["match"] = match_update(
            kind, checkout, engine, handle, iteration, center, es_module, es_cfg, task, problems, args
        )
    if pool is not None:
        pool.terminate()
    return out


def match_update(
    kind, checkout, engine, handle, their_iteration, center, es_module, es_cfg, task, problems, args
) -> dict:
    """One iteration of theirs and one of ours (driven with their noise) from the same center."""
    import numpy as np
    import torch

    from escov.llm.es import make_es

    config = json.loads((Path(args.model) / "config.json").read_text())
    hf_shapes = {n: tuple(t.shape) for n, t in center.items()}
    rows = hf_rows(hf_shapes, config)
    seeds = [int(s) for s in np.random.default_rng(7).integers(1, 2**30, size=args.members)]

    engine.load_weights(center.items())  # the engine back at the center (the timed iterations moved it)
    if kind == "understanding-es":
        handle.collective_rpc.remote("init_es")
    before = live_weights(engine)
    their_rewards = their_iteration(args.warmup + args.iterations, seeds=seeds)
    after = live_weights(engine)
    theirs = by_hf_name({n: after[n] - before[n] for n in before}, rows, hf_shapes)

    shapes = {n: tuple(t.shape) for n, t in before.items()}
    noises = [by_hf_name(their_noise(kind, checkout, s, shapes), rows, hf_shapes) for s in seeds]
    first = noises[0]
    shared = sum(
        any(m != n and first[m].shape == t.shape and torch.equal(first[m], t) for m in first) for n, t in first.items()
    )
    engine.load_weights(center.items())
    master = {n: t.clone() for n, t in center.items()}
    ours_es = make_es(es_cfg, engine, task, list(master), master, max_new_tokens=args.tokens, seed=0)
    saved = inject_noise(es_module, lambda direction, name: noises[direction][name])
    try:
        step = ours_es.step(problems, 0)
    finally:
        es_module.noise_run = saved
    ours = {n: master[n] - center[n] for n in center}
    result = compare_updates(theirs, ours)
    result |= {
        "rewards_theirs": [float(r) for r in their_rewards],
        "rewards_ours": [float(r) for r in step.rewards],
        "rewards_equal": bool(np.array_equal(np.asarray(their_rewards, float), step.rewards)),
        "hf_tensors_with_noise_equal_to_another_tensor": [int(shared), len(noises[0])],
    }
    return result


# ----------------------------------------------------------------------------- side by side


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = list(results)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.5))
    a.bar(kinds, [results[k]["seconds_per_iteration"] for k in kinds])
    a.set_ylabel("seconds per ES iteration (median)")
    b.bar(kinds, [results[k]["peak_mb"] for k in kinds])
    b.set_ylabel("peak RSS (MB)")
    for ax in (a, b):
        ax.tick_params(axis="x", rotation=20)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    from tqdm import tqdm

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="model directory (head size a multiple of 32); default: a random-init Llama")
    ap.add_argument("--understanding-es", help="checkout of yunpengba7/understanding-es")
    ap.add_argument("--es-at-scale", help="checkout of VsonicV/es-at-scale")
    ap.add_argument("--members", type=int, default=8, help="population size N")
    ap.add_argument("--prompts", type=int, default=16, help="Countdown prompts per iteration (one greedy rollout each)")
    ap.add_argument("--tokens", type=int, default=20, help="max new tokens")
    ap.add_argument("--sigma", type=float, default=0.01)
    ap.add_argument("--alpha", type=float, default=0.005)
    ap.add_argument("--warmup", type=int, default=1, help="iterations per process not timed")
    ap.add_argument("--iterations", type=int, default=3, help="timed iterations per process")
    ap.add_argument("--rounds", type=int, default=2, help="processes per implementation, interleaved")
    ap.add_argument("--no-match", dest="match", action="store_false", help="skip the update comparison")
    ap.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads of ours-batched-hf (0: torch's default, as the vLLM processes get)",
    )
    ap.add_argument("--out", default="bench_out")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args)))
        return 0
    for name in OUTSIDE:
        path = getattr(args, name.replace("-", "_"))
        marker = {
            "understanding-es": "src/es_reproduction/worker.py",
            "es-at-scale": "es_at_scale/trainer/es_trainer.py",
        }[name]
        if path and not (Path(path) / marker).is_file():
            raise ValueError(f"--{name} {path!r} is not a checkout of it (no {marker})")
    if args.members < 2 or args.prompts < 1 or args.tokens < 1 or args.iterations < 1 or args.rounds < 1:
        raise ValueError("--members must be >= 2 and --prompts, --tokens, --iterations, --rounds >= 1")
    kinds = ["ours", "ours-plain-gemm", "ours-batched-hf"] + [k for k in OUTSIDE if getattr(args, k.replace("-", "_"))]
    tmp = tempfile.TemporaryDirectory()
    if args.model is None:
        from escov.llm.tinymodel import save_untrained_llama

        args.model = str(save_untrained_llama(Path(tmp.name) / "model", 64, 4, intermediate_size=256))
    forwarded = [
        f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k not in ("worker", "match") and v is not None
    ]
    forwarded += [] if args.match else ["--no-match"]
    runs: dict[str, list[dict]] = {k: [] for k in kinds}
    for r, kind in tqdm([(r, k) for r in range(args.rounds) for k in kinds], desc="processes"):
        if r > 0:
            forwarded = [f for f in forwarded if f != "--no-match"] + ["--no-match"]  # the match needs one run
        done = subprocess.run([sys.executable, __file__, "--worker", kind, *forwarded], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{kind} failed:\n{done.stderr[-3000:]}")
        runs[kind].append(json.loads(done.stdout.strip().splitlines()[-1]))
    results = {}
    for kind, rs in runs.items():
        results[kind] = {
            "seconds_per_iteration": statistics.median(s for r in rs for s in r["seconds"]),
            "peak_mb": statistics.median(r["peak_mb"] for r in rs),
            "above_baseline_mb": statistics.median(r["peak_mb"] - r["baseline_mb"] for r in rs),
            "parameters": rs[0]["parameters"],
            "live_parameter_elements": rs[0]["live_parameter_elements"],
            "match": rs[0].get("match"),
        }
    ours = results["ours"]
    print(
        f"model {results['ours']['parameters']:,} parameters, N = {args.members}, {args.prompts} prompts x 1 greedy "
        f"rollout, {args.tokens} new tokens, sigma {args.sigma}, alpha {args.alpha}; "
        f"{args.rounds} process(es) x {args.iterations} timed iterations each"
    )
    print(
        f"{'implementation':>17} {'s/iter':>7} {'/ours':>6} {'peak MB':>8} {'/ours':>6} "
        f"{'above base MB':>14} {'/ours':>6}"
    )
    for kind, r in results.items():
        print(
            f"{kind:>17} {r['seconds_per_iteration']:7.3f} "
            f"{r['seconds_per_iteration'] / ours['seconds_per_iteration']:6.2f} "
            f"{r['peak_mb']:8.1f} {r['peak_mb'] / ours['peak_mb']:6.3f} {r['above_baseline_mb']:14.1f} "
            f"{r['above_baseline_mb'] / ours['above_baseline_mb']:6.2f}"
        )
    print(
        f"stock CPU vLLM: named_parameters() hold {ours['live_parameter_elements']:,} of "
        f"{ours['parameters']:,} weights "
        f"(what in-place perturbation reaches); plain GEMM: {results['ours-plain-gemm']['live_parameter_elements']:,}"
    )
    for kind in OUTSIDE:
        m = results.get(kind, {}).get("match")
        if m:
            print(
                f"{kind} vs ours on its noise: rewards equal {m['rewards_equal']} | update max |diff| "
                f"{m['max_abs_diff']:.3g} (max |update| {m['max_abs_update']:.3g}), "
                f"||diff||/||update|| {m['rel_diff']:.3g}, "
                f"cosine {m['cosine']:.9f}, bit-identical {m['identical']} | HF tensors whose noise equals another "
                f"tensor's: {m['hf_tensors_with_noise_equal_to_another_tensor'][0]}/"
                f"{m['hf_tensors_with_noise_equal_to_another_tensor'][1]}"
            )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "outside_es_bench.json").write_text(
        json.dumps({"settings": vars(args), "results": results, "runs": runs}, indent=1)
    )
    plot(results, out / "outside_es_bench.png")
    print(f"wrote {out / 'outside_es_bench.json'} and {out / 'outside_es_bench.png'}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
