"""The whitelist evaluator against sympy, on random trees, random strings and hostile input."""

from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from escov.llm.tasks.safe_arith import (
    MAX_CHARS,
    MAX_LITERAL_DIGITS,
    MAX_MAGNITUDE,
    MAX_NODES,
    UnsafeExpression,
    canonical_form,
    evaluate_expression,
    literals,
    parse_expression,
)

OPS = "+-*/"


def trees(leaves):
    return st.recursive(leaves, lambda kids: st.tuples(st.sampled_from(OPS), kids, kids), max_leaves=8)


def text(tree) -> str:
    if isinstance(tree, int):
        return str(tree)
    op, a, b = tree
    return f"({text(a)}{op}{text(b)})"


def sympy_value(tree):
    """Independent value with sympy Rationals; None when a division by zero occurs or an
    intermediate value p/q has |p| or q above the documented bound."""
    if isinstance(tree, int):
        return sympy.Integer(tree)
    op, a, b = tree
    x, y = sympy_value(a), sympy_value(b)
    if x is None or y is None or (op == "/" and y == 0):
        return None
    v = {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op]
    return None if abs(v.p) > MAX_MAGNITUDE or v.q > MAX_MAGNITUDE else v


@settings(max_examples=300, deadline=None)
@given(trees(st.integers(0, 10**6)))
def test_value_matches_sympy(tree):
    expected = sympy_value(tree)
    if expected is None:
        with pytest.raises(UnsafeExpression):
            evaluate_expression(text(tree))
    else:
        got = evaluate_expression(text(tree))
        assert got == Fraction(int(expected.p), int(expected.q))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_random_strings_raise_only_unsafe_expression(s):
    try:
        value = evaluate_expression(s)
    except UnsafeExpression:
        return
    assert isinstance(value, Fraction)
    assert set(s) <= set("0123456789+-*/() ")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789+-*/() ", max_size=60))
def test_whitelisted_alphabet_strings_agree_with_python_grammar(s):
    """Strings over the allowed alphabet: accepted ones are exactly the valid + - * / expressions."""
    try:
        value = evaluate_expression(s)
    except UnsafeExpression:
        return
    assert "**" not in s and "//" not in s
    # the literals the parser saw are exactly the digit runs of the text
    assert sorted(literals(parse_expression(s))) == sorted(int(d) for d in __import__("re").findall(r"\d+", s))
    assert isinstance(value, Fraction)


@pytest.mark.parametrize(
    "hostile",
    [
        "__import__('os').system('touch pwned')",
        "2**10**10",
        "9**9**9**9",
        "(1).__class__",
        "[1]*10**9",
        "lambda: 1",
        "1 if 1 else 2",
        "1//0",
        "1%2",
        "-1",
        "+1",
        "~1",
        "1.5+2",
        "1e308*10",
        "1_000",
        "0x10",
        "1<<100",
        "a+b",
        "1,2",
        "()",
        "1/0",
        "(3-3)/(2-2)",
        "1/(5-5)",
        "9" * (MAX_LITERAL_DIGITS + 1),
        "(" * 500 + "1" + ")" * 500,
        "1+" * 200 + "1",
        "*".join(["999999999999"] * 5),  # 10^60: over the magnitude bound
        "1/" + "/".join(["999999999999"] * 5),
        "1" * 10**6,
        "(" * 10**5,
    ],
)
def test_hostile_input_is_rejected(hostile, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsafeExpression):
        evaluate_expression(hostile)
    assert not (tmp_path / "pwned").exists()


def test_bounds_are_exact_at_the_edge():
    assert evaluate_expression("9" * MAX_LITERAL_DIGITS) == int("9" * MAX_LITERAL_DIGITS)
    assert MAX_MAGNITUDE == 10**18
    assert evaluate_expression("1000000000*1000000000") == MAX_MAGNITUDE
    assert evaluate_expression("1/(1000000000*1000000000)") == Fraction(1, MAX_MAGNITUDE)
    with pytest.raises(UnsafeExpression):
        evaluate_expression("1000000000*1000000000+1")
    with pytest.raises(UnsafeExpression):
        evaluate_expression("1/(1000000000*1000000000+1)")


def test_node_bound():
    literals_allowed = (MAX_NODES + 1) // 2  # L literals make 2L - 1 nodes
    assert evaluate_expression("+".join(["1"] * literals_allowed)) == literals_allowed
    with pytest.raises(UnsafeExpression):
        evaluate_expression("+".join(["1"] * (literals_allowed + 1)))


def test_length_bound():
    ok = "1+" * 10 + "1"
    assert evaluate_expression(ok + " " * (MAX_CHARS - len(ok))) == 11
    with pytest.raises(UnsafeExpression):
        evaluate_expression(ok + " " * (MAX_CHARS - len(ok) + 1))


# --- canonical forms: equal keys <=> equal rational functions of distinct symbols -------------


def read_once_trees(n_leaves):
    """Trees over the leaves 2, 3, 5, ... (n_leaves distinct primes), each used exactly once."""
    primes = [2, 3, 5, 7, 11][:n_leaves]

    @st.composite
    def build(draw):
        items = list(draw(st.permutations(primes)))
        while len(items) > 1:
            i = draw(st.integers(0, len(items) - 2))
            op = draw(st.sampled_from(OPS))
            items[i : i + 2] = [(op, items[i], items[i + 1])]
        return items[0]

    return build()


def symbolic(tree):
    if isinstance(tree, int):
        return sympy.Symbol(f"x{tree}")
    op, a, b = tree
    x, y = symbolic(a), symbolic(b)
    return {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op]


@settings(max_examples=400, deadline=None)
@given(st.integers(2, 4).flatmap(lambda k: st.tuples(read_once_trees(k), read_once_trees(k))))
def test_canonical_key_equality_is_symbolic_equality(pair):
    a, b = pair
    same_key = canonical_form(text(a)) == canonical_form(text(b))
    same_function = sympy.cancel(symbolic(a) - symbolic(b)) == 0
    assert same_key == same_function


@pytest.mark.parametrize(
    "a, b",
    [
        ("2+3", "3+2"),
        ("2-(3-5)", "2+5-3"),
        ("(2-3)*(5-7)", "(3-2)*(7-5)"),
        ("2/(3/5)", "2*5/3"),
        ("(2-3)/(5-7)", "(3-2)/(7-5)"),
        ("2*(3+5)", "(5+3)*2"),
        ("(2-3)*5+7", "7-(3-2)*5"),
        ("2*3+5", "5+3*2"),
        ("(2-3)*(5-7)+11", "11+(3-2)*(7-5)"),
        ("7-(2-3)/5", "(3-2)/5+7"),
    ],
)
def test_known_rewrites_share_a_key(a, b):
    assert canonical_form(a) == canonical_form(b)


@pytest.mark.parametrize(
    "a, b",
    [
        ("5-3", "3-5"),
        ("2*(3+5)", "2*3+5"),
        ("2/3", "3/2"),
        ("(2-3)*5", "(3-2)*5"),
        ("(2-3)*5+7", "(3-2)*5+7"),
        ("2*3+5", "5-2*3"),
        ("2*3*5+7", "7-2*3*5"),
        ("(2-3)/5-7", "(3-2)/5-7"),
    ],
)
def test_different_functions_have_different_keys(a, b):
    assert canonical_form(a) != canonical_form(b)


# ----------------------------------------------------------------------------- printing with the fewest parentheses

PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def _random_tree(rng, leaves: list[int], depth: int):
    if depth == 0 or len(leaves) == 1 or rng.random() < 0.25:
        return leaves.pop()
    return (OPS[rng.randrange(4)], _random_tree(rng, leaves, depth - 1), _random_tree(rng, leaves, depth - 1))


def _printed(tree) -> tuple[str, int]:
    """(text, precedence) of a tree printed bottom-up with join_text, the way Countdown prints solutions."""
    from escov.llm.tasks.safe_arith import LEAF_PRECEDENCE, PRECEDENCE, join_text

    if isinstance(tree, int):
        return str(tree), LEAF_PRECEDENCE
    op, a, b = tree
    (ta, pa), (tb, pb) = _printed(a), _printed(b)
    return join_text(op, ta, pa, tb, pb), PRECEDENCE[op]


def _paren_pairs(s: str) -> list[tuple[int, int]]:
    stack, pairs = [], []
    for i, c in enumerate(s):
        if c == "(":
            stack.append(i)
        elif c == ")":
            pairs.append((stack.pop(), i))
    return pairs


def _sample_trees(n: int = 1500, seed: int = 0):
    import random

    rng = random.Random(seed)
    for _ in range(n):
        leaves = rng.sample(PRIMES, 8)  # enough for a full tree of depth 3
        tree = _random_tree(rng, leaves, 3)
        if sympy_value(tree) is not None and not isinstance(tree, int):
            yield tree


def test_printing_keeps_the_value_of_the_tree():
    """Round trip: the printed text evaluates to the tree's value (computed with sympy)."""
    for tree in _sample_trees():
        printed, _ = _printed(tree)
        assert evaluate_expression(printed) == Fraction(str(sympy_value(tree))), (tree, printed)


def test_printing_uses_no_parentheses_that_could_be_dropped():
    """Fewest parentheses: dropping any one pair changes the value (distinct primes as literals, so that a
    dropped pair that mattered cannot keep the value by coincidence of the numbers)."""
    for tree in _sample_trees():
        printed, _ = _printed(tree)
        value = evaluate_expression(printed)
        for i, j in _paren_pairs(printed):
            dropped = printed[:i] + printed[i + 1 : j] + printed[j + 1 :]
            try:
                other = evaluate_expression(dropped)
            except UnsafeExpression:  # a division by zero once regrouped: a different expression
                continue
            assert other != value, (tree, printed, dropped)


@pytest.mark.parametrize(
    "op, left, right, expected",
    [
        ("-", ("a+b", 1), ("c-d", 1), "a+b-(c-d)"),
        ("/", ("a", 3), ("b*c", 2), "a/(b*c)"),
        ("*", ("a+b", 1), ("c", 3), "(a+b)*c"),
        ("+", ("a*b", 2), ("c/d", 2), "a*b+c/d"),
        ("*", ("a", 3), ("b/c", 2), "a*b/c"),
        ("-", ("a", 3), ("b*c", 2), "a-b*c"),
        ("+", ("a", 3), ("b-c", 1), "a+b-c"),
    ],
)
def test_join_text_at_each_precedence_boundary(op, left, right, expected):
    from escov.llm.tasks.safe_arith import join_text

    assert join_text(op, *left, *right) == expected


@pytest.mark.parametrize(
    "hostile, message",
    [
        (None, "expression must be a str, got NoneType"),
        (b"1+2", "expression must be a str, got bytes"),
        ("1+" * 200, f"expression longer than {MAX_CHARS} characters"),
        ("   ", "expression is empty"),
        ("1+x", "characters outside the whitelist: ['x']"),
        ("1" * (MAX_LITERAL_DIGITS + 1), f"a literal has more than {MAX_LITERAL_DIGITS} digits"),
        ("1+", "not an arithmetic expression: SyntaxError"),
        ("+".join(["1"] * 40), f"more than {MAX_NODES} syntax nodes"),
        ("2**3", "operator Pow is not allowed"),
        ("-3", "syntax UnaryOp is not allowed (integers and + - * / only)"),
        ("4/(2-2)", "division by zero"),
        ("999999999999*999999999999", f"an intermediate value exceeds {MAX_MAGNITUDE:.0e} in size"),
    ],
)
def test_each_refusal_says_why_in_one_line(hostile, message):
    """What a rejected completion's log line says: the rule it broke."""
    with pytest.raises(UnsafeExpression) as err:
        evaluate_expression(hostile)
    assert str(err.value) == message


def test_canonical_forms_of_every_three_literal_expression_partition_them_as_their_symbolic_values():
    """Exhaustive where the property above samples: every read-once expression over 2, 3 and 5 (each order,
    both tree shapes, all 16 operator pairs: 192 expressions) gets the same key as another exactly when the two
    are the same rational function of their literals."""
    import itertools

    texts, functions = [], []
    for a, b, c in itertools.permutations((2, 3, 5)):
        for op1, op2 in itertools.product(OPS, repeat=2):
            for tree in ((op2, (op1, a, b), c), (op1, a, (op2, b, c))):
                texts.append(text(tree))
                functions.append(sympy.cancel(symbolic(tree)))
    by_key, by_function = {}, {}
    for t, f in zip(texts, functions):
        by_key.setdefault(canonical_form(t), set()).add(t)
        by_function.setdefault(sympy.srepr(f), set()).add(t)  # cancel's p/q is one normal form per function
    assert sorted(map(sorted, by_key.values())) == sorted(map(sorted, by_function.values()))
