"""Instances of Python subclasses of dict and set, and torch's pure-Python OrderedSet, in compiled code
(issue 46): built, read, mutated and returned inside the graph, passed in as inputs (guarded on their
type and keys, their mutations replayed), their overridden methods inlined; results equal eager's and
as many graphs as torch.compile compiles."""
from __future__ import annotations

import collections
import copy

import pytest
import torch
from torch.utils._ordered_set import OrderedSet

import ember
from core_helpers import CountingBackend, no_fallback, torch_compile_graph_count


class Scaled(dict):
    """Doubles what it gives, adds one to what it stores: both through dict's own methods."""

    def __getitem__(self, key):
        return super().__getitem__(key) * 2

    def __setitem__(self, key, value):
        super().__setitem__(key, value + 1)


class Tags(set):
    def add(self, item):
        super().add(item * 10)

    def tens(self):
        return sorted(v for v in self if v % 10 == 0)


class PlainSub(dict):
    pass


class WithDefault(collections.defaultdict):
    def total(self):
        return sum(self.values())


class Attributes(dict):
    def __setattr__(self, name, value):  # a hook on every store: not modelled, a graph break instead
        super().__setattr__(name, value + 1)


class ScaledModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        d = Scaled()
        d["h"] = self.lin(x)
        d["s"] = x.sin()
        d.note = "kept"
        return d["h"] + d["s"], d, len(d), "h" in d


def _compiled(fn, *args, fullgraph=True):
    backend = CountingBackend()
    with no_fallback():
        out = ember.compile(fn, backend=backend, fullgraph=fullgraph)(*args)
    return out, backend.count


def _same(got, want):
    assert type(got) is type(want)
    if isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want)
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, dict):
        assert list(dict.keys(got)) == list(dict.keys(want))
        for k in want:
            _same(dict.__getitem__(got, k), dict.__getitem__(want, k))
        assert getattr(got, "__dict__", {}).keys() == getattr(want, "__dict__", {}).keys()
    else:
        assert got == want


def test_dict_subclass_overriding_getitem_and_setitem_in_a_forward():
    model = ScaledModel()
    x = torch.randn(2, 4)
    want = model(x)
    got, count = _compiled(model, x)
    _same(got, want)
    assert got[1].note == "kept" and type(got[1]) is Scaled
    assert count == torch_compile_graph_count(model, x) == 1


def _set_subclass(x):
    s = Tags([1, 2])
    s.add(3)
    both = s | {4}
    return x * len(s), s, s.tens(), 30 in s, type(both).__name__, s == {1, 2, 30}, s.issubset({1, 2, 30, 5})


def test_set_subclass_overriding_add():
    x = torch.randn(3)
    got, count = _compiled(_set_subclass, x)
    _same(got, _set_subclass(x))
    assert count == torch_compile_graph_count(_set_subclass, x) == 1


def _ordered_ints(x):
    s = OrderedSet([3, 1, 2, 3])
    s.discard(1)
    s |= {7}
    t = s - OrderedSet([2])
    return x + len(s), list(s), list(t), s == OrderedSet([3, 2, 7]), s


def _ordered_tensors(x, y):
    s = OrderedSet([x, y, x])
    s.add(y * 2)
    out = torch.zeros_like(x)
    for i, t in enumerate(s):
        out = out + t * (i + 1)
    return out, len(s), x in s, list(s)[1] is y


@pytest.mark.parametrize("fn,nargs", [(_ordered_ints, 1), (_ordered_tensors, 2)], ids=["ints", "tensors"])
def test_ordered_set(fn, nargs):
    args = tuple(torch.randn(3) for _ in range(nargs))
    got, count = _compiled(fn, *args)
    _same(got, fn(*args))
    assert count == torch_compile_graph_count(fn, *args) == 1


def _mutates(d, x):
    d["out"] = x * d["w"]
    d.calls = getattr(d, "calls", 0) + 1
    del d["drop"]
    return x + 1


def _fresh():
    d = PlainSub(w=torch.full((3,), 2.0), drop=1)
    return d


def test_mutations_of_an_input_subclass_instance_are_replayed():
    x = torch.randn(3)
    want_d, got_d = _fresh(), _fresh()
    want = _mutates(want_d, x)
    backend = CountingBackend()
    compiled = ember.compile(_mutates, backend=backend, fullgraph=True)
    with no_fallback():
        got = compiled(got_d, x)
    torch.testing.assert_close(got, want)
    assert type(got_d) is PlainSub and list(got_d) == list(want_d) == ["w", "out"]
    torch.testing.assert_close(got_d["out"], want_d["out"])
    assert got_d.calls == want_d.calls == 1
    again = _fresh()  # another instance with the same type and keys reuses the graph
    with no_fallback():
        compiled(again, x)
    assert again.calls == 1 and backend.count == 1
    assert torch_compile_graph_count(_mutates, _fresh(), x) == 1


def _reads_input_set(s, x):
    s.add(5)
    return x * len(s) if 2 in s else x - 1


def test_input_set_subclass_guarded_on_its_elements_and_mutated():
    x = torch.randn(2)
    backend = CountingBackend()
    compiled = ember.compile(_reads_input_set, backend=backend, fullgraph=True)
    for elements in ([1, 2], [1, 2], [1, 3]):
        want_s, got_s = Tags(), Tags()
        set.update(want_s, elements)
        set.update(got_s, elements)
        with no_fallback():
            got = compiled(got_s, x)
        torch.testing.assert_close(got, _reads_input_set(want_s, x))
        assert got_s == want_s and type(got_s) is Tags
    assert backend.count == 2  # the third set has other elements: compiled again


def _default_counts(x, words):
    d = WithDefault(int)
    for w in words:
        d[w] += 1
    return x * d.total(), d, d.default_factory


def test_defaultdict_subclass():
    x = torch.randn(2)
    words = ["a", "b", "a"]
    got, count = _compiled(_default_counts, x, words)
    want = _default_counts(x, words)
    _same(got[:2], want[:2])
    assert got[1].default_factory is int and got[2] is int
    assert count == 1


def _copies(x):
    d = PlainSub(a=x)
    return type(d.copy()).__name__, type(copy.copy(d)).__name__, type(d | {"b": 1}).__name__, isinstance(d, dict)


def test_builtin_results_of_a_subclass_are_builtin():
    x = torch.randn(2)
    got, _ = _compiled(_copies, x)
    assert got == _copies(x)


def _hooked(x):
    d = Attributes(a=1)
    d.b = 1
    return x + d.b


def test_a_subclass_that_is_not_modelled_breaks_the_graph():
    x = torch.randn(2)
    with pytest.raises(ember.Unsupported, match="Attributes"):
        ember.compile(_hooked, backend=CountingBackend(), fullgraph=True)(x)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ember.compile(_hooked, backend=CountingBackend())(x)
    torch.testing.assert_close(got, _hooked(x))


def _grows_input_ordered_set(s, x):
    s.add(9)
    return x * len(s) if 9 in s and 2 in s else x - 1


def test_input_ordered_set_mutated_and_read_back():
    x = torch.randn(2)
    backend = CountingBackend()
    compiled = ember.compile(_grows_input_ordered_set, backend=backend, fullgraph=True)
    for elements in ([1, 2], [1, 2], [3]):
        want_s, got_s = OrderedSet(elements), OrderedSet(elements)
        with no_fallback():
            got = compiled(got_s, x)
        torch.testing.assert_close(got, _grows_input_ordered_set(want_s, x))
        assert list(got_s) == list(want_s)  # the add is replayed, and `in` saw it
    assert backend.count == 2  # same elements reuse the graph; other elements compile again


class DoublingOrderedDict(collections.OrderedDict):
    def __setitem__(self, key, value):
        super().__setitem__(key, value * 2)


def _ordered_dict_update_calls_back(x):
    d = DoublingOrderedDict()
    d["a"] = 1
    d.update(b=2)  # OrderedDict's C update calls the subclass's __setitem__
    return x + d["b"], list(d.items())


def test_an_ordered_dict_method_that_calls_back_an_override_breaks_the_graph():
    x = torch.randn(2)
    with pytest.raises(ember.Unsupported, match="calls them back"):
        ember.compile(_ordered_dict_update_calls_back, backend=CountingBackend(), fullgraph=True)(x)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ember.compile(_ordered_dict_update_calls_back, backend=CountingBackend())(x)
    want = _ordered_dict_update_calls_back(x)
    torch.testing.assert_close(got[0], want[0])
    assert got[1] == want[1] == [("a", 2), ("b", 4)]
