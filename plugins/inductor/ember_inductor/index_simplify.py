"""Range-aware simplification of index expressions, within a budget of work.

Every index variable lies in ``[0, size)`` of its loop, so ``FloorDiv`` / ``ModularIndexing``
terms produced by reshapes can usually be folded back into plain linear expressions, which keeps
the generated loops vectorizable. The rules (each exact on those ranges):

- ``b // d`` is 0 and ``b//d % m`` is ``b // d`` when ``b`` stays below ``d`` (``d*m``);
- ``(g*q + r) // (g*k)`` is ``q // k`` when ``0 <= r < g`` (the same inside a modulus);
- ``c*(x//d % m) + c*m*(x//(d*m) % M)`` is ``c*(x//d % (m*M))``, and with ``x//(d*m)`` in place
  of the second modulus, ``c*(x//d)``.

The range-free rules (``index_functions``) fire whenever an expression is built. An expression
is walked as a DAG (each distinct subexpression once) and never passed to ``sympy.expand``.
Each walk step, bound and pair test costs one unit of ``SIMPLIFY_BUDGET``; an expression that
needs more is returned as it is (correct, only slower to evaluate), or, with ``strict=True``,
raises :class:`IndexTooComplex`: the scheduler then does not fuse, and a kernel whose own
index is over budget fails its graph's compilation, which runs the graph with aten after one
warning (``backend.make_graph_compiler``) instead of generating code for an index that size.
"""
from __future__ import annotations

import functools
import math

import sympy

from .index_functions import FloorDiv, ModularIndexing, is_nonneg, terms, upper_bound

Expr = sympy.Expr
S = sympy.S

#: Units of work one expression may take to simplify: about 1.5 s of sympy at most. The indices
#: of a small ShuffleNet and of BERT take up to 50; the kernel of twenty stacked channel
#: shuffles (each ``.contiguous()`` a copy, so the views do not compose) 250.
SIMPLIFY_BUDGET = 20000


class IndexTooComplex(Exception):
    """Simplifying an index expression took more than ``SIMPLIFY_BUDGET`` units of work."""


def simplify_index(expr: Expr, ranges: dict, strict: bool = False) -> Expr:
    """``expr`` simplified using the ranges of its variables (``{symbol: size}``).

    Over budget, returns ``expr`` unchanged, or raises :class:`IndexTooComplex` if ``strict``."""
    expr = sympy.sympify(expr)
    if not expr.args:
        return expr
    out = _cached(expr, tuple(sorted(ranges.items(), key=lambda kv: kv[0].name)), SIMPLIFY_BUDGET)
    if out is not None:
        return out
    if strict:
        raise IndexTooComplex(f"simplifying an index of {_size(expr)} distinct subexpressions "
                              f"took more than {SIMPLIFY_BUDGET} steps")
    return expr


@functools.lru_cache(maxsize=1 << 16)
def _cached(expr: Expr, bounds: tuple, budget: int) -> Expr | None:
    """The simplified ``expr``, None over budget (cached too: asking again costs nothing)."""
    simplifier = _Simplifier(dict(bounds), budget)
    try:
        return simplifier.visit(expr)
    except IndexTooComplex:
        return None


def _size(expr: Expr) -> int:
    seen: set = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if e not in seen:
            seen.add(e)
            stack.extend(e.args)
    return len(seen)


class _Simplifier:
    """One simplification: the ranges, the work left, and what was already computed."""

    def __init__(self, ranges: dict, budget: int) -> None:
        self.ranges = ranges
        self.left = budget
        self.memo: dict[Expr, Expr] = {}
        self.bounds: dict[Expr, int | None] = {}

    def charge(self, units: int = 1) -> None:
        self.left -= units
        if self.left < 0:
            raise IndexTooComplex()

    def visit(self, e: Expr) -> Expr:
        hit = self.memo.get(e)
        if hit is not None:
            return hit
        self.charge()
        out = self.settle(e.func(*[self.visit(a) for a in e.args])) if e.args else e
        self.memo[e] = out
        return out

    def settle(self, e: Expr) -> Expr:
        """Apply the range rules to ``e``, built from simplified parts (its top-level divisions
        and sums may be new). The memo holds simplified forms, so it serves both walks."""
        hit = self.memo.get(e)
        if hit is not None:
            return hit
        self.charge()
        out = e
        if isinstance(e, FloorDiv) and e.args[1].is_Integer and e.args[1] > 0:
            out = self.floordiv(e.args[0], int(e.args[1]))
        elif isinstance(e, ModularIndexing) and all(a.is_Integer and a > 0 for a in e.args[1:]):
            out = self.modular(e.args[0], int(e.args[1]), int(e.args[2]))
        elif e.is_Mul:
            out = e.func(*[self.settle(a) for a in e.args])
        elif e.is_Add:
            out = self.combine_pairs(e.func(*[self.settle(a) for a in e.args]))
        self.memo[e] = self.memo[out] = out
        return out

    def bound(self, e: Expr) -> int | None:
        self.charge()
        return upper_bound(e, self.ranges, self.bounds) if is_nonneg(e) else None

    def floordiv(self, base: Expr, d: int) -> Expr:
        ub = self.bound(base)
        if ub is not None and ub < d:
            return S.Zero
        split = self.divide_out(base, d)
        if split is not None:  # (g*q + r) // (g*k) with 0 <= r < g is q // k
            return self.settle(FloorDiv(*split))
        e = FloorDiv(base, d)
        return e if isinstance(e, FloorDiv) else self.settle(e)

    def modular(self, base: Expr, d: int, m: int) -> Expr:
        ub = self.bound(base)
        if ub is not None and ub < d * m:
            return self.settle(FloorDiv(base, d))
        split = self.divide_out(base, d) if d != 1 else None
        if split is not None:  # (g*q + r) // (g*k) % m with 0 <= r < g is q // k % m
            return self.settle(ModularIndexing(split[0], split[1], m))
        e = ModularIndexing(base, d, m)
        return e if isinstance(e, ModularIndexing) else self.settle(e)

    def divide_out(self, base: Expr, div: int) -> tuple[Expr, int] | None:
        """``(q, k)`` with ``base // div == q // k`` and ``k < div``, when ``base = g*q + r`` for
        some ``g > 1`` dividing ``div`` and ``0 <= r < g``; None when no such ``g`` exists."""
        coeffs = terms(base)
        if not all(c.is_Integer for c in coeffs.values()):
            return None
        for g in sorted({math.gcd(div, int(c)) for c in coeffs.values()} | {div}, reverse=True):
            if g == 1:
                break
            self.charge(len(coeffs))
            q, r = S.Zero, S.Zero
            for term, coeff in coeffs.items():
                if int(coeff) % g == 0:
                    q += (int(coeff) // g) * term
                else:
                    r += coeff * term
            if r == 0:
                return q, div // g
            ub = self.bound(r)
            if ub is not None and ub < g:
                return q, div // g
        return None

    def combine_pairs(self, expr: Expr) -> Expr:
        """c*MI(x,d,m) + c*m*MI(x,d*m,M) -> c*MI(x,d,m*M); FloorDiv(x, D) is MI(x, D, inf)."""
        while expr.is_Add:
            coeffs = terms(expr)
            items = [(t, c) for t, c in coeffs.items() if isinstance(t, (ModularIndexing, FloorDiv))]
            self.charge(len(items) ** 2)
            new = self._combine_one(items)
            if new is None:
                return expr
            (t1, c1), (t2, c2), combined = new
            expr = expr - c1 * t1 - c2 * t2 + c1 * self.settle(combined)
        return expr

    @staticmethod
    def _combine_one(items: list) -> tuple | None:
        for t1, c1 in items:
            if not isinstance(t1, ModularIndexing):
                continue
            x, d, m = t1.args
            for t2, c2 in items:
                if t2 is t1 or t2.args[0] != x or c2 != c1 * m or t2.args[1] != d * m:
                    continue
                if isinstance(t2, ModularIndexing):
                    return (t1, c1), (t2, c2), ModularIndexing(x, d, m * t2.args[2])
                return (t1, c1), (t2, c2), FloorDiv(x, d)
        return None
