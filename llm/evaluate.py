"""Pass@k evaluation of an engine on a task, and the `python -m escov.llm eval` command.

For each problem, n completions are sampled and scored (one reward call for all of them); with c of
them correct (as the task decides, llm/tasks/base.py correct_of: reward >= 1, or with reward functions the
run's correct_reward >= correct_threshold, llm/tasks/correctness.py; recorded as "correct"):
- pass_at_k[k]: unbiased Pass@k, 1 - C(n-c, k) / C(n, k), averaged over problems (theory.metrics);
- maj_at_k[k]: majority vote over k of the n samples' votes (Task.vote: the normalized answer; for
  Countdown the value the answer evaluates to, so all correct answers agree; theory.metrics.maj_at_k);
- mean_token_entropy: mean over sampled tokens of -log pi_T(y_t | ...), an unbiased Monte Carlo
  estimate of the per-token entropy of the sampling distribution (0 at temperature 0);
- what the reward does (llm/reward_stats.py): reward_mean, reward_std, rewards/<function>/mean and std
  (reward functions), reward_zero_std_share, mean_response_tokens, by_data_source (when the data has
  a data_source column); truncated_fraction (hit max_new_tokens without an end token);
- distinct_correct_answers: distinct normalized correct answers per solved prompt (for Countdown,
  expressions distinct up to commutativity/associativity: the number of reasoning paths), and
  distinct_correct_texts: distinct correct completion strings per solved prompt;
- total_reaches_threshold_not_correct: completions whose weighted total reward reaches the threshold
  although the chosen reward calls them wrong (a format reward or a bonus the rule leaves out; 0 when
  the total decides);
- per_problem: id, correct count, distinct correct answers and texts, and the prompt's own
  mean_token_entropy (its n completions' tokens only: the per-prompt values a seeds x prompts interval
  of entropy needs; the pooled value above weights each prompt by its tokens);
- grading_timeouts: answers graded wrong because their grading reached the math grader's wall-clock
  safety net (llm/tasks/math_grader.py; 0 unless the machine stalls: what is too expensive to check is
  decided by bounds on the answer, so grades do not depend on the machine's load);
- kept (only when keep > 0): the first completion of each of the first `keep` problems, as
  {"prompt", "completion", "reward"} (the run directory's completions.jsonl keeps them).

The command takes `llm train`'s flags and defaults for the task and its test problems (TASK_SETTINGS),
so that with a run's flags it evaluates the run's own test problems (llm/problem_sets.py eval_set);
--seed seeds the sampling only.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from escov.llm.reward_stats import reward_stats
from escov.llm.rundir import dumps
from escov.llm.tasks.base import CORRECT_THRESHOLD, correct_of, is_correct_reward
from escov.llm.tasks.math_grader import safety_net_hits
from escov.theory.errors import NonFiniteError

SAMPLES_PER_CALL = 256  # completions generated per engine call (prompts per call = this // n)


def check_eval_args(n: int, ks) -> list[int]:
    ks = list(ks)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n (samples per problem) must be an integer >= 1, got {n!r}")
    if not ks or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in ks):
        raise ValueError(f"ks must be a non-empty list of integers >= 1, got {ks!r}")
    if max(ks) > n:
        raise ValueError(f"n (samples per problem) must be >= the largest k: n={n} < k={max(ks)}")
    return sorted(set(ks))


def call_seed(seed: int, index: int) -> int:
    """Seed of the index-th engine call of an evaluation, independent across (seed, index)."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def evaluate(engine, task, problems, n: int, ks, temperature: float, max_new_tokens: int, seed: int, *,
             top_p: float = 1.0, progress: bool = True, keep: int = 0, step: int = 0) -> dict:
    """Sample n completions per problem and compute the metrics in the module docstring (step: the
    training step the reward functions are told, as trainer_state.global_step)."""
    # here, not at the top: `llm eval --help` imports this module without torch (rollout) or scipy (metrics)
    from escov.llm.rollout import mean_token_entropy
    from escov.theory.metrics import maj_at_k, pass_at_k_counts

    ks = check_eval_args(n, ks)
    if not problems:
        raise ValueError("problems must be a non-empty list")
    per_call = max(1, SAMPLES_PER_CALL // n)
    start = time.perf_counter()
    completions = []
    with tqdm(total=len(problems), desc=f"eval {task.name}", unit="prompt", disable=not progress) as bar:
        for index, i in enumerate(range(0, len(problems), per_call)):
            chunk = problems[i:i + per_call]
            completions += engine.generate([p.prompt for p in chunk], n=n, temperature=temperature,
                                           max_new_tokens=max_new_tokens, seed=call_seed(seed, index), top_p=top_p)
            bar.update(len(chunk))
    hits_before = safety_net_hits()
    flat = [(p, c) for p, row in zip(problems, completions) for c in row]
    scores = task.score_batch([p for p, _ in flat], [c.text for _, c in flat], [c.token_ids for _, c in flat],
                              step=step)
    rewards = np.asarray(scores.total, dtype=float).reshape(len(problems), n)
    parts = {name: np.asarray(v, dtype=float).reshape(len(problems), n) for name, v in scores.parts.items()}
    if not np.all(np.isfinite(rewards)):
        bad = float(rewards[~np.isfinite(rewards)][0])
        raise NonFiniteError(f"step {step}: reward is not finite ({bad}) for task {task.name} (evaluation)")
    rule = getattr(task, "correctness", None)  # reward functions: the run's rule (llm/tasks/correctness.py)
    threshold = rule.threshold if rule is not None else CORRECT_THRESHOLD
    is_correct = correct_of(scores).reshape(len(problems), n)
    per_problem, counts, maj = [], [], {k: [] for k in ks}
    for p, row, correct in zip(problems, completions, is_correct.tolist()):
        answers = [task.answer(p, c.text) for c in row]
        votes = [task.vote(p, c.text) for c in row]
        for k in ks:
            maj[k].append(maj_at_k(votes, correct, k, seed=seed))
        counts.append(sum(correct))
        per_problem.append({"id": p.id, "correct": sum(correct),
                            "distinct_correct_answers": len({a for a, ok in zip(answers, correct) if ok}),
                            "distinct_correct_texts": len({c.text.strip() for c, ok in zip(row, correct) if ok}),
                            "mean_token_entropy": mean_token_entropy([row], temperature)})
    counts = np.array(counts)
    solved = [r for r in per_problem if r["correct"] > 0]
    lengths = np.array([[len(c.token_ids) for c in row] for row in completions])
    result = {
        "task": task.name, "num_problems": len(problems), "n": n, "ks": ks, "temperature": temperature,
        "top_p": top_p, "max_new_tokens": max_new_tokens, "seed": seed,
        "correct": rule.describe() if rule is not None else f"reward >= {CORRECT_THRESHOLD:g}",
        "correct_threshold": threshold,
        "total_reaches_threshold_not_correct": int(np.sum(is_correct_reward(rewards, threshold) & ~is_correct)),
        "pass_at_k": {str(k): float(pass_at_k_counts(n, counts, k).mean()) for k in ks},
        "maj_at_k": {str(k): float(np.mean(maj[k])) for k in ks},
        "mean_token_entropy": mean_token_entropy(completions, temperature),
        **reward_stats(rewards, parts, lengths, problems, is_correct),
        "truncated_fraction": float(np.mean([c.finish_reason == "length" for _, c in flat])),
        "solved_fraction": len(solved) / len(problems),
        "distinct_correct_answers": float(np.mean([r["distinct_correct_answers"] for r in solved])) if solved else 0.0,
        "distinct_correct_texts": float(np.mean([r["distinct_correct_texts"] for r in solved])) if solved else 0.0,
        "seconds": round(time.perf_counter() - start, 2),
        "per_problem": per_problem,
        "grading_timeouts": safety_net_hits() - hits_before,
    }
    if keep > 0:
        result["kept"] = [{"prompt": str(p.prompt), "completion": row[0].text, "reward": float(r[0])}
                          for p, row, r in zip(problems[:keep], completions, rewards)]
    return result


def evaluation_warnings(result: dict) -> list[str]:
    """What an evaluation shows to be wrong with the rewards: a reward function that applied to none of its
    completions (every value None or NaN: it adds nothing and, when it decides correctness, nothing is correct),
    and completions whose weighted total reaches the threshold while the chosen reward calls them wrong."""
    out, n = [], result["num_problems"] * result["n"]
    for name, stats in result.get("rewards", {}).items():
        if stats.get("applied") == 0:
            decides = " and it decides what is correct, so nothing is" if result.get("correct", "").startswith(
                f"{name} >=") else ""
            out.append(f"reward function {name!r} applied to none of the {n} completions of the evaluation (it "
                       f"returned None or NaN for every one): it adds nothing to the total{decides}; check its "
                       "column names and what it returns")
    wrong = result.get("total_reaches_threshold_not_correct", 0)
    if wrong:
        out.append(f"{wrong} of {n} completions reach a weighted total >= {result['correct_threshold']:g} without "
                   f"being correct by {result['correct']} (Pass@k and Maj@k count only the latter; set "
                   "correct_reward = \"total\" to count the total)")
    return out


# ----------------------------------------------------------------------------- command line

# the settings `llm eval` shares with `llm train`: the same flags, defaults and help (llm/settings/ TrainConfig),
# so that `llm eval` with a run's flags evaluates the run's task and test problems (llm/problem_sets.py eval_set)
TASK_SETTINGS = ("task", "data", "test_data", "data_split", "data_fields", "prompt_style", "reward", "reward_function",
                 "reward_weights", "correct_reward", "correct_threshold", "reward_timeout", "eval_problems",
                 "eval_solutions", "eval_skip")


class _AddToTuple(argparse.Action):
    """A flag whose every use adds one value to a tuple (train's default, (), when never given)."""

    def __call__(self, parser, namespace, value, option_string=None):
        setattr(namespace, self.dest, tuple(getattr(namespace, self.dest) or ()) + (value,))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    import dataclasses

    from escov.llm.config import ENGINES, REPEATED_FLAGS, TrainConfig
    from escov.llm.settings_help import field_descriptions, help_line
    from escov.llm.tasks import TASKS
    from escov.llm.tasks.reasoning_format import PROMPT_STYLES
    from escov.llm.tasks.rewards import REWARDS

    parser.add_argument("--model", help="local model directory (save_pretrained format); or give --run")
    parser.add_argument("--run", dest="run_dir", metavar="RUN_DIR",
                        help="evaluate a run's last checkpoint as the run evaluated it (its task, test problems, "
                             "samples, T and sampling seed), compared with its eval.json (llm/eval_run.py)")
    parser.add_argument("--checkpoint", type=int, metavar="STEP",
                        help="with --run: checkpoint step-STEP instead of the last (0: the base model)")
    train_fields, described = {f.name: f for f in dataclasses.fields(TrainConfig)}, field_descriptions(TrainConfig)
    old_spellings = {"data_split": ["--data-split"], "prompt_style": ["--prompt-style"],
                     "eval_problems": ["--num-problems"], "data_fields": ["--data-fields"]}
    choices = {"task": TASKS, "prompt_style": PROMPT_STYLES, "reward": list(REWARDS)}
    for name in TASK_SETTINGS:
        f = train_fields[name]
        help_text = help_line(f, described[name]).replace("%", "%%")
        if name in REPEATED_FLAGS:  # reward_function, reward_weights: each use adds one, as in `llm train`
            parser.add_argument(f"--{name}", dest=name, action=_AddToTuple, default=f.default,
                                metavar=REPEATED_FLAGS[name], type=float if "float" in f.type else str, help=help_text)
            continue
        parser.add_argument(f"--{name}", *old_spellings.get(name, []), dest=name, default=f.default,
                            type={"int": int, "float": float}.get(f.type, str), choices=choices.get(name),
                            help=help_text)
    samples, ks = train_fields["eval_samples"].default, ",".join(map(str, train_fields["eval_ks"].default))
    temperature, length = train_fields["eval_temperature"].default, train_fields["max_completion_length"].default
    parser.add_argument("--engine", default="hf", choices=ENGINES, help="generation engine (default: hf)")
    parser.add_argument("--eval_samples", "--n", dest="n", type=int, default=samples, metavar="N",
                        help=f"samples per problem, at least the largest k (default: {samples}, as `llm train`)")
    parser.add_argument("--eval_ks", "--k", dest="k", default=ks, metavar="KS",
                        help=f"comma-separated k values for Pass@k and Maj@k (default: {ks})")
    parser.add_argument("--eval_temperature", "--temperature", dest="temperature", type=float, default=temperature,
                        metavar="T", help=f"sampling temperature (default: {temperature}, as `llm train`)")
    parser.add_argument("--top_p", "--top-p", dest="top_p", type=float, default=1.0,
                        help="nucleus sampling mass (default: 1.0)")
    parser.add_argument("--max_completion_length", "--max-new-tokens", dest="max_new_tokens", type=int,
                        default=length, metavar="N",
                        help=f"new tokens per completion (default: {length}, as `llm train`)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                        help="engine weights (default: float32)")
    parser.add_argument("--seed", type=int, default=train_fields["seed"].default,
                        help="seed of the sampling (the test problems are a run's, the same for every seed) "
                             f"(default: {train_fields['seed'].default})")
    parser.add_argument("--out", default="out/eval", help="directory for eval.json and eval.png (default: out/eval)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the eval.json and eval.png already in --out (default: refuse)")
    parser.add_argument("--no-progress", "--no_progress", dest="no_progress", action="store_true",
                        help="no progress bars (TQDM_DISABLE=1 does the same)")
    # ---- device (llm/device.py) ----
    parser.add_argument("--device", default="auto",
                        help="auto (CUDA when available) | cpu | cuda | cuda:N (HF engine) (default: auto)")


def parse_ks(text: str) -> list[int]:
    try:
        return [int(k) for k in text.split(",")]
    except ValueError:
        raise ValueError(f"--k must be comma-separated integers, got {text!r}") from None


def flags_plan(args: argparse.Namespace, defaults: dict):
    """The plan of `llm eval --model DIR` with the flags' task and sampling: a single --data file is read as the test
    file, and the whole test split of a data file is evaluated unless --eval_problems is given."""
    from escov.llm.config import TrainConfig
    from escov.llm.eval_run import EvalPlan

    if args.model is None:
        raise ValueError("give --model DIR (a model directory) or --run RUN_DIR (a run of `llm train`)")
    if args.checkpoint is not None:
        raise ValueError("--checkpoint picks a checkpoint of --run; with --model give the checkpoint's folder")
    settings = {name: getattr(args, name) for name in TASK_SETTINGS} | {"seed": args.seed}
    if settings["data"] and not settings["test_data"] and settings["data_split"] == "files":
        settings |= {"data": "", "test_data": settings["data"]}  # one file to evaluate: its records are the test
    cfg = TrainConfig.from_dict(settings, source="flags")
    if args.eval_problems == defaults["eval_problems"]:
        held = cfg.make_task().size("test")
        if held:  # a data file: all of its test split
            cfg.eval_problems = held
    return EvalPlan(cfg=cfg, model=args.model, n=args.n, ks=check_eval_args(args.n, parse_ks(args.k)),
                    temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=args.seed, top_p=args.top_p,
                    engine=args.engine, dtype=args.dtype)


def run_command(args: argparse.Namespace) -> int:
    """Validate everything cheap first (n vs k, the device, task, data, model directory), say what is evaluated,
    then load and evaluate."""
    import torch

    from escov.llm.cli import progress_enabled
    from escov.llm.device import resolve_device
    from escov.llm.engines import make_engine
    from escov.llm.engines.base import check_model_dir, check_sampling_args, load_tokenizer
    from escov.llm.eval_run import comparison, flag_defaults, run_plan, seed_hint
    from escov.llm.problem_sets import eval_set
    from escov.llm.prompt_lengths import check_prompt_lengths

    defaults = flag_defaults(add_arguments)
    plan = run_plan(args, defaults, TASK_SETTINGS) if args.run_dir is not None else flags_plan(args, defaults)
    check_eval_args(plan.n, plan.ks)
    device = resolve_device(args.device, "--device")  # before the task, the tokenizer and the model load
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out} is a file, not a directory")
    written = [out / f for f in ("eval.json", "eval.png") if (out / f).exists()]
    if written and not args.overwrite:
        raise ValueError(f"--out {args.out} already holds {', '.join(f.name for f in written)}; "
                         "give another --out, or --overwrite to replace them")
    test = eval_set(plan.cfg)  # the task and test problems a run with these settings evaluates
    task, problems = test.task, test.problems
    check_sampling_args(plan.n, plan.temperature, plan.max_new_tokens, plan.top_p)
    check_model_dir(plan.model, "--model" if args.run_dir is None else "--run", weights=False)
    cfg = plan.cfg
    source = f"data file {cfg.test_data or cfg.data}" if cfg.test_data or cfg.data else f"task {cfg.task}"
    # before the model loads
    check_prompt_lengths({source: problems}, load_tokenizer(plan.model), plan.model, plan.max_new_tokens)
    print(f"llm eval: {len(problems)} test problems of {source} x {plan.n} samples at T={plan.temperature:g}, up to "
          f"{plan.max_new_tokens} new tokens, seed {plan.seed}" + (f"; {plan.note}" if plan.note else ""), flush=True)
    if plan.threads is not None:
        torch.set_num_threads(plan.threads)
    if not progress_enabled(args.no_progress):  # transformers' "Loading weights" bar too
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    with make_engine(plan.engine, plan.model, dtype=getattr(torch, plan.dtype), seed=plan.seed,
                     device=device) as engine:
        result = evaluate(engine, task, problems, n=plan.n, ks=plan.ks, temperature=plan.temperature,
                          max_new_tokens=plan.max_new_tokens, seed=plan.seed, top_p=plan.top_p,
                          progress=progress_enabled(args.no_progress), step=plan.step)
    recorded = {name: getattr(cfg, name) for name in TASK_SETTINGS if name != "eval_problems"}
    result = {"model": str(plan.model), "engine": plan.engine, "device": device} | recorded \
        | ({"run": str(args.run_dir), "checkpoint_step": plan.step} if args.run_dir is not None else {}) | result
    out.mkdir(parents=True, exist_ok=True)
    out_file = out / "eval.json"
    out_file.write_text(dumps(result, str(out_file), indent=1), encoding="utf-8")
    plot(result, out / "eval.png")
    print(summary(result))
    for line in (comparison(result, plan.recorded, plan.recorded_name), seed_hint(plan.model, plan.seed)):
        if line:
            print(line)
    for warning in evaluation_warnings(result):
        print(f"warning: {warning}", file=sys.stderr, flush=True)
    print(f"wrote {out / 'eval.json'} and {out / 'eval.png'}")
    return 0


def summary(result: dict) -> str:
    passes = "  ".join(f"pass@{k} {v:.3f}" for k, v in result["pass_at_k"].items())
    majs = "  ".join(f"maj@{k} {v:.3f}" for k, v in result["maj_at_k"].items())
    from escov.llm.reward_stats import summary_line

    return (f"{result['task']}: {result['num_problems']} problems x {result['n']} samples at T={result['temperature']}"
            f" (correct: {result.get('correct', 'reward >= 1')})\n"
            f"  {passes}\n  {majs}\n"
            f"  token entropy {result['mean_token_entropy']:.3f} nats  truncated {result['truncated_fraction']:.3f}\n"
            f"  {summary_line(result)}\n"
            f"  solved {result['solved_fraction']:.3f} of prompts; per solved prompt: "
            f"{result['distinct_correct_answers']:.2f} distinct correct answers, "
            f"{result['distinct_correct_texts']:.2f} distinct correct texts")


def plot(result: dict, path: Path) -> None:
    """Pass@k and Maj@k against k, and the histogram of correct samples per problem."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from escov.llm.plot_axes import label_k_axis

    ks = [int(k) for k in result["pass_at_k"]]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.plot(ks, list(result["pass_at_k"].values()), "o-", label="Pass@k")
    a.plot(ks, list(result["maj_at_k"].values()), "s--", label="Maj@k")
    a.set(xscale="log", xlabel="k", ylabel="rate", ylim=(0, 1), title=f"{result['task']} (T={result['temperature']})")
    label_k_axis(a, ks)
    a.legend()
    b.hist([r["correct"] for r in result["per_problem"]], bins=np.arange(result["n"] + 2) - 0.5)
    b.set(xlabel=f"correct samples of {result['n']}", ylabel="problems", title="per-problem correct counts")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
