"""Time the verifiers take on hostile and malformed completions: Countdown (target: reward 0 in < 1 ms)
and math grading (target: < 1 s per answer in the main thread and in worker threads).

    python benchmarks/bench_verifiers.py [--repeats 200] [--math-repeats 3]

Prints, for each kind of input, the reward and the slowest of `--repeats` calls of
llm.tasks.countdown.score, and the ratio of the overall slowest call to the 1 ms budget; then the
slowest of `--math-repeats` gradings (llm.tasks.math_grader.grade, a distinct text each time so
that no result comes from its cache) of each hostile math answer, in the main thread and in a
worker thread, and the ratio of the slowest to the 1 s budget.
"""

from __future__ import annotations

import argparse
import random
import threading
import time

from escov.llm.tasks.countdown import score
from escov.llm.tasks.safe_arith import MAX_CHARS

NUMBERS, TARGET = [3, 7, 25, 50], 46
MATH_HOSTILE = {  # {i} makes each repetition a new text
    "power tower 9^9^9^(9+i)": "\\boxed{{9^{{9^{{9^{{{n}}}}}}}}}",
    "factorial of 10^10^(10+i)": "\\boxed{{10^{{10^{{{n}}}}}!}}",
    "(10^(6+i))!": "The answer is $(10^{{{n}}})!$",
    "correct after 60k characters": "x" * 60_000 + "\\boxed{{41}} {n}",
}
MATH_BASES = (9, 10, 6, 0)


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
    parser.add_argument("--math-repeats", type=int, default=3)
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
    bench_math(args.math_repeats)


def bench_math(repeats: int) -> None:
    from escov.llm.tasks.math_grader import grade

    grade("1", "\\boxed{1}")  # start the grading worker
    worst = 0.0
    print(f"\n{'math answer (gold 41)':<32} {'thread':>6} {'correct':>7} {'slowest':>10}")
    for where in ("main", "worker"):
        for (name, template), base in zip(MATH_HOSTILE.items(), MATH_BASES):
            slowest, correct = 0.0, None

            def run(i: int) -> None:
                nonlocal slowest, correct
                t = time.perf_counter()
                correct = grade("41", template.format(n=base + i + (100 if where == "worker" else 0))).correct
                slowest = max(slowest, time.perf_counter() - t)

            for i in range(repeats):
                if where == "main":
                    run(i)
                else:
                    thread = threading.Thread(target=run, args=(i,))
                    thread.start()
                    thread.join()
            worst = max(worst, slowest)
            print(f"{name:<32} {where:>6} {str(correct):>7} {slowest:>8.3f} s")
    print(f"slowest math answer: {worst:.3f} s = {worst:.3f} x the 1 s budget")


if __name__ == "__main__":
    main()
