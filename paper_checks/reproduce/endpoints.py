"""The answer's endpoints measured to k = n: the base, GRPO's plateau and ES's end on the test prompts, n samples
per prompt at each temperature, one stored evaluation per (model, step, temperature), and the report attachment.

    out/endpoints/RUN-stepS-TT.json   one evaluation (the base: base-step0-TT.json): the per-prompt correct counts
                                      c_i of n samples, the distinct correct solutions, the sampling seed, the
                                      weights' fingerprint, CPU and wall seconds; written when every prompt is
                                      measured (RUN-stepS-TT.partial.json holds the chunks done so far, so an
                                      interrupted evaluation continues at its next chunk of prompts)
    out/endpoints.json                the attachment (report.json's premise record: pass_at_k_endpoints)

Which models (endpoint_models): the base once (every run starts from it; its samples are drawn with seed 0 of the
base's own stream), GRPO's last checkpoint (its plateau) and ES's last checkpoint for every seed of the budget. The
prompts are each run's test prompts (llm/problem_sets.py eval_set: the same for every run of the budget); samples
are drawn with llm.evaluate in chunks of `chunk` prompts (n completions of a prompt in one generate call), each
chunk with its own seed derived from (run seed, step, temperature, chunk), so a resumed evaluation draws the same
samples.

The attachment reads the counts with the coverage analyzer's math (paper_checks/coverage/measure.py on
theory/coverage.py): the k grid 1, 2, 4, ..., n; per prompt the unbiased Pass@k (seeds averaged within a prompt)
and its mean over prompts with a 95% problem-bootstrap percentile interval (1000 replicates, one draw shared by the
three models); the crossing budget k* at which one curve overtakes another (the first grid k where it leads, with
its bootstrap interval and the interpolated k*); the solvability sets at k = n. Per temperature:

    base, grpo_plateau, es_end   {T: {k: {mean, lo, hi}}}
    crossing                     {es_over_grpo, base_over_grpo, base_over_es}: {T: {k_star, lo, hi, ...}}
                                 (X_over_Y: the budget at which X's Pass@k overtakes Y's; null: not up to n)
    solvability                  {grpo_vs_base, es_vs_base, es_vs_grpo}: {T: {preserved, gained, lost, ...}}
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

ENDPOINTS_DIR = "endpoints"
ATTACHMENT = "endpoints.json"
GROUPS = {"grpo_plateau": "grpo", "es_end": "es"}  # the attachment's name -> the runs' variant
BASE = "base"


def endpoint_file(out: Path, model: str, step: int, temperature: float) -> Path:
    return Path(out) / ENDPOINTS_DIR / f"{model}-step{step}-T{temperature:g}.json"


def last_step(run_dir: Path) -> int:
    """The run's last checkpoint (GRPO's plateau, ES's end)."""
    from escov.llm.rundir import checkpoint_steps

    steps, _ = checkpoint_steps(run_dir)
    if not steps:
        raise ValueError(f"{run_dir}: no checkpoint to evaluate (is the run trained?)")
    return max(steps)


def endpoint_models(seeds: tuple[int, ...]) -> list[tuple[str, str]]:
    """(model name in the files, the run directory's name) of every endpoint: the base (read through the first
    seed's GRPO run, whose settings give the prompts) and each seed's GRPO and ES run."""
    return [(BASE, f"grpo-s{seeds[0]}")] + [(f"{v}-s{s}", f"{v}-s{s}") for v in GROUPS.values() for s in seeds]


def evaluate_endpoint(run_dir: Path, model: str, temperature: float, out: Path, samples: int, chunk: int) -> str:
    """Measure one endpoint (model BASE: the run's base model, else its last checkpoint) into its file, unless it
    is there with the same weights; in a worker process, on the run's threads. Returns the file's path."""
    import torch

    from escov.llm import rundir
    from escov.llm.config import load_config
    from escov.llm.curve import point_fingerprint
    from escov.llm.engines import make_engine
    from escov.llm.evaluate import evaluate
    from escov.llm.problem_sets import eval_set
    from escov.llm.seeds import derive_seed
    from escov.paper_checks.reproduce.jobs import cpu_seconds

    cfg = load_config(run_dir)
    step = 0 if model == BASE else last_step(run_dir)
    path = endpoint_file(out, model, step, temperature)
    fingerprint = point_fingerprint(run_dir, cfg, step)["weights_sha256"]
    settings = {"model": model, "step": step, "temperature": temperature, "n": samples, "weights_sha256": fingerprint}
    if path.is_file() and {k: rundir.read_json(path).get(k) for k in settings} == settings:
        return str(path)
    torch.set_num_threads(cfg.threads)
    measured = eval_set(cfg)
    problems = measured.problems
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial.json")
    done = rundir.read_json(partial) if partial.is_file() else None
    if done is None or {k: done.get(k) for k in settings} != settings:
        done = settings | {"chunks": [], "seconds": 0.0, "cpu_seconds": 0.0}
    engine = make_engine("hf", cfg.model if step == 0 else rundir.checkpoint_dir(run_dir, step), seed=cfg.seed)
    stream = 0 if model == BASE else cfg.seed  # the base: one stream, whichever run's settings gave its prompts
    for index in range(len(done["chunks"]), -(-len(problems) // chunk)):
        wall, cpu = time.perf_counter(), cpu_seconds()
        part = problems[index * chunk : (index + 1) * chunk]
        seed = derive_seed(stream, step, "endpoint", f"{temperature:g}", index) % 2**31
        result = evaluate(
            engine,
            measured.task,
            part,
            n=samples,
            ks=[1],
            temperature=temperature,
            max_new_tokens=cfg.max_completion_length,
            seed=seed,
            progress=False,
        )
        done["chunks"].append({"seed": seed, "per_problem": result["per_problem"]})
        done["seconds"] += time.perf_counter() - wall
        done["cpu_seconds"] += cpu_seconds() - cpu
        rundir.write_json(partial, done)
    per_problem = [r for c in done["chunks"] for r in c["per_problem"]]
    record = settings | {
        "run": Path(run_dir).name,
        "prompts": [r["id"] for r in per_problem],
        "correct": [r["correct"] for r in per_problem],
        "distinct_correct_answers": [r["distinct_correct_answers"] for r in per_problem],
        "chunk_seeds": [c["seed"] for c in done["chunks"]],
        "seconds": round(done["seconds"], 1),
        "cpu_seconds": round(done["cpu_seconds"], 1),
    }
    rundir.write_json(path, record)
    partial.unlink()
    return str(path)


def _counts(files: list[Path], n: int):
    """(prompt ids, counts [seeds, prompts]) of one model's evaluations, checked to share prompts and n."""
    from escov.llm.rundir import read_json

    records = [read_json(f) for f in files]
    ids = records[0]["prompts"]
    for f, r in zip(files, records):
        if r["prompts"] != ids or r["n"] != n:
            raise ValueError(f"{f}: other prompts or samples than {files[0]} (n = {n}); evaluate it again")
    return ids, np.array([r["correct"] for r in records], dtype=np.int64)


def attachment(out: Path, seeds: tuple[int, ...], temperatures: tuple[float, ...], samples: int) -> dict:
    """The report attachment (module docstring) from the stored evaluations of every endpoint."""
    from escov.llm.rundir import read_json
    from escov.paper_checks.coverage.measure import MeasureOptions, measure
    from escov.paper_checks.coverage.table import Coverage, ModelCounts

    out = Path(out)
    record: dict = {
        "samples": samples,
        "temperatures": list(temperatures),
        "seeds": list(seeds),
        "steps": {},
        BASE: {},
        **{g: {} for g in GROUPS},
        "crossing": {"es_over_grpo": {}, "base_over_grpo": {}, "base_over_es": {}},
        "solvability": {"grpo_vs_base": {}, "es_vs_base": {}, "es_vs_grpo": {}},
        "evaluation_seconds": {},
    }
    for t in temperatures:
        key = f"{t:g}"
        files = {BASE: [endpoint_file(out, BASE, 0, t)]}
        for group, variant in GROUPS.items():
            runs = [f"{variant}-s{s}" for s in seeds]
            steps = {r: last_step(out / "runs" / r) for r in runs}
            record["steps"][group] = steps
            files[group] = [endpoint_file(out, r, steps[r], t) for r in runs]
        missing = [str(f) for fs in files.values() for f in fs if not f.is_file()]
        if missing:
            raise ValueError(f"endpoint evaluations missing: {', '.join(missing)}")
        models = {}
        for name, fs in files.items():
            ids, counts = _counts(fs, samples)
            models[name] = ModelCounts(name, samples, ids, counts, seeds=[0] if name == BASE else list(seeds))
        cov = Coverage(str(out / ENDPOINTS_DIR), models).checked()
        against_base = measure(cov, MeasureOptions(reference=BASE, taus=()))
        against_es = measure(cov, MeasureOptions(reference="es_end", taus=()))
        record["ks"], record["prompts"] = against_base["ks"], against_base["prompts"]
        for name in models:
            record[name][key] = against_base["models"][name]["pass_at_k"]
        record["crossing"]["base_over_grpo"][key] = against_base["models"]["grpo_plateau"]["crossing"]
        record["crossing"]["base_over_es"][key] = against_base["models"]["es_end"]["crossing"]
        record["crossing"]["es_over_grpo"][key] = against_es["models"]["grpo_plateau"]["crossing"]
        record["solvability"]["grpo_vs_base"][key] = against_base["models"]["grpo_plateau"]["solvability"]
        record["solvability"]["es_vs_base"][key] = against_base["models"]["es_end"]["solvability"]
        es_vs_grpo = measure(cov, MeasureOptions(reference="grpo_plateau", taus=(), replicates=1))
        record["solvability"]["es_vs_grpo"][key] = es_vs_grpo["models"]["es_end"]["solvability"]
        record["evaluation_seconds"][key] = {
            "cpu": round(sum(read_json(f)["cpu_seconds"] for fs in files.values() for f in fs), 1),
            "evaluations": sum(len(fs) for fs in files.values()),
        }
    return record
