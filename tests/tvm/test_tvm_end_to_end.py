"""tvm backend through ``ember.compile`` (skipped until the core's compile lands)."""
from __future__ import annotations

import pytest
import torch

import ember

pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install ember[tvm])")
if not hasattr(ember, "compile"):
    pytest.skip("ember.compile is not implemented in the core yet", allow_module_level=True)

from tvm_models import ResNet18  # noqa: E402


def test_function_end_to_end():
    def fn(x, y):
        return torch.softmax(x @ y, dim=-1).sum(0)
    compiled = ember.compile(fn, backend="tvm")
    x, y = torch.randn(4, 8), torch.randn(8, 5)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, y), fn(x, y), rtol=1e-4, atol=1e-4)


def test_module_end_to_end_sees_parameter_updates():
    model = ResNet18(width=8).eval()
    compiled = ember.compile(model, backend="tvm")
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-3, atol=1e-3)
        model.fc.weight.mul_(0.5)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-3, atol=1e-3)


def test_options_reach_the_backend():
    compiled = ember.compile(lambda x: x * 2, backend="tvm", options={"fallback_on_grad": False})
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(Exception, match="inference-only"):
        compiled(x)
