"""Shape relations in the compact form that the C++ tensor check evaluates.

A relation of the ShapeEnv is a Python expression over size reads (``{0} <= 1 + {1}``,
``({0} % 8) == 0``, ``{0} == 256*{1}``): the template of a check of :mod:`ember.shape_guards`.
:func:`parse` reads that very expression (its Python syntax tree, so the form evaluated in C++
is the one the Python check evaluates) into :class:`Linear` relations
``sum(coefficient * read) + constant  op  0``, or ``(sum + constant) % modulus + offset  op  0``,
with Python's integer semantics. Anything else (a product of two sizes, ``//``, ``Max``, an int
argument rather than a tensor's size) gives None, and the relation stays a Python check.

The bounds below keep every value the C++ side computes within a 128-bit integer, so that it
is exact on any int64 sizes and strides.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Any, Sequence

#: the comparisons, in the order of their codes in tensor_match.cpp
OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
MAX_COEFFICIENT = 2 ** 32
MAX_TERMS = 32
MAX_MODULUS = 2 ** 62
INT64 = 2 ** 63
_NAME = "___r"


@dataclasses.dataclass(frozen=True)
class Linear:
    """``value op 0``, where ``value = sum(c * read for read, c in terms) + constant``, then,
    with a modulus, ``value % modulus + offset`` (Python's ``%``: never negative)."""

    terms: tuple[tuple[Any, int], ...]  # (what is read, its coefficient)
    constant: int
    op: str
    modulus: int = 0
    offset: int = 0


_Affine = tuple[dict[int, int], int]  # source index -> coefficient, constant


def parse(template: str, reads: Sequence[Any]) -> tuple[Linear, ...] | None:
    """The relations of ``template`` (a conjunction of comparisons over ``{i}``), with
    ``reads[i]`` for ``{i}``; None when it is not in that form or a read is None."""
    try:
        tree = ast.parse(template.format(*(f"{_NAME}{i}" for i in range(len(reads)))), mode="eval")
    except (SyntaxError, ValueError, IndexError, KeyError):
        return None
    comparisons = _conjuncts(tree.body)
    if comparisons is None:
        return None
    relations = []
    for left, op, right in comparisons:
        relation = _relation(left, op, right)
        if relation is None:
            return None
        affine, modulus, offset, op = relation
        coefficients, constant = affine
        if any(reads[i] is None for i in coefficients):
            return None
        terms = tuple((reads[i], c) for i, c in sorted(coefficients.items()) if c != 0)
        if not 0 < len(terms) <= MAX_TERMS or any(abs(c) > MAX_COEFFICIENT for _, c in terms) \
                or not -INT64 <= constant < INT64 or not -INT64 <= offset < INT64 or modulus > MAX_MODULUS:
            return None
        relations.append(Linear(terms, constant, op, modulus, offset))
    return tuple(relations)


def _conjuncts(node: ast.expr) -> list[tuple[ast.expr, str, ast.expr]] | None:
    """``a and b <= c < d`` -> its comparisons (a chain is one comparison per pair)."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        found = []
        for value in node.values:
            part = _conjuncts(value)
            if part is None:
                return None
            found.extend(part)
        return found
    if isinstance(node, ast.Compare) and all(type(op) in OPS for op in node.ops):
        sides = [node.left, *node.comparators]
        return [(sides[i], OPS[type(op)], sides[i + 1]) for i, op in enumerate(node.ops)]
    return None


def _relation(left: ast.expr, op: str, right: ast.expr) -> tuple[_Affine, int, int, str] | None:
    """``left op right`` as (affine form, modulus, offset, op) with everything on the left."""
    a, b = _affine(left), _affine(right)
    if a is not None and b is not None:
        return _combine(a, b, -1), 0, 0, op
    for mod_side, other, this_op in ((left, b, op), (right, a, _FLIPPED[op])):
        if other is None or other[0]:  # a remainder compared with a constant only
            continue
        remainder = _remainder(mod_side)
        if remainder is not None:
            inner, modulus = remainder
            return inner, modulus, -other[1], this_op
    return None


def _remainder(node: ast.expr) -> tuple[_Affine, int] | None:
    """``affine % k``, k a positive constant."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)):
        return None
    inner, divisor = _affine(node.left), _affine(node.right)
    if inner is None or divisor is None or divisor[0] or divisor[1] <= 0:
        return None
    return inner, divisor[1]


def _affine(node: ast.expr) -> _Affine | None:
    """An integer-linear expression over the reads, or None."""
    if isinstance(node, ast.Constant):
        return ({}, node.value) if type(node.value) is int else None
    if isinstance(node, ast.Name):
        if node.id.startswith(_NAME) and node.id[len(_NAME):].isdigit():
            return {int(node.id[len(_NAME):]): 1}, 0
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _affine(node.operand)
        if inner is None:
            return None
        return inner if isinstance(node.op, ast.UAdd) else _scale(inner, -1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = _affine(node.left), _affine(node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Mult):
            if a[0] and b[0]:  # a product of two sizes
                return None
            return _scale(b, a[1]) if not a[0] else _scale(a, b[1])
        return _combine(a, b, 1 if isinstance(node.op, ast.Add) else -1)
    return None


def _scale(a: _Affine, k: int) -> _Affine:
    return {i: c * k for i, c in a[0].items()}, a[1] * k


def _combine(a: _Affine, b: _Affine, sign: int) -> _Affine:
    """``a + sign * b``."""
    coefficients = dict(a[0])
    for i, c in b[0].items():
        coefficients[i] = coefficients.get(i, 0) + sign * c
    return coefficients, a[1] + sign * b[1]


__all__ = ["Linear", "OPS", "parse"]
