"""Lemma 1's second-order coefficient derived with sympy, independently of the numeric code.

Policy pi_theta = softmax(A theta + b) over M outcomes at a base point with probabilities
q_1..q_M (symbols, q_M = 1 - q_1 - ... - q_{M-1}); member i is perturbed by sigma eps_i, so
pi_i(y) = q_y exp(sigma u_iy) / sum_k q_k exp(sigma u_ik) with u_i = A eps_i.
With JS(sigma) = (1/N) sum_i sum_y pi_i(y) log(pi_i(y) / pi_bar(y)), the coefficient of sigma^2 is

    c_2 = E_eps[ (1/2) d^2 JS / d sigma^2 at sigma = 0 ],

where the expectation of the quadratic polynomial in the eps_ij keeps only the squares (E eps^2 = 1).
The same is done for JSsucc = h(p_bar) - (1/N) sum_i h(p_i). The closed forms to compare with are
(1/2)(1 - 1/N) tr(A^T (diag q - q q^T) A) and (1/2)(1 - 1/N) |A^T (q * (c - p))|^2 / (p (1 - p)).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class SymbolicCoefficient:
    """The derived sigma^2 coefficient, the closed form, and their simplified difference."""

    derived: sp.Expr
    closed_form: sp.Expr
    difference: sp.Expr
    trace: sp.Expr  # tr I (or tr F_succ) at the base point
    probabilities: tuple[sp.Symbol, ...]

    @property
    def equal(self) -> bool:
        return self.difference == 0

    @property
    def constant(self) -> sp.Expr:
        """derived / trace: Lemma 1 says this is the number (1/2)(1 - 1/N)."""
        return sp.simplify(self.derived / self.trace)


def _expect_quadratic(expr: sp.Expr, eps: list[sp.Symbol]) -> sp.Expr:
    """E over independent standard normal eps of a polynomial of degree <= 2 in eps."""
    poly = sp.Poly(sp.expand(expr), *eps)
    total = sp.Integer(0)
    for powers, coeff in poly.terms():
        if all(k in (0, 2) for k in powers):  # odd powers have mean 0; eps^2 has mean 1
            total += coeff
    return total


def _setup(n_outcomes: int, n_members: int, A: sp.Matrix | None):
    if n_outcomes < 2 or n_members < 2:
        raise ValueError(f"n_outcomes and n_members must be >= 2, got {n_outcomes} and {n_members}")
    A = sp.eye(n_outcomes) if A is None else sp.Matrix(A)
    if A.rows != n_outcomes:
        raise ValueError(f"A must have {n_outcomes} rows, got {A.rows}")
    free = sp.symbols(f"q1:{n_outcomes}", positive=True)
    q = list(free) + [1 - sum(free)]
    sigma = sp.Symbol("sigma", positive=True)
    eps = [[sp.Symbol(f"e{i}_{j}") for j in range(A.cols)] for i in range(n_members)]
    members = []
    for i in range(n_members):
        u = A * sp.Matrix(eps[i])
        weights = [q[y] * sp.exp(sigma * u[y]) for y in range(n_outcomes)]
        norm = sum(weights)
        members.append([w / norm for w in weights])
    flat_eps = [e for row in eps for e in row]
    return A, q, free, sigma, flat_eps, members


def _second_order(
    js, variables: list[sp.Symbol], values: list[sp.Expr], sigma: sp.Symbol, eps: list[sp.Symbol]
) -> sp.Expr:
    """c_2 = E[(1/2) d^2/dsigma^2 js(x(sigma)) at 0] by the chain rule: js is a function of the plain
    symbols `variables`, which follow the curves `values` (x(0) is where the derivatives are taken):
    d^2 js = sum_a js_a x_a'' + sum_ab js_ab x_a' x_b'."""
    at_zero = {v: x.subs(sigma, 0) for v, x in zip(variables, values)}
    d1 = [sp.diff(x, sigma).subs(sigma, 0) for x in values]
    d2 = [sp.diff(x, sigma, 2).subs(sigma, 0) for x in values]
    grad = [sp.diff(js, v).subs(at_zero) for v in variables]
    second = sum(g * x2 for g, x2 in zip(grad, d2))
    for a, va in enumerate(variables):
        for b, vb in enumerate(variables):
            second += sp.diff(js, va, vb).subs(at_zero) * d1[a] * d1[b]
    return sp.factor(_expect_quadratic(second / 2, eps))


def jspol_coefficient(n_outcomes: int = 3, n_members: int = 2, A: sp.Matrix | None = None) -> SymbolicCoefficient:
    """sigma^2 coefficient of E[JSpol_N] against (1/2)(1 - 1/N) tr I (A defaults to the identity)."""
    A, q, free, sigma, eps, members = _setup(n_outcomes, n_members, A)
    n = n_members
    x = [[sp.Symbol(f"x{i}_{y}", positive=True) for y in range(n_outcomes)] for i in range(n)]
    mix = [sum(row[y] for row in x) / n for y in range(n_outcomes)]
    js = sum(row[y] * sp.log(row[y] / mix[y]) for row in x for y in range(n_outcomes)) / n
    derived = _second_order(js, [v for row in x for v in row], [v for m in members for v in m], sigma, eps)
    Q = sp.diag(*q) - sp.Matrix(q) * sp.Matrix(q).T
    trace = (A.T * Q * A).trace()
    closed = sp.Rational(1, 2) * (1 - sp.Rational(1, n)) * trace
    return SymbolicCoefficient(derived, sp.factor(closed), sp.simplify(derived - closed), trace, tuple(free))


def jssucc_coefficient(
    n_outcomes: int = 3, n_members: int = 2, n_correct: int = 1, A: sp.Matrix | None = None
) -> SymbolicCoefficient:
    """sigma^2 coefficient of E[JSsucc_N] against (1/2)(1 - 1/N) tr F_succ; outcomes < n_correct are correct."""
    A, q, free, sigma, eps, members = _setup(n_outcomes, n_members, A)
    if not 1 <= n_correct < n_outcomes:
        raise ValueError(f"n_correct must be in [1, {n_outcomes - 1}], got {n_correct}")
    n = n_members

    def h(x):
        return -x * sp.log(x) - (1 - x) * sp.log(1 - x)

    x = [sp.Symbol(f"p{i}", positive=True) for i in range(n)]
    js = h(sum(x) / n) - sum(h(v) for v in x) / n
    derived = _second_order(js, x, [sum(m[:n_correct]) for m in members], sigma, eps)
    c = sp.Matrix([1 if y < n_correct else 0 for y in range(n_outcomes)])
    p = sum(q[:n_correct])
    grad = A.T * sp.Matrix([q[y] * (c[y] - p) for y in range(n_outcomes)])
    trace = (grad.T * grad)[0, 0] / (p * (1 - p))
    closed = sp.Rational(1, 2) * (1 - sp.Rational(1, n)) * trace
    return SymbolicCoefficient(derived, sp.factor(closed), sp.simplify(derived - closed), trace, tuple(free))
