"""Corpus: generators consumed inside captured code, with ``yield from`` (one graph, no break)."""
from __future__ import annotations

import pytest
import torch

from harness import Case, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


def inner(x, n):
    for i in range(n):
        yield x * i
    return n * 10


def outer(x, n):
    got = yield from inner(x, n)
    yield x + got


add("yield_from_subgenerator", lambda x: list(outer(x, 3)), [(t(3),), (t(2, 2),)], 2)
add("yield_from_return_value", lambda x, n: sum(outer(x, n)), [(t(2), 2), (t(2), 4)], 2)


def over_containers(x, xs):
    yield from [x, x + 1]
    yield from (x * 2,)
    yield from range(2)
    yield from xs
    yield from {"k": 1}


add("yield_from_list_tuple_range_dict", lambda x, xs: list(over_containers(x, xs)), [(t(2), [t(2, seed=1), 3])], 1)


def leaves(tree):
    if isinstance(tree, (list, tuple)):
        for branch in tree:
            yield from leaves(branch)
    else:
        yield tree


add("yield_from_recursive", lambda tree: [leaf * 2 for leaf in leaves(tree)],
    [([t(2), (t(2, seed=1), [t(2, seed=2)])],)], 1)


def named(x, prefix):
    yield prefix + "a", x
    yield prefix + "b", x * 2


def chained(x):
    yield from named(x, "one.")
    yield from named(x + 1, "two.")


add("yield_from_named_pairs", lambda x: dict(chained(x)), [(t(3),)], 1)


def empty_sub():
    return "done"
    yield  # noqa: unreachable - makes this a generator


def only_return(x):
    result = yield from empty_sub()
    yield x * len(result)


add("yield_from_empty_generator", lambda x: list(only_return(x)), [(t(2),)], 1)


def partially_consumed(x):
    it = outer(x, 3)
    first = next(it)
    rest = list(it)
    return first, rest


add("yield_from_next_then_list", partially_consumed, [(t(2),), (t(3, dtype=torch.float64),)], 2)


def over_zip_enumerate(xs):
    yield from enumerate(xs)
    yield from zip(xs, reversed(xs))


add("yield_from_builtin_iterators", lambda xs: [(a, b * 2) for a, b in over_zip_enumerate(xs)],
    [([t(2), t(2, seed=1)],)], 1)


@pytest.mark.parametrize("case", params(CASES))
def test_generators(case):
    run_case(case)
