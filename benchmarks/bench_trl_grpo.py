"""Our GRPO against TRL's GRPOTrainer on the same model, prompts and settings, side by side in one run.

    python benchmarks/bench_trl_grpo.py [--model runs/base-default] [--config configs/tiny-countdown-grpo.toml]
                                        [--repeats 5] [--threads 1] [--out bench_out]

Needs `trl` (pip install trl==1.16.0; it brings accelerate, datasets, pandas). Nothing is downloaded:
TRL gets the local model directory, an in-memory datasets.Dataset of Countdown prompts and our
verifier as its reward function.

1. Step time and memory. Two worker processes (ours, TRL), each holding its own policy, reference
   and AdamW state, take optimizer steps in turn on the same prompts (B prompts x G completions
   sampled with HF generation, at the same temperature, max new tokens, lr, beta, epsilon and
   loss_type); the order alternates every round and the first round is a warm-up. Printed: the
   median seconds per optimizer step and their ratio, and each process's peak resident memory
   (ru_maxrss, RSS) with its baseline after imports. A step is the whole optimizer step: rollout,
   rewards, reference log-probs, loss, backward, clipping and AdamW (TRL: on_step_begin to
   on_step_end of its Trainer loop).
2. Loss on an identical batch. Same prompt ids, completion ids, rewards, advantages, old log-probs
   (of the base model) and reference log-probs (of a second perturbed copy), with the policy a
   perturbed copy of the base so that ratios move and some are clipped. TRL's loss comes from
   GRPOTrainer.compute_loss on prepared inputs, ours from escov.llm.grpo.grpo_loss on
   llm.rollout.completion_logprobs, as GRPO.step composes them; then both gradients. Printed:
   absolute and relative differences of loss and gradient, per setting.
Settings mapped (TRL default -> what means the same as ours): loss_type dapo -> grpo | bnpo,
use_bias_correction_kl True -> False, gradient_checkpointing True -> False, lr_scheduler_type
linear -> constant, shuffle_dataset True -> False, beta 0.0 -> ours, scale_rewards "group" (same),
importance_sampling_level "token" (same), mask_truncated_completions False (same), epsilon_high =
epsilon. Not mappable: TRL's group std is Bessel-corrected (ddof 1), ours the population std
(ddof 0, as the paper states): part 2 runs TRL's own generate-and-score path on the batch and
prints its advantages against ours on the same rewards, then feeds both losses our advantages.
Writes trl_grpo_bench.json and trl_grpo_bench.png to --out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import peak_mb  # noqa: E402

from escov.llm.trl_reference import (
    Settings,
    identical_batch,
    loss_case,
    perturbed,  # noqa: E402
    step_problems,
    trl_trainer,
)

RESULT = "RESULT "  # prefix of the protocol lines a worker prints (other output is ignored)


def _emit(obj: dict) -> None:
    print(RESULT + json.dumps(obj), flush=True)


def _wait_for_command() -> str:
    line = sys.stdin.readline().strip()
    if line not in ("step", "done"):
        raise ValueError(f"worker: expected 'step' or 'done' on stdin, got {line!r}")
    return line


# ----------------------------------------------------------------------------- part 1: workers


def worker_ours(s: Settings, steps: int) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from escov.llm.engines.hf import HFEngine
    from escov.llm.grpo import GRPO, GRPOConfig

    torch.set_num_threads(s.threads)
    baseline = peak_mb()
    task, batches = step_problems(s, steps)
    engine = HFEngine(s.model)
    reference = AutoModelForCausalLM.from_pretrained(s.model, dtype=torch.float32)
    cfg = GRPOConfig(
        num_generations=s.num_generations,
        learning_rate=s.learning_rate,
        beta=s.beta,
        epsilon=s.epsilon,
        loss_type=s.loss_type,
        max_grad_norm=s.max_grad_norm,
        micro_batch_size=s.batch * s.num_generations,
    )
    grpo = GRPO(
        cfg,
        engine,
        task,
        engine.model,
        reference,
        engine.prompt_token_ids,
        temperature=s.temperature,
        max_new_tokens=s.max_new_tokens,
        seed=s.seed,
        pad_id=engine.tokenizer.pad_token_id,
    )
    for k in range(steps):
        _wait_for_command()
        t0 = time.perf_counter()
        out = grpo.step(batches[k], k).rollouts
        _emit(
            {
                "seconds": time.perf_counter() - t0,
                "mean_length": out.n_tokens / out.rewards.size,
                "reward": float(out.rewards.mean()),
            }
        )
    _wait_for_command()
    _emit({"peak_mb": peak_mb(), "baseline_mb": baseline})


def worker_trl(s: Settings, steps: int) -> None:
    import torch
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOTrainer  # noqa: F401  imported before the baseline, as llm in worker_ours (it imports vllm
    #                              when vllm is installed: that cost is in TRL's baseline, not in its training memory)

    torch.set_num_threads(s.threads)
    baseline = peak_mb()
    task, batches = step_problems(s, steps)
    problems = [p for b in batches for p in b]

    class Lockstep(TrainerCallback):
        """Waits for the parent's command before each optimizer step and reports its duration after it."""

        def __init__(self):
            self.trainer, self.t0 = None, 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            _wait_for_command()
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            seconds = time.perf_counter() - self.t0
            metrics = self.trainer._metrics["train"]
            _emit(
                {
                    "seconds": seconds,
                    "mean_length": metrics["completions/mean_length"][-1],
                    "reward": metrics["reward"][-1],
                }
            )

    lockstep = Lockstep()
    model = AutoModelForCausalLM.from_pretrained(s.model, dtype=torch.float32)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = trl_trainer(s, model, task, problems, tmp, callbacks=[lockstep], max_steps=steps)
        lockstep.trainer = trainer
        trainer.train()
    _wait_for_command()
    _emit({"peak_mb": peak_mb(), "baseline_mb": baseline})


class Worker:
    """A worker process driven line by line: 'step' -> one optimizer step, 'done' -> its peak memory."""

    def __init__(self, kind: str, s: Settings, steps: int, log):
        cmd = [sys.executable, __file__, "--worker", kind, "--steps", str(steps), "--settings", json.dumps(asdict(s))]
        self.kind = kind
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)

    def ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith(RESULT):
                return json.loads(line[len(RESULT) :])
        raise RuntimeError(f"{self.kind} worker exited (code {self.proc.wait()}) without answering {command!r}")


def bench_steps(s: Settings, repeats: int) -> dict:
    """Interleaved optimizer steps of both workers; round 0 is a warm-up."""
    from tqdm import tqdm

    with tempfile.TemporaryFile("w+") as log:
        workers = {kind: Worker(kind, s, repeats + 1, log) for kind in ("ours", "trl")}
        rows = {kind: [] for kind in workers}
        try:
            for r in tqdm(range(repeats + 1), desc="interleaved steps (ours, TRL)"):
                for kind in ("ours", "trl") if r % 2 == 0 else ("trl", "ours"):
                    rows[kind].append(workers[kind].ask("step"))
            peaks = {kind: w.ask("done") for kind, w in workers.items()}
        except RuntimeError:
            log.seek(0)
            sys.stderr.write(log.read()[-5000:])
            raise
        finally:
            for w in workers.values():
                w.proc.wait(timeout=60)
    return {kind: {"steps": rows[kind][1:], **peaks[kind]} for kind in workers}


# ----------------------------------------------------------------------------- part 2: identical batch


def compare_advantages(s: Settings, task, problems) -> dict:
    """TRL's advantages from its own generate-and-score path on one batch, against group_advantages of the same
    rewards."""
    import numpy as np

    from escov.llm.grpo import group_advantages

    seen: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        trainer = trl_trainer(s, perturbed(s.model, 0.0, s.seed), task, problems, tmp, rewards_seen=seen)
        trainer.model.train(False)
        rows = [{"prompt": p.prompt, "problem": i} for i, p in enumerate(problems) for _ in range(s.num_generations)]
        adv_trl = trainer._generate_and_score_completions(rows)["advantages"].numpy().reshape(-1, s.num_generations)
    rewards = np.array(seen).reshape(-1, s.num_generations)
    adv_ours = group_advantages(rewards, "group")
    nonzero = adv_ours != 0
    return {
        "groups_with_spread": int((rewards.std(axis=1) > 0).sum()),
        "groups": len(problems),
        "max_abs_diff": float(np.abs(adv_trl - adv_ours).max()),
        "median_ratio_trl_over_ours": float(np.median(adv_trl[nonzero] / adv_ours[nonzero])) if nonzero.any() else None,
        "sqrt((G-1)/G)": float(np.sqrt((s.num_generations - 1) / s.num_generations)),
    }


def compare_losses(s: Settings, cases) -> dict:
    """Advantages of both on the same rewards; then, per case, both losses and gradients on the identical batch."""
    import torch

    from escov.llm.grpo import group_advantages

    torch.set_num_threads(s.threads)
    task, problems, out, ours_batch, trl_inputs = identical_batch(s)
    adv = torch.tensor(group_advantages(out.rewards, "group").reshape(-1), dtype=torch.float32)
    return {
        "advantages": compare_advantages(s, task, problems),
        "completion_tokens": int(ours_batch["mask"].sum()),
        "cases": [loss_case(s, task, problems, ours_batch, trl_inputs, adv, *case) for case in cases],
    }


# ----------------------------------------------------------------------------- main

# (loss_type, beta (None: the config's), TRL's use_bias_correction_kl, on-policy: old log-probs = the policy's own)
CASES = (
    ("grpo", None, False, False),
    ("bnpo", None, False, False),
    ("grpo", 0.04, False, False),
    ("grpo", 0.04, False, True),  # mapped settings: should agree within fp32 noise
    ("grpo", 0.04, True, False),
    ("grpo", 0.04, True, True),
)  # TRL's default bias-corrected KL: differs


def settings_from(args) -> Settings:
    """Settings of the training config (its [grpo] table and top-level keys), overridden by flags."""
    from escov.llm.config import TrainConfig, tomllib  # tomllib, or tomli on Python 3.10

    cfg = TrainConfig.from_dict(tomllib.loads(Path(args.config).read_text()), source=args.config)
    s = Settings(
        model=args.model,
        batch=cfg.batch_size,
        num_generations=cfg.grpo.num_generations,
        max_new_tokens=cfg.max_completion_length,
        temperature=cfg.temperature,
        learning_rate=cfg.grpo.learning_rate,
        beta=cfg.grpo.beta,
        epsilon=cfg.grpo.epsilon,
        loss_type=cfg.grpo.loss_type,
        max_grad_norm=cfg.grpo.max_grad_norm,
        threads=args.threads,
        seed=args.seed,
    )
    for name in ("batch", "max_new_tokens", "loss_type"):
        if getattr(args, name) is not None:
            setattr(s, name, getattr(args, name))
    return s


def print_steps(s: Settings, res: dict) -> None:
    med = {k: statistics.median(r["seconds"] for r in res[k]["steps"]) for k in res}
    print(
        f"\n1. optimizer step (B = {s.batch} prompts x G = {s.num_generations}, {s.max_new_tokens} new tokens, "
        f"T = {s.temperature}, lr {s.learning_rate}, beta {s.beta}, epsilon {s.epsilon}, loss_type {s.loss_type}, "
        f"{s.threads} thread(s); median of {len(res['ours']['steps'])} interleaved steps after a warm-up)"
    )
    for k in ("ours", "trl"):
        r = res[k]
        length = statistics.mean(x["mean_length"] for x in r["steps"])
        reward = statistics.mean(x["reward"] for x in r["steps"])
        steps = ", ".join(f"{x['seconds']:.2f}" for x in r["steps"])
        print(
            f"  {k:>4}: {med[k]:7.3f} s/step  (steps: {steps}; "
            f"mean completion {length:.1f} tokens, mean reward {reward:.3f})   peak RSS {r['peak_mb']:7.1f} MB, "
            f"above its baseline after imports {r['peak_mb'] - r['baseline_mb']:6.1f} MB"
        )
    above = {k: res[k]["peak_mb"] - res[k]["baseline_mb"] for k in ("trl", "ours")}
    print(
        f"  TRL / ours: step time {med['trl'] / med['ours']:.2f}x, peak RSS "
        f"{res['trl']['peak_mb'] / res['ours']['peak_mb']:.2f}x, above baseline "
        f"{above['trl'] / above['ours']:.2f}x"
    )


def print_losses(s: Settings, rep: dict) -> None:
    a = rep["advantages"]
    print(
        f"\n2. loss on an identical batch ({rep['completion_tokens']} completion tokens; policy and reference "
        f"perturbed copies of the base at {s.policy_scale} / {s.ref_scale} x mean|w|; old log-probs: the base, "
        "or the policy itself (on-policy, as every step with num_iterations = 1))"
    )
    print(
        f"  advantages: TRL's own generate-and-score on the batch against our group_advantages of the same rewards "
        f"({a['groups_with_spread']} of {a['groups']} groups with spread): "
        f"max |A_trl - A_ours| = {a['max_abs_diff']:.4f}, "
        f"median A_trl / A_ours = {a['median_ratio_trl_over_ours']:.4f} "
        f"(sqrt((G-1)/G) = {a['sqrt((G-1)/G)']:.4f}: TRL's std is Bessel-corrected); "
        "both losses below get our advantages"
    )
    print(
        f"  {'loss_type':>9} {'beta':>6} {'bias_kl':>7} {'old':>6} {'clip':>6} {'loss ours':>13} {'loss TRL':>13} "
        f"{'|dL|':>9} {'rel dL':>9} {'|g| ours':>9} {'max|dg|':>9} {'rel |dg|':>9}"
    )
    for c in rep["cases"]:
        print(
            f"  {c['loss_type']:>9} {c['beta']:>6g} {str(c['use_bias_correction_kl']):>7} "
            f"{'policy' if c['on_policy'] else 'base':>6} {c['clip_fraction']:6.3f} "
            f"{c['loss_ours']:13.8f} {c['loss_trl']:13.8f} {c['loss_abs_diff']:9.2e} {c['loss_rel_diff']:9.2e} "
            f"{c['grad_norm_ours']:9.3e} {c['grad_max_abs_diff']:9.2e} {c['grad_rel_diff']:9.2e}"
        )


def plot(results: dict, path: Path) -> None:
    """Step times and peak memory of both trainers (when measured), and the loss/gradient differences per case."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = results.get("steps")
    fig, axes = plt.subplots(1, 3 if steps else 1, figsize=(15 if steps else 6, 4), squeeze=False)
    axes = axes[0]
    if steps:
        for x, k in enumerate(("ours", "trl")):
            secs = [r["seconds"] for r in steps[k]["steps"]]
            axes[0].scatter([x] * len(secs), secs, alpha=0.6)
            axes[0].hlines(statistics.median(secs), x - 0.25, x + 0.25, color="k")
            axes[1].bar(x, steps[k]["baseline_mb"], color="0.7", label="after imports" if x == 0 else None)
            axes[1].bar(
                x,
                steps[k]["peak_mb"] - steps[k]["baseline_mb"],
                bottom=steps[k]["baseline_mb"],
                color=f"C{x}",
                label="training above that" if x == 0 else None,
            )
        for ax, label in ((axes[0], "seconds per optimizer step (line: median)"), (axes[1], "peak RSS (MB)")):
            ax.set_xticks([0, 1], ["ours", "TRL GRPOTrainer"])
            ax.set_ylabel(label)
        axes[0].set_ylim(bottom=0)
        axes[1].legend()
    cases = results["loss"]["cases"]
    names = [
        f"{c['loss_type']} b={c['beta']:g}\n{'biasKL ' if c['use_bias_correction_kl'] else ''}"
        f"{'on-policy' if c['on_policy'] else 'old=base'}"
        for c in cases
    ]
    x = range(len(cases))
    ax = axes[-1]
    ax.bar([i - 0.2 for i in x], [max(c["loss_rel_diff"], 1e-12) for c in cases], 0.4, label="loss")
    ax.bar([i + 0.2 for i in x], [max(c["grad_rel_diff"], 1e-12) for c in cases], 0.4, label="gradient")
    ax.set_yscale("log")
    ax.set_xticks(list(x), names, fontsize=7)
    ax.set_ylabel("relative difference TRL vs ours")
    ax.set_title("identical batch")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="runs/base-default", help="model directory (save_pretrained format)")
    parser.add_argument("--config", default="configs/tiny-countdown-grpo.toml", help="GRPO training config (TOML)")
    parser.add_argument("--batch", type=int, help="prompts per step (default: the config's batch_size)")
    parser.add_argument("--max-new-tokens", type=int, help="default: the config's max_completion_length")
    parser.add_argument("--loss-type", choices=["grpo", "bnpo"], help="default: the config's grpo.loss_type")
    parser.add_argument("--repeats", type=int, default=5, help="timed steps of each trainer (after one warm-up)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-steps", action="store_true", help="only part 2 (loss on an identical batch)")
    parser.add_argument("--out", default="bench_out", help="folder for trl_grpo_bench.json and trl_grpo_bench.png")
    parser.add_argument("--worker", choices=["ours", "trl"], help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--settings", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        (worker_ours if args.worker == "ours" else worker_trl)(Settings(**json.loads(args.settings)), args.steps)
        return 0
    if args.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {args.repeats}")
    if not (Path(args.model) / "config.json").is_file():
        raise ValueError(f"--model {args.model}: not a model directory (no config.json)")
    if not Path(args.config).is_file():
        raise ValueError(f"--config: no such file {args.config}")
    import trl

    s = settings_from(args)
    print(f"model {s.model}; TRL {trl.__version__}; memory: peak resident set size (ru_maxrss) of each process")
    results: dict = {"settings": asdict(s), "trl_version": trl.__version__}
    if not args.skip_steps:
        results["steps"] = bench_steps(s, args.repeats)
        print_steps(s, results["steps"])
    cases = [(lt, s.beta if beta is None else beta, bias, on) for lt, beta, bias, on in CASES]
    results["loss"] = compare_losses(s, cases)
    print_losses(s, results["loss"])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "trl_grpo_bench.json").write_text(json.dumps(results, indent=1))
    plot(results, out / "trl_grpo_bench.png")
    print(f"wrote {out / 'trl_grpo_bench.json'} and {out / 'trl_grpo_bench.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
