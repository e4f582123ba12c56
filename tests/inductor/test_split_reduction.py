"""Split reductions: a reduction with few, long rows (batch norm's statistics) is reduced in
chunks by many programs, then over the chunks. Applied on GPUs; run here on the C++ backend by
letting the CPU split too, against eager, on NCHW and channels-last inputs."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ember_inductor.lowering import reductions
from helpers import check


@pytest.fixture
def splitting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reductions, "SPLIT_DEVICES", ("cpu",))


def _stats(x: torch.Tensor) -> tuple:
    var, mean = torch.var_mean(x, dim=(0, 2, 3), correction=0)
    return var, mean, x.sum((0, 2, 3)), x.amax((0, 2, 3)), (x > 3).any(0)


@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_batch_statistics_split_match_eager(splitting: None, layout: str) -> None:
    x = torch.randn(16, 8, 32, 32)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    compiled = check(_stats, x)
    assert reductions.split_point([1, 8, 1, 1], [16, 32, 32], "sum", "cpu") == (1, 4)  # 64 chunks of 256
    assert "empty_strided((16, 4, 1, 8, 1, 1, )" in compiled.compiled._parts["wrapper"]  # the partial sums


def test_split_needs_few_long_rows(splitting: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # rows that fill the GPU, or short ones, or a length without a power-of-two divisor: whole
    assert reductions.split_point([4096], [65536], "sum", "cpu") is None
    assert reductions.split_point([8], [1024], "sum", "cpu") is None
    assert reductions.split_point([8], [16385], "sum", "cpu") is None
    assert reductions.split_point([8], [65536], "prod", "cpu") is None
    assert reductions.split_point([8], [65536], "max", "cpu") == (0, 256)
    monkeypatch.setattr(reductions, "SPLIT_DEVICES", ("cuda",))
    check(_stats, torch.randn(16, 8, 32, 32))  # nothing split on the CPU: the same results


def test_batch_norm_training_step_with_split_statistics(splitting: None) -> None:
    """Forward and backward of batch norm in training (the decomposed statistics and their
    gradients are reductions over batch and image) against eager."""
    from ember_aot import aot_autograd
    from ember_inductor.backend import make_graph_compiler

    torch.manual_seed(0)
    weight, bias = torch.randn(8, requires_grad=True), torch.randn(8, requires_grad=True)

    def step(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(x, None, None, w, b, training=True).relu().pow(2).mean()
    x = torch.randn(16, 8, 32, 32, requires_grad=True)
    gm = torch.fx.symbolic_trace(step)
    compiled = aot_autograd(make_graph_compiler({"strict": True}))(gm, [x, weight, bias])
    ours = [t.detach().clone().requires_grad_() for t in (x, weight, bias)]
    ref = [t.detach().clone().requires_grad_() for t in (x, weight, bias)]
    loss = compiled(*ours)
    loss = loss[0] if isinstance(loss, (list, tuple)) else loss
    loss.backward()
    step(*ref).backward()
    torch.testing.assert_close(loss, step(*[r.detach() for r in ref]), rtol=1e-4, atol=1e-5)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)


def test_outer_reductions_split_into_column_blocks(splitting: None) -> None:
    """Column sums (a bias gradient: the last dimension kept) are split too, from shorter columns,
    into many more partial results; fused with the pointwise work around them, against eager."""
    assert reductions.split_point([1, 768], [8192], "sum", "cpu", outer=True) == (0, 32)  # 32 chunks of 256 rows
    assert reductions.split_point([1, 1, 768], [8, 1024], "sum", "cpu", outer=True) == (1, 4)
    assert reductions.split_point([1, 32768], [8192], "sum", "cpu", outer=True) is None  # columns enough
    assert reductions.split_point([1, 768], [1024], "sum", "cpu", outer=True) is None  # short columns

    def bias_grads(g: torch.Tensor, h: torch.Tensor) -> tuple:
        y = (g * h).relu()
        return y.sum(0), g.sum((0, 1)), y.amax(0), y * 2

    compiled = check(bias_grads, torch.randn(4096, 96), torch.randn(4096, 96))
    assert "empty_strided((16, 1, 96, )" in compiled.compiled._parts["wrapper"]
    check(bias_grads, torch.randn(8, 512, 96), torch.randn(8, 512, 96))
