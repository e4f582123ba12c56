"""Gradient groups: each output of a compiled graph is linked, in autograd, only to the inputs it
was computed from, as in eager. A backward from one output must not walk into the history of an
input it does not depend on (that history may be freed already) nor give that input a zero grad."""
from __future__ import annotations

import pytest
import torch
import torch.fx

from aot_helpers import BACKENDS, assert_compiled


def four_outputs(x, w1, w2, prev):
    """An output per input group, and one reading ``prev`` only through ``detach``."""
    return (x @ w1).tanh().sum(), prev * 2 + 1, (x @ w2).relu().sum(), prev.detach() + x.sum()


def _inputs():
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    w1, w2, wp = (torch.randn(3, 5, requires_grad=True) for _ in range(3))
    prev = (wp * 3).sin().sum(1)
    prev.sum().backward()  # prev's history is freed, as a loss's after loss.backward()
    return x, w1, w2, wp, prev


def _run(fn) -> tuple:
    x, w1, w2, wp, prev = _inputs()
    before = wp.grad.clone()
    first, again, second, logged = fn(x, w1, w2, prev)
    first.backward()
    assert w2.grad is None and torch.equal(wp.grad, before)
    second.backward()
    assert again.requires_grad and not logged.requires_grad
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        again.sum().backward()
    return first, second, logged, w1.grad, w2.grad


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_each_output_reaches_only_its_own_inputs(backend):
    x, w1, w2, _, prev = _inputs()
    compiled = BACKENDS[backend](torch.fx.symbolic_trace(four_outputs), [x, w1, w2, prev])
    for got, want in zip(_run(compiled), _run(four_outputs)):
        torch.testing.assert_close(got, want)
    assert_compiled(compiled)
    (plan,) = compiled.plans.values()
    assert len(plan.grad_groups) == 3
    assert [g.saved for g in plan.grad_groups if g.grads == (2,)] == [()]  # prev * 2 + 1 saves nothing


@pytest.mark.parametrize("backend", ["aot_eager", "min_cut"])
def test_outputs_sharing_an_input_stay_one_group(backend):
    def fn(x, w1, w2):
        return (x @ w1 + w2).sum(), (w2 * w2).sum()

    torch.manual_seed(0)
    x, w1, w2 = torch.randn(4, 3), torch.randn(3, 5, requires_grad=True), torch.randn(5, requires_grad=True)
    compiled = BACKENDS[backend](torch.fx.symbolic_trace(fn), [x, w1, w2])
    grads = []
    for f in (fn, compiled):
        a, b = f(x, w1, w2)
        (a * 2 + b).backward()
        grads.append((w1.grad, w2.grad))
        w1.grad = w2.grad = None
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, want)
    (plan,) = compiled.plans.values()
    assert len(plan.grad_groups) == 1 and plan.grad_groups[0].saved is None
