"""Latency-bound pointwise loops run as interleaved streams (``codegen/cpp_streams.py``).

A body whose expensive functions feed each other is written as ``STREAMS`` copies over as many
parts of the range; each element is computed by the same expression, so the bits equal those of
the one-stream loop, whatever the length (the last ``n % STREAMS`` elements run in a loop of
their own), the loop nest (a broadcast's inner loop) or a symbolic size. A body of independent
expensive functions (issue 26's chain) keeps one stream.
"""
from __future__ import annotations

import re
from typing import Callable

import pytest
import torch
import torch.nn.functional as F

from ember_inductor.codegen import cpp_streams

from helpers import assert_same, compile_fn


def _four_sigmoids(x: torch.Tensor) -> torch.Tensor:  # the benchmark suite's pointwise chain
    for _ in range(4):
        x = torch.relu(x * 1.1 + 0.1) - torch.sigmoid(x) * 0.5
    return x


def _trig_chain(x: torch.Tensor) -> torch.Tensor:
    return (torch.sin(x) * 2 + torch.cos(x)).relu() * torch.sigmoid(x) - 1


def _compiled_source(fn: Callable, x: torch.Tensor) -> tuple[torch.Tensor, str]:
    compiled = compile_fn(fn, x)
    return compiled(x), compiled.compiled.source


def _one_stream(fn: Callable, x: torch.Tensor, monkeypatch: pytest.MonkeyPatch, tmp_path) -> torch.Tensor:
    with monkeypatch.context() as m:
        m.setattr(cpp_streams, "STREAMS", 1)
        m.setenv("EMBER_CACHE_DIR", str(tmp_path))  # no plan of the streamed kernel
        out, source = _compiled_source(fn, x)
    assert "_part" not in source
    return out


@pytest.mark.parametrize("fn, shape", [
    (_four_sigmoids, (4099,)),  # 3 elements past the last whole part
    (F.mish, (1 << 16,)),
    (lambda x: torch.tanh(torch.tanh(x) * 2) * x, (7, 1000)),
    (lambda x: torch.sigmoid(torch.sigmoid(x[:, None] * torch.arange(300.0)) - 0.5), (33,)),  # broadcast rows
])
def test_chained_functions_run_as_streams_with_the_bits_of_one(fn: Callable, shape: tuple, monkeypatch, tmp_path) -> None:
    x = torch.randn(shape) * 3
    out, source = _compiled_source(fn, x)
    assert re.search(r"const int64_t x\d+_part = .* / 4;", source), source[-3000:]
    assert re.search(r"\bt\d+_3\b", source)  # the fourth copy's values
    assert_same(out, fn(x))
    assert torch.equal(out, _one_stream(fn, x, monkeypatch, tmp_path))


def test_independent_functions_keep_one_stream() -> None:
    x = torch.randn(5000)
    for fn in (_trig_chain, F.gelu, lambda x: torch.exp(x) + torch.sigmoid(x) * torch.tanh(x)):
        out, source = _compiled_source(fn, x)
        assert "_part" not in source
        assert_same(out, fn(x))


def test_chain_length_counts_expensive_functions_along_one_chain() -> None:
    body = ["auto t1 = in_ptr0[x0];", "auto t2 = e_exp(t1);", "auto t3 = (t2 * t1);", "auto t4 = e_sigmoid(t1);",
            "auto t5 = e_log1p(t3);", "out_ptr1[x0] = e_cast<float>((t5 + t4));"]
    assert cpp_streams.chain_length(body) == 2  # exp -> (times) -> log1p
    assert cpp_streams.streams_for(body) == cpp_streams.STREAMS
    assert cpp_streams.chain_length(body[:4]) == 1
    assert cpp_streams.streams_for(body[:4] + body[-1:]) == 1
    # a masked load's lambda or an indirect index: one stream, whatever the chain
    assert cpp_streams.streams_for(body + ["auto t6 = [&]() { return in_ptr1[x0]; };"]) == 1
    assert cpp_streams.streams_for(body + ["auto t7 = in_ptr2[ind3];"]) == 1


def test_interleaved_renames_each_copy_and_offsets_its_index() -> None:
    body = ["auto t1 = in_ptr0[(x1 + 8 * x0)];", "auto t2 = e_exp(t1);", "em_far |= e_trig_far(t2);",
            "out_ptr1[x1] = e_cast<float>(t2);"]
    assert cpp_streams.interleaved(body, "x1", 2, "x1_part") == [
        "auto t1 = in_ptr0[(x1 + 8 * x0)];", "auto t1_1 = in_ptr0[((x1 + 1 * x1_part) + 8 * x0)];",
        "auto t2 = e_exp(t1);", "auto t2_1 = e_exp(t1_1);",
        "em_far |= e_trig_far(t2);", "em_far |= e_trig_far(t2_1);",  # one reduction, never renamed
        "out_ptr1[x1] = e_cast<float>(t2);", "out_ptr1[(x1 + 1 * x1_part)] = e_cast<float>(t2_1);"]


def test_a_symbolic_length_streams_and_matches_eager_at_every_size() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    from ember_inductor.compile_fx import compile_aten_graph
    from ember_inductor.decompositions import decompositions

    x = torch.randn(1001)
    gm = make_fx(_four_sigmoids, decomposition_table=decompositions(), tracing_mode="symbolic")(x)
    compiled = compile_aten_graph(gm, [x])
    assert re.search(r"const int64_t x0_part = s\w* / 4;", compiled.source), compiled.source[-2000:]
    for n in (1001, 4, 3, 1, 4096 + 2):
        y = torch.randn(n) * 3
        assert_same(compiled(y), _four_sigmoids(y))


def test_a_training_step_through_mish_matches_eager() -> None:
    """Forward and backward through the backend contract, mish's forward and derivative being
    chains of expensive functions: the gradients equal eager's."""
    import torch.fx

    from ember_inductor.backend import inductor

    pytest.importorskip("ember_aot")

    def fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(F.mish(x @ w) * 2)

    x, w = torch.randn(64, 32), torch.randn(32, 48)
    leaves = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    ref = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    compiled = inductor(torch.fx.symbolic_trace(fn), leaves)
    out = compiled(*leaves)
    expected = fn(*ref)
    assert_same(out, expected)
    (out * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
    (expected * torch.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
    for a, b in zip(leaves, ref):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
