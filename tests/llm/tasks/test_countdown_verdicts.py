"""The faster Countdown verifier (a depth-first node check, evaluation on integer pairs; in
llm/tasks/countdown_verdicts.py, remembered verdicts and a digit-run pre-check) gives every verdict, tree and value the
previous implementation gave, and refuses what it refused: that implementation is copied below, verbatim in substance,
and both are run on tens of thousands of random strings. A refusal's words are the same where the text breaks one rule;
where it breaks several the new check names the first in depth-first order (the old one in breadth-first order)."""

import ast
import random
from fractions import Fraction

import pytest

from escov.llm.tasks import countdown, safe_arith
from escov.llm.tasks.countdown import extract_answer, score
from escov.llm.tasks.countdown_verdicts import score_batch
from escov.llm.tasks.safe_arith import (
    MAX_CHARS,
    MAX_LITERAL_DIGITS,
    MAX_MAGNITUDE,
    MAX_NODES,
    UnsafeExpression,
    evaluate,
    literals,
    parse_expression,
)

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
ALPHABET = "0123456789+-*/() "


# ----------------------------------------------------------------------------- the previous implementation


def old_parse(text):
    if not isinstance(text, str):
        raise UnsafeExpression(f"expression must be a str, got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise UnsafeExpression(f"expression longer than {MAX_CHARS} characters")
    if not text.strip():
        raise UnsafeExpression("expression is empty")
    bad = set(text) - frozenset(ALPHABET)
    if bad:
        raise UnsafeExpression(f"characters outside the whitelist: {sorted(bad)!r}")
    import re

    if any(len(run) > MAX_LITERAL_DIGITS for run in re.findall(r"\d+", text)):
        raise UnsafeExpression(f"a literal has more than {MAX_LITERAL_DIGITS} digits")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise UnsafeExpression(f"not an arithmetic expression: {type(e).__name__}") from None
    nodes = 0
    for node in ast.walk(tree.body):
        if isinstance(node, ast.operator):
            continue
        nodes += 1
        if nodes > MAX_NODES:
            raise UnsafeExpression(f"more than {MAX_NODES} syntax nodes")
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise UnsafeExpression(f"operator {type(node.op).__name__} is not allowed")
        elif not (isinstance(node, ast.Constant) and type(node.value) is int):
            raise UnsafeExpression(f"syntax {type(node).__name__} is not allowed (integers and + - * / only)")
    return tree.body


def _checked(value):
    if abs(value.numerator) > MAX_MAGNITUDE or value.denominator > MAX_MAGNITUDE:
        raise UnsafeExpression(f"an intermediate value exceeds {MAX_MAGNITUDE:.0e} in size")
    return value


def old_apply(op, a, b):
    if op == "+":
        return _checked(a + b)
    if op == "-":
        return _checked(a - b)
    if op == "*":
        return _checked(a * b)
    if b == 0:
        raise UnsafeExpression("division by zero")
    return _checked(a / b)


def old_evaluate(node):
    if isinstance(node, ast.Constant):
        return _checked(Fraction(node.value))
    return old_apply(_BINOPS[type(node.op)], old_evaluate(node.left), old_evaluate(node.right))


def old_score(completion, numbers, target, format_reward=0.0, style="plain"):
    value = countdown.parse_target(target)
    if not isinstance(completion, str) or len(completion) > countdown.MAX_COMPLETION_CHARS:
        return 0.0
    answer = extract_answer(completion, style)
    if answer is None:
        return 0.0
    try:
        tree = old_parse(answer)
        correct = sorted(literals(tree)) == sorted(numbers) and old_evaluate(tree) == value
    except UnsafeExpression:
        return 0.0
    return 1.0 if correct else format_reward


# ----------------------------------------------------------------------------- random inputs


def random_expression(rng, depth=0):
    if depth > 3 or rng.random() < 0.35:
        return str(rng.choice([0, 1, 2, 3, 7, 10, 25, 50, 100, 999999999999, rng.randint(0, 120)]))
    op = rng.choice("+-*/")
    text = (
        random_expression(rng, depth + 1)
        + rng.choice(["", " "])
        + op
        + rng.choice(["", " "])
        + random_expression(rng, depth + 1)
    )
    return f"({text})" if rng.random() < 0.4 else text


def corrupt(rng, text):
    """A near miss: one character inserted, deleted or replaced from the alphabet."""
    i = rng.randrange(len(text) + 1)
    kind = rng.randrange(3)
    c = rng.choice(ALPHABET)
    if kind == 0:
        return text[:i] + c + text[i:]
    return text[:i] + text[i + 1 :] if kind == 1 else text[:i] + c + text[i + 1 :]


def strings(seed, count):
    rng = random.Random(seed)
    out = [
        "(" * 127 + "1" + ")" * 127,
        "(" * 60 + "2+2" + ")" * 60,
        "007",
        "00",
        "0 0",
        "2(3)",
        "()",
        "2* *3",
        "2**3",
        "2//3",
        "-3",
        "1/0",
        "4/(2-2)",
        "999999999999*999999999999",
        "1000000000*1000000000",
        "1/(1000000000*1000000000+1)",
        "+".join(["1"] * 32),
        "+".join(["1"] * 33),
        "1+",
        "",
    ]
    while len(out) < count:
        r = rng.random()
        if r < 0.4:
            out.append(random_expression(rng))
        elif r < 0.7:
            out.append(corrupt(rng, random_expression(rng)))
        else:
            out.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40))))
    return out


def outcome(f, text):
    try:
        return ("ok", f(text))
    except UnsafeExpression as err:
        return ("refused", str(err))


def test_parse_trees_values_and_refusals_are_the_previous_ones():
    for text in strings(0, 30_000):
        old = outcome(old_parse, text)
        new = outcome(parse_expression, text)
        if old[0] == "ok":
            assert new[0] == "ok" and ast.dump(new[1]) == ast.dump(old[1]), text
            assert outcome(evaluate, new[1]) == outcome(old_evaluate, old[1]), text
        else:
            assert new[0] == "refused", text
            assert new[1] == old[1] or not new[1].startswith("not an"), text  # Python's parse refuses alike


@pytest.mark.parametrize("format_reward", [0.0, 0.5])
def test_scores_are_the_previous_ones_on_random_completions(format_reward):
    rng = random.Random(1)
    instances = [([3, 7, 25, 50], 46), ([2, 3, 4], 10), ([1, 1, 5], "2.5"), ([6, 4], 24), ([999999999999, 1], 1)]
    texts = strings(2, 20_000)
    batches = {}
    for i, text in enumerate(texts):
        numbers, target = instances[i % len(instances)]
        if rng.random() < 0.3:  # an answer made of the instance's own numbers: often right
            ops = [rng.choice("+-*/") for _ in numbers]
            text = "".join(str(x) + o for x, o in zip(rng.sample(numbers, len(numbers)), ops))[:-1]
        completion = f"<answer>{text}</answer>" if rng.random() < 0.5 else text
        for _ in range(2):  # the second call may come from the remembered verdict
            assert score(completion, numbers, target, format_reward) == old_score(
                completion, numbers, target, format_reward
            ), completion
        batches.setdefault(i % len(instances), []).append(completion)
    for j, completions in batches.items():  # score_batch: one instance's completions at once
        numbers, target = instances[j]
        assert score_batch(completions, numbers, target, format_reward) == [
            old_score(c, numbers, target, format_reward) for c in completions
        ]


def test_every_refusal_of_evaluate_keeps_its_words():
    too_big = f"an intermediate value exceeds {MAX_MAGNITUDE:.0e} in size"
    for text, message in (
        ("4/(2-2)", "division by zero"),
        ("999999999999*999999999999", too_big),
        ("1/(1000000000*1000000000+1)", too_big),
    ):
        with pytest.raises(UnsafeExpression) as err:
            evaluate(parse_expression(text))
        assert str(err.value) == message
    assert evaluate(parse_expression("1/(1000000000*1000000000)")) == Fraction(1, MAX_MAGNITUDE)
    assert evaluate(parse_expression("6/-(2)".replace("-", ""))) == 3
    assert safe_arith.evaluate_expression("(1-3)/(2-6)") == Fraction(1, 2)  # negative denominators normalised


@pytest.mark.parametrize("format_reward", [0.0, 0.1])
def test_completions_at_the_length_limit_score_as_the_task_scores_them(format_reward):
    """A completion of exactly MAX_COMPLETION_CHARS characters is scored (one more is refused), by score_batch as by
    countdown.score: a right answer padded at the front to each length around the limit."""
    from escov.llm.tasks.reasoning_format import MAX_COMPLETION_CHARS

    answer = "<answer>(50-25)+(7*3)</answer>"
    for length in (MAX_COMPLETION_CHARS - 1, MAX_COMPLETION_CHARS, MAX_COMPLETION_CHARS + 1):
        completion = " " * (length - len(answer)) + answer
        want = 1.0 if length <= MAX_COMPLETION_CHARS else 0.0
        assert score(completion, [3, 7, 25, 50], 46, format_reward) == want, length
        assert score_batch([completion], [3, 7, 25, 50], 46, format_reward) == [want], length


def test_a_literal_of_the_longest_length_counts_and_a_value_near_the_target_does_not():
    """Numbers of exactly MAX_LITERAL_DIGITS digits are literals (one more digit is refused), and an answer is right
    only at the target's exact value: 1 + 1e-7 is not 1."""
    from escov.llm.tasks.safe_arith import MAX_LITERAL_DIGITS

    longest = 10**MAX_LITERAL_DIGITS - 1
    cases = [
        (f"{longest}+1", [longest, 1], longest + 1, 1.0),
        ("(10000000+1)/10000000", [10000000, 1, 10000000], 1, 0.0),
        ("10000000/10000000", [10000000, 10000000], 1, 1.0),
    ]
    for completion, numbers, target, want in cases:
        assert score(completion, numbers, target) == want, completion
        assert score_batch([completion], numbers, target) == [want], completion
