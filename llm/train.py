"""The training loop: ES, GRPO and their sequential schedules on one engine, writing a run directory.

    python -m llm train --algo es|grpo|es-grpo|grpo-es --model DIR --task countdown --out RUN_DIR
                        [--config FILE.toml] [--steps 40 --es.sigma 1e-3 ...] | --resume RUN_DIR

Run directory (the interface to paper_checks):
    config.json        the resolved settings, plus "schedule": the budget kind and each phase's steps
    metrics.jsonl      one JSON object per step (names in METRIC_KEYS / TIMING_KEYS below)
    population.json    {"measurements": [...]}: population measurements before training, every E steps, at the end
    eval.json          base / final evaluation (Pass@k, Maj@k, entropy) at eval_temperature, greedy
                       accuracy before / after (base_greedy, final_greedy), held-out task before /
                       after, update analysis and magnitude-thresholded checkpoints
    checkpoints/step-N/  save_pretrained format (fp32 model.safetensors + config + tokenizer) and
                       trainer_state.json (+ optimizer.pt inside a GRPO phase), written atomically
    curves.png, drift_hist.png

Per-step metrics describe the policy that produced the step's samples (before the step's update:
GRPO's rollouts, or for ES `step_samples` samples per prompt from the center), except drift, which is
measured after the update. Everything random is seeded from (seed, step, purpose), so a run is
deterministic, and a run resumed from its last checkpoint ends with the same weights and metrics.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from llm import drift, schedules
from llm.config import TrainConfig, load_config
from llm.distributed import DistributedES
from llm.es import ES, select_parameters
from llm.grpo import GRPO
from llm.population import measure_population
from llm.population_es import check_setup, make_es
from llm.rollout import NonFiniteError, derive_seed, rollout
from llm.tasks import get_task
from llm.tasks.base import Task

TIMING_KEYS = ("step_seconds", "wall_seconds", "tokens_per_s", "es_weight_share")
# every run, whatever its seed, is evaluated on the same test problems and probed on the same prompts,
# so that runs and seeds are compared on equal footing (the sampling seeds still follow the run's seed)
EVAL_PROBLEM_SEED = 0
PROBE_PROBLEM_SEED = 1
CHECKPOINTS = "checkpoints"


# ----------------------------------------------------------------------------- run directory files

def _write_json(path: Path, data) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _read_json(path: Path, default):
    return json.loads(path.read_text()) if path.exists() else default


def _append_metrics(run: Path, row: dict) -> None:
    with open(run / "metrics.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _truncate_metrics(run: Path, step: int) -> None:
    """Keep the rows of steps <= step (what the checkpoint being resumed had seen)."""
    path = run / "metrics.jsonl"
    if path.exists():
        keep = []
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a line cut off by a kill
                continue
            if row["step"] <= step:
                keep.append(line)
        path.write_text("".join(l + "\n" for l in keep))


def latest_checkpoint(run: Path) -> int | None:
    steps = [int(p.name.split("-")[1]) for p in (run / CHECKPOINTS).glob("step-*")
             if (p / "trainer_state.json").exists()]
    return max(steps) if steps else None


def save_checkpoint(run: Path, cfg: TrainConfig, step: int, weights: dict[str, torch.Tensor], state: dict,
                    optimizer: torch.optim.Optimizer | None) -> Path:
    """checkpoints/step-N/: fp32 weights in save_pretrained layout, trainer state; atomic (tmp dir + rename)."""
    from safetensors.torch import save_file

    final = run / CHECKPOINTS / f"step-{step}"
    if (final / "trainer_state.json").exists():
        return final
    tmp = run / CHECKPOINTS / f".tmp-step-{step}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in Path(cfg.model).iterdir():  # config, generation config, tokenizer files of the base model
        if f.is_file() and not f.name.startswith("model") and f.suffix != ".bin":
            shutil.copy2(f, tmp / f.name)
    model_cfg = json.loads((tmp / "config.json").read_text())
    model_cfg["torch_dtype" if "torch_dtype" in model_cfg else "dtype"] = "float32"
    (tmp / "config.json").write_text(json.dumps(model_cfg, indent=1))
    save_file({n: w.detach().float().contiguous() for n, w in weights.items()}, str(tmp / "model.safetensors"),
              metadata={"format": "pt"})
    if optimizer is not None:
        torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    (tmp / "trainer_state.json").write_text(json.dumps(state | {"step": step}))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return final


# ----------------------------------------------------------------------------- the run

class Run:
    """Everything one run holds: engine, task, weights, the active trainer, and the run directory."""

    def __init__(self, cfg: TrainConfig, task: Task | None = None, show_progress: bool = True):
        from transformers import AutoModelForCausalLM

        from llm.engines import make_engine

        torch.set_num_threads(cfg.threads)
        self.cfg, self.dir, self.show_progress = cfg, Path(cfg.out), show_progress
        self.task = task if task is not None else get_task(cfg.task, **cfg.task_kwargs())
        self.phases = schedules.plan(cfg)
        self.total_steps = self.phases[-1].start + self.phases[-1].steps
        self.engine = make_engine(cfg.engine, cfg.model, dtype=getattr(torch, cfg.dtype), seed=cfg.seed)
        self.tokenizer = self.engine.tokenizer
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        engine_model = getattr(self.engine, "model", None)
        # the HF module used for training forwards and scoring: the engine's own when it is fp32 HF
        if engine_model is not None and next(engine_model.parameters()).dtype == torch.float32:
            self.hf_model = engine_model
        else:
            self.hf_model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.float32)
        self.hf_model.train(False)
        self.all_names = [n for n, _ in self.hf_model.named_parameters()]
        self.es_names = select_parameters(self.hf_model.named_parameters(), cfg.es.param_pattern)
        if any(p.algo == "es" for p in self.phases):  # population / Ray settings fail here, before any work
            check_setup(self.hf_model, self.es_names, cfg.es, cfg.population, cfg.distributed())
        self.base = drift.SavedWeights(cfg.model)  # theta_0, read tensor by tensor when needed
        self.pool = self.task.problems("train", cfg.train_pool, seed=cfg.seed)
        self.probe = self.task.problems("test", cfg.probe_prompts, seed=PROBE_PROBLEM_SEED)
        self.trainer: ES | GRPO | None = None
        self.trainer_phase: schedules.Phase | None = None

    def close_trainer(self) -> None:
        """Stop the Ray actors of a distributed ES phase (nothing to release otherwise)."""
        if isinstance(self.trainer, DistributedES):
            self.trainer.close()

    # -- weights ---------------------------------------------------------------------------
    def encode(self, prompt: str) -> list[int]:
        return self.engine.prompt_token_ids(prompt)

    def weights(self, copy: bool = True) -> dict[str, torch.Tensor]:
        """Current center weights (fp32 for every parameter); copy=False may return live tensors."""
        live = {n: p.detach() for n, p in self.hf_model.named_parameters()}
        if isinstance(self.trainer, ES):
            live |= self.trainer.center_weights(copy=False)
        return {n: (live[n].float().clone() if copy else live[n]) for n in self.all_names}

    def set_weights(self, weights: dict[str, torch.Tensor]) -> None:
        """Write weights into the engine and the HF module (when they are not the same module)."""
        with torch.no_grad():
            live = dict(self.hf_model.named_parameters())
            for n, w in weights.items():
                live[n].copy_(w)
        if getattr(self.engine, "model", None) is not self.hf_model:
            self.engine.load_weights(weights.items())

    def batch(self, step: int):
        idx = np.random.default_rng(derive_seed(self.cfg.seed, step, "batch")).choice(len(self.pool), self.cfg.batch_size, replace=False)
        return [self.pool[i] for i in sorted(idx)]

    def start_phase(self, phase: schedules.Phase, weights: dict[str, torch.Tensor], optimizer_state=None) -> None:
        """Make the trainer of a phase, starting from the given center weights."""
        from transformers import AutoModelForCausalLM

        cfg = self.cfg
        self.close_trainer()
        self.set_weights(weights)
        if phase.algo == "es":
            master = None if cfg.es.inplace_bf16 else {n: weights[n].float().clone() for n in self.es_names}
            self.trainer = make_es(cfg.es, self.engine, self.task, self.es_names, master,
                                   max_new_tokens=cfg.max_completion_length, seed=cfg.seed, population=cfg.population,
                                   distributed=cfg.distributed(), model_dir=cfg.model, weights=weights)
        else:
            reference = None
            if cfg.grpo.beta > 0:  # frozen: the weights this GRPO phase started from
                ref_dir = cfg.model if phase.start == 0 else self.dir / CHECKPOINTS / f"step-{phase.start}"
                reference = AutoModelForCausalLM.from_pretrained(ref_dir, dtype=torch.float32)
                reference.train(False)
                reference.requires_grad_(False)
            self.trainer = GRPO(cfg.grpo, self.engine, self.task, self.hf_model, reference, self.encode,
                                temperature=cfg.temperature, max_new_tokens=cfg.max_completion_length,
                                seed=cfg.seed, pad_id=self.pad_id)
            if optimizer_state is not None:
                self.trainer.optimizer.load_state_dict(optimizer_state)
        self.trainer_phase = phase

    def checkpoint(self, step: int, elapsed: float) -> Path:
        opt = self.trainer.optimizer if isinstance(self.trainer, GRPO) else None
        return save_checkpoint(self.dir, self.cfg, step, self.weights(), {"elapsed": elapsed}, opt)

    # -- one step --------------------------------------------------------------------------
    def step(self, step: int) -> dict:
        cfg, problems = self.cfg, self.batch(step)
        t0 = time.perf_counter()
        row: dict = {"step": step + 1, "phase": self.trainer_phase.algo}
        if isinstance(self.trainer, ES):
            center = rollout(self.engine, self.task, problems, n=cfg.step_samples, temperature=cfg.temperature,
                             max_new_tokens=cfg.max_completion_length, seed=derive_seed(cfg.seed, step, "step-samples"), step=step)
            out = self.trainer.step(problems, step)
            n_tokens = center.n_tokens + out.n_tokens
            row |= {"reward_mean": float(out.rewards.mean()), "center_reward_mean": float(center.rewards.mean())}
            extra = {"es_reward_std": float(out.rewards.std()), "es_rewards": out.rewards.tolist(),
                     "es_update_norm": out.update_norm, "es_weight_share": out.weight_seconds / max(out.seconds, 1e-12)}
        else:
            out = self.trainer.step(problems, step)
            center, n_tokens = out.rollouts, out.rollouts.n_tokens
            row |= {"reward_mean": float(center.rewards.mean()), "center_reward_mean": float(center.rewards.mean())}
            extra = {"grpo_loss": out.loss, "grpo_kl": out.kl, "grpo_clip_fraction": out.clip_fraction,
                     "grpo_grad_norm": out.grad_norm}
        total, layers = drift.relative_drift(self.weights(copy=False), self.base)
        seconds = time.perf_counter() - t0
        row |= {"pass_at_1": float(center.correct.mean()), "no_correct_share": float((~center.correct.any(axis=1)).mean()),
                "entropy": center.token_entropy(), "drift_rel": total, "drift_layers": layers, **extra,
                "step_seconds": seconds, "tokens_per_s": n_tokens / max(seconds, 1e-12)}
        return row

    # -- measurements ----------------------------------------------------------------------
    def population(self, step: int) -> dict:
        cfg = self.cfg
        center = self.weights()
        try:
            return measure_population(
                engine=self.engine, scorer=self.hf_model, task=self.task, problems=self.probe, encode=self.encode,
                pad_id=self.pad_id, center={n: center[n] for n in self.es_names}, sigma=cfg.es.sigma,
                members=cfg.probe_members, samples=cfg.probe_samples, center_samples=cfg.probe_center_samples,
                temperature=cfg.temperature, max_new_tokens=cfg.max_completion_length, seed=cfg.seed, step=step)
        finally:
            self.set_weights(center)

    def evaluate(self, task: Task, n_problems: int, n: int, ks: tuple[int, ...], seed_label: str,
                 temperature: float | None = None) -> dict:
        """llm.evaluate on the task's first n_problems test problems (at eval_temperature unless given)."""
        from llm.evaluate import evaluate

        problems = task.problems("test", n_problems, seed=EVAL_PROBLEM_SEED)
        temperature = self.cfg.eval_temperature if temperature is None else temperature
        return evaluate(self.engine, task, problems, n=n, ks=list(ks), temperature=temperature,
                        max_new_tokens=self.cfg.max_completion_length, seed=derive_seed(self.cfg.seed, seed_label) % 2**31,
                        progress=self.show_progress)


def _record_population(run: Run, step: int) -> None:
    path = run.dir / "population.json"
    data = _read_json(path, {"measurements": []})
    data["measurements"] = [m for m in data["measurements"] if m["step"] != step] + [run.population(step)]
    _write_json(path, data)


def _final_stage(run: Run) -> None:
    """After the last step: population, final and held-out evaluation, update analysis, plots."""
    cfg = run.cfg
    if not any(m["step"] == run.total_steps for m in _read_json(run.dir / "population.json", {"measurements": []})["measurements"]):
        _record_population(run, run.total_steps)
    ev = _read_json(run.dir / "eval.json", {})
    ev["final"] = run.evaluate(run.task, cfg.eval_problems, cfg.eval_samples, cfg.eval_ks, "eval")
    ev["final_greedy"] = run.evaluate(run.task, cfg.eval_problems, 1, (1,), "eval", temperature=0.0)
    if cfg.heldout_task:
        ev.setdefault("heldout", {})["final"] = run.evaluate(get_task(cfg.heldout_task), cfg.heldout_problems,
                                                              cfg.eval_samples, cfg.eval_ks, "heldout")
    final = run.weights()
    base = {n: run.base[n] for n in run.all_names}
    ev["update_analysis"] = drift.update_analysis(final, base, sigma=cfg.es.sigma, alpha=cfg.es.alpha)
    ev["thresholded"] = []
    for q in cfg.threshold_keep:
        run.set_weights(drift.thresholded(final, base, q))
        res = run.evaluate(run.task, cfg.eval_problems, min(cfg.eval_samples, 8), (1,), "eval")
        ev["thresholded"].append({"keep_percent": q, "sparsity_percent": 100 - q, "pass_at_1": res["pass_at_k"]["1"]})
    run.set_weights(final)
    _write_json(run.dir / "eval.json", ev)
    drift.plot_histogram(ev["update_analysis"], run.dir / "drift_hist.png", f"{cfg.algo}: update magnitudes")
    plot_curves(run.dir)


def plot_curves(run_dir: Path) -> None:
    """reward, sampled Pass@1, entropy and drift against step."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(l) for l in (run_dir / "metrics.jsonl").read_text().splitlines() if l.strip()]
    fig, axes = plt.subplots(1, 4, figsize=(14, 3))
    for ax, key in zip(axes, ("reward_mean", "pass_at_1", "entropy", "drift_rel")):
        ax.plot([r["step"] for r in rows], [r[key] for r in rows])
        ax.set_title(key)
        ax.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(run_dir / "curves.png", dpi=110)
    plt.close(fig)


def train(cfg: TrainConfig, task: Task | None = None, resume: bool = False, show_progress: bool = True) -> Path:
    """Run (or resume) a training run; returns its directory. Raises NonFiniteError after keeping the last good checkpoint."""
    out = Path(cfg.out)
    if not resume and out.exists() and any(out.iterdir()):
        raise ValueError(f"out directory {out} is not empty; use --resume {out} to continue it")
    out.mkdir(parents=True, exist_ok=True)
    run = Run(cfg, task, show_progress)
    _write_json(out / "config.json", cfg.to_dict() | {"schedule": schedules.describe(cfg, run.phases)})
    done = latest_checkpoint(out) if resume else None
    elapsed, optimizer_state = 0.0, None
    if done is None:
        for f in ("metrics.jsonl", "population.json", "eval.json"):
            (out / f).unlink(missing_ok=True)
        weights = {n: run.base[n] for n in run.all_names}
        run.set_weights(weights)
        ev = {"base": run.evaluate(run.task, cfg.eval_problems, cfg.eval_samples, cfg.eval_ks, "eval"),
              "base_greedy": run.evaluate(run.task, cfg.eval_problems, 1, (1,), "eval", temperature=0.0)}
        if cfg.heldout_task:
            ev["heldout"] = {"base": run.evaluate(get_task(cfg.heldout_task), cfg.heldout_problems, cfg.eval_samples,
                                                  cfg.eval_ks, "heldout")}
        _write_json(out / "eval.json", ev)
        done = 0
    else:
        ckpt = out / CHECKPOINTS / f"step-{done}"
        state = json.loads((ckpt / "trainer_state.json").read_text())
        elapsed = state["elapsed"]
        weights = drift.SavedWeights(ckpt)
        weights = {n: weights[n] for n in run.all_names}
        if (ckpt / "optimizer.pt").exists():
            optimizer_state = torch.load(ckpt / "optimizer.pt", weights_only=True)
        _truncate_metrics(out, done)
        pop = _read_json(out / "population.json", {"measurements": []})
        pop["measurements"] = [m for m in pop["measurements"] if m["step"] <= done]
        _write_json(out / "population.json", pop)
    if done < run.total_steps:
        phase = schedules.phase_at(run.phases, done)
        run.start_phase(phase, weights, optimizer_state if done > phase.start else None)
    bar = tqdm(total=run.total_steps, initial=done, desc=f"{cfg.algo} train", disable=not show_progress, dynamic_ncols=True)
    t_start = time.perf_counter() - elapsed
    step = done
    try:
        if done == 0 and not (out / "population.json").exists():
            _record_population(run, 0)
        while step < run.total_steps:
            phase = schedules.phase_at(run.phases, step)
            if phase != run.trainer_phase:
                run.checkpoint(step, time.perf_counter() - t_start)  # the next phase's reference / resume point
                run.start_phase(phase, run.weights())
            row = run.step(step)
            step += 1
            row["wall_seconds"] = time.perf_counter() - t_start
            _append_metrics(out, row)
            bar.update(1)
            bar.set_postfix(reward=f"{row['reward_mean']:.3f}", pass1=f"{row['pass_at_1']:.3f}",
                            entropy=f"{row['entropy']:.3f}", drift=f"{row['drift_rel']:.2e}")
            if cfg.population_every and step % cfg.population_every == 0 and step < run.total_steps:
                _record_population(run, step)
            if step % cfg.checkpoint_every == 0 or step == run.total_steps:
                run.checkpoint(step, time.perf_counter() - t_start)
    except NonFiniteError as err:
        kept = None
        if run.trainer is None or run.trainer.state_is_intact():
            kept = run.checkpoint(step, time.perf_counter() - t_start)
        else:
            last = latest_checkpoint(out)
            kept = out / CHECKPOINTS / f"step-{last}" if last is not None else None
        raise NonFiniteError(f"{err}; last good checkpoint: {kept if kept is not None else 'none'}") from None
    finally:
        bar.close()
        run.close_trainer()
    _final_stage(run)
    return out


def resume(run_dir: str | Path, show_progress: bool = True) -> Path:
    """Continue a run from its last complete checkpoint (or from the start when it has none)."""
    cfg = load_config(run_dir)
    cfg.out = str(run_dir)
    return train(cfg, resume=True, show_progress=show_progress)


# ----------------------------------------------------------------------------- command line

def add_arguments(parser) -> None:
    """The `train` subcommand's flags: one per setting, plus --config and --resume."""
    from llm.config import add_train_arguments

    add_train_arguments(parser)


def run_command(args) -> int:
    """`python -m llm train ...`: 0 on success, 1 when a non-finite value stopped the run."""
    from llm.config import config_from_args, setting_flags

    try:
        if args.resume:
            given = sorted(setting_flags(args)) + (["config"] if args.config else [])
            if given:
                raise ValueError(f"--resume continues a run with its saved config; do not combine it with {given}")
            resume(args.resume)
        else:
            train(config_from_args(args))
    except NonFiniteError as err:
        print(f"error: {err}", flush=True)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m llm.train", description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_command(args)
    except ValueError as err:
        parser.error(str(err))


if __name__ == "__main__":
    raise SystemExit(main())
