"""Max pooling lowered to pointwise kernels, against eager: values and indices bit for bit (NaN,
-inf windows, padding, ceil mode, channels-last, 3-D inputs), the backward's gradient (Triton's
lowering, built here by the C++ codegen, which runs aten's), and a stem (conv, batch norm, ReLU,
pool) trained through ember. The layout pass's save mark is ember_aot's."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from helpers import check

import ember
from ember_inductor.codegen.language import kernel_language
from ember_inductor.lowering import pooling

aten = torch.ops.aten

GEOMETRIES = [  # kernel, stride, padding, ceil_mode
    (3, 2, 1, False),   # resnet's stem
    (2, 2, 0, False),
    (3, 2, 0, True),
    (3, 1, 1, False),   # overlapping windows, every element in up to nine
    (3, 3, 1, True),
    ((3, 2), (2, 1), (1, 0), False),
    (2, 2, 1, False),   # the corner windows hold one element: of the -inf first row, only -inf
    (5, 1, 2, False),   # the largest window lowered (MAX_WINDOW): its C++ text once grew without bound
]


def _input(shape: tuple, channels_last: bool = False) -> torch.Tensor:
    x = torch.randn(shape)
    x[..., 0, :] = float("-inf")   # windows of the first row only see -inf with (2, 2, 1)
    x[..., 3, 2] = float("nan")    # a NaN wins its windows
    x[..., 5, 5] = x[..., 5, 4]    # a tie: the first in window order wins
    return x.to(memory_format=torch.channels_last) if channels_last else x


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_values_and_indices_match_eager(geometry: tuple) -> None:
    k, s, p, ceil = geometry

    def pool(x: torch.Tensor) -> tuple:
        return aten.max_pool2d_with_indices(x, k, s, p, 1, ceil)
    for x in (_input((2, 3, 9, 8)), _input((2, 3, 9, 8), channels_last=True), _input((3, 7, 9))):
        compiled = check(pool, x)
        values, indices = compiled(x)
        expected_values, expected_indices = pool(x)
        torch.testing.assert_close(values, expected_values, equal_nan=True, rtol=0, atol=0)
        assert torch.equal(indices, expected_indices)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_gradient_matches_eager(geometry: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lowered backward (Triton's), here built by the C++ codegen, against eager."""
    monkeypatch.setattr(pooling, "BACKWARD_BACKENDS", {"triton", "cpp"})
    k, s, p, ceil = geometry
    x = torch.randn(2, 3, 9, 8)
    _, indices = aten.max_pool2d_with_indices(x, k, s, p, 1, ceil)
    grad = torch.randn(indices.shape)

    def backward(grad: torch.Tensor, x: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        return aten.max_pool2d_with_indices_backward(grad, x, k, s, p, 1, ceil, indices) * 2
    check(backward, grad, x, indices)


def test_dilated_and_global_pooling_run_the_aten_kernel() -> None:
    check(lambda x: aten.max_pool2d_with_indices(x, 3, 1, 0, 2, False), torch.randn(1, 2, 9, 9), lowered=False)
    check(lambda x: aten.max_pool2d_with_indices(x, 9), torch.randn(1, 2, 9, 9), lowered=False)


@pytest.mark.skipif(kernel_language("cpu") != "cpp", reason="CPU tensors compiled to Triton lower it")
def test_the_cpu_backward_runs_aten_scatter() -> None:
    """The C++ backend leaves the backward to aten (``pooling.BACKWARD_BACKENDS``)."""
    x = torch.randn(2, 3, 9, 8)
    _, indices = aten.max_pool2d_with_indices(x, 3, 2, 1)

    def backward(grad: torch.Tensor, x: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        return aten.max_pool2d_with_indices_backward(grad, x, [3, 3], [2, 2], [1, 1], [1, 1], False, indices)
    compiled = check(backward, torch.randn(indices.shape), x, indices, lowered=False)
    assert compiled.compiled.fallback_ops == ["aten.max_pool2d_with_indices_backward.default"]


def test_resnet_stem_training_step_is_captured_and_matches_eager(extern_ops: list[str]) -> None:
    """conv, batch norm, ReLU, max pool as in torchvision's resnet, one training step with a
    loss: one graph, max pooling lowered (aten runs only the convolutions and, on the CPU, the
    pooling's backward), the same loss and gradients as eager."""
    import copy

    from ember_inductor.backend import inductor

    torch.manual_seed(0)
    stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 7, 2, 3, bias=False), torch.nn.BatchNorm2d(8),
                               torch.nn.ReLU(inplace=True), torch.nn.MaxPool2d(3, 2, 1))
    reference = copy.deepcopy(stem)
    x, target = torch.randn(4, 3, 32, 32), torch.randn(4, 8, 8, 8)
    graphs = []

    def counting(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        graphs.append(gm)
        return inductor(gm, example_inputs)

    def step(model: torch.nn.Module) -> torch.Tensor:
        loss = F.mse_loss(model(x), target)
        loss.backward()
        return loss
    loss = step(ember.compile(stem, backend=counting))
    torch.testing.assert_close(loss, step(reference))
    for a, b in zip(stem.parameters(), reference.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(stem[1].running_var, reference[1].running_var)
    assert len(graphs) == 1
    assert extern_ops and all("convolution" in e or "max_pool2d_with_indices_backward" in e for e in extern_ops), extern_ops
    assert any("convolution" in e for e in extern_ops) and not any("max_pool2d_with_indices." in e for e in extern_ops)


def test_the_layout_pass_marks_with_ember_aots_save_key() -> None:
    from ember_aot.partition import SAVE

    from ember_inductor import layout
    assert layout.SAVE == SAVE
