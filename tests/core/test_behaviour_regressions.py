"""Silent wrong results and crashes the ported Dynamo behaviours found (10 "wrong" and 2 crashing
cases in ``tests/dynamo_behaviours`` before this fix), each reduced to the class it stands for
and checked against eager over calls that change what capture read."""
from __future__ import annotations

import dataclasses
import functools
import typing

import numpy as np
import pytest
import torch

import ember
from core_helpers import CountingBackend


def _same(fn, *calls, backend="eager"):
    """Each call's arguments (a function making them: fresh per run) give eager's result."""
    compiled = ember.compile(fn, backend=backend)
    for make in calls:
        torch.testing.assert_close(compiled(*make()), fn(*make()), equal_nan=True)


# -- reads capture made must be guarded ---------------------------------------------------------
class _Flags:
    count = 2


def test_getattr_default_and_hasattr_of_a_class_guard_the_attribute_presence():
    def f(x, cls):
        if getattr(cls, "shortcut", False):
            return x + 7
        return x + 1 if hasattr(cls, "other") else x - 1

    def flags(**attrs):
        def make():
            for name in ("shortcut", "other"):
                if name in _Flags.__dict__:
                    delattr(_Flags, name)
            for name, value in attrs.items():
                setattr(_Flags, name, value)
            return torch.zeros(1), _Flags
        return make

    _same(f, flags(), flags(shortcut=True), flags(shortcut=False, other=1), flags())


def test_numpy_arithmetic_follows_the_elements_of_an_array_argument():
    a, b = np.ones(3), np.ones(3)

    def f(x, u, v):
        return x + torch.from_numpy(u + v)

    def filled(value):
        def make():
            a[:] = value
            return torch.zeros(3, dtype=torch.float64), a, b
        return make

    _same(f, filled(1.0), filled(5.0), filled(-2.0))


def test_an_array_that_only_becomes_a_tensor_is_data_not_a_guard():
    """wav2vec2's mask: ``torch.tensor(mask)`` each step, new elements each call, one graph."""
    mask = np.zeros(4, dtype=bool)
    backend = CountingBackend()
    compiled = ember.compile(lambda x: x * torch.tensor(mask, dtype=x.dtype), backend=backend)
    for k in range(4):
        mask[:] = False
        mask[:k] = True
        torch.testing.assert_close(compiled(torch.ones(4)), torch.ones(4) * torch.tensor(mask, dtype=torch.float32))
    assert backend.count == 1


def test_an_in_place_operator_on_an_array_changes_it_once_per_call_as_in_eager():
    def f(u, v):
        u += v
        return torch.from_numpy(u.copy())

    arrays = [np.ones(3), np.ones(3)]
    compiled = ember.compile(f, backend="eager")
    for _ in range(3):
        compiled(arrays[0], np.ones(3))
        f(arrays[1], np.ones(3))
    np.testing.assert_array_equal(arrays[0], arrays[1])


# -- descriptors ----------------------------------------------------------------------------------
class _Doubling:  # __set__ only: reads go to the instance's __dict__
    def __set__(self, obj, value):
        obj.__dict__["field"] += value * 2


class _Prefixing:  # __get__ and __set__ over another key of the __dict__
    def __get__(self, obj, objtype=None):
        return self if obj is None else obj.__dict__.get("_inner", "unset")

    def __set__(self, obj, value):
        obj.__dict__["_inner"] = "via_" + value


class _WithDescriptors:
    field = _Doubling()
    desc = _Prefixing()

    def __init__(self):
        self.__dict__["field"] = 1


def test_a_store_through_a_descriptor_runs_its_set_and_later_reads_see_it():
    def f(x, obj):
        obj.field = 3
        obj.desc = "first"
        before = obj.desc
        obj.__dict__["_inner"] = "direct"
        return x + obj.field, before, obj.desc, obj.field

    ours, theirs = _WithDescriptors(), _WithDescriptors()
    got, want = ember.compile(f, backend="eager")(torch.zeros(1), ours), f(torch.zeros(1), theirs)
    assert got[1:] == want[1:] and ours.__dict__ == theirs.__dict__
    torch.testing.assert_close(got[0], want[0])


# -- objects built in the call ---------------------------------------------------------------------
@dataclasses.dataclass
class _Report:
    scale: int = 3
    items: list = dataclasses.field(default_factory=list)


def test_an_object_built_in_the_call_compares_equal_to_a_constant():
    def f(x):
        p = _Report(2)
        return x * 2 if p.items == [] and [] == p.items and not p.items != [] else x

    _same(f, lambda: (torch.ones(2),))


def test_set_isdisjoint_and_issuperset_stop_reading_a_generator_where_python_does():
    def f(x):
        seen = []

        def gen():
            for v in (1, 2, 3):
                seen.append(v)
                yield v
        {2, 4}.isdisjoint(gen())
        {1, 2}.issuperset(gen())
        return x + len(seen)

    _same(f, lambda: (torch.zeros(1),))


def test_an_in_place_function_under_vmap_returns_its_argument():
    def f(x):
        c = x.clone()
        y = torch.vmap(torch.Tensor.asin_)(c)
        return y is c, y is x, y

    x = torch.full((3, 1), 0.5)
    got, want = ember.compile(f, backend="eager")(x.clone()), f(x.clone())
    assert got[:2] == want[:2]
    torch.testing.assert_close(got[2], want[2])


def test_raising_an_exception_already_in_the_context_chain_cuts_the_cycle():
    def f(x):
        try:
            try:
                raise KeyError
            except KeyError as first:
                a = first
                try:
                    raise ValueError
                except ValueError as second:
                    b = second
                    raise a  # noqa: B904
        except KeyError:
            pass
        return x, a.__context__ is b, b.__context__ is None

    got, want = ember.compile(f, backend="eager")(torch.ones(1)), f(torch.ones(1))
    assert got[1:] == want[1:] == (True, True)


# -- rebuilding values at a graph break --------------------------------------------------------------
def _kw(x, **kwargs):
    return x * (2 + len(kwargs))


def test_a_partial_in_a_closure_cell_across_a_break_is_rebuilt():
    def f(x):
        def run():
            print("", end="")
            return op(x)

        op = functools.partial(_kw, dim=3)
        y = run()
        op = functools.partial(_kw, other=4, more=5)
        return run() + y

    _same(f, lambda: (torch.ones(2),))


class _Pair(typing.NamedTuple):
    a: torch.Tensor
    b: torch.Tensor


class _PairPlus(_Pair):  # a subclass: instances have a __dict__
    pass


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_tuple_built_in_the_call_stays_one_object_across_a_break(backend):
    def f(x):
        t = _PairPlus(x, x + 1)
        same = t
        t.extra = x * 5  # a break: stored in Python on the rebuilt tuple
        return t, same is t

    got, want = ember.compile(f, backend=backend)(torch.ones(1)), f(torch.ones(1))
    assert got[1] is want[1] is True
    torch.testing.assert_close(got[0].extra, want[0].extra)
    torch.testing.assert_close(tuple(got[0]), tuple(want[0]))
