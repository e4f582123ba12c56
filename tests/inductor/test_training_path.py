"""Forward and backward through the backend contract (torch-level fx graph -> ember_aot -> inductor)."""
from __future__ import annotations

import pytest
import torch
import torch.fx
import torch.nn.functional as F

from ember_inductor.backend import inductor

pytest.importorskip("ember_aot")


def _grads(fn, inputs: list) -> tuple:
    leaves = [x.detach().clone().requires_grad_(x.dtype.is_floating_point) for x in inputs]
    out = fn(*leaves)
    out = out[0] if isinstance(out, (tuple, list)) else out
    (out.float() * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
    return out.detach(), [x.grad for x in leaves if x.requires_grad]


CASES = {
    "pointwise": (lambda x, y: (torch.sin(x) * torch.sigmoid(y) + x.exp() / (1 + y * y),),
                  [torch.randn(8, 16), torch.randn(8, 16)]),
    "softmax_layernorm": (lambda x, w, b: (F.layer_norm(torch.softmax(x, -1) * 3, (16,), w, b),),
                          [torch.randn(8, 16), torch.randn(16), torch.randn(16)]),
    "reductions": (lambda x: ((x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True) + x.amax(0),),
                   [torch.randn(8, 16)]),
    "mlp": (lambda x, w1, w2: (F.gelu(x @ w1) @ w2,), [torch.randn(4, 8), torch.randn(8, 32), torch.randn(32, 8)]),
    "views_indexing": (lambda x, i: (torch.cat([x.t()[:, 1:], x.t()[:, :1]], 1)[i] * 2 + F.pad(x, (1, 1)).sum(),),
                       [torch.randn(6, 5), torch.tensor([0, 3, 4])]),
    "log_softmax_nll": (lambda x, t: (F.cross_entropy(x, t),), [torch.randn(8, 10), torch.randint(0, 10, (8,))]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_forward_backward_matches_eager(name: str) -> None:
    fn, inputs = CASES[name]
    gm = torch.fx.symbolic_trace(fn)
    compiled = inductor(gm, [x.detach().clone().requires_grad_(x.dtype.is_floating_point) for x in inputs])
    out, grads = _grads(compiled, inputs)
    ref_out, ref_grads = _grads(fn, inputs)
    torch.testing.assert_close(out, ref_out, rtol=1e-4, atol=1e-5)
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5)


def test_half_precision_training() -> None:
    def fn(x: torch.Tensor, w: torch.Tensor) -> tuple:
        return (torch.softmax(x * w, -1).sum(0) + torch.tanh(x).mean(),)
    inputs = [torch.randn(8, 32).bfloat16(), torch.randn(32).bfloat16()]
    compiled = inductor(torch.fx.symbolic_trace(fn), [x.clone().requires_grad_() for x in inputs])
    out, grads = _grads(compiled, inputs)
    ref_out, ref_grads = _grads(fn, inputs)
    torch.testing.assert_close(out, ref_out, rtol=2e-2, atol=2e-2)
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=3e-2, atol=3e-2)
