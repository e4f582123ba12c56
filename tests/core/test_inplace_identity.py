"""An in-place tensor method, an ``out=`` variant, and an op that returns its argument
(``x.contiguous()`` of a contiguous x) give back that very tensor in compiled code, as in eager:
``x.add_(1) is x`` (issue 45, item 4); views and copies stay other objects."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import ember
from core_helpers import CountingBackend, no_fallback


def _same(x, y):
    return y is x, y


def _into(out, y):
    return y is out, y


CASES = {
    "add_": lambda x: _same(x, x.add_(1)),
    "mul_": lambda x: _same(x, x.mul_(2)),
    "copy_": lambda x: _same(x, x.copy_(x * 3)),
    "zero_": lambda x: _same(x, x.zero_()),
    "fill_": lambda x: _same(x, x.fill_(2.5)),
    "clamp_": lambda x: _same(x, x.clamp_(0, 0.5)),
    "masked_fill_": lambda x: _same(x, x.masked_fill_(x > 0, 0.0)),
    "unsqueeze_": lambda x: _same(x, x.unsqueeze_(0)),
    "torch.relu_": lambda x: _same(x, torch.relu_(x)),
    "relu(inplace=True)": lambda x: _same(x, F.relu(x, inplace=True)),
    "add(out=)": lambda x: (lambda out: _into(out, torch.add(x, 1, out=out)))(torch.empty(3)),
    "of an intermediate": lambda x: (lambda y: (y.add_(1) is y, y))(x * 2),
    "requires_grad_": lambda x: (lambda y: (y.requires_grad_() is y, y.requires_grad))(x * 2),
    "returns its argument": lambda x: (x.contiguous() is x, x.float() is x, x.to(torch.float32) is x, x.cpu() is x,
                                       x.view(-1) is x, x[:] is x, x.detach() is x, x.clone() is x, x + 1),
}


@pytest.mark.parametrize("name", list(CASES), ids=list(CASES))
def test_inplace_result_is_its_input(name):
    fn = CASES[name]
    x, expected_x = torch.randn(3), None
    expected_x = x.clone()
    backend = CountingBackend()
    with no_fallback():
        got = ember.compile(fn, backend=backend, fullgraph=True)(x)
    want = fn(expected_x)
    assert repr(got) == repr(want)
    torch.testing.assert_close(x, expected_x)  # the input changed as eager changed it
    theirs = CountingBackend()
    torch._dynamo.reset()
    torch.compile(fn, backend=theirs)(torch.randn(3))
    assert backend.count == 1 >= theirs.count  # torch.compile runs unsqueeze_ of an input eagerly


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_inplace_identity_on_other_backends(backend):
    def fn(x, out):
        y = x.mul_(2)
        z = torch.add(x, 1, out=out)
        w = x.sin()
        v = w.add_(1)
        return y is x, z is out, v is w, y, z, v

    x, out = torch.randn(4), torch.empty(4)
    got = ember.compile(fn, backend=backend)(x.clone(), out)
    want = fn(x.clone(), torch.empty(4))
    assert got[:3] == want[:3] == (True, True, True)
    for g, w in zip(got[3:], want[3:]):
        torch.testing.assert_close(g, w)
