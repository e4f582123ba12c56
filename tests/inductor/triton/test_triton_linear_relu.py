"""A small Linear followed by a ReLU in a Triton graph is one ``_addmm_activation`` call
(``graph.GraphLowering._relu_epilogue``), run here in Triton's interpreter.

At batch sizes where the product is a few thousand elements, a kernel of its own for the bias
and the ReLU costs an allocation and a launch and does almost no work; aten's
``_addmm_activation`` puts the ReLU in cuBLASLt's epilogue or applies it in place. Larger
float32 products keep the plain matrix product and the fused bias-and-ReLU kernel; half
precision ones take the one call at every size (measured: ``graph.ADDMM_RELU_MAX_NUMEL``).
"""
from __future__ import annotations

import copy

import pytest
import torch

from triton_checks import interpreter_only  # noqa: E402

interpreter_only()
pytestmark = pytest.mark.usefixtures("triton_kernels")

import ember  # noqa: E402
from ember_inductor import graph as lowering_graph  # noqa: E402
from ember_inductor.backend import compile_inference, inductor  # noqa: E402

aten = torch.ops.aten


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))


def _extern_ops(compiled: object) -> list:
    return list(compiled.compiled._parts.get("ops", {}).values())  # what the wrapper calls


def _counting(graphs: list) -> object:
    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        graphs.append(gm)
        return inductor(gm, example_inputs)
    return backend


def test_small_linear_relu_is_one_aten_call_and_no_kernel() -> None:
    fn = lambda x, w, b: torch.relu(torch.nn.functional.linear(x, w, b))  # noqa: E731
    x, w, b = torch.randn(4, 64), torch.randn(128, 64), torch.randn(128)
    compiled = compile_inference(fn, [x, w, b])
    torch.testing.assert_close(compiled(x, w, b), fn(x, w, b))
    graph = compiled.compiled
    assert graph.kernel_count == 0
    assert aten._addmm_activation.default in _extern_ops(compiled)
    assert "empty_strided" not in graph.wrapper_source  # the product is the result


def test_larger_float32_products_keep_the_fused_bias_and_relu_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lowering_graph, "ADDMM_RELU_MAX_NUMEL", 4 * 128 - 1)
    fn = lambda x, w, b: torch.relu(torch.nn.functional.linear(x, w, b))  # noqa: E731
    x, w, b = torch.randn(4, 64), torch.randn(128, 64), torch.randn(128)
    compiled = compile_inference(fn, [x, w, b])
    torch.testing.assert_close(compiled(x, w, b), fn(x, w, b))
    assert compiled.compiled.kernel_count == 1
    assert aten._addmm_activation.default not in _extern_ops(compiled)
    half = [t.bfloat16() for t in (x, w, b)]
    compiled = compile_inference(fn, half)
    torch.testing.assert_close(compiled(*half), fn(*half))
    assert compiled.compiled.kernel_count == 0  # half precision: one call at any size
    assert aten._addmm_activation.default in _extern_ops(compiled)


def test_a_product_read_by_another_op_keeps_its_bias_add() -> None:
    """The addmm's value itself is needed (returned beside the ReLU): no epilogue."""
    fn = lambda x, w, b: (lambda y: (torch.relu(y), y * 2))(torch.nn.functional.linear(x, w, b))  # noqa: E731
    x, w, b = torch.randn(4, 64), torch.randn(128, 64), torch.randn(128)
    compiled = compile_inference(fn, [x, w, b])
    for got, want in zip(compiled(x, w, b), fn(x, w, b)):
        torch.testing.assert_close(got, want)
    assert aten._addmm_activation.default not in _extern_ops(compiled)


def test_mlp_eval_under_no_grad_and_a_training_step_match_eager() -> None:
    """As users call it: eval inside ``torch.no_grad()`` in the compiled function, and a training
    step with labels and a loss; one graph each, no break, gradients equal to eager's."""
    model = _mlp()
    reference = copy.deepcopy(model)
    graphs: list = []

    def predict(m: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return m(x).argmax(-1)

    def step(m: torch.nn.Module, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(m(x), labels)

    x, labels = torch.randn(2, 64), torch.tensor([3, 7])
    assert torch.equal(ember.compile(predict, backend=_counting(graphs))(model, x), predict(reference, x))
    assert len(graphs) == 1
    loss = ember.compile(step, backend=_counting(graphs))(model, x, labels)
    expected = step(reference, x, labels)
    torch.testing.assert_close(loss, expected)
    loss.backward()
    expected.backward()
    for a, b in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(a.grad, b.grad)
    assert len(graphs) == 2  # the training step is one graph too
