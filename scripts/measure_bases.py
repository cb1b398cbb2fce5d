"""Measure tiny base models the way the paper's bases are read (docs/answer-budget.md, "A base in the
paper's regime"): Pass@1 / @16 / @32 at T = 0.6, the share of prompts with no correct sample, and the
per-prompt histogram of correct samples; one PNG with every base's histogram side by side.

    PYTHONPATH=. .venv/bin/python scripts/measure_bases.py --out runs/bases-measured \\
        default=runs/bases/default paper=runs/bases/paper [--tasks countdown3,countdown]

Each base is evaluated on the first --problems prompts of the task's validation split (llm/problem_sets.py
split_set, SELECTION_SPLIT: a base recipe is chosen there, never on the answer's test prompts; `--split test` reads
a run's test prompts, for a base already chosen), --samples samples each (default 64, so "no correct sample"
is measured, not read off Pass@32). Results go to OUT/LABEL/TASK.json (the evaluation's eval.json record) and are reused
when the weights and the settings are the same; OUT/bases.md holds the table, OUT/histograms.png the plot.

Histogram bins (`BIN_EDGES`, as shares of the samples): no correct sample, then (0, 1/8], (1/8, 1/4],
(1/4, 1/2], (1/2, 3/4], (3/4, 1]. A real base's shape: a block in the first bin and a mass in the
last ones; a diffuse base has most prompts in the low non-zero bins.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

from escov.llm.problem_sets import CURVE_SPLITS, SELECTION_SPLIT

TEMPERATURE = 0.6  # the paper's evaluation temperature
KS = (1, 16, 32)
MAX_NEW_TOKENS = 32  # the tiny model's plain Countdown answers
BIN_EDGES = (0.0, 1 / 8, 1 / 4, 1 / 2, 3 / 4, 1.0)  # upper edges of the bins after "none correct"
BIN_LABELS = ("0", "≤1/8", "≤1/4", "≤1/2", "≤3/4", "≤1")


def histogram(correct: list[int], n: int) -> list[float]:
    """Share of prompts in each bin: none of n samples correct, then correct / n in (edge_{i-1}, edge_i]."""
    rates = np.asarray(correct, dtype=float) / n
    if rates.size == 0 or rates.min() < 0 or rates.max() > 1:
        raise ValueError(f"correct counts must lie in [0, n={n}], got {correct}")
    counts = [int(np.sum(rates == 0))]
    counts += [int(np.sum((rates > low) & (rates <= high))) for low, high in zip(BIN_EDGES[:-1], BIN_EDGES[1:])]
    return [c / rates.size for c in counts]


def summary(result: dict) -> dict:
    """The figures of one evaluation: Pass@k, no-correct share, share solved in half the samples or more, histogram."""
    correct = [r["correct"] for r in result["per_problem"]]
    n = result["n"]
    return {
        "pass_at_k": {k: result["pass_at_k"][str(k)] for k in KS},
        "no_correct": float(np.mean(np.asarray(correct) == 0)),
        "half_or_more": float(np.mean(np.asarray(correct) >= n / 2)),
        "histogram": histogram(correct, n),
        "n": n,
        "problems": len(correct),
    }


def weights_digest(model_dir: Path) -> str:
    return hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()[:16]


def base_problems(task_name: str, problems: int, split: str):
    """The ProblemSet a base is measured on: the first `problems` of the task's `split` (llm/problem_sets.py
    split_set)."""
    from escov.llm.config import TrainConfig
    from escov.llm.problem_sets import split_set

    return split_set(TrainConfig(task=task_name, eval_problems=problems), split)


def measure(
    model_dir: Path, task_name: str, problems: int, samples: int, out_file: Path, split: str = SELECTION_SPLIT
) -> dict:
    """The evaluation record of one base on one task (reused from out_file when weights and settings match)."""
    settings = {
        "weights": weights_digest(model_dir),
        "task": task_name,
        "problems": problems,
        "samples": samples,
        "temperature": TEMPERATURE,
        "max_new_tokens": MAX_NEW_TOKENS,
        "split": split,
    }
    if out_file.exists():
        kept = json.loads(out_file.read_text())
        if kept.get("settings") == settings:
            return kept
    from escov.llm.engines import make_engine
    from escov.llm.evaluate import evaluate

    measured = base_problems(task_name, problems, split)
    with make_engine("hf", model_dir) as engine:
        result = evaluate(
            engine,
            measured.task,
            measured.problems,
            n=samples,
            ks=list(KS),
            temperature=TEMPERATURE,
            max_new_tokens=MAX_NEW_TOKENS,
            seed=0,
            progress=False,
        )
    result["settings"] = settings
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(json.dumps(result, indent=1))
    return result


def pretrain_record(model_dir: Path) -> dict:
    path = model_dir / "pretrain.json"
    return json.loads(path.read_text()) if path.exists() else {}


def table(rows: list[tuple[str, str, dict, dict]]) -> str:
    """Markdown table: one row per (base, task)."""
    lines = [
        "| base | task | parameters | pretrain s | Pass@1 | Pass@16 | Pass@32 | no correct | half or more |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, task, s, record in rows:
        p = s["pass_at_k"]
        lines.append(
            f"| {label} | {task} | {record.get('parameters', 0) / 1e6:.2f}M | {record.get('train_seconds', 0):.0f} "
            f"| {p[1]:.3f} | {p[16]:.3f} | {p[32]:.3f} | {s['no_correct']:.3f} (of {s['n']}) "
            f"| {s['half_or_more']:.3f} |"
        )
    return "\n".join(lines)


def plot(rows: list[tuple[str, str, dict, dict]], tasks: list[str], labels: list[str], path: Path) -> None:
    """One panel per (task, base): share of prompts by share of correct samples."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_key = {(label, task): s for label, task, s, _ in rows}
    fig, axes = plt.subplots(
        len(tasks), len(labels), figsize=(2.3 * len(labels), 2.3 * len(tasks)), sharey=True, squeeze=False
    )
    for i, task in enumerate(tasks):
        for j, label in enumerate(labels):
            s, ax = by_key[(label, task)], axes[i][j]
            ax.bar(range(len(BIN_LABELS)), s["histogram"], color=["#c44"] + ["#48a"] * (len(BIN_LABELS) - 1))
            ax.set_xticks(range(len(BIN_LABELS)), BIN_LABELS, fontsize=7)
            p = s["pass_at_k"]
            ax.set_title(f"{label}, {task}\nP@1 {p[1]:.2f}  P@32 {p[32]:.2f}", fontsize=8)
            ax.set_ylim(0, 1)
            if j == 0:
                ax.set_ylabel("share of prompts", fontsize=8)
            if i == len(tasks) - 1:
                ax.set_xlabel(f"correct share of {s['n']}", fontsize=8)
    fig.suptitle(f"per-prompt success at T = {TEMPERATURE}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def parse_model(text: str) -> tuple[str, Path]:
    label, sep, folder = text.partition("=")
    path = Path(folder if sep else label)
    if not (path / "model.safetensors").exists():
        raise SystemExit(f"{text}: no model.safetensors in {path}")
    return (label if sep else path.name), path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", metavar="LABEL=DIR", help="base model folders (LABEL= optional)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tasks", default="countdown3,countdown", help="comma-separated tasks")
    parser.add_argument("--problems", type=int, default=128)
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument(
        "--split",
        choices=CURVE_SPLITS,
        default=SELECTION_SPLIT,
        help=f"the prompts measured (default: {SELECTION_SPLIT}, where a base is chosen)",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1: fastest for tiny models on a shared CPU)"
    )
    args = parser.parse_args(argv)
    if args.samples < max(KS):
        parser.error(f"--samples must be >= {max(KS)}")
    models = [parse_model(m) for m in args.models]
    import torch

    torch.set_num_threads(args.threads)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    rows = []
    for label, folder in models:
        for task in tasks:
            result = measure(folder, task, args.problems, args.samples, args.out / label / f"{task}.json", args.split)
            rows.append((label, task, summary(result), pretrain_record(folder)))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    (args.out / "bases.md").write_text(text + "\n")
    plot(rows, tasks, [label for label, _ in models], args.out / "histograms.png")
    print(text)
    print(f"wrote {args.out / 'bases.md'} and {args.out / 'histograms.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
