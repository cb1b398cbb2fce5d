"""How fast `escov coverage` summarises the field's sample counts, and how fast the Countdown verifier scores.

    python benchmarks/bench_coverage.py [--prompts 489] [--samples 1024] [--completions 200000] [--out DIR]

1. A plain JSONL table of 2 models x PROMPTS x SAMPLES scored completions (the defaults: 1,001,472 rows,
   n = 1024) is summarised as `escov coverage TABLE --reference base --json OUT` does it (sources.load,
   measure.measure, rundir.write_json; 1000 bootstrap replicates, Pass@k at k = 1 ... 1024, k*, Cover@tau,
   solvability): wall seconds
   of reading and checking the table, of measuring, and in all; peak memory. Target: <= 60 s on 2 cores.
2. The Countdown verifier (llm.tasks.countdown_verdicts.score_batch, 1024 completions of an instance a call, as a
   prompt's samples are scored) on COMPLETIONS completions: all distinct (the remembered verdicts cleared
   first, so none is reused), and as one model's samples are (1024 per prompt, answers drawn from the
   prompt's 40 most frequent ones with Zipf weights, a fifth malformed). Completions a second, of wall
   time and of this process's CPU time (the machine may be shared). Target: >= 50,000 a second.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import peak_mb

from escov.llm.tasks import countdown_verdicts
from escov.paper_checks.coverage.measure import MeasureOptions, measure
from escov.paper_checks.coverage.sources import ReadOptions, load

NUMBERS, TARGET = [3, 7, 25, 50], 46


def write_table(path: Path, prompts: int, samples: int, seed: int = 0) -> int:
    """base: p ~ Beta(0.3, 2); rl: sharper on two thirds of the prompts, blind on the rest."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.3, 2.0, prompts)
    rates = {"base": p, "rl": np.where(np.arange(prompts) % 3 == 0, 0.0, 1 - (1 - p) ** 4)}
    rows = 0
    with open(path, "w") as f:
        for model, rate in rates.items():
            flags = rng.random((prompts, samples)) < rate[:, None]
            lines = [
                f'{{"model": "{model}", "prompt_id": "q{i}", "sample": {s}, "correct": {int(flags[i, s])}}}\n'
                for i in range(prompts)
                for s in range(samples)
            ]
            f.writelines(lines)
            rows += len(lines)
    return rows


def bench_summary(prompts: int, samples: int, out: Path) -> dict:
    table = out / "table.jsonl"
    rows = write_table(table, prompts, samples)
    start, cpu = time.perf_counter(), time.process_time()
    cov = load([str(table)], ReadOptions())
    loaded = time.perf_counter()
    report = measure(cov, MeasureOptions("base"))
    measured = time.perf_counter()
    from escov.llm.rundir import write_json

    write_json(out / "coverage.json", report)
    done = time.perf_counter()
    return {
        "rows": rows,
        "n": samples,
        "read_s": loaded - start,
        "measure_s": measured - loaded,
        "total_s": done - start,
        "cpu_s": time.process_time() - cpu,
        "peak_mb": peak_mb(),
        "k_star": report["models"]["rl"]["crossing"]["k_star"],
    }


def distinct_completions(count: int, seed: int = 1) -> list[str]:
    """Distinct answer texts: a fifth malformed, two fifths other numbers' expressions, two fifths the
    instance's numbers each once in random order, operators, brackets and inner spaces (some correct)."""
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < count:
        a, b, c, d = rng.sample(NUMBERS, 4)
        o = [rng.choice("+-*/") for _ in range(3)]
        kind = rng.random()
        if kind < 0.2:
            out.add("".join(rng.choice("0123456789+-*/() abc") for _ in range(rng.randint(1, 30))))
        elif kind < 0.6:
            out.add(f"({a}{o[0]}{b}){o[1]}{rng.randint(1, 10**6)}{o[2]}{d}")
        else:
            gaps = [" " * rng.randint(0, 3) for _ in range(6)]
            out.add(f"{a}{gaps[0]}{o[0]}{gaps[1]}{b}{gaps[2]}{o[1]}{gaps[3]}({c}{gaps[4]}{o[2]}{gaps[5]}{d})")
    return list(out)


def sampled_completions(count: int, seed: int = 2) -> list[str]:
    """1024 samples per prompt drawn from its 40 answers (Zipf weights 1/rank)."""
    rng = random.Random(seed)
    pool = distinct_completions(40 * (count // 1024 + 1), seed=seed + 1)
    out = []
    for start in range(0, count, 1024):
        answers = pool[(start // 1024) * 40 : (start // 1024 + 1) * 40]
        out += rng.choices(answers, weights=[1 / (r + 1) for r in range(40)], k=min(1024, count - start))
    return out


def bench_verifier(completions: int) -> dict:
    rates = {}
    for label, texts in (
        ("distinct", distinct_completions(completions)),
        ("sampled", sampled_completions(completions)),
    ):
        countdown_verdicts._verdict.cache_clear()
        start, cpu = time.perf_counter(), time.process_time()
        correct = sum(
            sum(countdown_verdicts.score_batch(texts[i : i + 1024], NUMBERS, TARGET))
            for i in range(0, len(texts), 1024)
        )
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
        rates[label] = {
            "completions": len(texts),
            "per_s": len(texts) / seconds,
            "per_cpu_s": len(texts) / cpu_seconds,
            "correct": correct,
        }
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=489)
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--completions", type=int, default=200_000)
    parser.add_argument("--out", type=Path, default=None, help="keep the table and report here (default: a temp dir)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        summary = bench_summary(args.prompts, args.samples, out)
    print(
        f"summary of {summary['rows']:,} scored completions (n = {summary['n']}): read and checked "
        f"{summary['read_s']:.1f} s, measured {summary['measure_s']:.1f} s, total {summary['total_s']:.1f} s "
        f"(target 60 s: ratio {summary['total_s'] / 60:.2f}; {summary['cpu_s']:.1f} CPU s); "
        f"peak {summary['peak_mb']:.0f} MB; "
        f"k* {summary['k_star']}"
    )
    for label, r in bench_verifier(args.completions).items():
        print(
            f"countdown verifier, {label} completions: {r['per_s']:,.0f} a second ({r['per_cpu_s']:,.0f} a CPU "
            f"second) over {r['completions']:,} ({r['correct']:,.0f} correct; target 50,000: ratio "
            f"{r['per_s'] / 50_000:.2f})"
        )
    print(json.dumps({"summary": summary}, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
