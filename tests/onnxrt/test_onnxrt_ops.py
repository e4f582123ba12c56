"""Operator coverage of backend onnxrt: each graph runs in onnxruntime and matches eager."""
from __future__ import annotations

import operator

import pytest
import torch
import torch.nn.functional as F
from onnxrt_helpers import check


def _pointwise(x, y):
    return torch.sin(x) * torch.exp(-y) + torch.tanh(x / 3) - torch.sigmoid(y), torch.where(x > y, x, y)


def _activations(x):
    return F.relu(x), F.gelu(x), F.silu(x), F.leaky_relu(x, 0.1), torch.clamp(x, -0.5, 0.5), F.hardtanh(x)


def _reductions(x):
    return x.sum(), x.mean(dim=1), x.amax(dim=0), x.var(dim=1), torch.argmax(x, dim=1), x.norm(dim=-1)


def _softmax_layernorm(x, w, b):
    return torch.softmax(x, -1), F.log_softmax(x, dim=0), F.layer_norm(x, (x.shape[-1],), w, b)


def _conv_bn_pool(x, w, b, rm, rv, g, beta):
    y = F.conv2d(x, w, b, stride=1, padding=1)
    y = F.batch_norm(y, rm, rv, g, beta, training=False)
    return F.max_pool2d(F.relu(y), 2), F.adaptive_avg_pool2d(y, 1), F.avg_pool2d(y, 3, stride=2, padding=1)


def _matmul_linear(x, w, b, m):
    return F.linear(x, w, b), x @ m, torch.bmm(x.unsqueeze(0), m.unsqueeze(0)), torch.addmm(b, x, w.t())


def _embedding(ids, table):
    return F.embedding(ids, table), table[ids[:, 0]]


def _attention(q, k, v):
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    scores = torch.softmax(q @ k.transpose(-1, -2) / 8.0, dim=-1)
    return causal, scores @ v


def _views(x):
    y = x.view(2, 3, 4).permute(2, 0, 1).reshape(4, 6)
    return y, x.t().contiguous(), x.flatten(), x.unsqueeze(1).expand(6, 2, 4), x[1:4, ::2], x.transpose(0, 1)[2]


def _cat_stack(x, y):
    return torch.cat([x, y], dim=0), torch.stack([x, y], dim=1), torch.chunk(x, 2, dim=1)[1], x.split(2, 0)[0]


def _int_ops(a, b):
    return a + b, a * 3, torch.remainder(a, 5), a.sum(dim=0), (a > b).to(torch.int64), a.max()


def _mixed(x, n):
    return x * n + n, (x > 0).float()


def _scalars(x, scale: float, shift: int):
    return x * scale + shift


CASES = [
    ("pointwise", _pointwise, lambda: (torch.randn(4, 5), torch.randn(4, 5))),
    ("activations", _activations, lambda: (torch.randn(3, 7),)),
    ("reductions", _reductions, lambda: (torch.randn(5, 6),)),
    ("softmax_layernorm", _softmax_layernorm, lambda: (torch.randn(3, 8), torch.randn(8), torch.randn(8))),
    ("conv_bn_pool", _conv_bn_pool, lambda: (
        torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3), torch.randn(4), torch.randn(4),
        torch.rand(4) + 0.5, torch.randn(4), torch.randn(4))),
    ("matmul_linear", _matmul_linear, lambda: (
        torch.randn(5, 6), torch.randn(6, 6), torch.randn(6), torch.randn(6, 3))),
    ("embedding", _embedding, lambda: (torch.randint(0, 10, (3, 4)), torch.randn(10, 5))),
    ("attention", _attention, lambda: (torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8))),
    ("views", _views, lambda: (torch.randn(6, 4),)),
    ("cat_stack", _cat_stack, lambda: (torch.randn(4, 4), torch.randn(4, 4))),
    ("int64", _int_ops, lambda: (torch.randint(-9, 9, (4, 3)), torch.randint(-9, 9, (4, 3)))),
    ("int32", _int_ops, lambda: (torch.randint(-9, 9, (4, 3), dtype=torch.int32),
                                 torch.randint(-9, 9, (4, 3), dtype=torch.int32))),
    ("mixed_int_float", _mixed, lambda: (torch.randn(4, 3), torch.randint(0, 5, (4, 3)))),
]


@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_op_matches_eager(name, fn, make):
    torch.manual_seed(0)
    check(fn, *make())


def test_python_scalar_inputs():
    compiled = check(_scalars, torch.randn(3, 3), 0.5, 2)
    x = torch.randn(3, 3)
    torch.testing.assert_close(compiled(x, 1.5, -1), x * 1.5 - 1)  # new scalar values: rebuilt


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bool, torch.uint8])
def test_dtypes(dtype):
    if dtype == torch.bool:
        check(lambda a, b: (a & b) | ~a, torch.rand(5, 4) > 0.5, torch.rand(5, 4) > 0.5)
    elif dtype == torch.uint8:
        check(lambda a, b: a + b, torch.randint(0, 100, (5, 4), dtype=dtype), torch.randint(0, 100, (5, 4), dtype=dtype))
    else:
        tol = 1e-3 if dtype == torch.float16 else 1e-7
        check(lambda a, b: torch.relu(a @ b) + 1, torch.randn(5, 4, dtype=dtype),
              torch.randn(4, 3, dtype=dtype), rtol=tol, atol=tol)


def test_operator_getitem_and_tuple_outputs():
    def fn(x):
        parts = torch.split(x, 2)
        return operator.getitem(parts, 1) * 2, parts[0]

    check(fn, torch.randn(6, 3))
