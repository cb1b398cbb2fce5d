"""Time the Countdown verifier takes on hostile and malformed completions (target: reward 0 in < 1 ms).

    python benchmarks/bench_verifiers.py [--repeats 200]

Prints, for each kind of input, the reward and the slowest of `--repeats` calls of
llm.tasks.countdown.score, and the ratio of the overall slowest call to the 1 ms budget.
"""
from __future__ import annotations

import argparse
import random
import time

from llm.tasks.countdown import score
from llm.tasks.safe_arith import MAX_CHARS

NUMBERS, TARGET = [3, 7, 25, 50], 46


def hostile_inputs() -> dict[str, str]:
    rng = random.Random(0)
    return {
        "correct answer": "50-25+3*7",
        "power tower": "9**9**9**9**9",
        "import": "__import__('os').system('echo pwned')",
        "huge literal (1M digits)": "9" * 1_000_000,
        "deep parentheses": "(" * 100 + "1" + ")" * 100,
        "10^5 open parentheses": "(" * 100_000,
        "product of 12-digit literals": "*".join(["999999999999"] * 20),
        "longest allowed sum": "+".join(["1"] * ((MAX_CHARS + 1) // 2)),
        "many <answer> tags": "<answer>" * 2_000 + "1",
        "random printable (20k chars)": "".join(chr(rng.randrange(32, 127)) for _ in range(20_000)),
        "random arithmetic alphabet": "".join(rng.choice("0123456789+-*/() ") for _ in range(MAX_CHARS)),
        "division by zero": "25/(7-7)+3*50",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    worst = 0.0
    print(f"{'input':<32} {'reward':>6} {'slowest call':>14}")
    for name, text in hostile_inputs().items():
        slowest = 0.0
        for _ in range(args.repeats):
            t = time.perf_counter()
            reward = score(text, NUMBERS, TARGET)
            slowest = max(slowest, time.perf_counter() - t)
        worst = max(worst, slowest)
        print(f"{name:<32} {reward:>6.1f} {slowest * 1e6:>11.1f} us")
    print(f"slowest call overall: {worst * 1e6:.1f} us = {worst / 1e-3:.3f} x the 1 ms budget")


if __name__ == "__main__":
    main()
