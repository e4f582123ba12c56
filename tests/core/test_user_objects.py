"""Plain Python objects created inside compiled code: built, mutated, iterated and returned."""
import pytest
import torch

import ember
import ember.errors


class Accumulator:
    def __init__(self, scale):
        self.parts = []
        self.scale = scale

    def add(self, t):
        self.parts.append(t * self.scale)
        return self

    def __len__(self):
        return len(self.parts)

    def __iter__(self):
        for part in self.parts:
            yield part


class IndexOnly:
    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]


def _counting():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend, graphs


def test_object_built_inside_is_rebuilt_after_the_graph():
    def f(x):
        acc = Accumulator(2).add(x).add(x + 1)
        total = sum(p for p in acc) + len(acc)
        seq = [v for v in IndexOnly([x, x * 3])]
        acc.done = bool(acc)
        return acc, total, seq, getattr(acc, "missing", None)

    x = torch.randn(3)
    backend, graphs = _counting()
    got = ember.compile(f, backend=backend, fullgraph=True)(x)
    want = f(x)
    assert len(graphs) == 1
    assert type(got[0]) is Accumulator and got[0].scale == 2 and got[0].done is True
    assert len(got[0].parts) == 2
    for g, w in zip(got[0].parts, want[0].parts):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(got[1], want[1])
    for g, w in zip(got[2], want[2]):
        torch.testing.assert_close(g, w)
    assert got[3] is None


def test_object_shared_by_two_outputs_stays_one_object():
    def f(x):
        acc = Accumulator(1).add(x)
        return acc, [acc]

    got = ember.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
    assert got[1][0] is got[0]


def test_abstract_class_is_refused_and_still_right():
    import abc

    class Base(abc.ABC):
        @abc.abstractmethod
        def run(self): ...

    def f(x):
        try:
            Base()
        except TypeError:
            return x + 1
        return x

    with pytest.raises(ember.errors.Unsupported):
        ember.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
    got = ember.compile(f, backend="eager")(torch.ones(2))  # falls back, right result
    torch.testing.assert_close(got, f(torch.ones(2)))


def test_object_that_refers_to_itself_falls_back_with_the_right_result():
    class Node:
        def __init__(self, t):
            self.t = t
            self.me = self

    def f(x):
        return Node(x * 2)

    x = torch.randn(2)
    got = ember.compile(f, backend="eager")(x)
    assert got.me is got
    torch.testing.assert_close(got.t, x * 2)


def test_object_built_inside_is_called_through_its_python_call():
    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, x, bias=0):
            return x * self.k + bias

    class NoCall:
        pass

    def f(x):
        try:
            NoCall()(x)
        except TypeError as e:
            message = str(e)
        return Scale(3)(x, bias=1), message

    x = torch.randn(2)
    backend, graphs = _counting()
    got = ember.compile(f, backend=backend, fullgraph=True)(x)
    want = f(x)
    assert len(graphs) == 1 and got[1] == want[1] == "'NoCall' object is not callable"
    torch.testing.assert_close(got[0], want[0])


def test_operator_of_an_object_passed_in_is_inlined_not_folded():
    class Boxed:
        def __init__(self, v):
            self.v = v

        def __add__(self, other):
            return Boxed(self.v * 2 + other.v)

    def f(a, b):
        return a + b

    a, b = Boxed(torch.ones(2)), Boxed(torch.ones(2))
    opt = ember.compile(f, backend="eager", fullgraph=True)
    torch.testing.assert_close(opt(a, b).v, f(a, b).v)
    a.v.add_(10)  # the same objects, new data: a result folded at capture would be stale
    torch.testing.assert_close(opt(a, b).v, f(a, b).v)
    assert opt(a, b) is not opt(a, b)



def test_in_compares_with_the_items_own_eq():
    class AlwaysEqual:
        def __eq__(self, other):
            return True

    def f(x):
        return x * (1 if 3 in [AlwaysEqual()] else 2), 3 in (AlwaysEqual(),), 4 in [1, 2]

    got = ember.compile(f, backend="eager", fullgraph=True)(torch.ones(1))
    want = f(torch.ones(1))
    torch.testing.assert_close(got[0], want[0])
    assert got[1:] == want[1:] == (True, False)
