"""tvm backend, op by op: torch-level graphs with weights as inputs, compared with eager."""
from __future__ import annotations

import operator

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install ember[tvm])")

from ember_tvm.backend import tvm as tvm_backend  # noqa: E402
from tvm_helpers import assert_matches, traced  # noqa: E402


def run(fn, *inputs, rtol=1e-4, atol=1e-4, all_tvm=True):
    compiled = tvm_backend(traced(fn), list(inputs))
    with torch.no_grad():
        got = compiled(*inputs)
    assert_matches(got, fn(*inputs), rtol=rtol, atol=atol)
    pieces = compiled.tvm_pieces
    assert pieces and all(p.tvm_signatures for p in pieces), "expected the graph to run in TVM"
    if all_tvm:
        assert len(pieces) == 1
    return compiled


def test_pointwise():
    def fn(x, y):
        z = torch.sin(x) * y + torch.exp(-x.abs()) - torch.tanh(y) / 2
        return (F.gelu(z), torch.sigmoid(z).clamp(0.2, 0.8), torch.where(x > y, x, y))
    run(fn, torch.randn(8, 33), torch.randn(8, 33))


def test_broadcast_and_scalars():
    def fn(x, b):
        return (x * 3.0 + b, operator.truediv(x, 2) - 1, x.pow(2) + b.sqrt())
    run(fn, torch.randn(4, 5, 6), torch.rand(6) + 0.1)


def test_reductions():
    def fn(x):
        return (x.sum(dim=1), x.mean(dim=(0, 2), keepdim=True), x.prod(dim=0),
                torch.argmax(x, dim=2), torch.cumsum(x, dim=1))
    run(fn, torch.randn(3, 7, 11), rtol=1e-3, atol=1e-3)


def test_ops_without_faithful_import_stay_in_pytorch(caplog):
    def fn(x):
        return (x.var(dim=1) + 1, torch.amax(x, dim=-1) * 2, x.max(dim=0).values - 1)
    compiled = run(fn, torch.randn(3, 7, 11), rtol=1e-4, atol=1e-4, all_tvm=False)
    assert "ops kept in PyTorch" in caplog.text and "amax" in caplog.text


def test_softmax_layernorm():
    def fn(x, w, b):
        return (F.softmax(x, dim=-1), F.log_softmax(x, dim=1),
                F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-6))
    run(fn, torch.randn(2, 5, 16), torch.randn(16), torch.randn(16), rtol=1e-3, atol=1e-3)


def test_conv_bn_pool():
    def fn(x, w, b, rm, rv, g, beta):
        y = F.conv2d(x, w, b, stride=2, padding=1)
        y = F.batch_norm(y, rm, rv, g, beta, training=False, eps=1e-5)
        y = F.relu(y)
        return (F.max_pool2d(y, 3, stride=2, padding=1), F.avg_pool2d(y, 2),
                F.adaptive_avg_pool2d(y, 1))
    c = 8
    run(fn, torch.randn(2, 3, 20, 20), torch.randn(c, 3, 3, 3), torch.randn(c), torch.randn(c),
        torch.rand(c) + 0.5, torch.randn(c), torch.randn(c), rtol=1e-3, atol=1e-3)


def test_depthwise_conv_groupnorm():
    def fn(x, w, g, b):
        return (F.group_norm(F.conv2d(x, w, padding=1, groups=4), 2, g, b),)
    run(fn, torch.randn(2, 4, 9, 9), torch.randn(4, 1, 3, 3), torch.randn(4), torch.randn(4),
        rtol=1e-3, atol=1e-3)


def test_linear_matmul():
    def fn(x, w, b, m):
        return (F.linear(x, w, b), x @ m, torch.bmm(x.view(2, 3, 8), m.view(1, 8, 5).expand(2, 8, 5)))
    run(fn, torch.randn(6, 8), torch.randn(4, 8), torch.randn(4), torch.randn(8, 5),
        rtol=1e-3, atol=1e-3)


def test_views_and_cat():
    def fn(x, y):
        a = x.view(2, 3, 4).permute(2, 0, 1).reshape(4, 6)
        b = torch.cat([a, y.t()], dim=0)
        c = b[1:, ::2].contiguous().unsqueeze(0).flatten(1)
        return (b.transpose(0, 1), c, torch.stack([x, x * 2]).sum(0))
    run(fn, torch.randn(6, 4), torch.randn(6, 3))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.int64, torch.int32])
def test_dtypes(dtype):
    def fn(x, y):
        return (x + y, x * y - x, torch.maximum(x, y), (x > y))
    if dtype.is_floating_point:
        x, y = torch.randn(5, 7).to(dtype), torch.randn(5, 7).to(dtype)
    else:
        x, y = torch.randint(-50, 50, (5, 7), dtype=dtype), torch.randint(-50, 50, (5, 7), dtype=dtype)
    tol = 1e-2 if dtype == torch.float16 else 1e-6
    run(fn, x, y, rtol=tol, atol=tol)


def test_casts():
    def fn(x):
        return (x.to(torch.float16), x.float().sum(1), (x > 0).to(torch.int64))
    run(fn, torch.randn(4, 6, dtype=torch.float64), rtol=1e-3, atol=1e-3)


def test_noncontiguous_inputs():
    def fn(x, w):
        return (F.linear(x, w),)
    x, w = torch.randn(5, 8).t(), torch.randn(3, 5)
    assert not x.is_contiguous()
    run(fn, x, w, rtol=1e-4, atol=1e-4)


def test_kwargs_are_honoured():
    # The importer reads many arguments positionally only; ember normalizes keywords.
    def fn(x, w):
        return (torch.conv2d(x, w, padding=2, dilation=2), x.sum(dim=1, keepdim=True))
    run(fn, torch.randn(1, 2, 9, 9), torch.randn(3, 2, 3, 3), rtol=1e-3, atol=1e-3)


def test_new_shapes_get_their_own_build():
    def fn(x, w):
        return (F.relu(x @ w),)
    compiled = tvm_backend(traced(fn), [torch.randn(4, 8), torch.randn(8, 3)])
    with torch.no_grad():
        for rows in (4, 9, 4):
            x, w = torch.randn(rows, 8), torch.randn(8, 3)
            assert_matches(compiled(x, w), fn(x, w))
    assert compiled.tvm_pieces[0].tvm_signatures == 2
