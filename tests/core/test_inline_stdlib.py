"""The standard library's pure helpers over tensors, captured in one graph (issue 46 item 2).

collections (defaultdict, deque, namedtuple, OrderedDict, Counter), itertools, functools,
operator, dataclasses, enum and typing, each used on tensors inside a compiled function: the
results equal eager's, one graph, no fallback warning.
"""
from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import itertools
import operator
import typing

import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback

Pair = collections.namedtuple("Pair", "a b")
GLOBAL_GROUPS: collections.defaultdict = collections.defaultdict(list)


@dataclasses.dataclass
class Config:
    scale: float = 2.0
    depth: int = 3


class Mode(enum.Enum):
    FAST = 1
    SLOW = 2


@functools.lru_cache(maxsize=None)
def cached_width(n: int) -> int:
    return n * 2


def base(v):
    "base doc"
    return v * 2


def decorated(fn):
    @functools.wraps(fn)
    def inner(*args):
        return fn(*args) + 1
    return inner


def defaultdict_groups(x):
    d = collections.defaultdict(list)
    for i, t in enumerate([x, x * 2, x * 3]):
        d[i % 2].append(t)
    counts = collections.defaultdict(int)
    for k in "abca":
        counts[k] += 1
    return sum(d[0]) + len(d[1]), counts["a"], sorted(counts)


def global_defaultdict(x):
    GLOBAL_GROUPS["seen"].append(1)
    return x * len(GLOBAL_GROUPS["seen"])


def deque_ops(x):
    q = collections.deque([x], maxlen=3)
    q.append(x + 1)
    q.appendleft(x - 1)
    q.append(x * 10)  # drops the left end
    q.rotate(1)
    first = q.popleft()
    return first + q.pop(), len(q), q.maxlen


def namedtuple_ops(x):
    p = Pair(x, 2)
    q = p._replace(b=3)
    r = Pair._make([x * 2, 4])
    return q.a * q.b + r.a, p._asdict()["b"], r


def ordered_and_counter(x):
    d = collections.OrderedDict(a=1, b=2, c=3)
    d.move_to_end("a")
    d.move_to_end("c", last=False)
    key, value = d.popitem()
    c = collections.Counter("abracadabra")
    return x * value, list(d), key, c["a"], c["z"], c.most_common(2)


def itertools_ops(x):
    prod = sum(a * b for a, b in itertools.product([x, x + 1], [1, 2]))
    pairs = [a + b for a, b in itertools.combinations([x, x * 2, x * 3], 2)]
    perms = len(list(itertools.permutations([x, x], 2)))
    longest = [a + b for a, b in itertools.zip_longest([x, x], [1], fillvalue=10)]
    acc = list(itertools.accumulate([x, x, x]))
    sliced = sum(itertools.islice([x, x * 2, x * 3, x * 4], 1, None, 2))
    counted = [x * i for i, _ in zip(itertools.count(2), range(3))]
    reps = sum(itertools.repeat(x, 3))
    groups = [(k, len(list(g))) for k, g in itertools.groupby("aabccc")]
    starred = sum(itertools.starmap(operator.mul, [(x, 2), (x, 3)]))
    chained = sum(itertools.chain.from_iterable([[x], [x * 2]]))
    return prod, pairs, perms, longest, acc[-1], sliced, counted, reps, groups, starred, chained


def functools_ops(x):
    total = functools.reduce(operator.add, [x, x * 2, x * 3])
    part = functools.partial(torch.mul, x)
    w = decorated(base)
    return total + part(3) + cached_width(3), w(x), w.__name__, w.__doc__, w.__wrapped__ is base


def operator_ops(x):
    items = [x, x * 2]
    second = operator.itemgetter(1)(items)
    both = operator.itemgetter(0, 1)(items)
    t = operator.attrgetter("T")(x)
    s = operator.methodcaller("sum", 0)(x)
    return second + both[0] + t + s, operator.add(x, 1), operator.neg(x)


def dataclass_enum_typing(x):
    cfg = dataclasses.replace(Config(), depth=4)
    names = [f.name for f in dataclasses.fields(Config)]
    as_dict = dataclasses.asdict(cfg)
    mode = Mode(2)
    y = typing.cast(torch.Tensor, x)
    return y * cfg.scale * cfg.depth, names, as_dict, mode is Mode.SLOW, Mode["FAST"].value, len(Mode)


CASES = [defaultdict_groups, global_defaultdict, deque_ops, namedtuple_ops, ordered_and_counter, itertools_ops,
         functools_ops, operator_ops, dataclass_enum_typing]


def _same(a, b) -> None:
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
    elif isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b)
    else:
        assert a == b


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_captured_in_one_graph(fn) -> None:
    x = torch.randn(3, 3)
    GLOBAL_GROUPS.clear()
    expected = fn(x)
    GLOBAL_GROUPS.clear()
    backend = CountingBackend()
    with no_fallback():
        got = ember.compile(fn, backend=backend, fullgraph=True)(x)
    _same(got, expected)
    assert backend.count == 1
    if fn is global_defaultdict:
        assert dict(GLOBAL_GROUPS) == {"seen": [1]}


def test_deque_is_rebuilt_as_a_deque() -> None:
    def fn(x):
        q = collections.deque([x], maxlen=2)
        q.append(x + 1)
        q.append(x + 2)
        return q

    x = torch.randn(2)
    got = ember.compile(fn, backend=CountingBackend(), fullgraph=True)(x)
    assert isinstance(got, collections.deque) and got.maxlen == 2
    _same(list(got), list(fn(x)))
