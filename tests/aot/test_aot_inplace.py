"""In-place ops of a training graph: rewritten into functional ones without a second trace where
no alias can observe them (``ember_aot.inplace``), functionalized by a second trace where one can;
both match eager, forward, gradients and mutated inputs."""
from __future__ import annotations

import pytest
import torch
import torch.fx

import ember_aot.trace
from aot_helpers import BACKENDS, compare_fn, compare_module
from aot_models import BatchNorm2d


@pytest.fixture
def rewrites(monkeypatch):
    """The result of every ``remove_mutations`` call: True where the graph was rewritten."""
    seen: list[bool] = []
    real = ember_aot.trace.remove_mutations

    def spy(*args):
        seen.append(real(*args))
        return seen[-1]

    monkeypatch.setattr(ember_aot.trace, "remove_mutations", spy)
    return seen


def buffer_updated_twice(x, buf):
    buf.mul_(0.9)
    y = x + buf  # reads the value between the two writes
    buf.add_(x.detach().sum() * 0.1)
    return y.sin() + buf


def buffer_copied(x, buf):
    buf.copy_(x.detach() * 3)
    return x * buf


def intermediate_in_place(x):
    h = x * 2
    h.add_(1)
    h.mul_(3)
    return h.cos()


def bool_mask_in_place(x):
    h = x.sin()
    h.masked_fill_(x > 0.5, 0.0)
    return h * x


def written_through_a_view(x, buf):
    buf[0].add_(x.detach().sum())
    return x * buf


def in_place_keeps_the_narrow_dtype(x, y):
    h = (x * 2).to(torch.float16)
    h.add_(y)  # float16 += float32 stays float16; the out-of-place add would give float32
    return h.float() * x


def _grad_input(*shape):
    return torch.randn(*shape).requires_grad_()


CASES = [
    (buffer_updated_twice, lambda: [_grad_input(4, 3), torch.rand(3)], True),
    (buffer_copied, lambda: [_grad_input(5), torch.zeros(5)], True),
    (intermediate_in_place, lambda: [_grad_input(3, 4)], True),
    (bool_mask_in_place, lambda: [_grad_input(6)], True),
    (written_through_a_view, lambda: [_grad_input(2, 3), torch.ones(2, 3)], False),
    (in_place_keeps_the_narrow_dtype, lambda: [_grad_input(4), torch.randn(4)], False),
]


@pytest.mark.parametrize("backend", ["aot_eager", "min_cut"])
@pytest.mark.parametrize("fn,make_inputs,rewritten", CASES, ids=[c[0].__name__ for c in CASES])
def test_training_graph_with_in_place_ops_matches_eager(fn, make_inputs, rewritten, backend, rewrites):
    compare_fn(fn, make_inputs, BACKENDS[backend], tol=1e-3)
    assert rewrites == [rewritten]


def test_batchnorm_statistics_need_no_second_trace(rewrites):
    class ConvBN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(3, 4, 3), BatchNorm2d(4)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))

    compare_module(ConvBN, lambda step: [torch.randn(2, 3, 6, 6)], BACKENDS["min_cut"], steps=2)
    assert rewrites == [True]


def test_rewritten_graph_writes_inputs_back_at_the_end():
    """The rewrite reports a mutated input as functionalization does: one trailing ``copy_``."""
    from torch._subclasses import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from ember_aot.inplace import remove_mutations

    mode = FakeTensorMode()
    with mode:
        primals = [torch.randn(3), torch.randn(3)]
        gm = make_fx(buffer_updated_twice)(*primals)
    assert remove_mutations(gm, mode, primals)
    mutating = [n for n in gm.graph.nodes if n.op == "call_function" and n.target._schema.is_mutable]
    assert [n.target for n in mutating] == [torch.ops.aten.copy_.default]
    assert mutating[0].args[0].name == "buf_1" and mutating[0].next.op == "output"
    x, buf = torch.randn(3), torch.rand(3)
    expected_buf = buf.clone()
    expected = buffer_updated_twice(x, expected_buf)
    torch.testing.assert_close(gm(x, buf), expected)
    torch.testing.assert_close(buf, expected_buf)


def _in_place_temporary_and_buffer_write(x, buf):
    h = x * 2
    h.add_(1)
    h.mul_(3)
    buf.copy_(h)
    return h.cos()


def test_in_place_ops_functionalization_lets_through_are_rewritten():
    """What a composite kernel run below functionalization leaves in a functionalized graph:
    in-place ops on its own temporaries (torch 2.13's bfloat16 ``rms_norm`` adds its epsilon with
    ``add_``). They become functional; the write into the input stays, as functionalization's."""
    from torch._subclasses import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from ember_aot.inplace import remove_leftover_mutations

    mode = FakeTensorMode()
    with mode:
        gm = make_fx(_in_place_temporary_and_buffer_write)(torch.randn(3), torch.randn(3))
    remove_leftover_mutations(gm, mode)
    mutating = [n.target for n in gm.graph.nodes if n.op == "call_function" and n.target._schema.is_mutable]
    assert mutating == [torch.ops.aten.copy_.default]
    x, buf, expected_buf = torch.randn(3), torch.zeros(3), torch.zeros(3)
    torch.testing.assert_close(gm(x, buf), _in_place_temporary_and_buffer_write(x, expected_buf))
    torch.testing.assert_close(buf, expected_buf)


class _NormWithCounter(torch.nn.Module):
    """bfloat16 RMSNorm (its composite kernel's ``add_``) next to a buffer written in place, so the
    inference trace goes through functionalization."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.RMSNorm(8).to(torch.bfloat16)
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.calls.add_(1)
        return self.norm(x) * 2


@pytest.mark.parametrize("grad", [False, True])
def test_bfloat16_rms_norm_with_a_buffer_write_is_compiled(grad):
    def inputs(step):
        return [torch.randn(4, 8, dtype=torch.bfloat16, requires_grad=grad)]
    with torch.set_grad_enabled(grad):
        compare_module(_NormWithCounter, inputs, BACKENDS["aot_eager"], steps=2, tol=1e-2)
