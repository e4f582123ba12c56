"""Each kind of guard: changing that input recompiles and stays correct; unchanged inputs do not."""
from __future__ import annotations

import logging
import warnings

import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback

SCALE = 2.0


def check(fn, calls, expected_graphs):
    """Run ``fn`` compiled and eager on each argument tuple; compare; count graphs."""
    backend = CountingBackend()
    compiled = ember.compile(fn, backend=backend)
    with no_fallback():
        for args in calls:
            torch.testing.assert_close(compiled(*args), fn(*args), equal_nan=True)
    assert backend.count == expected_graphs, [g.code for g in backend.graphs]
    return backend


def add_mul(x, y):
    return x * 2 + y


def test_unchanged_inputs_do_not_recompile():
    x, y = torch.randn(4), torch.randn(4)
    check(add_mul, [(x, y), (torch.randn(4), torch.randn(4)), (x, y)], 1)


def test_same_tensor_passed_twice_is_its_own_entry():
    x = torch.randn(4)
    check(add_mul, [(x, x), (torch.randn(4), torch.randn(4)), (x, x)], 2)


def test_tensor_dtype_guard():
    check(add_mul, [(torch.randn(4), torch.randn(4)), (torch.randn(4).double(), torch.randn(4).double()),
                    (torch.randint(0, 5, (4,)), torch.randint(0, 5, (4,)))], 3)


def test_tensor_shape_guard():
    check(add_mul, [(torch.randn(4), torch.randn(4)), (torch.randn(5), torch.randn(5))], 2)


def test_tensor_stride_guard():
    x = torch.randn(4, 3)
    check(lambda t: t.view(-1) if t.is_contiguous() else t.reshape(-1) + 1, [(x,), (x.t().contiguous().t(),)], 2)


def test_requires_grad_guard():
    x = torch.randn(3)
    check(lambda t: t.sin(), [(x,), (x.clone().requires_grad_(),)], 2)


def test_grad_mode_guard():
    backend = CountingBackend()
    f = ember.compile(lambda t: t * 3, backend=backend)
    x = torch.randn(3, requires_grad=True)
    f(x)
    with torch.no_grad():
        out = f(x)
    assert not out.requires_grad
    assert backend.count == 2


def test_python_int_float_bool_str_guards():
    def f(x, n, scale, flag, mode):
        y = x * n * scale
        if flag:
            y = y + 1
        if mode == "double":
            y = y * 2
        return y

    x = torch.randn(3)
    check(f, [(x, 3, 0.5, True, "double"), (x, 3, 0.5, True, "double"), (x, 4, 0.5, True, "double"),
              (x, 3, 1.5, True, "double"), (x, 3, 0.5, False, "double"), (x, 3, 0.5, True, "single"),
              (x, 3.0, 0.5, True, "double")], 6)


def test_numpy_scalars_are_guarded_by_type_and_value():
    """A numpy scalar is a number: the same value in a new object (indexing an array makes one on
    every read; wav2vec2's SpecAugment reads ``array[0]``) reuses the graph, another value or type
    recompiles, a NaN stays one graph. Guarded on identity, each call's new object failed the
    guards of the call that made them."""
    import numpy as np

    def f(x, box):
        return x * box[0]

    x = torch.randn(3)
    check(f, [(x, [np.float64(2.0)]), (x, [np.float64(2.0)]), (x, np.array([2.0])), (x, [np.float64(3.0)]),
              (x, [np.float32(3.0)]), (x, [np.int64(3)]), (x, [np.float32("nan")]), (x, [np.float32("nan")])], 6)


def test_a_slice_of_a_numpy_array_is_guarded_on_its_elements(caplog):
    """``mask[:, :, None]`` makes a new view on every read: guarded by identity, the guards of the
    call that made them failed and every call ran eagerly (wav2vec2's SpecAugment masks)."""
    import numpy as np

    def f(x, mask):
        return x * float(mask[:, None].sum())

    compiled = ember.compile(f, backend="eager")
    with caplog.at_level(logging.WARNING, "ember"):
        for mask in (np.ones((2, 2)), np.ones((2, 2)), np.zeros((2, 2)), np.ones((2, 2))):
            torch.testing.assert_close(compiled(torch.ones(2), mask), f(torch.ones(2), mask))
    assert "fail on the call that made them" not in caplog.text


def test_none_vs_tensor_guard():
    def f(x, bias=None):
        return x + 1 if bias is None else x + bias

    x = torch.randn(3)
    check(f, [(x, None), (x, torch.ones(3)), (x, None)], 2)


def test_global_guard():
    global SCALE

    def f(x):
        return x * SCALE

    backend = CountingBackend()
    compiled = ember.compile(f, backend=backend)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), x * 2.0)
    SCALE = 5.0
    try:
        torch.testing.assert_close(compiled(x), x * 5.0)
    finally:
        SCALE = 2.0
    assert backend.count == 2


def test_closure_cell_guard():
    k = 2

    def f(x):
        return x + k

    backend = CountingBackend()
    compiled = ember.compile(f, backend=backend)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), x + 2)
    k = 7  # noqa: F841 - read through the closure
    torch.testing.assert_close(compiled(x), x + 7)
    assert backend.count == 2


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scale = 1.0
        self.use_relu = True

    def forward(self, x):
        y = self.lin(x) * self.scale
        return torch.relu(y) if self.use_relu else y


def test_module_attribute_guards():
    mod = Block()
    backend = CountingBackend()
    compiled = ember.compile(mod, backend=backend)
    x = torch.randn(2, 4)
    torch.testing.assert_close(compiled(x), mod(x))
    mod.scale = 3.0
    torch.testing.assert_close(compiled(x), mod(x))
    mod.use_relu = False
    torch.testing.assert_close(compiled(x), mod(x))
    mod.lin = torch.nn.Linear(4, 4)  # a new submodule of the same structure: its weights are inputs
    torch.testing.assert_close(compiled(x), mod(x))
    torch.testing.assert_close(compiled(x), mod(x))
    assert backend.count == 3
    mod.lin = torch.nn.Linear(4, 4, bias=False)  # another structure
    torch.testing.assert_close(compiled(x), mod(x))
    assert backend.count == 4


def test_tuple_of_primitives_is_one_check():
    """A convolution's stride is guarded as one constant: the same tuple object, or an equal tuple
    of the same item types (a float stride must not reuse the graph compiled for ints)."""
    def run(x, size):
        return x.reshape(size) * size[0]

    backend = CountingBackend()
    compiled = ember.compile(run, backend=backend)
    x = torch.randn(6)
    with no_fallback():
        torch.testing.assert_close(compiled(x, (2, 3)), run(x, (2, 3)))
        torch.testing.assert_close(compiled(x, tuple([2, 3])), run(x, (2, 3)))  # equal, another object
        assert backend.count == 1
        torch.testing.assert_close(compiled(x, (3, 2)), run(x, (3, 2)))
        assert backend.count == 2
    source = compiled.__ember__.entries[0].guard.__ember_source__
    assert "[0]" not in source and "len(" not in source  # no per-item checks
    assert compiled.__ember__.entries[0].guard({"x": x, "size": (2.0, 3)}) is None
    assert compiled.__ember__.entries[0].guard({"x": x, "size": [2, 3]}) is None


def test_module_arguments_of_one_structure_share_a_graph():
    def run(m, x):
        return m(x)

    a, b, c = Block(), Block(), Block()
    c.use_relu = False  # an attribute the trace read: another graph
    x = torch.randn(2, 4)
    check(run, [(a, x), (b, x), (a, x), (c, x)], 2)


def test_parameter_dtype_change_recompiles():
    mod = Block()
    backend = CountingBackend()
    compiled = ember.compile(mod, backend=backend)
    x = torch.randn(2, 4)
    compiled(x)
    mod.double()  # keeps the Parameter objects, changes their dtype
    torch.testing.assert_close(compiled(x.double()), mod(x.double()))
    assert backend.count == 2


def test_list_length_and_dict_keys_guards():
    def f(xs, d):
        total = sum(xs)
        for k, v in d.items():
            total = total + v * len(k)
        return total

    a = torch.randn(3)
    check(f, [([a, a], {"w": a}), ([a, a], {"w": a}), ([a, a, a], {"w": a}), ([a, a], {"ww": a, "z": a})], 3)


def test_aliased_inputs_guard():
    def f(x, y):
        x.add_(1)
        return x + y

    backend = CountingBackend()
    compiled = ember.compile(f, backend=backend)
    a, b = torch.zeros(3), torch.zeros(3)
    torch.testing.assert_close(compiled(a, b), torch.ones(3))
    c = torch.zeros(3)
    torch.testing.assert_close(compiled(c, c), torch.full((3,), 2.0))
    assert backend.count == 2


def test_recompile_reason_is_logged(caplog):
    compiled = ember.compile(add_mul, backend="eager")
    with caplog.at_level(logging.INFO, logger="ember.recompiles"):
        compiled(torch.randn(4), torch.randn(4))
        compiled(torch.randn(5), torch.randn(5))
    messages = [r.getMessage() for r in caplog.records if r.name == "ember.recompiles"]
    assert len(messages) == 1
    assert "L['x']" in messages[0] and "shape=(4,)" in messages[0]


def test_cache_size_limit_runs_eagerly_with_one_warning(monkeypatch):
    monkeypatch.setattr(ember.config, "cache_size_limit", 3)
    backend = CountingBackend()
    compiled = ember.compile(add_mul, backend=backend, dynamic=False)  # one entry per size
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 8):
            x = torch.randn(n)
            torch.testing.assert_close(compiled(x, x), add_mul(x, x))
    assert backend.count == 3
    limit_warnings = [w for w in caught if "cache_size_limit" in str(w.message)]
    assert len(limit_warnings) == 1


def test_guard_function_is_generated_python():
    compiled = ember.compile(add_mul, backend="eager")
    compiled(torch.randn(4), torch.randn(4))
    entry = compiled.__ember__.entries[0]
    assert "def guard(L)" in entry.guard.__ember_source__
    x, y = torch.randn(4), torch.randn(4)
    inputs = entry.guard({"x": x, "y": y})
    assert inputs is not None and [id(t) for t in inputs] == [id(x), id(y)]  # the graph inputs
    assert entry.guard({"x": torch.randn(4), "y": torch.randn(4, 1)}) is None
    assert entry.guard({"x": "not a tensor", "y": torch.randn(4)}) is None


def test_enum_and_str_enum_values_are_guarded():
    import enum

    class Mode(str, enum.Enum):
        FAST = "fast"
        SLOW = "slow"

    def f(x, mode):
        return x * 2 if mode == Mode.FAST else x * 3

    x = torch.randn(3)
    check(f, [(x, Mode.FAST), (x, Mode.SLOW), (x, Mode.FAST)], 2)
