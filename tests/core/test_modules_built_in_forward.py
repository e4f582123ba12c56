"""A module without state constructed inside captured code (HF's ``ACT2FN[name](x)`` builds a
``GELUActivation`` on every call): built at capture from constant arguments, then called."""
import pytest
import torch

import ember


class Scaled(torch.nn.Module):
    def __init__(self, factor: float = 2.0):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return torch.nn.functional.gelu(x) * self.factor


class WithWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(3))

    def forward(self, x):
        return x * self.weight


def _counting():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend, graphs


def test_stateless_user_module_built_and_called_in_one_graph():
    def f(x):
        return Scaled(factor=3.0)(x) + Scaled()(x)

    x = torch.randn(4, requires_grad=True)
    backend, graphs = _counting()
    got = ember.compile(f, backend=backend, fullgraph=True)(x)
    want = f(x)
    torch.testing.assert_close(got, want)
    (g_got,) = torch.autograd.grad(got.sum(), x)
    (g_want,) = torch.autograd.grad(want.sum(), x)
    torch.testing.assert_close(g_got, g_want)
    assert len(graphs) == 1


def test_a_module_with_parameters_built_in_forward_is_not_frozen():
    def f(x):
        m = WithWeight()
        with torch.no_grad():
            m.weight.mul_(x.sum())
        return m(x)

    compiled = ember.compile(f, backend="eager")
    for _ in range(2):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), f(x))


def test_hf_activation_table():
    activations = pytest.importorskip("transformers.activations")

    def f(x):
        return activations.ACT2FN["gelu"](x) + activations.ACT2FN["gelu_new"](x)

    x = torch.randn(5)
    backend, graphs = _counting()
    torch.testing.assert_close(ember.compile(f, backend=backend, fullgraph=True)(x), f(x))
    assert len(graphs) == 1
