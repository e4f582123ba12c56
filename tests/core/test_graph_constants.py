"""Constants in a graph's generated code: fx writes a constant as its ``repr``, which for a numpy
scalar (``np.float64(2.5)``), a subclass of int or float with its own repr, or ``nan+nanj`` is not
Python that gives the value back (``a + np.float64(2.5)`` raised NameError: name 'np' is not
defined, issue 45 item 11). Such constants are read from the graph module instead, and every
generated function is checked to name only what it binds."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import ember
from core_helpers import CountingBackend, no_fallback
from ember.codegen import check_names


class Odd(int):
    def __repr__(self) -> str:
        return "<odd>"


class Scale(float):
    def __repr__(self) -> str:
        return "Scale!"


ODD, SCALE = Odd(3), Scale(1.5)
CONSTANTS = {
    "np.float64": lambda x: x + np.float64(2.5),
    "np.float32": lambda x: x + np.float32(2.5),
    "np.int64": lambda x: x * np.int64(3),
    "np.bool_": lambda x: x * np.bool_(True),
    "tensor(np.float64) keeps float64": lambda x: x + torch.tensor(np.float64(2.5)),
    "full(np.float64)": lambda x: x + torch.full((2,), np.float64(1.5)),
    "pow np.float64": lambda x: x ** np.float64(2.0),
    "int subclass": lambda x: x * ODD,
    "float subclass": lambda x: x * SCALE,
    "in a list": lambda x: torch.stack([x, x]).sum(dim=[np.int64(0)]),
}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", list(CONSTANTS), ids=list(CONSTANTS))
def test_constant_in_graph_code(name, backend):
    fn = CONSTANTS[name]
    x = torch.tensor([1.0, -2.0])
    counting = CountingBackend()
    with no_fallback():
        got = ember.compile(fn, backend=counting if backend == "eager" else backend, fullgraph=True)(x)
    want = fn(x)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, equal_nan=True)
    if backend == "eager":
        assert counting.count == 1


def test_non_finite_complex_constant():
    # (ember's graph only: the aot plugin's aten graphs are written by fx from make_fx's trace)
    def fn(x):
        return x.to(torch.complex64) + complex(math.nan, math.inf)

    x = torch.tensor([1.0, -2.0])
    with no_fallback():
        got = ember.compile(fn, backend="eager", fullgraph=True)(x)
    torch.testing.assert_close(got, fn(x), equal_nan=True)


def test_numpy_scalar_on_the_inductor():
    fn = CONSTANTS["np.float64"]
    x = torch.randn(8)
    torch.testing.assert_close(ember.compile(fn, backend="inductor", fullgraph=True)(x), fn(x))


def test_generated_code_that_names_an_unbound_global_is_refused():
    namespace: dict = {}
    exec("def f(x):\n    return np.float64(x)\n", namespace)
    with pytest.raises(NameError, match="np"):
        check_names(namespace["f"])
    exec("def g(x):\n    return len(x) + h\nh = 1\n", namespace)
    check_names(namespace["g"])  # a global it binds, a builtin


def test_unbound_name_in_graph_code_falls_back_instead_of_raising(monkeypatch):
    import ember.capture.graph as graph

    monkeypatch.setattr(graph, "_prints_as_itself", lambda value: True)  # the old behaviour: print everything

    def fn(x):
        return x + np.float64(2.5)

    x = torch.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = ember.compile(fn, backend="eager")(x)
    torch.testing.assert_close(got, fn(x))
    assert any("names what it does not bind" in str(w.message) for w in caught), [str(w.message) for w in caught]
