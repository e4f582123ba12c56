"""A backward from some outputs only: eager never runs the backward of the outputs that got no
gradient, so their contribution is absent, not multiplied by zero (``0 * inf`` is NaN). The
compiled graph runs a backward specialised to the tangents given (``ember_aot.bw_variants``)."""
from __future__ import annotations

import logging

import pytest
import torch

from aot_helpers import BACKENDS, assert_compiled


def variance_of_one_element(x):
    picked = x[[3]]
    unused = picked.var(dim=0)  # nan; its backward multiplies by 1 / (n - 1) = inf
    return x.sin() * 2, unused, picked.neg()


def broadcast_sum(x, y):
    shared = x.exp()
    return shared * y, shared.sum(dim=0, keepdim=True).log(), x[:1].var(dim=0)


def channels_last_features(x, w):
    # ConvNeXT's shape: an NCHW output laid out channels-last and its pooled mean. Without the
    # features' gradient, the sum (features' gradient + the mean's) is the mean's alone, laid out
    # contiguous: the view of the linear's backward failed on it
    features = (x @ w).permute(0, 3, 1, 2)
    return features, features.mean(dim=(2, 3)), x.sin()


CASES = [
    (variance_of_one_element, lambda: [torch.randn(4, requires_grad=True)]),
    (broadcast_sum, lambda: [torch.randn(1, 3, requires_grad=True), torch.randn(2, 3, requires_grad=True)]),
    (channels_last_features, lambda: [torch.randn(2, 3, 3, 4, requires_grad=True), torch.randn(4, 5, requires_grad=True)]),
]


@pytest.mark.parametrize("backend", ["aot_eager", "min_cut"])
@pytest.mark.parametrize("used", [(0,), (0, 2), (1,), (0, 1, 2)], ids=str)
@pytest.mark.parametrize("fn,make_inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_backward_from_some_outputs_matches_eager(fn, make_inputs, used, backend, caplog):
    gm = torch.fx.symbolic_trace(fn)
    compiled = None
    for _ in range(2):
        inputs = make_inputs()
        ref = [t.detach().clone().requires_grad_() for t in inputs]
        if compiled is None:
            compiled = BACKENDS[backend](gm, inputs)
        out, expected = compiled(*inputs), fn(*ref)
        for o, e in zip(out, expected):
            torch.testing.assert_close(o, e, equal_nan=True)
        sum(out[k].sum() for k in used).backward()
        sum(expected[k].sum() for k in used).backward()
        for x, rx in zip(inputs, ref):
            assert (x.grad is None) == (rx.grad is None)
            if rx.grad is not None:
                torch.testing.assert_close(x.grad, rx.grad, equal_nan=True)
    assert_compiled(compiled)
    # the specialised backward ran: no fallback to the full one
    assert not [r for r in caplog.records if r.name == "ember.aot" and r.levelno >= logging.WARNING]
