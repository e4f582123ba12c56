"""ember_aot on dynamic graphs (issue 25): traced once with symbolic sizes, right at every size.

Each graph is built as the core delivers a dynamic one (``dynamic_helpers.dynamic_graph``),
compiled once with ``aot_eager`` and called at many sizes, forward and backward, against eager:
values, gradients and which gradients are None.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from aot_helpers import assert_compiled
from aot_models import GPT, BatchNorm2d
from dynamic_helpers import assert_no_size_pinned, changed_dims, compare_module_sizes, compare_sizes, dynamic_graph
from ember_aot import aot_autograd
from ember_aot.api import _CheckedPlan
from ember_aot.backend import aot_eager
from ember_aot.runtime import CompiledPlan
from ember_aot.symbolic import relations_check
import pytest

from ember_aot.symbolic import SYMBOLIC_TRACING  # noqa: E402

pytestmark = pytest.mark.skipif(not SYMBOLIC_TRACING, reason="symbolic tracing is checked on torch 2.13; "
                                "older torch compiles a dynamic graph per shape")


SIZES = [5, 2, 3, 7, 8, 11, 16, 4, 9, 13, 6]  # the first is the capture's; 0 and 1 stay static


def _one_symbolic_plan(compiled) -> CompiledPlan:
    assert_compiled(compiled)
    assert len(compiled.plans) == 1, "a dynamic graph must not be specialised per size"
    plan = next(iter(compiled.plans.values()))
    assert plan.symbolic_inputs is not None
    return plan


def _graph_code(plan: CompiledPlan) -> str:
    return "\n".join(f.__self__.code for f in [plan.fw, *plan.bw])


def test_view_with_size_arithmetic_and_matmul():
    def fn(x, w):
        y = x.view(x.size(0) * 2, -1) @ w
        return y.relu().sum(0), y.mean()

    compiled = compare_sizes(fn, lambda n: [torch.randn(n, 6, requires_grad=True),
                                            torch.randn(3, 4, requires_grad=True)], SIZES, aot_eager)
    code = _graph_code(_one_symbolic_plan(compiled))
    assert "sym_size" in code and str(2 * SIZES[0]) not in code  # sizes read, never baked in


def test_reductions_over_dynamic_dims():
    def fn(x):
        return x.sum(1), x.mean(0), x.softmax(-1), x.var(1), x.amax(0), x.logsumexp(1)

    compiled = compare_sizes(fn, lambda n: [torch.randn(n, n + 3, requires_grad=True)], SIZES, aot_eager)
    _one_symbolic_plan(compiled)


def test_batched_matmul_and_sdpa():
    def fn(q, k, v, w):
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        b, h, t, d = a.shape
        return torch.matmul(a.transpose(1, 2).reshape(b, t, h * d), w)

    def inputs(n):
        return [torch.randn(2, 2, n, 4, requires_grad=True), torch.randn(2, 2, n, 4, requires_grad=True),
                torch.randn(2, 2, n, 4, requires_grad=True), torch.randn(8, 3, requires_grad=True)]

    _one_symbolic_plan(compare_sizes(fn, inputs, SIZES, aot_eager, tol=1e-4))


def test_layer_norm_module_over_batch_and_sequence():
    torch.manual_seed(0)
    ln = torch.nn.LayerNorm(12)
    compiled = compare_module_sizes(ln, lambda n: [torch.randn(n, n + 1, 12, requires_grad=True)],
                                    SIZES, aot_eager)
    _one_symbolic_plan(compiled)


def test_conv_batchnorm_training_over_image_sizes():
    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.bn = BatchNorm2d(4)  # running statistics: inputs the graph mutates
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3)))

    torch.manual_seed(0)
    compiled = compare_module_sizes(Net().train(), lambda n: [torch.randn(2, 3, n, n + 1)],
                                    [5, 6, 9, 12], aot_eager)
    _one_symbolic_plan(compiled)


def test_gpt_training_step_with_loss_over_many_sequence_lengths():
    torch.manual_seed(0)
    model = GPT(vocab=50, d=16, heads=2, layers=1, seq=32)

    def inputs(n):
        return [torch.randint(0, 50, (3, n)), torch.randint(0, 50, (3, n))]

    _one_symbolic_plan(compare_module_sizes(model, inputs, SIZES, aot_eager, tol=1e-4))


def test_inference_of_linear_layers_on_sequences_keeps_sizes_symbolic():
    torch.manual_seed(0)
    lin, ln = torch.nn.Linear(8, 6), torch.nn.LayerNorm(6)

    def fn(x, w, b, g, beta):
        return F.layer_norm(F.linear(x, w, b), (6,), g, beta).relu()

    params = [lin.weight, lin.bias, ln.weight, ln.bias]
    gm = dynamic_graph(fn, torch.randn(2, 5, 8), *params, dynamic_dims={0: {1}})  # the sequence
    with torch.no_grad():
        compiled = aot_eager(gm, [torch.randn(2, 5, 8), *params])
        for n in SIZES:
            x = torch.randn(2, n, 8)
            torch.testing.assert_close(compiled(x, *params), fn(x, *params))
    _one_symbolic_plan(compiled)
    assert_no_size_pinned(gm)


def test_int_input_that_varies_is_a_graph_input():
    def fn(x, n):
        return x.view(n, -1) * n, x.sum() + n

    compiled = compare_sizes(fn, lambda n: [torch.randn(n, 4, requires_grad=True), n], SIZES, aot_eager,
                             dynamic_ints=[1])
    plan = _one_symbolic_plan(compiled)
    assert plan.tensor_pos == [0, 1]  # the int is a primal, passed at each call


def test_outputs_aliasing_inputs_and_each_other_and_a_size():
    def fn(x):
        y = x * 2
        return x.view(-1), y, y.t(), x.size(0) * 3, x[1:]

    compiled = compare_sizes(fn, lambda n: [torch.randn(n, 3, requires_grad=True)], SIZES, aot_eager)
    _one_symbolic_plan(compiled)


def test_outputs_without_gradient_and_gradients_left_none():
    def fn(x, y, z):
        shared = x * y
        return shared.sum(0, keepdim=True), (y * 3).var(0), z.view(-1, 2).sum(1)

    def inputs(n):
        return [torch.randn(n, 4, requires_grad=True), torch.randn(n, 4, requires_grad=True),
                torch.randn(n, 4, requires_grad=True)]

    gm = dynamic_graph(fn, *inputs(5))
    compiled = aot_eager(gm, inputs(5))
    for n in SIZES:
        ours, ref = inputs(n), None
        ref = [t.detach().clone().requires_grad_() for t in ours]
        out, expected = compiled(*ours), fn(*ref)
        out[0].sum().backward()          # only the first output gets a gradient
        expected[0].sum().backward()
        for a, b in zip(ours, ref):
            assert (a.grad is None) == (b.grad is None)
            if b.grad is not None:
                torch.testing.assert_close(a.grad, b.grad)
    _one_symbolic_plan(compiled)


def test_backward_without_some_tangents_makes_zeros_of_symbolic_size():
    def fn(x):
        a, b = (x * 2).split(2, 1)
        return a.exp(), b.sin()  # the backward concatenates the two gradients

    gm = dynamic_graph(fn, torch.randn(5, 4))
    compiled = aot_eager(gm, [torch.randn(5, 4, requires_grad=True)])
    for n in SIZES:
        x = torch.randn(n, 4, requires_grad=True)
        rx = x.detach().clone().requires_grad_()
        compiled(x)[0].sum().backward()   # the second output gets no gradient
        fn(rx)[0].sum().backward()
        torch.testing.assert_close(x.grad, rx.grad)
    plan = _one_symbolic_plan(compiled)
    variant = next(iter(plan.bw_variants.cache.values()))
    assert variant is not plan.bw[0] and "zeros" in variant.__self__.code


def test_compilers_without_dynamic_support_get_one_graph_per_size():
    shapes = []

    def static_compiler(gm, example_inputs):
        assert all(isinstance(s, int) for v in example_inputs for s in v.shape)
        shapes.append(tuple(example_inputs[0].shape))
        return gm.forward

    def fn(x):
        return x.view(x.size(0) * 2, -1).sin()

    backend = aot_autograd(static_compiler)
    compiled = compare_sizes(fn, lambda n: [torch.randn(n, 4, requires_grad=True)], SIZES[:4], backend)
    assert len(compiled.plans) == 4 and all(isinstance(p, CompiledPlan) for p in compiled.plans.values())
    # a forward and a backward per size, each given x (the backward recomputes x's view)
    assert sorted(shapes) == sorted(2 * [(n, 4) for n in SIZES[:4]])


def test_inference_then_training_and_back():
    def fn(x, w):
        return (x.view(x.size(0) // 2, -1) @ w).tanh()

    def inputs(n):
        return [torch.randn(2 * n, 3), torch.randn(6, 5, requires_grad=True)]

    gm = dynamic_graph(fn, *inputs(5))
    with torch.no_grad():
        compiled = aot_eager(gm, inputs(5))
    for n in SIZES:
        x, w = inputs(n)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x, w), fn(x, w))
        rw = w.detach().clone().requires_grad_()
        compiled(x, w).sum().backward()
        fn(x, rw).sum().backward()
        torch.testing.assert_close(w.grad, rw.grad)
    assert len(compiled.plans) == 2


def test_relations_a_later_plan_adds_are_checked_at_each_call(caplog):
    def fn(x):
        return x.view(-1, 2) * 2

    gm = dynamic_graph(fn, torch.randn(6, 4))
    compiled = aot_eager(gm, [torch.randn(6, 4)])
    plan = _one_symbolic_plan(compiled)
    s0 = plan.symbolic_inputs[0].shape[0]
    checked = _CheckedPlan(plan, relations_check([s0.node.expr > 4], plan.symbolic_inputs), gm)
    with caplog.at_level("WARNING", "ember.aot"):
        for n in (6, 8, 3, 2, 3):
            x = torch.randn(n, 4)
            torch.testing.assert_close(checked(x), fn(x))
    assert caplog.text.count("outside the relations") == 1  # n = 3 and 2: eagerly, one warning


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def test_before_torch_2_13_only_graphs_without_gradients_are_symbolic(monkeypatch, caplog):
    """Torch before 2.13 traced symbolic joint graphs wrongly (ember_aot.symbolic): there a
    dynamic graph first compiled without gradients (inference, ``generate()``'s decoding) still
    gets one symbolic plan, and a later call that needs gradients runs eagerly (one warning) with
    eager's gradients; a graph first compiled with gradients is compiled per shape."""
    import logging

    import ember_aot.api as api
    monkeypatch.setattr(api, "SYMBOLIC_TRACING", False)

    def fn(x, w):
        return (x @ w).tanh().sum(1)

    def inputs(n, grad):
        return [torch.randn(n, 4, requires_grad=grad), torch.randn(4, 3, requires_grad=grad)]
    gm = dynamic_graph(fn, *inputs(5, False), dynamic_dims=changed_dims(inputs(5, False), inputs(3, False)))
    with torch.no_grad():
        compiled = aot_eager(gm, inputs(5, False))
        for n in (5, 3, 7, 9):
            x, w = inputs(n, False)
            torch.testing.assert_close(_first(compiled(x, w)), fn(x, w))
    assert len(compiled.plans) == 1 and next(iter(compiled.plans.values())).symbolic_inputs is not None
    with caplog.at_level(logging.WARNING, logger="ember.aot"):
        x, w = inputs(6, True)
        _first(compiled(x, w)).sum().backward()
    xr, wr = x.detach().requires_grad_(), w.detach().requires_grad_()
    fn(xr, wr).sum().backward()
    torch.testing.assert_close((x.grad, w.grad), (xr.grad, wr.grad))
    assert any("calls that need gradients run eagerly" in r.getMessage() for r in caplog.records)

    trained = aot_eager(gm, inputs(5, True))
    assert not trained.symbolic  # per shape, as before dynamic shapes


def test_in_place_clamps_of_views():
    """``x[1:].clamp_(...)`` on an intermediate: functionalizing it with symbolic sizes ran torch's
    Python reference of the in-place op, which fails on symbolic sizes, and the graph ran eagerly
    (fuzz seed 20263823). Traced as a clamp written back (``ember_aot.written_back``): one
    symbolic plan, values and gradients as eager's; methods and ``torch.clamp_min_`` alike."""
    def fn(x, w):
        y = x * w
        y[1:].clamp_(min=-0.5)
        y[:, :2].clamp_max_(0.25)
        torch.clamp_min_(y[0], -0.1)
        return y.sum(1), y

    compiled = compare_sizes(fn, lambda n: [torch.randn(n, 5, requires_grad=True),
                                            torch.randn(5, requires_grad=True)], SIZES, aot_eager)
    _one_symbolic_plan(compiled)
