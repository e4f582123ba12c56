"""The channels-last pass for convolution graphs.

Applied on GPUs only; exercised here on CPU tensors. aten's CPU convolution returns channels-last
only when the weight is channels-last too (cuDNN does when either is), so the weights given
here are channels-last; the wrapper's first-call layout check would catch a difference.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from ember_inductor.trace import trace_inference
from ember_inductor.compile_fx import compile_aten_graph
from ember_inductor.layout import channels_last_convolutions
from helpers import assert_same

aten = torch.ops.aten


class DenseBlock(nn.Module):
    """conv-bn-relu twice with a concatenation, pooling and a classifier (densenet's shape)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv = nn.Conv2d(8, 4, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(12)
        self.fc = nn.Linear(12, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn(self.stem(x)))
        y = torch.cat([y, self.conv(y)], 1)
        y = F.avg_pool2d(F.relu(self.bn2(y)), 2)
        return self.fc(y.mean((2, 3)))


def _traced(fn, *inputs):
    gm, _ = trace_inference(fn, list(inputs))
    return gm


def _lifted(model: nn.Module):
    """``model`` as a function of its input and its parameters and buffers (graph inputs)."""
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    values = [p.detach() for p in model.parameters()] + list(model.buffers())
    values = [v.contiguous(memory_format=torch.channels_last) if v.dim() == 4 else v for v in values]

    def fn(x, *state):
        return torch.func.functional_call(model, dict(zip(names, state)), (x,))
    return fn, values


def _compile(gm):
    return compile_aten_graph(gm, [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"])


def _conv_inputs(gm) -> list[torch.Tensor]:
    return [n.args[0].meta["val"] for n in gm.graph.nodes if n.target is aten.convolution.default]


def test_convolutions_get_channels_last_inputs_and_results_match_eager(caplog) -> None:
    torch.manual_seed(0)
    model = DenseBlock().eval()
    x = torch.randn(2, 3, 12, 12)
    fn, state = _lifted(model)
    with torch.no_grad():
        expected = model(x)
        gm = _traced(fn, x, *state)
        assert channels_last_convolutions(gm, "cpu")
        assert all(v.is_contiguous(memory_format=torch.channels_last) for v in _conv_inputs(gm))
        # one conversion: the graph input, where it first feeds a convolution
        clones = [n for n in gm.graph.nodes if n.target is aten.clone.default]
        assert len(clones) == 1 and clones[0].args[0].op == "placeholder"
        compiled = _compile(gm)
        (out,) = compiled(x, *state)
    assert compiled.kernel_count > 0
    assert not [r for r in caplog.records if r.levelname == "WARNING"]  # no fallback to aten
    assert out.stride() == expected.stride()
    assert_same(out, expected)


def test_an_output_keeps_the_layout_eager_gives_it() -> None:
    w, b = torch.randn(4, 3, 3, 3), torch.randn(4)
    x = torch.randn(1, 3, 8, 8)

    def fn(t, w, b):
        return torch.relu(F.conv2d(t, w, b))
    with torch.no_grad():
        expected = fn(x, w, b)
        gm = _traced(fn, x, w, b)
        assert channels_last_convolutions(gm, "cpu")
        (result,) = next(n for n in gm.graph.nodes if n.op == "output").args[0]
        assert result.target is aten.clone.default and result.kwargs["memory_format"] == torch.contiguous_format
        assert result.meta["val"].is_contiguous()
        (out,) = gm(x, w, b)  # the rewritten aten graph, run by aten
    assert out.is_contiguous() and out.stride() == expected.stride()
    assert_same(out, expected)


def test_graph_with_many_channels_last_outputs_is_left_alone() -> None:
    """Like the forward half of a training step: activations are outputs too."""
    def fn(t: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> tuple:
        a = F.conv2d(t, w1)
        b = torch.relu(a)
        c = F.conv2d(b, w2)
        return a, b, c
    with torch.no_grad():
        gm = _traced(fn, torch.randn(1, 3, 10, 10), torch.randn(4, 3, 3, 3), torch.randn(4, 4, 3, 3))
        before = gm.code
        assert not channels_last_convolutions(gm, "cpu")
    assert gm.code == before
    assert not any(v.is_contiguous(memory_format=torch.channels_last) for v in _conv_inputs(gm))


def test_convolutions_on_another_device_are_left_alone() -> None:
    with torch.no_grad():
        gm = _traced(lambda t, w: F.conv2d(t, w), torch.randn(1, 3, 6, 6), torch.randn(2, 3, 3, 3))
    assert not channels_last_convolutions(gm, "cuda")


def test_graph_without_convolutions_is_left_alone() -> None:
    gm = _traced(lambda t: torch.relu(t) + 1, torch.randn(2, 3, 4, 4))
    assert not channels_last_convolutions(gm, "cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_the_compiler_runs_convolutions_channels_last(caplog) -> None:
    """Weights stay NCHW here: cuDNN returns channels-last for a channels-last input anyway."""
    torch.manual_seed(0)
    model = DenseBlock().cuda().eval()
    x = torch.randn(2, 3, 12, 12, device="cuda")
    names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
    state = [p.detach() for p in model.parameters()] + list(model.buffers())

    def fn(x, *state):
        return torch.func.functional_call(model, dict(zip(names, state)), (x,))
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        with torch.no_grad():
            expected = model(x)
            gm = _traced(fn, x, *state)
            compiled = _compile(gm)  # the pass runs inside for CUDA graphs
            (out,) = compiled(x, *state)
    finally:
        torch.backends.cudnn.allow_tf32 = saved
    assert all(v.is_contiguous(memory_format=torch.channels_last) for v in _conv_inputs(gm))
    assert not [r for r in caplog.records if r.levelname == "WARNING"]  # no fallback to aten
    assert out.stride() == expected.stride()
    assert_same(out, expected)
