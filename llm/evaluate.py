"""Pass@k evaluation of an engine on a task, and the `python -m escov.llm eval` command.

For each problem, n completions are sampled and scored (one reward call for all of them); with c of
them correct (reward >= correct_threshold = 1):
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
- per_problem: id, correct count, distinct correct answers and texts;
- grading_timeouts: answers graded wrong because their grading reached the math grader's wall-clock
  safety net (llm/tasks/math_grader.py; 0 unless the machine stalls: what is too expensive to check is
  decided by bounds on the answer, so grades do not depend on the machine's load);
- kept (only when keep > 0): the first completion of each of the first `keep` problems, as
  {"prompt", "completion", "reward"} (the run directory's completions.jsonl keeps them).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from escov.llm.reward_stats import reward_stats
from escov.llm.rollout import mean_token_entropy
from escov.llm.tasks.base import is_correct_reward
from escov.theory.errors import NonFiniteError
from escov.llm.rundir import dumps
from escov.llm.tasks.math_grader import safety_net_hits
from escov.theory.metrics import maj_at_k, pass_at_k_counts

CORRECT_THRESHOLD = 1.0  # a completion is correct (Pass@k, Maj@k) when its reward is >= this (llm/tasks/base.py)
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
    per_problem, counts, maj = [], [], {k: [] for k in ks}
    for p, row, row_rewards in zip(problems, completions, rewards):
        correct = [bool(is_correct_reward(r)) for r in row_rewards]
        answers = [task.answer(p, c.text) for c in row]
        votes = [task.vote(p, c.text) for c in row]
        for k in ks:
            maj[k].append(maj_at_k(votes, correct, k, seed=seed))
        counts.append(sum(correct))
        per_problem.append({"id": p.id, "correct": sum(correct),
                            "distinct_correct_answers": len({a for a, ok in zip(answers, correct) if ok}),
                            "distinct_correct_texts": len({c.text.strip() for c, ok in zip(row, correct) if ok})})
    counts = np.array(counts)
    solved = [r for r in per_problem if r["correct"] > 0]
    lengths = np.array([[len(c.token_ids) for c in row] for row in completions])
    result = {
        "task": task.name, "num_problems": len(problems), "n": n, "ks": ks, "temperature": temperature,
        "top_p": top_p, "max_new_tokens": max_new_tokens, "seed": seed, "correct_threshold": CORRECT_THRESHOLD,
        "pass_at_k": {str(k): float(pass_at_k_counts(n, counts, k).mean()) for k in ks},
        "maj_at_k": {str(k): float(np.mean(maj[k])) for k in ks},
        "mean_token_entropy": mean_token_entropy(completions, temperature),
        **reward_stats(rewards, parts, lengths, problems),
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


# ----------------------------------------------------------------------------- command line

DATA_TASKS = ("gsm8k", "deepscaler", "prompts")  # tasks that exist only as data files
FILE_TASKS = ("countdown",) + DATA_TASKS  # tasks that read a --data file
GENERATED_PROBLEMS = 200  # default number of problems for generated tasks (countdown, arithmetic)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from escov.llm.engines import ENGINES
    from escov.llm.tasks import TASKS
    from escov.llm.tasks.data_files import DATA_SPLITS_HELP
    from escov.llm.tasks.reasoning_format import PROMPT_STYLES
    from escov.llm.tasks.rewards import REWARDS

    from escov.llm.config import TrainConfig

    train = TrainConfig.__dataclass_fields__  # the defaults shared with `llm train` (its eval_* settings)
    samples, ks = train["eval_samples"].default, ",".join(map(str, train["eval_ks"].default))
    parser.add_argument("--model", required=True, help="local model directory (save_pretrained format)")
    parser.add_argument("--task", required=True, choices=TASKS)
    parser.add_argument("--data", help=f"test data file, .json/.jsonl/.parquet ({', '.join(FILE_TASKS)})")
    parser.add_argument("--data_split", "--data-split", dest="data_split", default="files", metavar="RULE",
                        help=f"{DATA_SPLITS_HELP}: files evaluates every record of --data; paper its records "
                             "after the first 200 (the paper's Countdown evaluation split) (default: files)")
    parser.add_argument("--data_fields", "--data-fields", dest="data_fields", default="", metavar="MAP",
                        help="the file's column names where they differ, as in `llm train`: "
                             "\"prompt=question,answer=reward_model.ground_truth\" (default: none)")
    parser.add_argument("--reward", default="escov", choices=list(REWARDS),
                        help="reward convention (llm/tasks/rewards.py) (default: escov)")
    parser.add_argument("--reward_function", action="append", default=[], metavar="MODULE:FUNCTION",
                        help="a reward function with TRL's signature (or verl's compute_score), replacing the reward "
                             "(llm/tasks/reward_function.py); repeat for several (default: none)")
    parser.add_argument("--reward_weights", action="append", default=[], type=float, metavar="FLOAT",
                        help="weight of each --reward_function, repeated in the same order (default: 1 each)")
    parser.add_argument("--engine", default="hf", choices=ENGINES, help="generation engine (default: hf)")
    parser.add_argument("--eval_samples", "--n", dest="n", type=int, default=samples, metavar="N",
                        help=f"samples per problem, at least the largest k (default: {samples}, as `llm train`)")
    parser.add_argument("--eval_ks", "--k", dest="k", default=ks, metavar="KS",
                        help=f"comma-separated k values for Pass@k and Maj@k (default: {ks})")
    parser.add_argument("--eval_problems", "--num-problems", dest="num_problems", type=int, default=None, metavar="N",
                        help=f"test problems (default: {GENERATED_PROBLEMS} generated, or every record of --data)")
    parser.add_argument("--eval_temperature", "--temperature", dest="temperature", type=float,
                        default=train["eval_temperature"].default, metavar="T",
                        help=f"sampling temperature (default: {train['eval_temperature'].default}, as `llm train`)")
    parser.add_argument("--top_p", "--top-p", dest="top_p", type=float, default=1.0,
                        help="nucleus sampling mass (default: 1.0)")
    parser.add_argument("--max_completion_length", "--max-new-tokens", dest="max_new_tokens", type=int,
                        default=train["max_completion_length"].default, metavar="N",
                        help=f"new tokens per completion (default: {train['max_completion_length'].default}, "
                             "as `llm train`)")
    parser.add_argument("--prompt_style", "--prompt-style", dest="prompt_style", default="plain", choices=PROMPT_STYLES,
                        help="plain (the tiny model's format), instruct (chat models) or paper (the paper's prompts) "
                             "(default: plain)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                        help="engine weights (default: float32)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")
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


def run_command(args: argparse.Namespace) -> int:
    """Validate everything cheap first (task, data, n vs k, model directory), then load and evaluate."""
    import torch

    from escov.llm.cli import progress_enabled
    from escov.llm.device import resolve_device
    from escov.llm.engines import make_engine
    from escov.llm.engines.base import check_model_dir, check_sampling_args
    from escov.llm.tasks import get_task
    from escov.llm.tasks.data_files import parse_fields

    ks = check_eval_args(args.n, parse_ks(args.k))
    if args.task in DATA_TASKS and args.data is None:
        raise ValueError(f"--task {args.task} needs --data PATH (a .json, .jsonl or .parquet test file)")
    if args.data is not None and args.task not in FILE_TASKS:
        raise ValueError(f"--data is only for {FILE_TASKS}; task {args.task!r} generates its problems")
    kwargs = {"prompt_style": args.prompt_style, "reward": args.reward, "reward_function": args.reward_function,
              "reward_weights": args.reward_weights or None}
    if args.data is not None:
        kwargs |= {"data": args.data, "data_split": args.data_split} if args.data_split != "files" else {"test_data": args.data}
    if args.data_fields:
        if args.data is None:
            raise ValueError("--data_fields names columns of --data; give --data too")
        kwargs["fields"] = parse_fields(args.data_fields)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out} is a file, not a directory")
    written = [out / f for f in ("eval.json", "eval.png") if (out / f).exists()]
    if written and not args.overwrite:
        raise ValueError(f"--out {args.out} already holds {', '.join(f.name for f in written)}; "
                         "give another --out, or --overwrite to replace them")
    task = get_task(args.task, **kwargs)
    num = args.num_problems if args.num_problems is not None else (task.size("test") or GENERATED_PROBLEMS)
    problems = task.problems("test", num, seed=args.seed)
    max_new_tokens = args.max_new_tokens
    check_sampling_args(args.n, args.temperature, max_new_tokens, args.top_p)
    check_model_dir(args.model)
    from escov.llm.engines.base import load_tokenizer
    from escov.llm.prompt_lengths import check_prompt_lengths

    source = f"data file {args.data}" if args.data is not None else f"task {args.task} (test problems)"
    # before the model loads
    check_prompt_lengths({source: problems}, load_tokenizer(args.model), args.model, max_new_tokens)
    device = resolve_device(args.device, "--device")
    with make_engine(args.engine, args.model, dtype=getattr(torch, args.dtype), seed=args.seed, device=device) as engine:
        result = evaluate(engine, task, problems, n=args.n, ks=ks, temperature=args.temperature,
                          max_new_tokens=max_new_tokens, seed=args.seed, top_p=args.top_p,
                          progress=progress_enabled(args.no_progress))
    result = {"model": str(args.model), "engine": args.engine, "device": device, "data": args.data,
              "data_split": args.data_split, "data_fields": args.data_fields, "prompt_style": args.prompt_style,
              "reward": args.reward, "reward_function": args.reward_function,
              "reward_weights": args.reward_weights} | result
    out.mkdir(parents=True, exist_ok=True)
    out_file = out / "eval.json"
    out_file.write_text(dumps(result, str(out_file), indent=1), encoding="utf-8")
    plot(result, out / "eval.png")
    print(summary(result))
    print(f"wrote {out / 'eval.json'} and {out / 'eval.png'}")
    return 0


def summary(result: dict) -> str:
    passes = "  ".join(f"pass@{k} {v:.3f}" for k, v in result["pass_at_k"].items())
    majs = "  ".join(f"maj@{k} {v:.3f}" for k, v in result["maj_at_k"].items())
    from escov.llm.reward_stats import summary_line

    return (f"{result['task']}: {result['num_problems']} problems x {result['n']} samples at T={result['temperature']}"
            f" (correct: reward >= {result['correct_threshold']:g})\n"
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
