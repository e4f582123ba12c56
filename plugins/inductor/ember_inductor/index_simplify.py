"""Range-aware simplification of index expressions, within a budget of work.

Every index variable lies in ``[0, size)`` of its loop, so ``FloorDiv`` / ``ModularIndexing``
terms produced by reshapes can usually be folded back into plain linear expressions, which keeps
the generated loops vectorizable. The rules (each exact on those ranges):

- ``b // d`` is 0 and ``b//d % m`` is ``b // d`` when ``b`` stays below ``d`` (``d*m``);
- ``(g*q + r) // (g*k)`` is ``q // k`` when ``0 <= r < g`` (the same inside a modulus);
- ``c*(x//d % m) + c*m*(x//(d*m) % M)`` is ``c*(x//d % (m*M))``, and with ``x//(d*m)`` in place
  of the second modulus, ``c*(x//d)``;
- with a symbolic divisor or modulus (a dynamic size ``s``), ``(s*q + r) // s`` is ``q`` and
  ``(s*q + r) % s`` is ``r`` when ``0 <= r < s`` is provable for every value of the symbols
  (bounds are then sympy expressions of the sizes: a loop variable of range ``s1`` is at most
  ``s1 - 1``, a size symbol stands for itself).

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

#: Units of work one expression may take to simplify: a bound on the sympy time it may cost. The indices
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
        elif isinstance(e, FloorDiv) and e.args[1].is_positive:
            out = self.sym_floordiv(e.args[0], e.args[1], e)
        elif isinstance(e, ModularIndexing) and e.args[1].is_positive and e.args[2].is_positive:
            out = self.sym_modular(e, *e.args)
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

    def sym_bound(self, e: Expr) -> Expr | None:
        """Largest value of a non-negative ``e`` as an expression of the size symbols."""
        self.charge()
        if not is_nonneg(e):
            return None
        return _sym_upper_bound(e, self.ranges)

    def size_terms(self, expr: Expr) -> dict[Expr, Expr]:
        """``terms(expr)`` with the size symbols of each term moved into its coefficient
        (``s1*x//s2`` is ``x//s2`` times ``s1``)."""
        out: dict[Expr, Expr] = {}
        for term, coeff in terms(expr).items():
            if term.is_Mul:
                sizes = [f for f in term.args if not _loop_dependent(f, self.ranges)]
                if sizes:
                    coeff = coeff * sympy.Mul(*sizes)
                    term = sympy.Mul(*[f for f in term.args if _loop_dependent(f, self.ranges)])
            out[term] = out.get(term, S.Zero) + coeff
        return out

    def split_multiples(self, base: Expr, div: Expr) -> tuple[Expr, Expr]:
        """``(q, r)`` with ``base == div*q + r``, ``q`` the sum of the terms that ``div`` divides
        as polynomials with integer coefficients. With a symbolic ``div`` the base is first
        written as loop-dependent terms with size polynomials as coefficients (``(s + 1)*(4*x0
        + x1)`` is ``x0`` times ``4*s + 4`` plus ``x1`` times ``s + 1``), each divided exactly."""
        q, r = S.Zero, S.Zero
        if div.is_Integer:
            for term, coeff in terms(base).items():
                self.charge()
                t = coeff * term / div
                if t.is_integer and sympy.fraction(t)[1] == 1:
                    q += t
                else:
                    r += coeff * term
            return q, r
        for term, coeff in self.size_terms(sympy.expand_mul(base, deep=False)).items():
            self.charge()
            ratio = sympy.cancel(coeff / div)  # sympy keeps (s + 1) / (64*s + 64) as it is
            if sympy.fraction(ratio)[1] == 1 and (ratio * term).is_integer:
                q += ratio * term
            else:
                r += coeff * term
        return q, r

    def sym_floordiv(self, base: Expr, div: Expr, e: Expr) -> Expr:
        q, r = self.split_multiples(base, div)
        if q != 0 and is_nonneg(r):
            if r == 0:
                return self.settle(q) if q.args else q
            ub = self.sym_bound(r)
            if ub is not None and _provably_below(ub, div):
                return self.settle(q) if q.args else q
        # (g*q + r) // (g*k) is q // k when 0 <= r < g, for a common factor g of sizes
        for g in {sympy.gcd(c * t, div) for t, c in terms(base).items()} - {S.One}:
            self.charge()
            k = sympy.cancel(div / g)
            if not (g.is_positive and k.is_integer and sympy.fraction(k)[1] == 1):
                continue
            q, r = self.split_multiples(base, g)
            ub = self.sym_bound(r) if is_nonneg(r) else None
            if q != 0 and ub is not None and _provably_below(ub, g):
                return self.settle(FloorDiv(q, k))
        return e

    def sym_modular(self, e: Expr, base: Expr, div: Expr, mod: Expr) -> Expr:
        quotient = base if div == 1 else self.settle(FloorDiv(base, div))
        if isinstance(quotient, FloorDiv):
            if quotient == FloorDiv(base, div):
                return e
            return self.settle(ModularIndexing(*quotient.args, mod))
        q, r = self.split_multiples(quotient, mod)
        if not is_nonneg(r):
            return e
        ub = self.sym_bound(r)
        if ub is not None and _provably_below(ub, mod):
            return self.settle(r) if r.args else r
        new = ModularIndexing(r, 1, mod)
        return e if new == e else self.settle(new)

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
            coeffs = self.size_terms(expr)
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


def _sym_upper_bound(e: Expr, ranges: dict) -> Expr | None:
    """Upper bound of a non-negative ``e`` over ``[0, ranges[v])`` for each loop variable
    ``v``, an expression of the size symbols (which stand for themselves); None when unknown."""
    if e.is_Integer:
        return e
    if e.is_Symbol:
        r = ranges.get(e)
        if r is not None:
            return sympy.sympify(r) - 1
        return e if e.is_positive else None
    if isinstance(e, FloorDiv):
        ub = _sym_upper_bound(e.args[0], ranges)
        return None if ub is None else FloorDiv(ub, e.args[1])
    if isinstance(e, ModularIndexing):
        return e.args[2] - 1
    if e.is_Add or e.is_Mul:
        parts = [_sym_upper_bound(a, ranges) for a in e.args]
        if any(p is None for p in parts):
            return None
        return sympy.Add(*parts) if e.is_Add else sympy.Mul(*parts)
    return None


def _provably_below(ub: Expr, limit: Expr) -> bool:
    """Is ``ub < limit`` for every (positive) value of the size symbols?"""
    return bool(sympy.expand(limit - 1 - ub).is_nonnegative)


def _loop_dependent(e: Expr, ranges: dict) -> bool:
    """Does ``e`` vary inside a kernel (a loop variable, an indirect index), unlike a size?"""
    return any(not (v.is_positive and v not in ranges) for v in e.free_symbols)
