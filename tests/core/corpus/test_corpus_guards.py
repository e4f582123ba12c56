"""Corpus: guards — a second call with new Python values, object identities or aliasing must either
hit a still-valid entry or recompile; never reuse a graph specialised on the old value."""
from __future__ import annotations

import collections
import enum
import functools
import types

import pytest
import torch

from harness import Case, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


X = t(6)

# -- values that must be guarded by value ----------------------------------------------------------
add("int_arg_value", lambda x, n: x * n, [(X, 2), (X, 3), (X, 2)], 2)
add("float_vs_int_same_value", lambda x, v: (x * v, type(v).__name__), [(X, 2), (X, 2.0)], 2)
add("bool_vs_int", lambda x, v: (x + v, v is True), [(X, True), (X, 1)], 2)
add("string_arg_value", lambda x, mode: x * 2 if mode == "double" else x * 3, [(X, "double"), (X, "triple")], 2)
add("none_vs_value", lambda x, v: x if v is None else x * v, [(X, None), (X, 2.0)], 1)
add("tuple_of_ints_value", lambda x, shape: x.reshape(shape), [(X, (2, 3)), (X, (3, 2)), (X, (6,))], 3)
add("list_of_floats_value", lambda x, ws: x * ws[0] + ws[-1], [(X, [1.0, 2.0]), (X, [3.0, 4.0]), (X, [1.0, 5.0, 2.0])], 3)
add("nested_dict_config", lambda x, cfg: x * cfg["opt"]["lr"], [(X, {"opt": {"lr": 0.1}}), (X, {"opt": {"lr": 0.2}})], 2)
add("dict_new_keys", lambda x, d: x * len(d), [(X, {"a": 1}), (X, {"a": 1, "b": 2})], 2)
add("torch_dtype_arg", lambda x, dt: x.to(dt), [(X, torch.float64), (X, torch.float16)], 2)
add("torch_device_arg", lambda x, dev: torch.zeros(2, device=dev) + x.sum(), [(X, torch.device("cpu")), (X, "cpu")], 2)
add("torch_size_arg", lambda x, s: x.view(s), [(X, torch.Size([2, 3])), (X, torch.Size([3, 2]))], 2)


class Mode(enum.Enum):
    FAST = 1
    SLOW = 2


add("enum_arg", lambda x, m: x * 2 if m is Mode.FAST else x * m.value, [(X, Mode.FAST), (X, Mode.SLOW)], 2)
add("range_arg", lambda x, r: x[r.start:r.stop:r.step], [(X, range(0, 4, 2)), (X, range(1, 6))], 2)
add("simple_namespace_attr", lambda x, ns: x * ns.k, [(X, types.SimpleNamespace(k=2)), (X, types.SimpleNamespace(k=3))], 2)


class Holder:
    def __init__(self, w):
        self.w = w


add("object_attr_value", lambda x, h: x * h.w, [(X, Holder(2)), (X, Holder(3)), (X, Holder(t(6, seed=3)))], 3)


def read_global_scale(x):
    return x * GLOBAL_CFG["scale"]


GLOBAL_CFG = {"scale": 2.0}


def _set_global(value):
    def make():
        GLOBAL_CFG["scale"] = value
        return (X,)
    return make


# the global changes between calls: the guard on G['GLOBAL_CFG']['scale'] must fail
add("global_value_changes", read_global_scale, [_set_global(2.0), _set_global(3.0), _set_global(2.0)], 2)


def closure_value(scale):
    def f(x):
        return x * scale
    return f


add("closure_cell_value", closure_value(2.0), [(X,)], 1)

# -- values whose guard is too weak today (silent wrong results) --------------------------------------
WRONG = "SILENT WRONG RESULT: "
add("set_arg", lambda x, s: x * len(s), [(X, {1, 2}), (X, {1, 2, 3})], 2)
add("set_membership_arg", lambda x, s: x * 2 if "a" in s else x * 3, [(X, {"a"}), (X, {"b"})], 2)
add("frozenset_arg", lambda x, s: x * len(s), [(X, frozenset({1})), (X, frozenset({1, 2}))], 2)
add("slice_arg", lambda x, s: x[s], [(X, slice(0, 4)), (X, slice(1, 3))], 2)

SENTINEL = object()


def sentinel_default(x, opt=SENTINEL):
    if opt is SENTINEL:
        return x * 2
    return x * 3


add("sentinel_identity", sentinel_default, [(X,), (X, object())], 2)


class Token:
    pass


T1, T2 = Token(), Token()
add("object_identity_between_args", lambda x, a, b: x * 2 if a is b else x * 3, [(X, T1, T1), (X, T1, T2)], 2)
add("object_default_eq", lambda x, a: x * 2 if a == T1 else x * 3, [(X, T1), (X, T2)], 2)
add("tensor_identity_between_args", lambda a, b: a * 3 if a is b else a + b,
    [(X, t(6, seed=9)), lambda: (X, X)], 2)
add("tensor_identity_in_list", lambda xs: xs[0] * 3 if xs[0] is xs[1] else xs[0] - xs[1],
    [([X, t(6, seed=9)],), lambda: ([X, X],)], 2)
ODICT_BUG = ("only `type(value) is dict` with str/int keys is wrapped structurally in builder.wrap; "
             "dict subclasses (OrderedDict, defaultdict) and dicts with other keys go to _opaque with a "
             "type guard only, and ops.getitem then folds d[key] (operator.getitem via _fold) into the "
             "graph with no guard on the entry")
add("ordered_dict_arg", lambda x, d: x * d["a"], [(X, collections.OrderedDict(a=2)), (X, collections.OrderedDict(a=3))],
    2)
add("defaultdict_arg", lambda x, d: x * d["a"],
    [(X, collections.defaultdict(int, a=2)), (X, collections.defaultdict(int, a=3))], 2)
add("ordered_dict_of_tensors", lambda x, d: x * d["w"],
    [(X, collections.OrderedDict(w=t(6, seed=1))), (X, collections.OrderedDict(w=t(6, seed=2)))], 1)
add("tuple_key_dict_arg", lambda x, d: x * d[(1, 2)], [(X, {(1, 2): 2.0}), (X, {(1, 2): 3.0})], 2)
add("partial_arg_keywords", lambda x, p: p(x), [(X, functools.partial(torch.mul, other=2)),
                                              (X, functools.partial(torch.mul, other=3))], 2)


def inplace_with_alias(a, b):
    a.add_(1)
    return a + b


Y3 = t(3, seed=2)
add("inplace_then_alias", inplace_with_alias, [(t(3), t(3, seed=1)), lambda: (Y3, Y3)], 2)
add("alias_then_distinct", lambda a, b: a * b, [lambda: (Y3, Y3), (Y3, t(3))], None)


@pytest.mark.parametrize("case", params(CASES))
def test_guards(case):
    run_case(case)
