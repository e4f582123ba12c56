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


def test_training_step_is_converted_whole_before_the_split() -> None:
    """The joint pass: the convolutions' backward reads channels-last gradients and inputs, the
    activations saved for it cross from the forward half channels-last, the weights' gradients
    come out in the weights' layout; loss and gradients as eager's. (CPU tensors: with its
    weights converted too, aten's CPU convolution then does as cuDNN.)"""
    from ember_aot import aot_autograd
    from ember_inductor.backend import make_graph_compiler

    torch.manual_seed(0)
    model = DenseBlock()
    params = [p.detach().clone().requires_grad_() for p in model.parameters()]
    x = torch.randn(2, 3, 12, 12)

    def step(x, w1, b1, g1, be1, w2, b2, g2, be2, wf, bf):
        y = F.relu(F.batch_norm(F.conv2d(x, w1, b1, padding=1), None, None, g1, be1, training=True))
        y = torch.cat([y, F.conv2d(y, w2, b2, padding=1)], 1)
        y = F.avg_pool2d(F.relu(F.batch_norm(y, None, None, g2, be2, training=True)), 2)
        return F.linear(y.mean((2, 3)), wf, bf).pow(2).mean()

    graphs, changed = [], []
    inner = make_graph_compiler({"strict": True})

    def compiler(gm, example_inputs):
        graphs.append(gm)
        return inner(gm, example_inputs)
    backend = aot_autograd(compiler, joint_pass=lambda gm: changed.append(channels_last_convolutions(gm, "cpu", None, training=True)))
    compiled = backend(torch.fx.symbolic_trace(step), [x, *params])
    loss = compiled(x, *params)
    loss.backward()
    ref = [p.detach().clone().requires_grad_() for p in model.parameters()]
    expected = step(x, *ref)
    expected.backward()
    assert changed == [True]
    assert_same(loss, expected)
    for ours, theirs in zip(params, ref):
        assert ours.grad.stride() == theirs.grad.stride()
        torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-4, atol=1e-5)
    backward = graphs[-1]
    convs = [n for n in backward.graph.nodes if n.target is aten.convolution_backward.default]
    assert convs and all(_is_cl(n.args[0]) and _is_cl(n.args[1]) and _is_cl(n.args[2]) for n in convs)
    saved = [n for n in backward.graph.nodes if n.op == "placeholder" and n.meta["val"].dim() == 4]
    assert any(_is_cl(n) for n in saved)


def _is_cl(node) -> bool:
    return node.meta["val"].is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("case", ["channels_last_input", "float64"])
def test_training_pass_converts_weights_and_leaves_float64(case: str) -> None:
    """An input already channels-last still gets its weight converted (the pass's early exit
    looks at the training positions); float64, which cuDNN runs NCHW, is left as traced."""
    from ember_aot import aot_autograd

    torch.manual_seed(0)
    dtype = torch.float64 if case == "float64" else torch.float32
    x = torch.randn(2, 3, 8, 8, dtype=dtype)
    if case == "channels_last_input":
        x = x.contiguous(memory_format=torch.channels_last)
    w = torch.randn(4, 3, 3, 3, dtype=dtype, requires_grad=True)

    def step(x, w):
        return F.conv2d(x, w, padding=1).pow(2).mean()

    changed, graphs = [], []

    def compiler(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    backend = aot_autograd(compiler, joint_pass=lambda gm: changed.append(
        channels_last_convolutions(gm, "cpu", None, training=True)))
    loss = backend(torch.fx.symbolic_trace(step), [x, w])(x, w)
    loss.backward()
    ref = w.detach().clone().requires_grad_()
    expected = step(x, ref)
    expected.backward()
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(w.grad, ref.grad)
    assert w.grad.stride() == ref.grad.stride()
    assert changed == [case == "channels_last_input"]
    if changed[0]:
        conv = next(n for n in graphs[0].graph.nodes if n.target is aten.convolution.default)
        assert _is_cl(conv.args[1])
