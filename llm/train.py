"""The training loop: ES, GRPO and their sequential schedules on one engine, writing a run directory.

    python -m escov.llm train --algo es|grpo|es-grpo|grpo-es --model DIR --task countdown --out RUN_DIR
                        [--config FILE.toml] [--steps 40 --es.sigma 1e-3 ...] | --resume RUN_DIR

The run directory it writes (the interface to paper_checks: config.json, inputs.json, config_history.jsonl,
metrics.jsonl, replay.jsonl, probe.json, completions.jsonl, eval.json, curve.json, checkpoints/step-N/, plots) is
described once, file by file, in docs/run-directory.md, and written and read by one module, llm/rundir/.

Per-step metrics describe the policy that produced the step's samples (before the step's update:
GRPO's rollouts, or for ES `step_samples` samples per prompt from the center), except drift, which is
measured after the update. Everything random is seeded from (seed, step, purpose), so a run is
deterministic, and a run resumed from its last checkpoint ends with the same weights and metrics.
"""
from __future__ import annotations

import math
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from escov.llm import drift, fingerprints, replay_log, run_stages, rundir, schedules, tracking, witnesses
from escov.llm.config import TrainConfig, load_config
from escov.llm.device import resolve_device, resume_device
from escov.llm.engines.base import check_model_dir, load_tokenizer
from escov.llm.es import ES, check_setup, make_es, select_parameters
from escov.llm.es.factory import engine_settings
from escov.llm.grpo import GRPO
from escov.llm.interrupts import stop_if_requested
from escov.llm.lemma_measurements import measure_population
from escov.llm.problem_sets import ProblemSet, eval_set, fit_to_data, probe_problems, prompt_sources, train_pool
from escov.llm.prompt_lengths import check_prompt_lengths
from escov.llm.resume import drop_later_checkpoints, name_missing_side_records, not_empty, relog_step, resume_point
from escov.llm.reward_stats import reward_stats
from escov.llm.rollout import NonFiniteError, Rollouts, derive_seed, evaluation_seed, rollout
from escov.llm.run_stages import FINAL_SOURCES, base_evaluation, final_stage, plot_curves  # noqa: F401 (plot_curves)
from escov.llm.shared_measurements import BASE_EVAL_KEYS, PROBE_KEYS, measurement_key, shared_measurement
from escov.llm.stop_points import STOP_ENV, stop_point  # noqa: F401 (STOP_ENV: named here before)
from escov.llm.tasks.base import Task
from escov.llm.tasks.math_grader import safety_net_hits

# ----------------------------------------------------------------------------- the run

class TrainingRun:
    """Everything one run holds: engine, task, weights, the active trainer, and the run directory."""

    def __init__(self, cfg: TrainConfig, task: Task | None = None, show_progress: bool = True):
        from transformers import AutoModelForCausalLM

        from escov.llm.engines import make_engine

        torch.set_num_threads(cfg.threads)
        cfg.device = resolve_device(cfg.device)  # config.json records the resolved device
        self.device = torch.device(cfg.device)
        self.cfg, self.dir, self.show_progress = cfg, Path(cfg.out), show_progress
        # a missing or damaged model fails before the problems are generated (seconds); missing weights before the
        # engine loads them (the engine checks), after the prompts
        check_model_dir(cfg.model, weights=False)
        # what the ES strategy needs of this machine and of the engine (llm/es/factory.py): refused before the
        # problems are generated (seconds) and the engine starts
        has_es = "es" in cfg.algo.split("-")
        engine_kwargs = engine_settings(cfg.es, cfg.population, cfg.distributed()) if has_es else {}
        self.task = task if task is not None else cfg.make_task()
        for note in fit_to_data(cfg, self.task):  # before config.json is written: it records the sizes used
            print(f"note: {note}", file=sys.stderr, flush=True)
        if cfg.data and cfg.test_data and Path(cfg.data).exists() and Path(cfg.test_data).exists() \
                and os.path.samefile(cfg.data, cfg.test_data):
            print(f"warning: data and test_data are the same file ({cfg.test_data}): the test problems are training "
                  "problems, so the evaluations measure memorization, not generalization", file=sys.stderr, flush=True)
        self.test = eval_set(cfg, task=self.task)  # the run's test problems (llm/problem_sets.py)
        # every prompt the run can use fits the model's context (or is cut to fit), checked before the model loads
        cut = check_prompt_lengths(prompt_sources(cfg, self.task), load_tokenizer(cfg.model), cfg.model,
                                   cfg.max_completion_length, cfg.truncate_prompts)
        if cut is not None and cfg.distributed() is not None:
            raise ValueError("truncate_prompts cuts prompts in this process's engine only; with Ray actors "
                             "(workers > 1 or ray_address) shorten the prompts in the data instead")
        self.phases = schedules.plan(cfg)
        self.total_steps = self.phases[-1].start + self.phases[-1].steps
        if cfg.engine == "vllm":
            engine_kwargs = engine_kwargs | {"gpu_memory_utilization": cfg.gpu_memory_utilization}
        self.engine = make_engine(cfg.engine, cfg.model, dtype=getattr(torch, cfg.dtype), seed=cfg.seed,
                                  device=cfg.device, **engine_kwargs)
        self.engine.max_prompt_tokens = cut
        self.tokenizer = self.engine.tokenizer
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        engine_model = self.engine.live_module()
        # the HF module used for training forwards and scoring: the engine's own when it is fp32 HF
        if engine_model is not None and next(engine_model.parameters()).dtype == torch.float32:
            self.hf_model = engine_model
        else:
            self.hf_model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.float32).to(self.device)
        self.hf_model.train(False)
        self.all_names = [n for n, _ in self.hf_model.named_parameters()]
        self.es_names = select_parameters(self.hf_model.named_parameters(), cfg.es.param_pattern)
        if has_es:  # population / Ray settings fail here, before any work
            check_setup(self.hf_model, self.es_names, cfg.es, cfg.population, cfg.distributed(), cfg.engine)
        # theta_0, read tensor by tensor when needed; in-place bf16 ES starts from bf16(base)
        self.base = drift.SavedWeights(cfg.model, getattr(torch, cfg.dtype) if cfg.es.inplace_bf16 else torch.float32)
        self.pool = train_pool(cfg, self.task)
        self.probe = probe_problems(cfg, self.task)
        self.trainer: ES | GRPO | None = None
        self.trainer_phase: schedules.Phase | None = None
        self.manifest: dict = {}  # inputs.json's content (train sets it once the run directory is written)
        self.tracker: tracking.Tracker = tracking.Tracker()  # train() opens the one report_to names
        self.warned_zero_update = False  # ES: the warning that all members' rewards were equal is printed once
        self.replay_record: dict | None = None  # ES: the last step's replay.jsonl record, appended after its row

    def close_trainer(self) -> None:
        """Release what the trainer holds (the Ray actors of a distributed ES phase; nothing otherwise)."""
        if self.trainer is not None:
            self.trainer.close()

    # -- weights ---------------------------------------------------------------------------
    def encode(self, prompt: str) -> list[int]:
        return self.engine.prompt_token_ids(prompt)

    def weights(self, copy: bool = True) -> dict[str, torch.Tensor]:
        """Current center weights (fp32 for every parameter); copy=False may return live tensors."""
        live = {n: p.detach() for n, p in self.hf_model.named_parameters()}
        if self.trainer is not None:  # weights the trainer holds outside the HF module (ES: its center)
            live |= self.trainer.center_weights(copy=False)
        return {n: (live[n].float().clone() if copy else live[n]) for n in self.all_names}

    def cpu_weights(self) -> dict[str, torch.Tensor]:
        """The current center weights as fp32 CPU tensors (copies; what checkpoints and the final analysis read)."""
        return {n: t.cpu() for n, t in self.weights().items()}

    def set_weights(self, weights: dict[str, torch.Tensor]) -> None:
        """Write weights into the engine and the HF module (when they are not the same module)."""
        with torch.no_grad():
            live = dict(self.hf_model.named_parameters())
            for n, w in weights.items():
                live[n].copy_(w)
        if self.engine.live_module() is not self.hf_model:
            self.engine.load_weights(weights.items())

    def batch(self, step: int):
        rng = np.random.default_rng(derive_seed(self.cfg.seed, step, "batch"))
        idx = rng.choice(len(self.pool), self.cfg.batch_size, replace=False)
        return [self.pool[i] for i in sorted(idx)]

    def start_phase(self, phase: schedules.Phase, weights: dict[str, torch.Tensor], optimizer_state=None,
                    inside: bool = False) -> None:
        """Make the trainer of a phase, starting from the given center weights (inside: from a checkpoint
        inside the phase, on resume; otherwise an ES phase's start is recorded in replay.jsonl)."""
        from transformers import AutoModelForCausalLM

        cfg = self.cfg
        self.close_trainer()
        self.set_weights(weights)
        if phase.algo == "es":
            master = None if cfg.es.inplace_bf16 else {n: weights[n].to(self.device, torch.float32, copy=True)
                                                        for n in self.es_names}
            self.trainer = make_es(cfg.es, self.engine, self.task, self.es_names, master,
                                   max_new_tokens=cfg.max_completion_length, seed=cfg.seed, population=cfg.population,
                                   distributed=cfg.distributed(), model_dir=cfg.model, weights=weights,
                                   problem_pool=self.pool, sample_center=self.step_samples)
            if not inside:
                replay_log.append_record(self.dir, {"start_step": phase.start,
                                                    "center_sha256": self.trainer.center.sha256()})
        else:
            reference, lora_base = None, None
            start_dir = cfg.model if phase.start == 0 else rundir.checkpoint_dir(self.dir, phase.start)
            if cfg.grpo.beta > 0:  # frozen: the weights this GRPO phase started from
                reference = AutoModelForCausalLM.from_pretrained(start_dir, dtype=torch.float32).to(self.device)
                reference.train(False)
                reference.requires_grad_(False)
            if cfg.grpo.use_peft:  # LoRA adapters on the phase's starting weights (llm/grpo_lora.py)
                lora_base = AutoModelForCausalLM.from_pretrained(start_dir, dtype=torch.float32).to(self.device)
            self.trainer = GRPO(cfg.grpo, self.engine, self.task, self.hf_model, reference, self.encode,
                                temperature=cfg.temperature, max_new_tokens=cfg.max_completion_length,
                                seed=cfg.seed, pad_id=self.pad_id, phase_start=phase.start, phase_steps=phase.steps,
                                lora_base=lora_base)
            if optimizer_state is not None:
                self.trainer.restore_state(optimizer_state)
        self.trainer_phase = phase

    def fingerprint(self, final: dict | None = None) -> dict:
        """eval.json's record of what its evaluations were made from (final: the final weights, hashed)."""
        record = {"settings_sha256": self.manifest.get("settings_sha256", ""),
                  "inputs": {n: r["sha256"] for n, r in self.manifest.get("inputs", {}).items()}}
        return record | ({"final_weights_sha256": fingerprints.tensors_sha256(final)} if final is not None else {})

    def checkpoint(self, step: int, elapsed: float) -> Path:
        opt, adapter = None, None
        if self.trainer is not None:  # a PEFT adapter's base model: the phase's starting weights (W0)
            start = self.trainer_phase.start
            base = self.cfg.model if start == 0 else rundir.checkpoint_dir(self.dir, start)
            opt, adapter = self.trainer.checkpoint_state(str(base))
        state = {"elapsed": elapsed, "settings_sha256": self.manifest.get("settings_sha256", "")}
        path = rundir.save_checkpoint(self.dir, Path(self.cfg.model), step, self.cpu_weights(), state, opt, adapter)
        stop_point(f"checkpoint-{step}")
        return path

    # -- one step --------------------------------------------------------------------------
    def step_samples(self, problems: list, step: int) -> Rollouts:
        """ES: step_samples samples per batch prompt from the center before its update (the step's metrics)."""
        cfg = self.cfg
        return rollout(self.engine, self.task, problems, n=cfg.step_samples, temperature=cfg.temperature,
                       max_new_tokens=cfg.max_completion_length, seed=derive_seed(cfg.seed, step, "step-samples"),
                       step=step)

    def step(self, step: int) -> dict:
        """One step of the active trainer; its metrics.jsonl row (the trainer's step result gives its own fields:
        es_* or grpo_*, and the samples the row describes)."""
        cfg, problems = self.cfg, self.batch(step)
        t0, hits_before = time.perf_counter(), safety_net_hits()
        row: dict = {"step": step + 1, "phase": self.trainer_phase.algo}
        out = self.trainer.step(problems, step)
        center, n_tokens, extra = out.samples, out.generated_tokens, out.metrics()
        row |= {k: extra.pop(k) for k in ("reward_mean", "center_reward_mean")}
        if extra.get("es_zero_update") and not self.warned_zero_update:
            self.warned_zero_update = True
            member_rewards = extra["es_rewards"]
            tqdm.write(f"warning: ES iteration {step + 1}: all {len(member_rewards)} members got the same reward "
                       f"({float(member_rewards[0]):.4g}), so the update is zero; the final summary counts such "
                       "iterations (a reward that varies between members, or more prompts per batch, gives ES a "
                       "signal)", file=sys.stderr)  # above the progress bar, not inside it
        self.replay_record = out.replay
        if cfg.completions_every and (step + 1) % cfg.completions_every == 0:
            self.keep_completions("train", step + 1, [
                {"prompt": str(p.prompt), "completion": samples[0].text, "reward": float(rewards[0])}
                for p, samples, rewards in zip(problems[:cfg.completions_kept], center.completions, center.rewards)])
        stats = reward_stats(center.rewards, center.parts,
                             np.array([[len(c.token_ids) for c in r] for r in center.completions]), problems,
                             center.correct)
        stats.pop("reward_mean")  # the row's reward_mean is the trainer's (ES: member fitness); the center's is above
        total, layers = drift.relative_drift(self.weights(copy=False), self.base)
        seconds = time.perf_counter() - t0
        row |= {"pass_at_1": float(center.correct.mean()),
                "no_correct_share": float((~center.correct.any(axis=1)).mean()),
                "entropy": center.token_entropy(), "drift_rel": total, "drift_layers": layers, **stats, **extra,
                "truncated_share": float(np.mean([c.finish_reason == "length" for r in center.completions for c in r])),
                "step_seconds": seconds, "tokens_per_s": n_tokens / max(seconds, 1e-12),
                "grading_timeouts": safety_net_hits() - hits_before}
        return row

    # -- measurements ----------------------------------------------------------------------
    def keep_completions(self, source: str, step: int, kept: list[dict]) -> None:
        """completions.jsonl gets the kept completions; the tracker shows them. A completion whose reward
        is not finite is left out (no JSON file holds one): a training step stops the run on it."""
        kept = [k for k in kept if math.isfinite(k["reward"])]
        if kept:
            rundir.append_completions(self.dir, [{"step": step, "source": source, **k} for k in kept])
            self.tracker.log_completions(source, kept, step)

    def record_probe(self, step: int, measurement: dict | None = None) -> None:
        """probe.json and the tracker get the Lemma 1 probe at a step (measured now unless given)."""
        measurement = self.measure_probe(step) if measurement is None else measurement
        rundir.record_probe(self.dir, measurement)
        self.tracker.log_record("probe", measurement, step)

    def measure(self, label: str, step: int, problems: ProblemSet, n: int, ks: tuple[int, ...],
                seed_label: str, temperature: float | None = None) -> dict:
        """An evaluation (see evaluate) recorded as eval/<label> at a step: the tracker gets its
        metrics and completions.jsonl its first completions."""
        return self.record(label, step, self.evaluate(problems, n, ks, seed_label, temperature,
                                                      keep=self.cfg.completions_kept, step=step))

    def record(self, label: str, step: int, result: dict) -> dict:
        """An evaluation's result (with its kept completions) recorded as eval/<label> at a step; returns
        it without the kept completions."""
        result = dict(result)
        self.keep_completions(f"eval/{label}", step, result.pop("kept", []))
        self.tracker.log_record(f"eval/{label}", result, step)
        return result

    def measure_probe(self, step: int) -> dict:
        cfg = self.cfg
        center = self.weights()
        try:
            return measure_population(
                engine=self.engine, scorer=self.hf_model, task=self.task, problems=self.probe, encode=self.encode,
                pad_id=self.pad_id, center={n: center[n] for n in self.es_names}, sigma=cfg.es.sigma,
                members=cfg.probe_members, samples=cfg.probe_samples, center_samples=cfg.probe_center_samples,
                temperature=cfg.temperature, max_new_tokens=cfg.max_completion_length, seed=cfg.seed, step=step,
                dtype=getattr(torch, cfg.dtype))
        finally:
            self.set_weights(center)

    def evaluate(self, problems: ProblemSet, n: int, ks: tuple[int, ...], seed_label: str,
                 temperature: float | None = None, keep: int = 0, step: int = 0) -> dict:
        """llm.evaluate on a problem set (the run's test problems, or the held-out ones; llm/problem_sets.py)
        at eval_temperature unless given, after `step` training steps."""
        from escov.llm.evaluate import evaluate

        temperature = self.cfg.eval_temperature if temperature is None else temperature
        return evaluate(self.engine, problems.task, problems.problems, n=n, ks=list(ks), temperature=temperature,
                        max_new_tokens=self.cfg.max_completion_length, seed=evaluation_seed(self.cfg.seed, seed_label),
                        progress=self.show_progress, keep=keep, step=step)


def checkpoint_due(cfg: TrainConfig, step: int, total_steps: int) -> bool:
    """Whether a checkpoint is written after `step`: every checkpoint_every steps, after each of the first
    checkpoint_dense steps of every phase (early in a method's training, where Pass@1 moves fast, so
    llm/curve.py can measure it there: a schedule's second method starts fast too), and after the last step."""
    return (step % cfg.checkpoint_every == 0 or step == total_steps
            or any(0 < step - phase.start <= cfg.checkpoint_dense for phase in schedules.plan(cfg)))


def train(cfg: TrainConfig, task: Task | None = None, resume: bool = False, show_progress: bool = True,
          shared: Path | None = None) -> Path:
    """Run (or resume) a training run; returns its directory. Raises NonFiniteError after keeping the last good
    checkpoint, Interrupted when a signal stopped it (llm/interrupts.py), RunDirBusy when another live process
    writes the directory (its lock, run.lock). A folder this call created is removed again when the run fails
    before it recorded a step or a checkpoint, so a failed start leaves nothing behind.

    shared: a folder where the base evaluation and the step-0 probe are kept by their settings
    (measurement_key), so that runs from the same base (e.g. ES and GRPO of one seed) measure them
    once; None: every run measures its own. A given `task` object is not part of the key: pass shared
    only with the configured task."""
    out = Path(cfg.out)
    check_out_dir(out)
    tracking.check_backend(cfg.report_to)  # a missing backend stops the run before anything starts
    if not resume and out.exists() and not rundir.is_empty(out):  # checked again inside the lock
        raise ValueError(not_empty(out))
    created = next((p for p in reversed([out, *out.parents]) if not p.exists()), None)
    try:
        return _train(cfg, task, resume, show_progress, shared)
    except BaseException:
        if created is not None and created.is_dir() and not (out / rundir.METRICS).exists() \
                and not any((out / rundir.CHECKPOINTS).iterdir() if (out / rundir.CHECKPOINTS).is_dir() else ()):
            shutil.rmtree(created)  # nothing a resume or the error message could point to
        raise


def check_out_dir(out: Path) -> None:
    """ValueError naming --out when it, or a folder above it, is an existing file."""
    for path in (out, *out.parents):
        if path.exists() and not path.is_dir():
            raise ValueError(f"--out {out}: {path} is a file, not a directory")


def _train(cfg: TrainConfig, task: Task | None, resume: bool, show_progress: bool, shared: Path | None) -> Path:
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    with rundir.WriterLock(out):
        return _train_locked(cfg, task, resume, show_progress, shared)


def _train_locked(cfg: TrainConfig, task: Task | None, resume: bool, show_progress: bool, shared: Path | None) -> Path:
    """train() inside the run directory's lock."""
    out = Path(cfg.out)
    if not resume and not rundir.is_empty(out):
        raise ValueError(not_empty(out))
    recorded = rundir.read_manifest(out) if resume else None
    inputs = fingerprints.take_inputs(cfg, out)  # paths made absolute before anything reads them
    run = TrainingRun(cfg, task, show_progress)
    stop_if_requested("before the base evaluation")
    point = resume_point(run) if resume else None
    from_step = point[0] if point is not None else 0
    if resume:
        drop_later_checkpoints(out, from_step)
        name_missing_side_records(cfg, out, from_step)
    config = cfg.to_dict() | {"schedule": schedules.describe(cfg, run.phases)}
    rundir.write_config(out, config, from_step)
    typed = {n: r["given"] for n, r in (recorded or {"inputs": {}})["inputs"].items()}  # the paths as first typed
    run.manifest = fingerprints.manifest(cfg, inputs, config, typed)
    if recorded is not None and recorded.get("code") != run.manifest["code"]:
        was, now = fingerprints.describe_code(recorded.get("code")), fingerprints.describe_code(run.manifest["code"])
        print(f"note: the run started with {was} and continues from step {from_step} with {now}; its results "
              f"from step {from_step + 1} on may differ from the old code's (recorded in {rundir.CONFIG_HISTORY})",
              file=sys.stderr)
        rundir.record_code_change(out, config, was, now, from_step)
    rundir.write_manifest(out, run.manifest)
    # a resumed run hides the tracker's events after its checkpoint (all of them when it starts over); resumed after
    # the last step, those of the last step too (the final stage's, which it measures again; the rest relogged)
    last_step = point is not None and point[0] == run.total_steps
    purge_from = None if not resume else 0 if point is None else point[0] + (0 if last_step else 1)
    run.tracker = tracking.open_tracker(cfg.report_to, out, cfg.to_dict(), purge_from)
    if last_step and cfg.report_to == "tensorboard":  # the others keep what they were sent (W&B: steps seen once)
        relog_step(run, point[0])
    try:
        _train_loop(run, point, shared)
        final_stage(run)
    finally:
        run.tracker.close()
    return out


def _train_loop(run: TrainingRun, point, shared: Path | None = None) -> None:
    """From the resume point (None: the start, with the base evaluation) to the last step's checkpoint;
    shared: see train."""
    cfg, out = run.cfg, run.dir
    elapsed, optimizer_state = 0.0, None
    if point is None:
        for f in (rundir.METRICS, rundir.PROBE, rundir.LEGACY_PROBE, rundir.EVAL, rundir.COMPLETIONS, rundir.CURVE,
                  replay_log.REPLAY):
            (out / f).unlink(missing_ok=True)
        weights = {n: run.base[n] for n in run.all_names}
        run.set_weights(weights)
        key = measurement_key(cfg, BASE_EVAL_KEYS)
        measured = shared_measurement(shared, "base-eval", key, lambda: base_evaluation(run))
        ev = {"base": run.record("base", 0, measured["base"]),
              "base_greedy": run.record("base_greedy", 0, measured["base_greedy"])}
        if cfg.heldout_task:
            ev["heldout"] = {"base": run.record("heldout_base", 0, measured["heldout_base"])}
        run_stages.warn_base_evaluation(ev["base"])
        fingerprint = run.fingerprint()  # base_fingerprint: kept, a witness of inputs.json (llm/witnesses.py)
        rundir.write_eval(out, {"fingerprint": fingerprint, "base_fingerprint": fingerprint} | ev)
        done = 0
    else:
        done, weights, elapsed, optimizer_state = point
        rundir.keep_steps(out, done)
        replay_log.keep_records(out, done)
        rundir.keep_probe(out, done)
        rundir.keep_completions(out, done)
        rundir.keep_curve(out, [p["step"] for p in rundir.read_curve(out) or [] if p["step"] <= done])  # later: again
        rundir.read_eval(out)  # a damaged eval.json stops here, before any work
    if done < run.total_steps:
        phase = schedules.phase_at(run.phases, done)
        run.start_phase(phase, weights, optimizer_state if done > phase.start else None, inside=done > phase.start)
    else:  # resumed after the last step: the final stage measures the final weights
        run.set_weights(weights)
    bar = tqdm(total=run.total_steps, initial=done, desc=f"{cfg.algo} train", disable=not run.show_progress,
               dynamic_ncols=True)
    t_start = time.perf_counter() - elapsed
    step = done
    try:
        if cfg.probe and done == 0 and not rundir.probe_path(out).exists():
            run.record_probe(0, shared_measurement(shared, "probe-0", measurement_key(cfg, PROBE_KEYS),
                                                   lambda: run.measure_probe(0)))
        stop_point("start")
        stop_if_requested(f"before step {step + 1}")
        while step < run.total_steps:
            phase = schedules.phase_at(run.phases, step)
            if phase != run.trainer_phase:
                run.checkpoint(step, time.perf_counter() - t_start)  # the next phase's reference / resume point
                run.start_phase(phase, run.weights())
            row = run.step(step)
            step += 1
            if cfg.eval_steps and step % cfg.eval_steps == 0 and step < run.total_steps:  # TRL's periodic evaluation
                row["validation"] = run_stages.validation(run, step)
            row["wall_seconds"] = time.perf_counter() - t_start
            rundir.append_step(out, row)
            if run.replay_record is not None:
                replay_log.append_record(out, run.replay_record)
                run.replay_record = None
            run.tracker.log_record("train", row, step)
            stop_point(f"step-{step}")
            bar.update(1)
            bar.set_postfix(reward=f"{row['reward_mean']:.3f}", pass1=f"{row['pass_at_1']:.3f}",
                            entropy=f"{row['entropy']:.3f}", drift=f"{row['drift_rel']:.2e}")
            if cfg.probe_every and step % cfg.probe_every == 0 and step < run.total_steps:
                run.record_probe(step)
            if checkpoint_due(cfg, step, run.total_steps):
                run.checkpoint(step, time.perf_counter() - t_start)
            stop_if_requested(f"after step {step} of {run.total_steps}")
    except NonFiniteError as err:
        kept = None
        if run.trainer is None or run.trainer.state_is_intact():
            kept = run.checkpoint(step, time.perf_counter() - t_start)
        else:
            steps, _ = rundir.checkpoint_steps(out)
            kept = rundir.checkpoint_dir(out, steps[0]) if steps else None
        raise NonFiniteError(f"{err}; last good checkpoint: {kept if kept is not None else 'none'}") from None
    finally:
        bar.close()
        run.close_trainer()


def resume(run_dir: str | Path, show_progress: bool = True, device: str | None = None,
           allow_device_change: bool = False, allow_config_change: bool = False) -> Path:
    """Continue a run from its last complete checkpoint (or from the start when it has none), on the device
    config.json recorded unless another is given; a change of device kind (CPU <-> CUDA) needs
    allow_device_change (llm/device.py). A setting of config.json edited since the run started is
    refused unless allow_config_change (then recorded in config_history.jsonl); so is an input whose
    content changed (inputs.json, llm/fingerprints.py), always."""
    changes = rundir.check_settings_fixed(run_dir, allow_config_change)
    recorded = fingerprints.check_settings_hash(run_dir, allow_config_change)
    witnesses.check(run_dir)  # each checkpoint's settings, eval.json's base fingerprint against the records
    for name, was, now in changes:
        print(f"note: {name} changes from {was!r} to {now!r} for the rest of the run (recorded in "
              f"{rundir.CONFIG_HISTORY})", file=sys.stderr)
    cfg = load_config(run_dir)
    cfg.out = str(run_dir)
    if recorded is not None:
        fingerprints.check_inputs(run_dir, cfg, recorded["inputs"])  # points cfg at where each input is now
    cfg.device = resume_device(cfg.device, device, allow_device_change, f"--resume {run_dir}")
    return train(cfg, resume=True, show_progress=show_progress)


# ----------------------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    """`python -m escov.llm.train ...`: the same command as `python -m escov.llm train ...` (llm/train_cli.py)."""
    from escov.llm.cli import main as llm_main

    return llm_main(["train", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
