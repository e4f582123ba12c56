"""End to end through ember.compile(backend="inductor"): ResNet-18 and a small GPT, inference and a
training step (forward, loss, backward through ember_aot), against eager."""
from __future__ import annotations

import copy

import pytest
import torch

from benchmarks.models import GPT, ResNet18, TinyMLP

ember = pytest.importorskip("ember")
if not hasattr(ember, "compile"):
    pytest.skip("ember.compile is not available", allow_module_level=True)


def _train_step(model: torch.nn.Module, x: torch.Tensor) -> tuple:
    model.zero_grad()
    out = model(x)
    loss = out.float().pow(2).mean()
    loss.backward()
    return out.detach(), [p.grad.clone() for p in model.parameters()]


def _compare_grads(got: list, want: list, rtol: float) -> None:
    for g, w in zip(got, want):
        scale = w.abs().max().item() + 1e-6
        assert (g - w).abs().max().item() <= rtol * scale


@pytest.mark.parametrize("model_fn,make_input", [
    (lambda: ResNet18(num_classes=10, width=16), lambda: torch.randn(4, 3, 32, 32)),
    (lambda: GPT(vocab=128, d=64, heads=4, layers=2, max_seq=32), lambda: torch.randint(0, 128, (2, 32))),
    (lambda: TinyMLP(), lambda: torch.randn(1, 64)),
], ids=["resnet18", "gpt", "tiny_mlp"])
def test_model_inference_and_training(model_fn, make_input) -> None:
    torch.manual_seed(0)
    model = model_fn()
    x = make_input()
    ref_model = copy.deepcopy(model)
    compiled = ember.compile(model, backend="inductor")

    model.eval()
    ref_model.eval()
    with torch.no_grad():
        for _ in range(2):
            x = make_input()
            torch.testing.assert_close(compiled(x), ref_model(x), rtol=1e-4, atol=1e-4)

    model.train()
    ref_model.train()
    for _ in range(2):
        x = make_input()
        out, grads = _train_step(compiled, x)
        ref_out, ref_grads = _train_step(ref_model, x)
        torch.testing.assert_close(out, ref_out, rtol=1e-3, atol=1e-3)
        _compare_grads(grads, ref_grads, rtol=1e-2)
    for b, rb in zip(model.buffers(), ref_model.buffers()):  # BatchNorm running statistics
        torch.testing.assert_close(b, rb, rtol=1e-3, atol=1e-3)
