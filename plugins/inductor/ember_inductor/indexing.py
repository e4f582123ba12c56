"""Index arithmetic for the loop IR: index variables, (de)linearization, affine forms, loop merging.

The integer division functions live in ``index_functions`` and their range-aware simplification
in ``index_simplify``; both are re-exported here, the one module the IR and codegen import.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import sympy

from .index_functions import FloorDiv, ModularIndexing, TrueDiv, terms
from .index_simplify import IndexTooComplex, simplify_index

__all__ = ["FloorDiv", "ModularIndexing", "TrueDiv", "IndexTooComplex", "simplify_index", "sym", "make_vars",
           "prod", "linearize", "delinearize", "as_linear", "merge_loops", "is_contiguous_strides",
           "contiguous_strides", "is_dense", "numel"]

Expr = sympy.Expr
S = sympy.S


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
        # distributed over the terms (sympy does it only for numbers), so that a symbolic size
        # stays a coefficient of each variable and the index remains a flat sum
        out = sympy.Add(*[a * s for a in sympy.Add.make_args(out)]) + i
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


def as_linear(expr: Expr, variables: Sequence[sympy.Symbol]) -> tuple[Expr, list[Expr]] | None:
    """(offset, strides) if ``expr`` is affine in ``variables`` with constant coefficients."""
    strides = [S.Zero] * len(variables)
    offset = S.Zero
    pos = {v: i for i, v in enumerate(variables)}
    for term, coeff in terms(sympy.sympify(expr)).items():
        if term == 1:
            offset += coeff
        elif term in pos:
            strides[pos[term]] += coeff
        elif not term.free_symbols & set(variables):
            offset += coeff * term
        elif term.is_Mul:  # a variable times sizes: a symbolic stride
            found = [f for f in term.args if f in pos]
            rest = [f for f in term.args if f not in pos]
            if len(found) != 1 or any(f.free_symbols & set(variables) for f in rest):
                return None
            strides[pos[found[0]]] += coeff * sympy.Mul(*rest)
        else:
            return None
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


def is_dense(sizes: Sequence[Expr], strides: Sequence[Expr]) -> bool:
    """Strides describe a non-overlapping, gap-free permutation of a contiguous layout.

    Symbolic strides are ordered by their example values, then each must equal the product of
    the sizes inside it exactly (so the answer holds for every size)."""
    from .symbolic import hint
    dims = sorted(((hint(st), sympy.sympify(st), sympy.sympify(s)) for s, st in zip(sizes, strides)
                   if s != 1), key=lambda d: d[0])
    expected = S.One
    for _, st, s in dims:
        if st != expected:
            return False
        expected = expected * s
    return True


def numel(sizes: Sequence[Expr]) -> Expr:
    """The product of ``sizes`` (a sympy integer when they are all static)."""
    return prod([sympy.sympify(s) for s in sizes])
