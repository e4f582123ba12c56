"""simplify_index: every rewrite keeps the value of the index at every point of the loop ranges."""
from __future__ import annotations

import itertools
import math

import pytest
import sympy

from ember_inductor.indexing import FloorDiv, ModularIndexing, simplify_index, sym

r, x, y = sym("r0"), sym("x0"), sym("x1")

CASES = [
    # (expression, ranges, the simplified form)
    (FloorDiv(r + 16 * x, 16), {r: 16, x: 12}, x),
    (ModularIndexing(r + 16 * x, 16, 4), {r: 16, x: 12}, ModularIndexing(x, 1, 4)),  # a causal mask's row
    (ModularIndexing(r + 32 * x, 16, 4), {r: 16, x: 12}, ModularIndexing(2 * x, 1, 4)),
    (ModularIndexing(r + 16 * x, 16, 4), {r: 32, x: 12}, ModularIndexing(r + 16 * x, 16, 4)),  # r carries
    (ModularIndexing(r + 16 * x, 16, 4), {r: 16, x: 4}, x),
    (FloorDiv(r + 16 * x, 256), {r: 16, x: 48}, FloorDiv(x, 16)),  # (g*q + r) // (g*k) is q // k
    (ModularIndexing(r + 16 * x, 64, 4), {r: 16, x: 48}, ModularIndexing(x, 4, 4)),
    (16 * FloorDiv(r + 16 * x, 256) + ModularIndexing(r + 16 * x, 16, 16), {r: 16, x: 48}, x),  # a row
    (FloorDiv(3 * r + 12 * x, 24), {r: 4, x: 10}, FloorDiv(x, 2)),  # g = 12 and 3*r <= 9
    (FloorDiv(5 * r + 12 * x, 24), {r: 4, x: 10}, FloorDiv(5 * r + 12 * x, 24)),  # 5*r reaches 15: kept
    (ModularIndexing(x + 6 * y, 1, 6) + 6 * FloorDiv(x + 6 * y, 6), {x: 6, y: 5}, x + 6 * y),
]


def _value(expr, point):
    return int(expr.subs(point))


@pytest.mark.parametrize("expr,ranges,expected", CASES)
def test_simplified_index_has_the_same_value_everywhere(expr, ranges, expected) -> None:
    out = simplify_index(expr, ranges)
    assert out == expected
    symbols = sorted(ranges, key=str)
    for values in itertools.product(*(range(ranges[s]) for s in symbols)):
        point = dict(zip(symbols, values))
        assert _value(out, point) == _value(expr, point), (out, point)


def test_the_cache_tells_ranges_apart() -> None:
    expr = FloorDiv(r + 16 * x, 16)
    assert simplify_index(expr, {r: 16, x: 4}) == x
    assert simplify_index(expr, {r: 17, x: 4}) != x  # r = 16 carries into the quotient


def _random_index(rng, depth: int, variables: list) -> tuple:
    """(a Python function of a point, the same index built as an expression): sums with integer
    coefficients, FloorDiv and ModularIndexing, nested, as views and cats compose them."""
    if depth == 0 or rng.random() < 0.25:
        v = rng.choice(variables + [0, 1, 3, 5])
        if isinstance(v, int):
            return (lambda point, v=v: v), v
        return (lambda point, v=v: point[v]), v
    kind = rng.random()
    if kind < 0.35:
        parts = [_random_index(rng, depth - 1, variables) for _ in range(rng.randint(2, 3))]
        coeffs = [rng.choice([1, 1, 2, 3, 4, 6, 8, 12, 16]) for _ in parts]
        return (lambda point: sum(c * f(point) for c, (f, _) in zip(coeffs, parts)),
                sum(c * e for c, (_, e) in zip(coeffs, parts)))
    f, e = _random_index(rng, depth - 1, variables)
    d = rng.choice([1, 2, 3, 4, 6, 8, 16])
    if kind < 0.65:
        return (lambda point: f(point) // d), FloorDiv(e, d)
    m = rng.choice([2, 3, 4, 6, 8])
    return (lambda point: f(point) // d % m), ModularIndexing(e, d, m)


def test_rewrite_rules_keep_the_value_of_random_indices() -> None:
    """The rules that fire when an index is built (no ranges) and simplify_index (ranges) are
    exact at every point, on random nested divisions and moduli."""
    import random
    rng = random.Random(0)
    variables = [sym("a"), sym("b"), sym("c")]
    ranges = dict(zip(variables, (4, 6, 8)))
    points = [dict(zip(variables, p)) for p in itertools.product(*(range(n) for n in ranges.values()))]
    for _ in range(100):
        f, expr = _random_index(rng, 4, variables)
        expr = sympy.sympify(expr)
        simplified = simplify_index(expr, ranges)
        for point in points:
            assert _evaluate(expr, point) == f(point), (expr, point)
            assert _evaluate(simplified, point) == f(point), (expr, simplified, point)


def _evaluate(expr, point) -> int:
    """``expr`` at ``point`` in Python integers (``subs`` is too slow for thousands of points)."""
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return point[expr]
    args = [_evaluate(a, point) if isinstance(a, sympy.Basic) else a for a in expr.args]
    if isinstance(expr, FloorDiv):
        return args[0] // args[1]
    if isinstance(expr, ModularIndexing):
        return args[0] // args[1] % args[2]
    return sum(args) if expr.is_Add else math.prod(args)
