"""``d.keys()``, ``d.values()`` and ``d.items()`` are live views in compiled code: a later change
of the dict shows in a view taken before it, for dicts made inside and dicts read from inputs
or globals (issue 45, item 5)."""
from __future__ import annotations

import collections

import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback

TABLE = {"a": 1, "b": 2}


def _keys_after_a_store(x):
    d = {1: x}
    keys = d.keys()
    d[4] = x * 2
    return 4 in keys, len(keys), list(keys), x + 1


def _values_after_a_store(x):
    d = {1: x}
    values = d.values()
    d[2] = x * 2
    return len(values), [t + 1 for t in values]


def _items_after_a_store(x):
    d = {1: x}
    items = d.items()
    d[2] = x * 3
    return [(k, t * 2) for k, t in items], len(items), bool(items)


def _view_of_an_input(x, d):
    keys = d.keys()
    d["z"] = x * 2
    return "z" in keys, len(keys), sorted(keys)


def _view_of_a_global(x):
    keys = TABLE.keys()
    TABLE["c"] = 3
    seen = ("c" in keys, len(keys))
    del TABLE["c"]
    return seen, len(keys), x + 1


def _pop_shrinks(x):
    d = {1: x, 2: x * 2}
    values = d.values()
    d.pop(1)
    return len(values), list(values)


def _clear_empties(x):
    d = {1: x}
    keys = d.keys()
    d.clear()
    return len(keys), bool(keys), x + 1


def _update_grows(x):
    d = {1: x}
    items = d.items()
    d.update({5: x * 5})
    return len(items), [k for k, _ in items], [t + 1 for _, t in items]


def _ordered_dict(x):
    d = collections.OrderedDict(a=x)
    keys = d.keys()
    d["b"] = x * 2
    return list(keys), x + 1


def _set_operations(x):
    d = {"a": x, "b": x}
    keys = d.keys()
    d["c"] = x * 2
    return sorted(keys - {"a"}), sorted(keys & {"c", "q"}), keys == {"a", "b", "c"}, d["c"]


def _returned_with_its_dict(x):
    d = {"a": x}
    keys = d.keys()
    d["b"] = x * 2
    return keys, d


def _view_of_kwargs(x, **kwargs):
    keys = kwargs.keys()
    kwargs["new"] = x * 2
    return sorted(keys)


CASES = [_keys_after_a_store, _values_after_a_store, _items_after_a_store, _view_of_an_input, _view_of_a_global,
         _pop_shrinks, _clear_empties, _update_grows, _ordered_dict, _set_operations, _returned_with_its_dict,
         _view_of_kwargs]


def _arguments(fn):
    args = [torch.randn(3)] if fn.__code__.co_argcount == 1 else [torch.randn(3), {"a": 1}]
    kwargs = {"q": 1} if fn.__code__.co_flags & 0x08 else {}
    return args, kwargs


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__.strip("_"))
def test_a_view_sees_later_changes_of_its_dict(fn):
    args, kwargs = _arguments(fn)
    backend = CountingBackend()
    with no_fallback():
        got = ember.compile(fn, backend=backend, fullgraph=True)(*[dict(a) if isinstance(a, dict) else a
                                                                   for a in args], **kwargs)
    want = fn(*args, **kwargs)
    assert repr(got) == repr(want)
    theirs = CountingBackend()
    torch._dynamo.reset()
    torch.compile(fn, backend=theirs)(*args, **kwargs)
    assert backend.count == theirs.count


def test_a_returned_view_is_a_view_of_the_returned_dict():
    keys, d = ember.compile(_returned_with_its_dict, backend="eager", fullgraph=True)(torch.randn(2))
    assert type(keys) is type({}.keys())
    d["later"] = 1
    assert "later" in keys
