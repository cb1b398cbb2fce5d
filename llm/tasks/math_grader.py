"""Bounded grading of math answers: math-verify in a worker process, with bounds on the work per answer.

Model output is hostile input: `\\boxed{9^{9^{9^{9}}}}` or `(10^6)!` can keep sympy busy for
minutes, and math-verify's own timeout (signal.alarm) works only in a process's main thread. A grade
is a function of the answer and the gold alone, never of the machine's load: what is too expensive to
check is decided by bounds on the answer's size (below), not by a clock. Every answer, wherever it is
graded (main thread, worker threads, subprocesses, Ray actors), goes through one path:

1. In the calling process, in linear time: completions longer than `max_chars` (default
   `MAX_COMPLETION_CHARS`, 64k characters) have no answer; answers inside `<think>` never count
   (both in llm/tasks/reasoning_format.py); the answer text is the last `\\boxed{...}` (brace
   matched), else the last `MAX_ANSWER_CHARS` characters.
2. One persistent worker process per calling process (`python -m escov.llm.tasks.math_grader`, JSON
   lines over its stdin and stdout) parses the answer and compares it with the gold:
   `verify(parse(gold), parse(answer))`, gold first. The answer is parsed (at most MAX_ANSWER_CHARS
   characters) and, before any comparison, checked against the work bounds (`too_expensive`: tree
   nodes, nesting depth, distinct symbols, exponents of symbolic powers, sums and products (\\sum,
   \\prod) of more than `MAX_TERMS` terms or over limits that are not integers, and numbers of more than
   `MAX_VALUE_BITS` bits, e.g. towers of powers, factorials and binomials of large numbers, long products:
   one long C call each, which no signal interrupts); an answer over a bound is wrong, whatever the
   machine's load.
   Inside the bounds an answer takes well under a second of CPU time (tests/llm/test_math_grader.py).
   A wall-clock timer of `SAFETY_NET_SECONDS` (the worker's main thread, where signals work) stays
   only as a safety net far above that cost: an answer that reaches it is wrong, and it is never
   silent: it is counted (`safety_net_hits`, reported per evaluation in eval.json as
   `grading_timeouts` and per step in metrics.jsonl) and named on stderr. Work a signal cannot
   interrupt is cut by the caller: past `KILL_AFTER_SECONDS` it kills the worker (counted the same
   way), the warm standby takes its place and a new standby starts.
   Where math-verify is not installed the worker says so instead of "ready", and the first answer
   graded raises `MathVerifyMissing` naming it (nothing else in the project needs math-verify).
3. Results are cached by (gold, answer text), so a sample scored and then asked for its answer
   (Maj@k) is parsed once.

Percent signs (math-verify reads `18\\%` as 18/100 and accepts it for gold 18 and for gold 0.18
alike): here an answer's percent sign counts only where the gold has one. For a gold without a
percent sign, `18\\%` is read as 18 (gold 18: correct; gold 0.18: wrong); for a gold with one
(`18\\%`), math-verify's rule holds: 18, `18\\%` and 0.18 are all correct.

The normalized answer (the Maj@k vote) is the exact numeric value for numbers (`41`, `41.0` and
`41.0000000000000` are one vote; `0.75` and `\\frac{3}{4}` too), else sympy's printing of the parsed
expression (JSON-safe strings: they cross the pipe).
"""
from __future__ import annotations

import atexit
import functools
import json
import math
import os
import re
import select
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from escov.llm.tasks.reasoning_format import MAX_COMPLETION_CHARS, after_thinking

SAFETY_NET_SECONDS = 20.0     # parse + compare of one answer, wall clock (the worker's timer): a safety net only
KILL_AFTER_SECONDS = 30.0     # the caller's deadline, for work the timer cannot interrupt (long C calls)
STARTUP_SECONDS = 120.0       # a fresh worker imports math-verify and sympy (seconds on a loaded CPU)
MAX_ANSWER_CHARS = 500        # the text handed to math-verify (parsing costs about 1.5 ms of CPU per character)
CACHE_SIZE = 16_384
# the work bounds of an answer (too_expensive); an answer over one is wrong before it is compared
MAX_VALUE_BITS = 100_000      # numbers its evaluation could make (value_bits)
MAX_NODES = 120               # nodes of its expression tree
MAX_DEPTH = 16                # nesting depth of that tree
MAX_SYMBOLS = 8               # distinct symbols
MAX_SYMBOLIC_EXPONENT = 64    # |n| of an integer power n of an expression with symbols ((x+1)^n expands to n+1 terms)
MAX_TERMS = 1000              # terms of a sum or product (\sum, \prod: each term is evaluated)
OVER_BUDGET = "over-budget"   # the worker's reply when its timer fired
MISSING = "missing"           # the worker's first line when it cannot import math-verify (instead of "ready")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding the llm package


@dataclass(frozen=True)
class Graded:
    correct: bool      # False too when the answer is over a work bound or reached the safety net
    boxed: bool        # the answer was a \boxed{} answer
    key: str | None    # normalized answer (Maj@k vote); None when there is none


NO_ANSWER = Graded(False, False, None)


def last_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{...}` (braces matched, at most MAX_ANSWER_CHARS), or None."""
    start = text.rfind("\\boxed")
    if start < 0:
        return None
    i = start + len("\\boxed")
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text) or text[i] != "{":
        return None
    depth = 0
    for j in range(i, min(len(text), i + MAX_ANSWER_CHARS + 2)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j].strip()
    return None


def answer_text(completion, starts_in_think: bool = False,
                max_chars: int = MAX_COMPLETION_CHARS) -> tuple[str | None, bool]:
    """(the text math-verify parses, whether it is a \\boxed{} answer); (None, False) when there is none."""
    if not isinstance(completion, str) or len(completion) > max_chars:
        return None, False
    region = after_thinking(completion, starts_in_think)
    if region is None:
        return None, False
    boxed = last_boxed(region)
    if boxed is not None:
        return ("\\boxed{" + boxed + "}", True) if boxed else (None, False)
    tail = region[-MAX_ANSWER_CHARS:]
    return (tail, False) if tail.strip() else (None, False)


def gold_text(gold: str) -> str:
    """The gold as math-verify reads it: in $...$ unless it already has math delimiters or a box."""
    return gold if "$" in gold or "\\boxed" in gold else f"${gold}$"


def grade(gold: str, completion, *, starts_in_think: bool = False, max_chars: int = MAX_COMPLETION_CHARS) -> Graded:
    """Correctness, box and normalized answer of a completion against a gold answer (bounded, cached)."""
    text, boxed = answer_text(completion, starts_in_think, max_chars)
    if text is None:
        return NO_ANSWER
    correct, key = _grade_text(gold, text)
    return Graded(correct, boxed, key)


def gold_key(gold: str) -> str | None:
    """The normalized gold answer, or None when math-verify cannot parse it (bounded like answers)."""
    if _NUMBER.fullmatch(gold.strip()):
        return _number_key(gold.strip())
    return _grader().request(["parse", gold_text(gold)])


@functools.lru_cache(maxsize=CACHE_SIZE)
def _grade_text(gold: str, text: str) -> tuple[bool, str | None]:
    result = _grader().request(["grade", gold_text(gold), text])
    return (False, None) if result is None else (bool(result[0]), result[1])


# ----------------------------------------------------------------------------- the worker process

def _number_key(text: str) -> str:
    """The exact value of a decimal numeral, written as sympy writes rationals: "0.75" -> "3/4"."""
    return str(Fraction(text))


def _key(parsed) -> str | None:
    """Exact numeric value for numbers (from the extracted text: Float('0.75') -> 3/4), else sympy's str."""
    if not parsed:
        return None
    import sympy
    expr, extracted = parsed[0], parsed[-1]
    if isinstance(expr, sympy.Float):
        text = str(extracted).replace(",", "").strip()
        return _number_key(text) if _NUMBER.fullmatch(text) else str(sympy.Rational(str(expr)))
    return str(expr)


def value_bits(expr, bound: dict | None = None) -> float:
    """An upper bound on the bits of the numbers that evaluating `expr` can make (inf when huge).

    Integers: their bits; b^e: |e| * bits(b), with e's own size bounding |e|; n!: n log2 n; a binomial
    C(n, k) and rising or falling factorials as n! with n of the bits of all their arguments; a sum or product
    over integer ranges (\\sum, \\prod; `sum_or_product_range`) of t terms: its term's bits (its variables at
    the bits of their largest limit) + log2 t, or t times them; over a range that is not a given integer range:
    inf; sums and products of expressions: the sum over their arguments (so for any other function too).
    Symbols count 0 (`bound`: the bits of the variables of an enclosing sum or product).
    """
    import sympy
    from sympy import FallingFactorial, RisingFactorial, binomial, factorial, factorial2, subfactorial

    bound = bound or {}
    if isinstance(expr, sympy.Symbol):
        return bound.get(expr, 0.0)
    if not isinstance(expr, sympy.Basic):
        return 0.0
    if isinstance(expr, (sympy.Sum, sympy.Product)):
        terms = sum_or_product_range(expr)
        if terms is None or terms > MAX_TERMS:
            return math.inf
        inner = bound | {limit[0]: max(value_bits(limit[1], bound), value_bits(limit[2], bound))
                         for limit in expr.limits}
        term = max(value_bits(expr.function, inner), 1.0)
        return term + math.log2(max(terms, 1)) if isinstance(expr, sympy.Sum) else term * max(terms, 1)
    if isinstance(expr, (binomial, RisingFactorial, FallingFactorial)):
        n = sum((value_bits(arg, bound) for arg in expr.args), 0.0)
        return math.inf if n > 64 else 2.0 ** n * max(n, 1.0)
    if isinstance(expr, sympy.Rational):
        return float(max(abs(expr.p), expr.q).bit_length())
    if isinstance(expr, sympy.Float):
        return float(abs(expr._mpf_[2]) + expr._mpf_[3]) if expr._mpf_[1] else 0.0
    if isinstance(expr, sympy.Pow):
        base, exponent = value_bits(expr.base, bound), value_bits(expr.exp, bound)
        return math.inf if exponent > 64 else max(base, 1.0) * 2.0 ** exponent
    if isinstance(expr, (factorial, factorial2, subfactorial, sympy.gamma)):
        n = value_bits(expr.args[0], bound)
        return math.inf if n > 64 else 2.0 ** n * max(n, 1.0)
    return sum((value_bits(arg, bound) for arg in expr.args), 0.0)


def sum_or_product_range(expr) -> int | None:
    """The number of terms of a sum or product (the product of its limits' ranges), None when a limit is not a
    given integer (a symbol, infinity) or the range is too long to count."""
    import sympy

    terms = 1
    for limit in expr.limits:
        if len(limit) != 3 or not all(isinstance(v, sympy.Integer) for v in limit[1:]):
            return None
        terms *= max(int(limit[2]) - int(limit[1]) + 1, 0)
        if terms > MAX_TERMS:
            return None
    return terms


def too_expensive(expr) -> str | None:
    """Which work bound an answer's parsed expression is over (None: within all of them), decided from its
    tree alone, before any comparison: more than MAX_NODES nodes (the walk stops there), deeper than
    MAX_DEPTH, more than MAX_SYMBOLS distinct symbols, an integer power of an expression with symbols
    above MAX_SYMBOLIC_EXPONENT in size, a sum or product (\\sum, \\prod) not over at most MAX_TERMS terms
    between integers, or numbers of more than MAX_VALUE_BITS bits (value_bits).
    Values that are not sympy expressions (text) are within the bounds."""
    import sympy

    if not isinstance(expr, sympy.Basic):
        return None
    nodes, symbols, stack = 0, set(), [(expr, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return f"more than {MAX_NODES} nodes"
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH}"
        if isinstance(node, sympy.Symbol):
            symbols.add(node)
            if len(symbols) > MAX_SYMBOLS:
                return f"more than {MAX_SYMBOLS} symbols"
        if (isinstance(node, sympy.Pow) and isinstance(node.exp, sympy.Integer)
                and abs(node.exp) > MAX_SYMBOLIC_EXPONENT and node.base.free_symbols):
            return f"a power of an expression with symbols above {MAX_SYMBOLIC_EXPONENT}"
        if isinstance(node, (sympy.Sum, sympy.Product)) and sum_or_product_range(node) is None:
            return f"a sum or product not over at most {MAX_TERMS} terms between given integers"
        stack.extend((arg, depth + 1) for arg in node.args if isinstance(arg, sympy.Basic))
    if value_bits(expr) > MAX_VALUE_BITS:  # after the walk: it bounds value_bits' own recursion
        return f"numbers of more than {MAX_VALUE_BITS} bits"
    return None


def _percent():
    """How math-verify (latex2sympy) writes a percent sign: X% is X * UnevaluatedExpr(1/100)."""
    import sympy
    return sympy.UnevaluatedExpr(sympy.Rational(1, 100))


def has_percent(parsed) -> bool:
    """Whether a parse result holds a percent sign."""
    import sympy
    return any(isinstance(p, sympy.Basic) and p.has(_percent()) for p in parsed)


def without_percent(expr):
    """The expression with its percent signs dropped: 18% -> 18 (text is kept as it is)."""
    import sympy
    if not isinstance(expr, sympy.Basic) or not expr.has(_percent()):
        return expr
    return expr.replace(lambda e: isinstance(e, sympy.Mul) and _percent() in e.args,
                        lambda e: sympy.Mul(*[a for a in e.args if a != _percent()]))


def _parse_and_compare(request, golds: dict):
    """One request in the worker: ["parse", text] -> key | None; ["grade", gold, text] -> [correct, key]
    (an answer over a work bound, or malformed, is [False, None]; an answer's percent sign is dropped
    unless the gold has one)."""
    from math_verify import parse, verify
    if request[0] == "parse":  # a gold: parseable only when math-verify finds an expression, not just text
        try:
            parsed = parse(request[1], parsing_timeout=None)
        except Exception:  # math-verify raises on pathological LaTeX: unparseable
            return None
        return _key(parsed) if parsed and not isinstance(parsed[0], str) else None
    _, gold, text = request
    try:
        if gold not in golds:
            if len(golds) > CACHE_SIZE:
                golds.clear()
            golds[gold] = parse(gold, parsing_timeout=None)
        pred = parse(text, parsing_timeout=None)
        if any(too_expensive(p) for p in pred):  # (10^6)! would keep C code busy for seconds
            return [False, None]
        if not has_percent(golds[gold]):
            pred = [without_percent(p) for p in pred]
        correct = bool(golds[gold] and pred and verify(golds[gold], pred, timeout_seconds=None))
        return [correct, _key(pred)]
    except Exception:  # a malformed answer is wrong
        return [False, None]


# The process plumbing below (the worker's loop and timer, its pipe, its start and replacement) is left out of
# mutation testing (scripts/mutation.py): its bugs hang or crash rather than change a grade, and the liveness
# tests of test_math_grader.py run it in fresh processes, which mutmut does not map.
# pragma: no mutate block
class MathVerifyMissing(ImportError):
    """math-verify is not installed: the math tasks cannot grade (everything else runs without it)."""


class _OverBudget(BaseException):
    """Raised by the worker's timer; a BaseException, so that no `except Exception` in math-verify or
    sympy swallows it."""


def _over_budget(signum, frame):
    raise _OverBudget


def _serve(safety_net_seconds: float) -> None:
    """Worker loop (`python -m escov.llm.tasks.math_grader [SECONDS]`): warm sympy up, say ready, then answer
    one JSON line on stdout per JSON request line on stdin until stdin closes. Each request runs under a
    timer of safety_net_seconds (its main thread, so signals work). Each reply is {"answer": ...}, or
    OVER_BUDGET when the timer fired (the worker is healthy and goes on)."""
    golds: dict = {}
    out = sys.stdout
    try:
        _parse_and_compare(("grade", "$\\frac{1}{2}$", "\\boxed{0.5}"), golds)
    except ImportError as err:  # said instead of "ready": the caller raises MathVerifyMissing
        out.write(json.dumps({MISSING: str(err)}) + "\n")
        out.flush()
        return
    signal.signal(signal.SIGALRM, _over_budget)
    out.write('"ready"\n')
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, safety_net_seconds)
                answer = _parse_and_compare(request, golds)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _OverBudget:
            out.write(json.dumps(OVER_BUDGET) + "\n")
        else:
            out.write(json.dumps({"answer": answer}) + "\n")
        out.flush()


class _Worker:
    """A worker process; `ready` once it has imported math-verify and warmed sympy up."""

    def __init__(self, safety_net_seconds: float, kill_after_seconds: float):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen([sys.executable, "-m", "escov.llm.tasks.math_grader", repr(safety_net_seconds)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.kill_after_seconds = kill_after_seconds
        self.ready = False

    def reply(self, timeout: float):
        """The next line the worker writes, decoded; None when none comes within timeout seconds."""
        readable, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if readable else b""
        return json.loads(line) if line else None

    def wait_ready(self) -> None:
        if not self.ready:
            first = self.reply(STARTUP_SECONDS)
            if isinstance(first, dict) and MISSING in first:
                raise MathVerifyMissing(f"grading math answers needs math-verify, which this Python cannot import "
                                        f"({first[MISSING]}): pip install 'math-verify>=0.7'")
            if first != "ready":
                raise RuntimeError(f"the math grading worker (python -m escov.llm.tasks.math_grader) did not start "
                                   f"within {STARTUP_SECONDS:.0f} s")
            self.ready = True

    def ask(self, message):
        """The worker's reply: {"answer": ...}, OVER_BUDGET, or None when none came within kill_after_seconds."""
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        return self.reply(self.kill_after_seconds)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()


class _Grader:
    """The calling process's worker and a warm standby; a lock serializes requests (threads share them)."""

    def __init__(self, safety_net_seconds: float = SAFETY_NET_SECONDS, kill_after_seconds: float = KILL_AFTER_SECONDS):
        self.lock = threading.Lock()
        self.safety_net_seconds, self.kill_after_seconds = safety_net_seconds, kill_after_seconds
        self.worker: _Worker | None = None
        self.standby: _Worker | None = None

    def _new_worker(self) -> _Worker:
        return _Worker(self.safety_net_seconds, self.kill_after_seconds)

    def request(self, message):
        """The worker's answer; None when it reached the safety net (the worker goes on), or took longer than
        kill_after_seconds or died (the worker is then killed and the standby takes its place): each of
        these is counted (safety_net_hits) and named on stderr."""
        with self.lock:
            if self.worker is None:
                self.worker = self._new_worker()
            self.worker.wait_ready()
            if self.standby is None:
                self.standby = self._new_worker()  # warms up while this worker answers
            try:
                reply = self.worker.ask(message)
            except OSError:  # the worker died (e.g. out of memory)
                reply = None
            if reply is None:
                self.worker.close()
                self.worker, self.standby = self.standby, None
                _count_safety_net_hit(message,
                                      f"no reply within {self.kill_after_seconds:g} s: its worker was replaced")
                return None
            if reply == OVER_BUDGET:
                _count_safety_net_hit(message, f"over the {self.safety_net_seconds:g} s safety net")
                return None
            return reply["answer"]

    def close(self) -> None:
        with self.lock:
            for worker in (self.worker, self.standby):
                if worker is not None:
                    worker.close()
            self.worker = self.standby = None


_GRADER: _Grader | None = None
_GRADER_LOCK = threading.Lock()
_SAFETY_NET_HITS = [0]  # answers (and golds) of this process that reached the safety net


def safety_net_hits() -> int:
    """How many answers (and golds) this process graded as wrong because they reached the wall-clock
    safety net (a count that only grows: callers report the difference over an evaluation or a step)."""
    return _SAFETY_NET_HITS[0]


def _count_safety_net_hit(message, why: str) -> None:
    _SAFETY_NET_HITS[0] += 1
    print(f"warning: math grading: {message[-1][:80]!r} {why}; graded wrong and counted "
          f"({_SAFETY_NET_HITS[0]} in this process)", file=sys.stderr, flush=True)


def _grader() -> _Grader:
    global _GRADER
    with _GRADER_LOCK:
        if _GRADER is None:
            _GRADER = _Grader()
        return _GRADER


def _forget_after_fork() -> None:
    """A forked child must not share its parent's pipes, lock or cache: it starts its own workers."""
    global _GRADER, _GRADER_LOCK
    _GRADER, _GRADER_LOCK = None, threading.Lock()
    _grade_text.cache_clear()


def _close_at_exit() -> None:
    if _GRADER is not None:
        _GRADER.close()


os.register_at_fork(after_in_child=_forget_after_fork)
atexit.register(_close_at_exit)

if __name__ == "__main__":
    _serve(float(sys.argv[1]) if len(sys.argv) > 1 else SAFETY_NET_SECONDS)
