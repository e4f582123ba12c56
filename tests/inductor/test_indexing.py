"""simplify_index: every rewrite keeps the value of the index at every point of the loop ranges."""
from __future__ import annotations

import itertools

import pytest

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
