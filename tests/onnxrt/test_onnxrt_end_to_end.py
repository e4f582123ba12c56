"""End to end: ``ember.compile(fn, backend="onnxrt")`` against eager PyTorch."""
from __future__ import annotations

import logging

import ember
import pytest
import torch
from onnxrt_helpers import assert_close
from onnxrt_models import GPT, ResNet18

pytestmark = pytest.mark.skipif(not hasattr(ember, "compile"), reason="ember.compile not in core yet")


def _ran_in_onnxruntime(caplog) -> bool:
    return any("onnxruntime partition" in r.getMessage() and " 0 op(s) in PyTorch" in r.getMessage()
               for r in caplog.records)


def test_function(caplog):
    def fn(x, y):
        return torch.softmax(x @ y, dim=-1).sum(0) + torch.relu(y).mean()

    compiled = ember.compile(fn, backend="onnxrt")
    with caplog.at_level(logging.INFO, logger="ember.onnxrt"):
        for shape in [(4, 5), (4, 5), (7, 5)]:
            x, y = torch.randn(*shape), torch.randn(5, 3)
            assert_close(compiled(x, y), fn(x, y))
    assert _ran_in_onnxruntime(caplog)


@pytest.mark.parametrize("make,inputs", [
    (lambda: ResNet18(width=8), lambda: torch.randn(2, 3, 32, 32)),
    (GPT, lambda: torch.randint(0, 128, (2, 8))),
], ids=["resnet18", "gpt"])
def test_module(make, inputs, caplog):
    torch.manual_seed(0)
    model = make().eval()
    compiled = ember.compile(model, backend="onnxrt", options={"on_grad": "raise"})
    x = inputs()
    with caplog.at_level(logging.INFO, logger="ember.onnxrt"), torch.no_grad():
        assert_close(compiled(x), model(x), 1e-3, 1e-4)
    assert _ran_in_onnxruntime(caplog)
    with pytest.raises(ember.EmberError, match="inference-only"):
        compiled(x)  # parameters require grad and grad mode is on


def test_training_call_runs_eagerly_with_gradients():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
    compiled = ember.compile(model, backend="onnxrt")
    x = torch.randn(3, 4)
    compiled(x).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for got, want in zip(grads, (p.grad for p in model.parameters())):
        torch.testing.assert_close(got, want)
