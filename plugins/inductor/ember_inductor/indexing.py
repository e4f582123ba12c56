"""Index arithmetic for the loop IR: sympy integer division functions, simplification, loop merging.

All index variables are non-negative integers with a known range (the loop size), so
``FloorDiv`` / ``ModularIndexing`` terms produced by reshapes can usually be folded back into
plain linear expressions, which keeps the generated loops vectorizable.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Sequence

import sympy

Expr = sympy.Expr
S = sympy.S


class FloorDiv(sympy.Function):
    """``base // divisor`` for non-negative integer ``base`` and positive integer ``divisor``."""

    nargs = (2,)
    is_integer = True

    @classmethod
    def eval(cls, base, divisor):
        if divisor == 1:
            return base
        if base == 0:
            return S.Zero
        if base.is_Integer and divisor.is_Integer:
            return sympy.Integer(int(base) // int(divisor))
        if isinstance(base, FloorDiv) and divisor.is_Integer and base.args[1].is_Integer:
            return FloorDiv(base.args[0], base.args[1] * divisor)
        return None


class ModularIndexing(sympy.Function):
    """``(base // divisor) % modulus`` for non-negative integers."""

    nargs = (3,)
    is_integer = True

    @classmethod
    def eval(cls, base, divisor, modulus):
        if base == 0 or modulus == 1:
            return S.Zero
        if base.is_Integer and divisor.is_Integer and modulus.is_Integer:
            return sympy.Integer((int(base) // int(divisor)) % int(modulus))
        return None


def sym(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, nonnegative=True)


def make_vars(prefix: str, n: int) -> list[sympy.Symbol]:
    return [sym(f"{prefix}{i}") for i in range(n)]


def prod(xs: Sequence) -> Expr:
    return functools.reduce(lambda a, b: a * b, xs, S.One)


def linearize(index: Sequence[Expr], sizes: Sequence[Expr]) -> Expr:
    """Row-major flat index of ``index`` in a tensor of ``sizes``."""
    out = S.Zero
    for i, s in zip(index, sizes):
        out = out * s + i
    return out


def delinearize(flat: Expr, sizes: Sequence[Expr]) -> list[Expr]:
    """Inverse of :func:`linearize` (with FloorDiv / ModularIndexing)."""
    out = []
    div = S.One
    for s in reversed(list(sizes)):
        if s == 1:
            out.append(S.Zero)
            continue
        out.append(ModularIndexing(flat, div, s))
        div = div * s
    out.reverse()
    if out:
        # the outermost non-trivial dimension needs no modulus
        for k, s in enumerate(sizes):
            if s != 1:
                d = prod([t for t in sizes[k + 1:]])
                out[k] = FloorDiv(flat, d)
                break
    return out


def upper_bound(expr: Expr, ranges: dict) -> int | None:
    """Largest value ``expr`` can take (None when unknown or possibly negative)."""
    expr = sympy.sympify(expr)
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        r = ranges.get(expr)
        return None if r is None else int(r) - 1
    if isinstance(expr, FloorDiv):
        ub = upper_bound(expr.args[0], ranges)
        return None if ub is None else ub // int(expr.args[1])
    if isinstance(expr, ModularIndexing):
        ub = upper_bound(expr.args[0], ranges)
        m = int(expr.args[2]) - 1
        return m if ub is None else min(m, ub // int(expr.args[1]))
    if expr.is_Add:
        total = 0
        for a in expr.args:
            ub = upper_bound(a, ranges)
            if ub is None or lower_bound(a) < 0:
                return None
            total += ub
        return total
    if expr.is_Mul:
        total = 1
        for a in expr.args:
            ub = upper_bound(a, ranges)
            if ub is None or ub < 0:
                return None
            total *= ub
        return total
    return None


def lower_bound(expr: Expr) -> int:
    if expr.is_Integer:
        return int(expr)
    if expr.is_Mul and expr.args[0].is_Integer and int(expr.args[0]) < 0:
        return -1
    return 0


def _divide_out(base: Expr, div: int, ranges: dict) -> tuple[Expr, int] | None:
    """``(q, k)`` with ``base // div == q // k`` and ``k < div``, when ``base = g*q + r`` for some
    ``g > 1`` dividing ``div`` and ``0 <= r < g``; None when no such ``g`` exists."""
    coeffs = base.as_coefficients_dict()
    if not all(c.is_Integer for c in coeffs.values()):
        return None
    for g in sorted({math.gcd(div, int(c)) for c in coeffs.values()} | {div}, reverse=True):
        if g == 1:
            break
        q, r = S.Zero, S.Zero
        for term, coeff in coeffs.items():
            if int(coeff) % g == 0:
                q += (int(coeff) // g) * term
            else:
                r += coeff * term
        if r == 0:
            return q, div // g
        ub = upper_bound(r, ranges)
        if ub is not None and ub < g and all(c >= 0 for c in r.as_coefficients_dict().values()):
            return q, div // g
    return None


def _simplify_atom(e: Expr, ranges: dict) -> Expr:
    if isinstance(e, FloorDiv):
        base = simplify_index(e.args[0], ranges)
        d = int(e.args[1])
        ub = upper_bound(base, ranges)
        if ub is not None and ub < d and lower_bound(base) >= 0:
            return S.Zero
        split = _divide_out(sympy.expand(base), d, ranges)
        if split is not None:  # (g*q + r) // (g*k) with 0 <= r < g is q // k
            q, k = split
            return _simplify_atom(FloorDiv(q, k), ranges) if k != 1 else q
        return FloorDiv(base, e.args[1])
    if isinstance(e, ModularIndexing):
        base = sympy.expand(simplify_index(e.args[0], ranges))
        d, m = int(e.args[1]), int(e.args[2])
        # drop terms that are multiples of d*m
        kept = S.Zero
        for term, coeff in base.as_coefficients_dict().items():
            if not (coeff.is_Integer and int(coeff) % (d * m) == 0):
                kept += coeff * term
        ub = upper_bound(kept, ranges)
        if ub is not None and ub < d * m and lower_bound(kept) >= 0:
            return _simplify_atom(FloorDiv(kept, d), ranges) if d != 1 else kept
        split = _divide_out(kept, d, ranges) if d != 1 else None
        if split is not None:  # (g*q + r) // (g*k) % m with 0 <= r < g is q // k % m
            return _simplify_atom(ModularIndexing(split[0], split[1], m), ranges)
        return ModularIndexing(kept, e.args[1], e.args[2])
    return e


def _combine_pairs(expr: Expr, ranges: dict) -> Expr:
    """c*MI(x,d,m) + c*m*MI(x,d*m,M) -> c*MI(x,d,m*M); FloorDiv(x, D) is MI(x, D, inf)."""
    changed = True
    while changed:
        changed = False
        terms = dict(expr.as_coefficients_dict())
        items = [(t, c) for t, c in terms.items() if isinstance(t, (ModularIndexing, FloorDiv))]
        for t1, c1 in items:
            if not isinstance(t1, ModularIndexing):
                continue
            x, d, m = t1.args
            for t2, c2 in items:
                if t2 is t1 or t2.args[0] != x or c2 != c1 * m:
                    continue
                if isinstance(t2, ModularIndexing) and t2.args[1] == d * m:
                    new = ModularIndexing(x, d, m * t2.args[2])
                elif isinstance(t2, FloorDiv) and t2.args[1] == d * m:
                    new = FloorDiv(x, d)
                else:
                    continue
                expr = expr - c1 * t1 - c2 * t2 + c1 * _simplify_atom(new, ranges)
                changed = True
                break
            if changed:
                break
    return expr


def simplify_index(expr: Expr, ranges: dict) -> Expr:
    """Fold FloorDiv / ModularIndexing using the variables' ranges."""
    expr = sympy.sympify(expr)
    bounds = tuple(sorted(((s, ranges[s]) for s in expr.free_symbols if s in ranges), key=str))
    return _simplify(expr, bounds)


@functools.lru_cache(maxsize=1 << 16)
def _simplify(expr: Expr, bounds: tuple) -> Expr:
    """``simplify_index`` proper: the result depends on the ranges of ``expr``'s own symbols
    only, so those (``bounds``) key the cache (kernels and fusion tests ask again and again)."""
    expr = sympy.expand(expr)
    if not expr.has(FloorDiv, ModularIndexing):
        return expr
    ranges = dict(bounds)
    expr = expr.replace(lambda e: isinstance(e, (FloorDiv, ModularIndexing)),
                        lambda e: _simplify_atom(e, ranges))
    expr = sympy.expand(expr)
    if expr.has(FloorDiv, ModularIndexing):
        expr = _combine_pairs(expr, ranges)
    return sympy.expand(expr)


def as_linear(expr: Expr, variables: Sequence[sympy.Symbol]) -> tuple[Expr, list[Expr]] | None:
    """(offset, strides) if ``expr`` is affine in ``variables`` with constant coefficients."""
    expr = sympy.expand(expr)
    strides = [S.Zero] * len(variables)
    offset = S.Zero
    pos = {v: i for i, v in enumerate(variables)}
    for term, coeff in expr.as_coefficients_dict().items():
        if term == 1:
            offset += coeff
        elif term in pos:
            strides[pos[term]] += coeff
        elif term.free_symbols & set(variables):
            return None
        else:
            offset += coeff * term
    return offset, strides


def merge_loops(sizes: Sequence[Expr], exprs: Sequence[Expr], variables: Sequence[sympy.Symbol]
                ) -> tuple[list[Expr], Callable[[Sequence[Expr]], list[Expr]]]:
    """Merge adjacent loop dimensions that every index expression traverses contiguously.

    Returns the new sizes and a function mapping new index variables to the old ones.
    Size-1 dimensions are dropped.
    """
    sizes = list(sizes)
    linear = [as_linear(e, variables) for e in exprs]
    groups: list[list[int]] = []  # runs of old dims merged into one new dim
    for i, s in enumerate(sizes):
        if s == 1:
            continue
        if groups:
            j = groups[-1][-1]
            ok = all(lin is not None and lin[1][j] == lin[1][i] * sizes[i] for lin in linear)
            if ok:
                groups[-1].append(i)
                continue
        groups.append([i])
    new_sizes = [prod([sizes[i] for i in g]) for g in groups]

    def reindex(new_index: Sequence[Expr]) -> list[Expr]:
        old: list[Expr] = [S.Zero] * len(sizes)
        for g, v in zip(groups, new_index):
            parts = delinearize(v, [sizes[i] for i in g])
            for i, p in zip(g, parts):
                old[i] = p
        return old

    return new_sizes, reindex


def is_contiguous_strides(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    expected = 1
    for s, st in zip(reversed(list(sizes)), reversed(list(strides))):
        if s != 1 and st != expected:
            return False
        expected *= s
    return True


def contiguous_strides(sizes: Sequence[Expr]) -> list[Expr]:
    out, acc = [], S.One
    for s in reversed(list(sizes)):
        out.append(acc)
        acc = acc * s
    return list(reversed(out))


def is_dense(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Strides describe a non-overlapping, gap-free permutation of a contiguous layout."""
    dims = sorted((int(st), int(s)) for s, st in zip(sizes, strides) if s != 1)
    expected = 1
    for st, s in dims:
        if st != expected:
            return False
        expected *= s
    return True


def numel(sizes: Sequence[Expr]) -> int:
    return int(math.prod(int(s) for s in sizes))
