"""The converter and the partitioner: checked ONNX models, unsupported ops left to PyTorch."""
from __future__ import annotations

import logging

import onnx
import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx
from ember import EmberError
from onnxrt_helpers import check, compile_fn

import ember_aot

from ember_onnxrt import converter, torchlib_bridge
from ember_onnxrt.decompositions import onnx_decompositions


@torch.library.custom_op("ember_onnxrt_test::twice_plus_one", mutates_args=())
def twice_plus_one(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1


@twice_plus_one.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _aten(fn, *args):
    """The aten inference graph ember_aot hands backend onnxrt, type promotion made explicit."""
    graphs = []

    def grab(gm, example_inputs):
        graphs.append(gm)
        return gm

    backend = ember_aot.aot_autograd(grab, decompositions=onnx_decompositions(18))
    with torch.no_grad():
        backend(torch.fx.symbolic_trace(fn), list(args))
    (gm,) = graphs
    torchlib_bridge.insert_type_promotion(gm)
    return gm


@pytest.mark.parametrize("optimize", [True, False])
def test_converted_model_passes_onnx_checker(optimize):
    def fn(x, w, b, ids, table):
        y = F.layer_norm(F.linear(x, w, b), (4,))
        return torch.softmax(y, -1) + F.embedding(ids, table).sum(1), y.argmax(-1)

    gm = _aten(fn, torch.randn(3, 4), torch.randn(4, 4), torch.randn(4),
               torch.randint(0, 5, (3, 2)), torch.randn(5, 4))
    model = converter.to_onnx(gm, optimize=optimize)
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    assert [o.name for o in model.graph.output] == ["output_0", "output_1"]


def test_graph_output_that_is_an_input_gets_identity():
    gm = make_fx(lambda x, y: (x, y + 1, y + 1), tracing_mode="fake")(torch.randn(2), torch.randn(2))
    model = converter.to_onnx(gm)
    onnx.checker.check_model(model, full_check=True)
    assert len(model.graph.output) == 3


def test_unsupported_reason():
    gm = _aten(lambda x: twice_plus_one(torch.sin(x)), torch.randn(3))
    reasons = {n.name: converter.unsupported_reason(n) for n in gm.graph.nodes if n.op == "call_function"}
    assert reasons["sin"] == ""
    assert "no torch_lib function" in reasons["twice_plus_one"]
    gm = _aten(lambda x: x.to(torch.complex64) * 2, torch.randn(3))
    assert any("complex" in converter.unsupported_reason(n) for n in gm.graph.nodes if n.op == "call_function")


def test_unsupported_op_runs_in_pytorch(caplog):
    def fn(x, w):
        y = torch.relu(x @ w)
        z = twice_plus_one(y)
        return torch.cos(z).sum(0), y

    with caplog.at_level(logging.INFO, logger="ember.onnxrt"):
        compiled = check(fn, torch.randn(4, 4), torch.randn(4, 4), fully_onnx=False)
    (place,) = compiled.placements()
    assert place["sessions"] == 2
    assert place["eager_ops"] == {"ember_onnxrt_test.twice_plus_one.default": 1}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "twice_plus_one" in warnings[0].getMessage()


def test_fallback_off_raises():
    with pytest.raises(EmberError, match="twice_plus_one"):
        compile_fn(lambda x: twice_plus_one(x) + 1, [torch.randn(3)], fallback=False)


def test_complex_values_stay_in_pytorch():
    def fn(x):
        c = torch.view_as_complex(x.reshape(3, 2))
        return torch.view_as_real(c * c).sum() + x.sin().sum()

    check(fn, torch.randn(6), fully_onnx=False)


def test_input_mutation_is_applied():
    def fn(x, y):
        x.add_(y)
        return x * 2

    x, y = torch.randn(3, 3), torch.randn(3, 3)
    compiled = compile_fn(fn, [x.clone(), y])
    x_eager, x_ort = x.clone(), x.clone()
    expected = fn(x_eager, y)
    torch.testing.assert_close(compiled(x_ort, y), expected)
    torch.testing.assert_close(x_ort, x_eager)


def test_dropout_is_identity_in_eval_and_random_ops_stay_in_pytorch():
    check(lambda x: F.dropout(x, 0.5, training=False) + 1, torch.randn(4))
    compiled = compile_fn(lambda x: x + torch.rand_like(x) * 0, [torch.randn(4)])
    (place,) = compiled.placements()
    assert any("rand" in op for op in place["eager_ops"])
