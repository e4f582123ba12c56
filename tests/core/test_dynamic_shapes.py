"""Dynamic shapes in the core: automatic dynamic, symbolic size arithmetic, relation guards,
mark_dynamic/mark_static, dynamic=True/False, int arguments, and the per-shape cache of backends
that take no symbolic sizes."""
from __future__ import annotations

import logging
import warnings

import pytest
import torch

import ember
from ember.shapes import is_dynamic

from core_helpers import CountingBackend, no_fallback


class DynamicCounting(CountingBackend):
    """Counts the graphs it is given; declared ``dynamic=True`` (it just runs the graph)."""


_BACKEND = DynamicCounting()
ember.register_backend(_BACKEND, name="test_dynamic_counting", dynamic=True)


@pytest.fixture
def counting() -> DynamicCounting:
    _BACKEND.graphs.clear()
    _BACKEND.example_inputs.clear()
    return _BACKEND


def _check_grads(fn, compiled, *shapes: tuple[int, ...]) -> None:
    """Forward values and gradients (None where eager's is None) equal eager's."""
    inputs = [torch.randn(*s, requires_grad=i == 0) for i, s in enumerate(shapes)]
    clones = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    expected, actual = fn(*inputs), compiled(*clones)
    torch.testing.assert_close(actual, expected)
    expected.sum().backward()
    actual.sum().backward()
    for a, b in zip(clones, inputs):
        assert (a.grad is None) == (b.grad is None)
        if b.grad is not None:
            torch.testing.assert_close(a.grad, b.grad)


def mlp_like(x, w):
    b, t = x.shape
    h = torch.relu(x.view(b, t // 2, 2).sum(-1) @ w)
    return h * x.size(0) + torch.arange(t, dtype=x.dtype).sum()


def test_twenty_sizes_make_two_graphs_forward_and_backward(counting):
    compiled = ember.compile(mlp_like, backend="test_dynamic_counting")
    with no_fallback():
        for n in range(2, 22):
            _check_grads(mlp_like, compiled, (n, 2 * n), (n, 3))
    assert counting.count == 2  # the first, specialised; then one with symbolic sizes
    assert not is_dynamic(counting.graphs[0]) and is_dynamic(counting.graphs[1])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_twenty_sizes_on_compiling_backends(backend, monkeypatch):
    """Two graphs captured; a backend that takes symbolic sizes compiles the second once, one that
    does not is compiled per shape up to cache_size_limit, then the captured graph runs."""
    monkeypatch.setattr(ember.config, "cache_size_limit", 4)
    compiled = ember.compile(mlp_like, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(2, 22):
            _check_grads(mlp_like, compiled, (n, 2 * n), (n, 3))
    assert len(compiled.__ember__.entries) == 2  # two graphs captured
    messages = [str(w.message) for w in caught if str(w.message).startswith("ember:")]
    if compiled.__ember__.backend.dynamic:
        assert not messages, messages
    else:
        assert len(messages) == 1 and "compiled for 4 shapes" in messages[0], messages


def test_a_backend_without_dynamic_gets_concrete_graphs():
    backend = CountingBackend()  # a plain callable: no dynamic=True
    compiled = ember.compile(lambda x: x.view(x.size(0) // 2, -1) * 2, backend=backend)
    for n in (4, 6, 8, 6):
        x = torch.randn(n, 3)
        torch.testing.assert_close(compiled(x), x.view(n // 2, -1) * 2)
    assert len(compiled.__ember__.entries) == 2
    assert backend.count == 3  # (4, 3) specialised, then the dynamic graph for (6, 3) and (8, 3)
    assert not any(is_dynamic(gm) for gm in backend.graphs)
    assert [inputs[0].shape[0] for inputs in backend.example_inputs] == [4, 6, 8]


def test_size_arithmetic_is_recorded_not_baked(counting):
    def fn(x):
        return x.view(x.shape[0], x.shape[1] // 2, -1).sum(-1) + len(x) - x.numel() % 7

    compiled = ember.compile(fn, backend="test_dynamic_counting", dynamic=True)
    with no_fallback():
        for shape in [(3, 8), (5, 12), (7, 4), (2, 6)]:
            x = torch.randn(shape)
            torch.testing.assert_close(compiled(x), fn(x))
    assert counting.count == 1
    targets = {str(n.target) for n in counting.graphs[0].graph.nodes}
    assert {"size", "<built-in function floordiv>", "<built-in function mod>"} <= targets


def branchy(x):
    if x.size(0) > 4:
        return x + 1
    return x - 1


def test_a_branch_on_a_size_is_a_guard_on_the_relation(counting, caplog):
    compiled = ember.compile(branchy, backend="test_dynamic_counting")
    with no_fallback():
        for n in (6, 7, 9, 12):  # specialised, then one symbolic graph for every size > 4
            x = torch.randn(n)
            torch.testing.assert_close(compiled(x), branchy(x))
        assert counting.count == 2
        with caplog.at_level(logging.INFO, logger="ember.recompiles"):
            for n in (3, 2, 4):  # the relation flips: a new graph, never the one built for > 4
                x = torch.randn(n)
                torch.testing.assert_close(compiled(x), branchy(x))
    assert counting.count == 3
    message = " ".join(r.getMessage() for r in caplog.records if r.name == "ember.recompiles")
    assert "shape relation" in message and "L['x'].size()[0]" in message, message
    guards = compiled.__ember__.entries[0].guard_descriptions
    assert any("<= 4" in g for g in guards), guards


def test_duck_sizing_is_guarded(counting):
    def fn(x, y):
        return x * 2 + y.sum()

    compiled = ember.compile(fn, backend="test_dynamic_counting")
    with no_fallback():
        for n in (3, 4, 5):
            x, y = torch.randn(n), torch.randn(n)
            torch.testing.assert_close(compiled(x, y), fn(x, y))
        assert counting.count == 2
        x, y = torch.randn(5), torch.randn(8)  # s0 == s1 no longer holds
        torch.testing.assert_close(compiled(x, y), fn(x, y))
    assert counting.count == 3
    assert any("L['y'].size()[0] == L['x'].size()[0]" in g for g in compiled.__ember__.entries[1].guard_descriptions)


def test_a_modulo_relation_is_guarded(counting):
    def fn(x):
        if x.size(0) % 2 == 0:
            return x.view(2, -1).sum(0)
        return x * 3

    compiled = ember.compile(fn, backend="test_dynamic_counting", dynamic=True)
    with no_fallback():
        for n in (4, 6, 10, 5, 7, 8, 9):
            x = torch.randn(n)
            torch.testing.assert_close(compiled(x), fn(x))
    assert counting.count == 2


def test_mark_dynamic_and_mark_static(counting):
    def fn(x):
        return x.sum(0) * x.size(0)

    compiled = ember.compile(fn, backend="test_dynamic_counting")
    with no_fallback():
        for n in (3, 5, 8):
            x = torch.randn(n, 4)
            ember.mark_dynamic(x, 0)
            torch.testing.assert_close(compiled(x), fn(x))
    assert counting.count == 1 and is_dynamic(counting.graphs[0])

    always = ember.compile(fn, backend="test_dynamic_counting", dynamic=True)
    for n in (3, 5, 8):
        x = torch.randn(n, 4)
        ember.mark_static(x, 0)
        torch.testing.assert_close(always(x), fn(x))
    assert counting.count == 4  # dimension 0 stays specialised: one graph per size


def test_dynamic_false_specialises_every_size(counting):
    compiled = ember.compile(branchy, backend="test_dynamic_counting", dynamic=False)
    for n in range(5, 10):
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x), branchy(x))
    assert counting.count == 5 and not any(is_dynamic(g) for g in counting.graphs)


def test_an_int_argument_that_varies_becomes_symbolic(counting):
    def step(x, i):
        return x * i + torch.full((i,), 2.0).sum()

    compiled = ember.compile(step, backend="test_dynamic_counting")
    with no_fallback():
        for i in range(2, 12):
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x, i), step(x, i))
        for i in (1, 0):  # admitted by the symbolic graph where the relations hold, as in torch
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x, i), step(x, i))
    assert counting.count == 2



def test_an_int_attribute_of_an_object_passed_in_becomes_symbolic(counting):
    """A sliding-window KV cache's ``cumulative_length`` (an int attribute of a plain object
    passed in, read twice) varies every step: symbolic after its first change, as in
    torch.compile, where a module's int attribute (its config) stays a constant."""
    class Window:
        def __init__(self, n):
            self.cumulative_length = n

    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.factor = 3

        def forward(self, x, window):
            start = max(window.cumulative_length - 4, 0)
            return x[start:window.cumulative_length] * self.factor + window.cumulative_length

    model = Scale()
    compiled = ember.compile(model, backend="test_dynamic_counting")
    with no_fallback():
        for n in range(5, 12):
            x = torch.randn(16)
            torch.testing.assert_close(compiled(x, Window(n)), model(x, Window(n)))
    assert counting.count == 2
    model.factor = 4  # a module's int: a constant of the graph, a new one when it changes
    x = torch.randn(16)
    torch.testing.assert_close(compiled(x, Window(7)), model(x, Window(7)))
    assert counting.count == 3
class _Counter:
    """A plain object holding a length that grows between calls (as a KV cache's)."""

    def __init__(self) -> None:
        self.length = 0


def test_an_int_attribute_of_a_plain_object_becomes_symbolic(counting):
    def step(x, state):
        out = x * state.length + torch.full((state.length + 1,), 2.0).sum()
        state.length += x.size(0)  # read twice, stored back: one graph input, replayed as an int
        return out

    compiled = ember.compile(step, backend="test_dynamic_counting")
    ours, theirs = _Counter(), _Counter()
    with no_fallback():
        for _ in range(10):
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x, ours), step(x, theirs))
            assert type(ours.length) is int and ours.length == theirs.length
    assert counting.count == 2  # the first length, then a symbolic one


def test_an_int_attribute_of_a_module_stays_a_constant(counting):
    def fn(x, module):
        return module(x) * module.scale

    compiled = ember.compile(fn, backend="test_dynamic_counting")
    with no_fallback():
        for scale in (2, 3, 4):
            module = torch.nn.Linear(3, 3)
            module.scale = scale
            x = torch.randn(2, 3)
            torch.testing.assert_close(compiled(x, module), fn(x, module))
    assert counting.count == 3
    for gm in counting.graphs:  # the scale is baked in, as torch.compile does for module ints
        assert not any(isinstance(n.meta.get("val"), torch.SymInt) for n in gm.graph.nodes if n.op == "placeholder")


def test_a_symbolic_size_returned_and_across_a_graph_break(counting):
    def fn(x):
        n = x.size(0) * 2
        print("", end="")  # a graph break: n is passed on as an int
        return x.new_ones(n), n

    compiled = ember.compile(fn, backend="test_dynamic_counting", dynamic=True)
    for m in (3, 6):
        out, n = compiled(torch.randn(m))
        assert n == 2 * m and type(n) is int and out.shape == (2 * m,)


def test_python_uses_of_sizes_stay_right(counting):
    def fn(x, y):
        same = 1 if x.shape == y.shape else 2  # relations between sizes, guarded
        fixed = 1 if x.shape == (3, 4) else 2  # a size compared with a constant: specialised
        listed = 1 if x.shape[0] in (3, 5) else 2
        return x * same + fixed + listed * min(x.size(0), y.size(0)), "n%d" % x.size(0)

    compiled = ember.compile(fn, backend="test_dynamic_counting", dynamic=True)
    with no_fallback():
        for sx, sy in [((3, 4), (3, 4)), ((5, 4), (5, 4)), ((5, 4), (6, 4)), ((3, 4), (3, 4)), ((9, 4), (8, 4))]:
            x, y = torch.randn(sx), torch.randn(sy)
            (out, name), (expected, expected_name) = compiled(x, y), fn(x, y)
            torch.testing.assert_close(out, expected)
            assert name == expected_name


def test_composite_ops_with_symbolic_sizes_are_captured(counting):
    # HF's prepare_padding_mask: F.pad of a mask of symbolic length by a symbolic amount. Its C++
    # composite kernel (constant_pad_nd) needs concrete sizes; capture runs it through the
    # Python dispatcher's decomposition, as it failed on fakes and the model ran eagerly.
    def fn(mask, keys):
        mask = mask.bool()
        if (padding := keys.shape[2] + 1 - mask.shape[-1]) > 0:
            mask = torch.nn.functional.pad(mask, (0, padding))
        return mask.int() * 2

    compiled = ember.compile(fn, backend="test_dynamic_counting", dynamic=True)
    with no_fallback():
        for n in (5, 7, 9):
            mask, keys = torch.ones(2, n - 2, dtype=torch.int64), torch.randn(2, 4, n, 8)
            torch.testing.assert_close(compiled(mask, keys), fn(mask, keys))
    assert counting.count == 1
