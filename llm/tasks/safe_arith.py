"""Exact evaluation of untrusted arithmetic text: a whitelist `ast` parse, then Fraction arithmetic.

Model output is hostile input. Nothing here calls eval/exec/sympify; a string is accepted only if

- it is at most `MAX_CHARS` characters drawn from "0123456789+-*/() ",
- every integer literal has at most `MAX_LITERAL_DIGITS` digits,
- its syntax tree has at most `MAX_NODES` nodes (literals and operations), all of them integer
  literals or binary + - * /,
- every intermediate value p/q (in lowest terms) has |p| and q at most `MAX_MAGNITUDE`,

and otherwise `UnsafeExpression` (a ValueError) is raised. Every check is done before or during a
single pass whose cost is bounded by the character limit, so a rejection costs microseconds.

`canonical_form` names an expression up to commutativity and associativity: sums are flattened
into a sorted multiset of signed terms (a - (b - c) = a + c - b), products into a sorted multiset
of factors and divisors, and signs are carried up ((a-b)*(c-d) = (b-a)*(d-c)). For expressions
that use each literal once, two have the same form exactly when they are equal as rational
functions of their literals; one canonical form is one "reasoning path".
"""

from __future__ import annotations

import ast
import math
import re
from fractions import Fraction
from typing import NamedTuple

MAX_CHARS = 256
MAX_LITERAL_DIGITS = 12
MAX_NODES = 64
MAX_MAGNITUDE = 10**18

_ALLOWED_CHARS = frozenset("0123456789+-*/() ")
DIGIT_RUN = re.compile(r"\d+")
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_TOO_BIG = f"an intermediate value exceeds {MAX_MAGNITUDE:.0e} in size"
PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
LEAF_PRECEDENCE = 3


class UnsafeExpression(ValueError):
    """The text is not a small whitelisted arithmetic expression (or divides by zero)."""


def parse_expression(text: str) -> ast.expr:
    """Parse `text` into an ast of integer literals and binary + - * /, or raise UnsafeExpression."""
    if not isinstance(text, str):
        raise UnsafeExpression(f"expression must be a str, got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise UnsafeExpression(f"expression longer than {MAX_CHARS} characters")
    if not text.strip():
        raise UnsafeExpression("expression is empty")
    bad = set(text) - _ALLOWED_CHARS
    if bad:
        raise UnsafeExpression(f"characters outside the whitelist: {sorted(bad)!r}")
    if any(len(run) > MAX_LITERAL_DIGITS for run in DIGIT_RUN.findall(text)):
        raise UnsafeExpression(f"a literal has more than {MAX_LITERAL_DIGITS} digits")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise UnsafeExpression(f"not an arithmetic expression: {type(e).__name__}") from None
    _check_nodes(tree.body, 0)
    return tree.body


def _check_nodes(node: ast.expr, seen: int) -> int:
    """The nodes counted so far once node's subtree is (depth first; a BinOp's operator is checked with it,
    not counted), after checking each is an integer literal or a binary + - * / and that there are at most
    MAX_NODES; UnsafeExpression otherwise. The count stops the descent, so it recurses at most MAX_NODES deep."""
    seen += 1
    if seen > MAX_NODES:
        raise UnsafeExpression(f"more than {MAX_NODES} syntax nodes")
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise UnsafeExpression(f"operator {type(node.op).__name__} is not allowed")
        return _check_nodes(node.right, _check_nodes(node.left, seen))
    if not (isinstance(node, ast.Constant) and type(node.value) is int):
        raise UnsafeExpression(f"syntax {type(node).__name__} is not allowed (integers and + - * / only)")
    return seen


def _checked(value: Fraction) -> Fraction:
    if abs(value.numerator) > MAX_MAGNITUDE or value.denominator > MAX_MAGNITUDE:
        raise UnsafeExpression(_TOO_BIG)
    return value


def apply_op(op: str, a: Fraction, b: Fraction) -> Fraction:
    """a op b in exact rationals, with the magnitude bound; division by zero raises UnsafeExpression."""
    if op == "+":
        return _checked(a + b)
    if op == "-":
        return _checked(a - b)
    if op == "*":
        return _checked(a * b)
    if b == 0:
        raise UnsafeExpression("division by zero")
    return _checked(a / b)


def evaluate(node: ast.expr) -> Fraction:
    """Exact value of a tree returned by `parse_expression` (apply_op's arithmetic and bounds, on integer pairs)."""
    p, q = _rational(node)
    return Fraction(p, q)


def _rational(node: ast.expr) -> tuple[int, int]:
    """(p, q), q > 0, in lowest terms: the value of node, each operation as apply_op does it (left operand
    first, then the right, then division by zero, then the magnitude bound) on ints instead of Fractions."""
    if isinstance(node, ast.Constant):
        if abs(node.value) > MAX_MAGNITUDE:
            raise UnsafeExpression(_TOO_BIG)
        return node.value, 1
    a, b = _rational(node.left)
    c, d = _rational(node.right)
    op = type(node.op)
    if op is ast.Add:
        p, q = a * d + c * b, b * d
    elif op is ast.Sub:
        p, q = a * d - c * b, b * d
    elif op is ast.Mult:
        p, q = a * c, b * d
    else:
        if c == 0:
            raise UnsafeExpression("division by zero")
        p, q = (a * d, b * c) if c > 0 else (-a * d, -b * c)
    g = math.gcd(p, q)
    p, q = p // g, q // g
    if abs(p) > MAX_MAGNITUDE or q > MAX_MAGNITUDE:
        raise UnsafeExpression(_TOO_BIG)
    return p, q


def evaluate_expression(text: str) -> Fraction:
    """Parse and evaluate untrusted text; raises UnsafeExpression for anything not accepted."""
    return evaluate(parse_expression(text))


def literals(node: ast.expr) -> list[int]:
    """The integer literals of a parsed expression, left to right."""
    if isinstance(node, ast.Constant):
        return [node.value]
    return literals(node.left) + literals(node.right)


class Canon(NamedTuple):
    """Canonical form of an expression: +/- N with N a literal, a sum of signed terms or a product.

    Terms are sorted (key, sign) pairs, sign in "+-" for sums and "*/" for products. A sum is
    oriented so that its term tuple is the smaller of itself and its negation; the orientation
    and the signs of a product's factors are carried up in `negative`, so (a-b)/(c-d) and
    (b-a)/(d-c) get one form. Equal keys <=> equal forms.
    """

    op: str  # "n" (literal), "+" (sum), "*" (product)
    terms: tuple[tuple[str, str], ...]
    body: str  # key of N
    negative: bool  # the expression equals -N

    @property
    def key(self) -> str:
        return ("-" if self.negative else "") + self.body


def leaf(value: int) -> Canon:
    return Canon("n", (), str(value), False)


def _flip(terms, plus: str, minus: str) -> tuple[tuple[str, str], ...]:
    return tuple((k, minus if s == plus else plus) for k, s in terms)


def combine(op: str, a: Canon, b: Canon) -> Canon:
    """Canonical form of (a op b): flatten sums and products, sort, carry signs upward."""
    if op in "+-":

        def terms(x: Canon):
            if x.op == "+":
                return _flip(x.terms, "+", "-") if x.negative else x.terms
            return ((x.body, "-" if x.negative else "+"),)

        right = terms(b)
        merged = tuple(sorted(terms(a) + (_flip(right, "+", "-") if op == "-" else right)))
        negated = tuple(sorted(_flip(merged, "+", "-")))
        negative = negated < merged
        merged = negated if negative else merged
        return Canon("+", merged, "(" + "".join(s + k for k, s in merged) + ")", negative)
    left = a.terms if a.op == "*" else ((a.body, "*"),)
    right = b.terms if b.op == "*" else ((b.body, "*"),)
    merged = tuple(sorted(left + (_flip(right, "*", "/") if op == "/" else right)))
    return Canon("*", merged, "[" + "".join(s + k for k, s in merged) + "]", a.negative != b.negative)


def canonical(node: ast.expr) -> Canon:
    if isinstance(node, ast.Constant):
        return leaf(node.value)
    return combine(_BINOPS[type(node.op)], canonical(node.left), canonical(node.right))


def canonical_form(text: str) -> str:
    """Key of `text` up to commutativity, associativity and sign symmetry; raises UnsafeExpression."""
    return canonical(parse_expression(text)).key


def join_text(op: str, left: str, left_prec: int, right: str, right_prec: int) -> str:
    """Text of (left op right) with the fewest parentheses that keep its meaning."""
    p = PRECEDENCE[op]
    if left_prec < p:
        left = f"({left})"
    if right_prec < p or (right_prec == p and op in "-/"):
        right = f"({right})"
    return f"{left}{op}{right}"
