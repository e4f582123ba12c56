"""Integer division functions of index expressions, with range-free rewrite rules.

``FloorDiv(b, d)`` is ``b // d`` and ``ModularIndexing(b, d, m)`` is ``(b // d) % m``, for a
``b`` that is non-negative wherever the value is used: the generated C++ and Triton code divide
with truncation, which is floor division only there. Every rule below is exact under that
contract and keeps it: a rule that gives a new base proves the base non-negative from its
structure (:func:`is_nonneg`).

The rules fire when an expression is built (sympy calls ``eval``), so an index composed through
a chain of views (``view``, ``transpose``, ``view``: a channel shuffle) stays a flat sum of
divisions of the innermost index instead of nesting every view's arithmetic inside the next
one's. They need no variable ranges; the range-aware rules are in ``index_simplify``.
"""
from __future__ import annotations

import functools
import math

import sympy

Expr = sympy.Expr
S = sympy.S


def terms(expr: Expr) -> dict[Expr, Expr]:
    """``expr`` as {term: coefficient} (a constant under the key 1), without looking into
    function arguments."""
    return dict(expr.as_coefficients_dict())


def _int_coeffs(coeffs: dict[Expr, Expr]) -> bool:
    return all(c.is_Integer for c in coeffs.values())


@functools.lru_cache(maxsize=1 << 16)
def is_nonneg(expr: Expr) -> bool:
    """Is ``expr`` provably >= 0 from its structure (index symbols are non-negative)?"""
    if expr.is_Integer:
        return int(expr) >= 0
    if expr.is_Symbol:
        return bool(expr.is_nonnegative)
    if isinstance(expr, (FloorDiv, ModularIndexing)):
        return is_nonneg(expr.args[0])
    if expr.is_Add or expr.is_Mul:
        return all(is_nonneg(a) for a in expr.args)
    return False


def upper_bound(expr: Expr, ranges: dict, memo: dict | None = None) -> int | None:
    """Largest value of ``expr`` when each symbol ``s`` of ``ranges`` lies in ``[0, ranges[s])``,
    for an ``expr`` that :func:`is_nonneg` (None when unknown)."""
    if memo is not None and expr in memo:
        return memo[expr]
    out: int | None = None
    if expr.is_Integer:
        out = int(expr)
    elif expr.is_Symbol:
        r = ranges.get(expr)
        out = None if r is None or not sympy.sympify(r).is_Integer else int(r) - 1
    elif isinstance(expr, (FloorDiv, ModularIndexing)) and not all(a.is_Integer and a > 0 for a in expr.args[1:]):
        out = None
    elif isinstance(expr, FloorDiv):
        ub = upper_bound(expr.args[0], ranges, memo)
        out = None if ub is None else ub // int(expr.args[1])
    elif isinstance(expr, ModularIndexing):
        ub = upper_bound(expr.args[0], ranges, memo)
        m = int(expr.args[2]) - 1
        out = m if ub is None else min(m, ub // int(expr.args[1]))
    elif (expr.is_Add or expr.is_Mul) and is_nonneg(expr):
        out = 0 if expr.is_Add else 1
        for a in expr.args:
            ub = upper_bound(a, ranges, memo)
            if ub is None:
                out = None
                break
            out = out + ub if expr.is_Add else out * ub
    if memo is not None:
        memo[expr] = out
    return out


@functools.lru_cache(maxsize=1 << 16)
def _static_bound(expr: Expr) -> int | None:
    """Upper bound that holds for any values of the symbols (moduli bound their terms)."""
    return upper_bound(expr, {}) if is_nonneg(expr) else None


def _split(coeffs: dict[Expr, Expr], modulus: int) -> tuple[Expr, Expr]:
    """(sum of the terms whose coefficient ``modulus`` divides, sum of the others)."""
    mult, rest = S.Zero, S.Zero
    for term, c in coeffs.items():
        if c.is_Integer and int(c) % modulus == 0:
            mult += c * term
        else:
            rest += c * term
    return mult, rest


def _common_factor(coeffs: dict[Expr, Expr], divisor: int) -> int:
    """gcd of ``divisor`` and every coefficient (1 when one is not an integer)."""
    if not _int_coeffs(coeffs):
        return 1
    return math.gcd(divisor, *(int(c) for c in coeffs.values()))


class FloorDiv(sympy.Function):
    """``base // divisor`` for non-negative integer ``base`` and positive integer ``divisor``."""

    nargs = (2,)
    is_integer = True

    @classmethod
    def eval(cls, base: Expr, divisor: Expr) -> Expr | None:
        if divisor == 1:
            return base
        if base == 0:
            return S.Zero
        if not divisor.is_Integer or divisor <= 0:  # d = 0: an empty tensor's, never evaluated
            return None
        d = int(divisor)
        if base.is_Integer:
            return sympy.Integer(int(base) // d)
        if isinstance(base, FloorDiv) and base.args[1].is_Integer:
            return FloorDiv(base.args[0], base.args[1] * d)
        if isinstance(base, ModularIndexing) and base.args[2].is_Integer and int(base.args[2]) % d == 0:
            # ((x//a) % (d*k)) // d
            return ModularIndexing(base.args[0], base.args[1] * d, int(base.args[2]) // d)
        coeffs = terms(base)
        g = _common_factor(coeffs, d)
        if g > 1:  # (g*b) // (g*k) is b // k
            return FloorDiv(sum((c // g) * t for t, c in coeffs.items()), d // g)
        mult, rest = _split(coeffs, d)
        if mult != 0 and is_nonneg(rest):  # (d*q + r) // d is q + r // d
            return sum(t * (c // d) for t, c in terms(mult).items()) + FloorDiv(rest, d)
        ub = _static_bound(base)
        if ub is not None and ub < d:
            return S.Zero
        return None


class ModularIndexing(sympy.Function):
    """``(base // divisor) % modulus`` for non-negative integer ``base``, positive divisor and modulus.
    In ``[0, modulus)`` whatever the base (Python's ``%``): a padding of ``(8 - s % 8) % 8`` is
    known not to be negative, and a slice back to ``s`` known to lie inside the padded size."""

    nargs = (3,)
    is_integer = True
    is_nonnegative = True

    @classmethod
    def eval(cls, base: Expr, divisor: Expr, modulus: Expr) -> Expr | None:
        if base == 0 or modulus == 1:
            return S.Zero
        if not (divisor.is_Integer and modulus.is_Integer) or divisor <= 0 or modulus <= 0:
            return None
        d, m = int(divisor), int(modulus)
        if base.is_Integer:
            return sympy.Integer((int(base) // d) % m)
        if isinstance(base, FloorDiv) and base.args[1].is_Integer:
            return ModularIndexing(base.args[0], base.args[1] * d, m)
        if isinstance(base, ModularIndexing) and base.args[2].is_Integer and int(base.args[2]) % d == 0:
            # (x//a % m1) // d is x//(a*d) % (m1/d); its % m is itself or one modulus
            x, a, m1 = base.args[0], base.args[1], int(base.args[2]) // d
            if m1 % m == 0:
                return ModularIndexing(x, a * d, m)
            if m >= m1:
                return ModularIndexing(x, a * d, m1)
        coeffs = terms(base)
        g = _common_factor(coeffs, d)
        if g > 1:  # (g*b) // (g*k) is b // k
            return ModularIndexing(sum((c // g) * t for t, c in coeffs.items()), d // g, m)
        mult, rest = _split(coeffs, d * m)
        if mult != 0 and is_nonneg(rest):  # multiples of d*m do not change the result
            return ModularIndexing(rest, d, m)
        ub = _static_bound(base)
        if ub is not None and ub < d * m:
            return FloorDiv(base, d)
        return None


class TrueDiv(sympy.Function):
    """``a / b`` of two sizes as a float (torch's ``IntTrueDiv``; ``ToFloat(a)`` is ``a / 1``): a
    value computed from the sizes (``x * (t / b)``, a mean's ``1 / numel``), never an index. The
    printers divide in double precision, as Python does."""

    nargs = (2,)
    is_integer = False
    is_real = True

    @classmethod
    def eval(cls, a: Expr, b: Expr) -> Expr | None:
        if a.is_Integer and b.is_Integer and b != 0:
            return sympy.Float(int(a) / int(b))
        return None
