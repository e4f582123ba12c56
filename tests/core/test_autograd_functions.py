"""User ``torch.autograd.Function``s inside captured code: ``apply`` is one node of the graph, so
the user's ``forward`` runs and autograd calls the user's ``backward``, even one that is not the
derivative of ``forward`` (a straight-through estimator), on every backend."""
import logging

import pytest
import torch

import ember


class RoundSTE(torch.autograd.Function):
    """Rounds, and passes gradients straight through, scaled (not the derivative of round: 0)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return torch.round(x * scale) / scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.scale + x, None


class SplitNoGradForSecond(torch.autograd.Function):
    """Two outputs; the second input gets no gradient (None), the second output is non-differentiable."""

    @staticmethod
    def forward(ctx, a, b):
        out = a * b
        mask = (a > 0).to(a.dtype)
        ctx.mark_non_differentiable(mask)
        ctx.save_for_backward(b)
        return out, mask

    @staticmethod
    def backward(ctx, grad_out, grad_mask):
        (b,) = ctx.saved_tensors
        return grad_out * b * 2, None


def _counting():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    return backend, graphs


def _loss(x, w, b):
    y = RoundSTE.apply(x * w, 4.0)
    z, mask = SplitNoGradForSecond.apply(y, b)
    return (z * z * (1 + mask)).sum()


def _grads(fn, *inputs):
    inputs = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    out = fn(*inputs)
    out.backward()
    return out, [t.grad for t in inputs]


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_user_backward_is_the_gradient(backend):
    x = torch.randn(6, requires_grad=True)
    w = torch.randn(6, requires_grad=True)
    b = torch.randn(6, requires_grad=True)
    want, want_grads = _grads(_loss, x, w, b)
    got, got_grads = _grads(ember.compile(_loss, backend=backend, fullgraph=True), x, w, b)
    torch.testing.assert_close(got, want)
    assert [g is None for g in got_grads] == [g is None for g in want_grads] == [False, False, True]
    for g, e in zip(got_grads, want_grads):
        if e is not None:
            torch.testing.assert_close(g, e)


def test_one_graph_and_no_grad_call():
    backend, graphs = _counting()
    x = torch.randn(6)

    def f(x):
        with torch.no_grad():
            return RoundSTE.apply(x, 2.0) + 1

    torch.testing.assert_close(ember.compile(f, backend=backend, fullgraph=True)(x), f(x))
    assert len(graphs) == 1


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_inference_graph_compiles_without_setup_context(backend, caplog):
    """AOT functionalizes an inference graph; a Function with no setup_context still compiles."""
    def f(x):
        return RoundSTE.apply(x * 2, 4.0).sin()

    x = torch.randn(6)
    with caplog.at_level(logging.WARNING):
        got = ember.compile(f, backend=backend, fullgraph=True)(x)
    torch.testing.assert_close(got, f(x))
    assert not [r for r in caplog.records if "running it eagerly" in r.getMessage()]
