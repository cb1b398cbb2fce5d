"""The measuring parts of the GPU check: each part is one process, started by benchmarks/gpu_check.py with
its own time budget, writing its figures to a JSON file as it measures them (so a time limit keeps what
was measured).

    python benchmarks/bench_gpu.py hf   --size qwen2.5-0.5b --work DIR --result part.json
    python benchmarks/bench_gpu.py vllm --size qwen2.5-1.5b --work DIR --result part.json

The models are random-init Qwen2.5 at the real shapes (llm/random_models.py; speed does not depend on
the weights' values), saved once per size under --work in bf16, with a tokenizer whose vocabulary has
the real size (151,936 ids) and decodes every id to text: the byte tokens of llm/random_models.py plus
2- and 3-character strings of printable ASCII for the ids above them. (The byte-level tokenizer alone
decodes only 259 of the 151,936 ids a random model samples, so a text reward sees almost nothing and
is equal for all members: a zero update.) The reward is the share of digits in a completion (about
one character in ten): the members' mean rewards differ, z is not zero and the update does work.
`reward_spread` (max - min of the member rewards) and `degenerate` say so in the figures.

  hf    plain HF generate of the N x B rows (the reference), one ES iteration on the HF engine with the
        members one by one, one with the population batched in one forward (llm/es/batched_hf.py),
        the update alone (the center's apply, timed after the iteration), and one GRPO step (fp32 policy
        and reference on the device, generation on the bf16 HF engine) beside the generation of its rows
  vllm  vLLM generate of the N x B rows, one ES iteration in place inside vLLM's workers
        (llm/es/vllm_inplace.py), the same iteration on the reload path from the same center (its time,
        and how far its update lies from the in-place one), one GRPO step with generation on vLLM

Peaks are torch.cuda.max_memory_allocated within a measurement, reset before it. The benchmark's own
copies (the center kept for the reload comparison, the in-place update kept to compare with) live on
the CPU, so an ES peak holds the engine, ES's fp32 master and its scratch only. Every timing follows a
warm-up call of the same path on fewer tokens. Under the CPU stand-in (llm/gpu_standin.py) the parts
run on the CPU: timings then are CPU timings and there are no peaks.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
import traceback
from pathlib import Path

import torch

from escov.llm.random_models import SIZES

REAL_VOCAB = SIZES["qwen2.5-1.5b"].vocab_size  # Qwen2.5's vocabulary (151,936 embedding rows)
MISSING_EXIT = 3  # exit code of a part whose package (vllm) is not importable: "not measurable"


class Figures(dict):
    """A part's figures, written to its result file at every new one."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = path

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self.write()

    def update(self, *args, **kwargs):
        super().update(*args, **kwargs)
        self.write()

    def write(self, **more) -> None:
        """{"figures": ..., **more}, atomically (a new file renamed over the old): a part killed while writing
        leaves the last whole file."""
        fresh = self.path.with_suffix(".partial")
        fresh.write_text(json.dumps({"figures": self, **more}, indent=1))
        os.replace(fresh, self.path)


class Device:
    """Timing and peak memory on the part's device ("cuda:0", or "cpu" under the stand-in)."""

    def __init__(self, name: str):
        self.name, self.cuda = name, name.startswith("cuda")

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def timed(self, fn):
        """(fn(), seconds), the device's queue drained before and after."""
        self.sync()
        t0 = time.perf_counter()
        out = fn()
        self.sync()
        return out, time.perf_counter() - t0

    def reset_peak(self) -> None:
        if self.cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()

    def peak_mb(self) -> float | None:
        return torch.cuda.max_memory_allocated() / 2**20 if self.cuda else None


def real_vocab_tokenizer():
    """llm/random_models.py's Qwen2 tokenizer (bytes, no merges, ChatML) grown to REAL_VOCAB ids, the ids above
    its own decoding to 2- and 3-character strings of printable ASCII (never produced by encoding: no merges)."""
    from transformers import Qwen2Tokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    from escov.llm.random_models import CHATML_TEMPLATE, build_tokenizer

    base = build_tokenizer("qwen2")
    vocab = dict(base.get_vocab())
    byte_char = bytes_to_unicode()
    printable = [byte_char[b] for b in range(32, 127)]
    strings = ("".join(chars) for n in (2, 3) for chars in itertools.product(printable, repeat=n))
    for text in itertools.islice(strings, REAL_VOCAB - len(vocab)):
        vocab[text] = len(vocab)
    tokenizer = Qwen2Tokenizer(
        vocab=vocab, merges=[], unk_token=None, eos_token=base.eos_token, pad_token=base.pad_token
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def ensure_model(work: Path, size: str, device: Device) -> Path:
    """The random Qwen2 of the size (bf16, the real vocabulary) under work/size, built on the device the
    first time a part asks for it; "complete" is written last, so a part cut while saving builds it again."""
    from transformers import AutoModelForCausalLM

    from escov.llm.random_models import model_config

    out = work / size
    if (out / "complete").exists():
        return out
    tokenizer = real_vocab_tokenizer()
    config = model_config("qwen2", size, len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id)
    torch.manual_seed(0)
    with torch.device(device.name):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    del model
    (out / "complete").write_text("")
    return out


def digit_share_task():
    """Countdown prompts; reward = share of digits in the completion (dense at the real vocabulary above)."""
    from escov.llm.tasks import get_task
    from escov.llm.tasks.base import Task

    class DigitShare(Task):
        name = "digit-share"

        def __init__(self):
            self.inner = get_task("countdown")

        def problems(self, split, n, seed):
            return self.inner.problems(split, n, seed)

        def score(self, problem, completion):
            return sum(ch.isdigit() for ch in completion) / len(completion) if completion else 0.0

        def answer(self, problem, completion):
            return None

    return DigitShare()


def es_config(args):
    from escov.llm.es import ESConfig

    return ESConfig(
        population_size=args.members, sigma=args.sigma, alpha=args.alpha, member_temperature=1.0, member_samples=1
    )


def spread(prefix: str, rewards, figures: Figures) -> None:
    """The members' reward spread: zero (degenerate) means z = 0 and an update that does nothing."""
    figures[f"{prefix}_reward_spread"] = float(rewards.max() - rewards.min())
    figures[f"{prefix}_degenerate"] = bool(rewards.max() == rewards.min())


def measure_es(prefix: str, make, problems, dev: Device, figures: Figures):
    """One timed ES iteration after a warm-up one on a single prompt and 2 tokens; then the update alone
    (the center's apply with the iteration's z: what the iteration spends on the update, beside generation)."""

    make(max_new_tokens=2).step(problems[:1], 0)
    dev.reset_peak()
    es = make(max_new_tokens=None)
    step, figures[f"{prefix}_s"] = dev.timed(lambda: es.step(problems, 1))
    figures[f"{prefix}_peak_mb"] = dev.peak_mb()
    figures[f"{prefix}_weight_s"] = step.weight_seconds  # perturb + restore + update, inside the iteration
    spread(prefix, step.rewards, figures)
    _, figures[f"{prefix}_update_s"] = dev.timed(lambda: es.center.apply(es.plan(1).update(step.z, es.cfg.alpha)))
    return es, step


def hf_part(args, dev: Device, figures: Figures) -> None:
    """HF generate, ES members one by one, ES batched, the update alone, one GRPO step (module docstring)."""
    from transformers import AutoModelForCausalLM

    from escov.llm.engines.hf import HFEngine
    from escov.llm.es import PopulationConfig, make_es
    from escov.llm.grpo import GRPO, GRPOConfig
    from escov.llm.rollout import rollout

    model_dir = ensure_model(args.work, args.size, dev)
    task = digit_share_task()
    problems = task.problems("train", args.prompts, seed=0)
    n, t_new, rows = args.members, args.new_tokens, args.members * args.prompts
    prompts = [p.prompt for p in problems]
    figures.update(members=n, prompts=args.prompts, new_tokens=t_new)
    hf = HFEngine(model_dir, dtype=torch.bfloat16, device=dev.name, max_batch_size=rows)
    figures["parameters"] = sum(p.numel() for p in hf.model.parameters())
    figures["vocab_size"] = hf.model.config.vocab_size

    hf.generate(prompts * n, n=1, temperature=1.0, max_new_tokens=2, seed=0)
    dev.reset_peak()
    completions, figures["hf_generate_s"] = dev.timed(
        lambda: hf.generate(prompts * n, n=1, temperature=1.0, max_new_tokens=t_new, seed=0)
    )
    figures["hf_inference_peak_mb"] = dev.peak_mb()
    figures["hf_tokens_per_s"] = sum(len(c[0].token_ids) for c in completions) / figures["hf_generate_s"]

    names = [k for k, _ in hf.model.named_parameters()]
    cfg = es_config(args)
    for prefix, population in (
        ("es_hf_one_by_one", PopulationConfig()),
        ("es_hf_batched", PopulationConfig(batched=True, max_rows=rows)),
    ):
        master = {k: p.detach().float().clone() for k, p in hf.model.named_parameters()}  # ES's own fp32 center
        # master and population bound now: the closure must not look up names this loop deletes or rebinds
        make = lambda max_new_tokens, master=master, population=population: make_es(
            cfg, hf, task, names, master, max_new_tokens=max_new_tokens or t_new, seed=0, population=population
        )
        es, _ = measure_es(prefix, make, problems, dev, figures)
        figures[f"{prefix}_over_generation"] = figures[f"{prefix}_s"] / figures["hf_generate_s"]
        del es, master, make
    if dev.cuda:
        figures["es_hf_batched_peak_over_inference"] = (
            figures["es_hf_batched_peak_mb"] / figures["hf_inference_peak_mb"]
        )

    grpo_problems = problems[: args.grpo_prompts]
    gen = lambda: rollout(
        hf, task, grpo_problems, n=args.generations, temperature=1.0, max_new_tokens=t_new, seed=0, step=0
    )
    _, figures["grpo_generate_s"] = dev.timed(gen)
    dev.reset_peak()
    policy = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(dev.name)
    reference = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(dev.name).requires_grad_(False)
    grpo = GRPO(
        GRPOConfig(num_generations=args.generations, learning_rate=1e-6, micro_batch_size=args.micro_batch),
        hf,
        task,
        policy,
        reference,
        hf.prompt_token_ids,
        temperature=1.0,
        max_new_tokens=t_new,
        seed=0,
        pad_id=hf.tokenizer.pad_token_id,
    )
    grpo.step(grpo_problems[:1], 0)
    step, figures["grpo_step_s"] = dev.timed(lambda: grpo.step(grpo_problems, 1))
    figures["grpo_peak_mb"] = dev.peak_mb()
    figures["grpo_update_s"] = figures["grpo_step_s"] - figures["grpo_generate_s"]  # scoring, log-probs, backward, sync
    figures.update(grpo_prompts=len(grpo_problems), grpo_generations=args.generations)
    figures["grpo_reward_spread"] = float(step.rollouts.rewards.max() - step.rollouts.rewards.min())


def vllm_part(args, dev: Device, figures: Figures) -> None:
    """vLLM generate, ES in place, ES by reload from the same center, one GRPO step on vLLM (module docstring)."""
    try:
        import vllm
    except Exception as err:  # noqa: BLE001  (a broken install is as unusable as none: its reason goes in the JSON)
        raise ModuleNotFoundError(f"import vllm failed: {type(err).__name__}: {err}") from err
    import numpy as np
    from transformers import AutoModelForCausalLM

    from escov.llm.engines.vllm_engine import VLLMEngine
    from escov.llm.es import PopulationConfig, make_es
    from escov.llm.es.vllm_inplace import ENGINE_KWARGS
    from escov.llm.grpo import GRPO, GRPOConfig

    figures["vllm"] = vllm.__version__
    model_dir = ensure_model(args.work, args.size, dev)
    task = digit_share_task()
    problems = task.problems("train", args.prompts, seed=0)
    n, t_new = args.members, args.new_tokens
    prompts = [p.prompt for p in problems]
    figures.update(members=n, prompts=args.prompts, new_tokens=t_new)
    t0 = time.perf_counter()
    engine = VLLMEngine(
        model_dir,
        dtype=torch.bfloat16,
        seed=0,
        gpu_memory_utilization=args.gpu_memory_utilization,
        enforce_eager=True,
        **ENGINE_KWARGS,
    )
    figures["vllm_startup_s"] = time.perf_counter() - t0
    try:
        engine.generate(prompts * n, n=1, temperature=1.0, max_new_tokens=2, seed=0)
        dev.reset_peak()
        completions, figures["vllm_generate_s"] = dev.timed(
            lambda: engine.generate(prompts * n, n=1, temperature=1.0, max_new_tokens=t_new, seed=0)
        )
        figures["vllm_inference_peak_mb"] = dev.peak_mb()
        figures["vllm_tokens_per_s"] = sum(len(c[0].token_ids) for c in completions) / figures["vllm_generate_s"]

        base = {k: t.to("cpu", torch.float32, copy=True) for k, t in engine.weights.items()}  # the benchmark's copy
        names = sorted(base)
        cfg = es_config(args)

        def make(members, max_new_tokens):
            engine.load_weights((k, base[k]) for k in names)
            master = {k: t.to(dev.name) for k, t in base.items()}  # ES's own fp32 center
            return make_es(
                cfg,
                engine,
                task,
                names,
                master,
                max_new_tokens=max_new_tokens or t_new,
                seed=0,
                population=PopulationConfig(members=members),
            )

        es, inplace_step = measure_es(
            "es_vllm_inplace", lambda max_new_tokens: make("vllm_inplace", max_new_tokens), problems, dev, figures
        )
        figures["es_vllm_inplace_over_generation"] = figures["es_vllm_inplace_s"] / figures["vllm_generate_s"]
        if dev.cuda:
            figures["es_vllm_inplace_peak_over_inference"] = (
                figures["es_vllm_inplace_peak_mb"] / figures["vllm_inference_peak_mb"]
            )
        # measure_es left the in-place master at center + 2 x the iteration's update (the iteration, then the
        # update alone again); the reload path from the same center, with the same two updates, must land there
        inplace_master = {k: es.center.master[k].cpu() for k in names}
        del es
        reload = make("auto", None)
        reload_step, figures["es_vllm_reload_s"] = dev.timed(lambda es_reload=reload: es_reload.step(problems, 1))
        reload.center.apply(reload.plan(1).update(reload_step.z, reload.cfg.alpha))
        figures["es_inplace_over_reload"] = figures["es_vllm_inplace_s"] / figures["es_vllm_reload_s"]
        figures["inplace_vs_reload"] = {
            "same_rewards": bool(np.array_equal(inplace_step.rewards, reload_step.rewards)),
            "max_abs_update_difference": max(
                float((reload.center.master[k].cpu() - inplace_master[k]).abs().max()) for k in names
            ),
            "max_abs_update": max(float((inplace_master[k] - base[k]).abs().max()) for k in names),
        }
        del reload, inplace_master
        engine.load_weights((k, base[k]) for k in names)

        dev.reset_peak()
        policy = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(dev.name)
        reference = (
            AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(dev.name).requires_grad_(False)
        )
        grpo = GRPO(
            GRPOConfig(num_generations=args.generations, learning_rate=1e-6, micro_batch_size=args.micro_batch),
            engine,
            task,
            policy,
            reference,
            engine.prompt_token_ids,
            temperature=1.0,
            max_new_tokens=t_new,
            seed=0,
            pad_id=engine.tokenizer.pad_token_id,
        )
        grpo_problems = problems[: args.grpo_prompts]
        grpo.step(grpo_problems[:1], 0)
        _, figures["grpo_vllm_step_s"] = dev.timed(lambda: grpo.step(grpo_problems, 1))
        figures["grpo_vllm_peak_mb"] = dev.peak_mb()
    finally:
        engine.close()


PARTS = {"hf": hf_part, "vllm": vllm_part}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=sorted(PARTS))
    p.add_argument("--size", required=True, choices=list(SIZES), help="a size of llm/random_models.py")
    p.add_argument("--work", type=Path, required=True, help="directory of the saved models (shared by the parts)")
    p.add_argument(
        "--result", type=Path, required=True, help="JSON written here: figures, and the traceback if it failed"
    )
    p.add_argument("--device", default="cuda:0", choices=["cuda:0", "cpu"])
    p.add_argument("--members", type=int, default=8)
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--sigma", type=float, default=1e-2)
    p.add_argument("--alpha", type=float, default=2.5e-4)
    p.add_argument("--generations", type=int, default=8)
    p.add_argument("--grpo-prompts", type=int, default=4)
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    return p


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when measured, MISSING_EXIT when a package is missing, 1 on any other failure (its traceback in
    the result, beside the figures measured before it)."""
    args = parser().parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    figures = Figures(args.result)
    figures.write()
    dev = Device(args.device)
    try:
        if dev.cuda and not torch.cuda.is_available():
            raise RuntimeError(f"no CUDA (torch {torch.__version__}): torch.cuda.is_available() is False")
        PARTS[args.part](args, dev, figures)
    except BaseException as err:  # noqa: BLE001  (the reason goes in the JSON; the exit code says which kind)
        missing = isinstance(err, ModuleNotFoundError)
        figures.write(traceback=traceback.format_exc()[-4000:], missing=f"{err}" if missing else None)
        traceback.print_exc()
        return MISSING_EXIT if missing else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
