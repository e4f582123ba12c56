"""tvm backend on whole models: a small ResNet-18 and a small GPT match eager."""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install ember[tvm])")

from ember_tvm.backend import tvm as tvm_backend  # noqa: E402
from tvm_helpers import assert_matches, lifted  # noqa: E402
from tvm_models import GPT, ResNet18  # noqa: E402


def compile_module(module, *inputs):
    gm, tensors = lifted(module)
    compiled = tvm_backend(gm, [*inputs, *tensors])
    return compiled, tensors


def randomize_bn(model: torch.nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)


def test_resnet18_matches_eager():
    torch.manual_seed(0)
    model = ResNet18(width=8).eval()
    randomize_bn(model)
    x = torch.randn(2, 3, 32, 32)
    compiled, tensors = compile_module(model, x)
    assert compiled.tvm_pieces and all(p.tvm_signatures for p in compiled.tvm_pieces)
    with torch.no_grad():
        assert_matches(compiled(x, *tensors), (model(x),), rtol=1e-3, atol=1e-3)
        x2 = torch.randn(2, 3, 32, 32)
        assert_matches(compiled(x2, *tensors), (model(x2),), rtol=1e-3, atol=1e-3)


def test_gpt_matches_eager():
    torch.manual_seed(0)
    model = GPT().eval()
    idx = torch.randint(0, 97, (2, 16))
    compiled, tensors = compile_module(model, idx)
    assert compiled.tvm_pieces and all(p.tvm_signatures for p in compiled.tvm_pieces)
    with torch.no_grad():
        assert_matches(compiled(idx, *tensors), (model(idx),), rtol=1e-3, atol=1e-3)
        idx2 = torch.randint(0, 97, (2, 16))
        assert_matches(compiled(idx2, *tensors), (model(idx2),), rtol=1e-3, atol=1e-3)
