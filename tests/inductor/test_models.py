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


def test_attention_output_viewed_as_eager_lays_it_out(caplog: pytest.LogCaptureFixture) -> None:
    """HF GPT-2's attention at inference: SDPA with a padding mask, ``transpose(1, 2).reshape(b, t,
    -1)``, then ``x.view(-1, d)``. The decomposition of CPU flash attention must return the op's
    contiguous output (torch's lays it out [L, N, H, E], where that view fails: the graph, GPT-2's
    prefill in generate(), ran eagerly)."""
    import logging

    import ember
    from ember_inductor.backend import inductor

    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        b, h, t, d = q.shape
        x = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x.transpose(1, 2).reshape(b, t, h * d)
        return torch.addmm(w[0], x.view(-1, x.size(-1)), w)

    q, k, v = (torch.randn(2, 4, 12, 16) for _ in range(3))
    mask = torch.ones(2, 1, 12, 12, dtype=torch.bool).tril()
    w = torch.randn(64, 64)
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="ember"):
        got = ember.compile(attention, backend=inductor)(q, k, v, mask, w)
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    torch.testing.assert_close(got, attention(q, k, v, mask, w), rtol=1e-4, atol=1e-4)
