"""The bias CUDA's memory-efficient attention reads is laid out as the kernel requires: outer
strides multiples of 8 elements, the last dimension dense, a broadcast over heads kept as a
zero stride. Checked on the generated wrapper (the kernel itself needs a GPU; the GPU test is
tests/inductor/triton/test_triton_gpu.py::test_generate_with_a_padded_mask_stays_compiled)."""
from __future__ import annotations

import os
import re

import pytest
import sympy
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from ember_inductor import symbolic
from ember_inductor.attention_bias import aligned_strides
from ember_inductor.codegen.cpp_backend import CppBackend
from ember_inductor.codegen.wrapper import WrapperCodegen
from ember_inductor.graph import GraphLowering
from ember_inductor.scheduler import Scheduler

aten = torch.ops.aten


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    bias = torch.where(mask, 0.0, float("-inf")).expand(q.shape[0], q.shape[1], 1, mask.shape[-1])
    return aten._scaled_dot_product_efficient_attention(q, k, v, bias, False)[0]


def _generated(fn, mode: str, *inputs: torch.Tensor) -> str:
    """The wrapper the C++ backend generates for ``fn`` traced with ``mode`` on ``inputs``."""
    gm = make_fx(fn, tracing_mode=mode)(*inputs)
    with symbolic.using_hints(symbolic.shape_env_of(gm)):
        scheduler = Scheduler(GraphLowering(gm).run())
        prepared = CppBackend().prepare(scheduler)
        return WrapperCodegen(scheduler, prepared.kernels, torch.device("cpu"), prepared.tensor_args).generate()


def _wrapper(mode: str, keys: int) -> str:
    q, k, v = torch.randn(2, 4, 1, 16), torch.randn(2, 4, keys, 16), torch.randn(2, 4, keys, 16)
    return _generated(_attention, mode, q, k, v, torch.rand(2, 1, 1, keys) > 0.2)


def test_aligned_strides() -> None:
    assert aligned_strides([2, 4, 1, 13], [False] * 4) == [64, 16, 16, 1]
    assert aligned_strides([2, 4, 1, 13], [False, True, False, False]) == [16, 0, 16, 1]
    assert aligned_strides([2, 4, 5, 16], [False] * 4) == [320, 80, 16, 1]  # aligned: dense
    assert aligned_strides([2, 4, 3, 1], [False, False, True, False]) == [96, 24, 8, 1]  # inner stride 1: materialized


@pytest.mark.parametrize("mode", ["fake", "symbolic"])
def test_bias_over_13_keys_gets_a_stride_of_16(mode: str) -> None:
    call = _wrapper(mode, 13).split("def call_checked")[0]
    bias = re.search(r"(b\d+) = empty_strided\(\((\w+), 1, 1, (\w+), \), \((.*), \), dtype", call)
    assert bias, call
    strides = bias.group(4).split(", ")
    if mode == "fake":
        assert strides == ["16", "0", "16", "1"]
    else:  # rounded up at run time: (keys + 7) // 8 * 8
        assert strides[1:] == ["0", strides[0], "1"] and "// 8" in strides[0]
    assert re.search(rf"reinterpret\({bias.group(1)}, \({bias.group(2)}, \w+, 1, {bias.group(3)}, \)", call)  # heads: 0


def _decoding_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1, 1, 1)], -1)  # the past keys and the new one
    return _attention(q, k, v, mask)


def test_bias_over_past_plus_one_keys_keeps_the_heads_broadcast() -> None:
    """A decoding step's mask covers ``past + 1`` keys, whose rounded-up stride sympy writes as
    ``8 + 8 * (past // 8)``: still a multiple of 8. Before, that sum was taken for unaligned,
    the heads were laid out per head while the buffer was allocated for one: GPT-2's
    ``generate()`` on the GPU failed with "setStorage ... out of bounds" at the first
    symbolic decoding step."""
    q, k, v = torch.randn(2, 4, 1, 16), torch.randn(2, 4, 14, 16), torch.randn(2, 4, 14, 16)
    mask = torch.rand(2, 1, 1, 13) > 0.2
    call = _generated(_decoding_attention, "symbolic", q, k, v, mask).split("def call_checked")[0]
    bias = re.search(r"(b\d+) = empty_strided\(\((\w+), 1, 1, \(1 \+ (\w+)\), \), \((.*), \), dtype", call)
    assert bias, call
    strides = bias.group(4).split(", ")
    assert strides[1] == "0" and strides[3] == "1", strides
    view = re.search(rf"reinterpret\({bias.group(1)}, \(\w+, \w+, 1, \(1 \+ \w+\), \), \((.*?), \), 0\)", call)
    assert view and view.group(1).split(", ")[1] == "0", call


def test_aligned_strides_of_symbolic_sums() -> None:
    past = sympy.Symbol("past", integer=True, positive=True)
    strides = aligned_strides([2, 4, 1, past + 1], [False, True, False, False])
    assert strides[1] == 0 and strides[3] == 1
    assert all(strides[2].subs(past, n) % 8 == 0 and strides[2].subs(past, n) >= n + 1 for n in range(1, 40))


def _padded_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """What ``scaled_dot_product_attention`` on CUDA traces to (``preprocess_mask``): the bias
    padded to a multiple of 8 keys, sliced back, expanded over heads."""
    bias = torch.where(mask, 0.0, float("-inf"))
    keys = bias.shape[-1]
    bias = aten.constant_pad_nd(bias, [0, (8 - keys % 8) % 8])[..., :keys]
    return aten._scaled_dot_product_efficient_attention(q, k, v, bias.expand(q.shape[0], q.shape[1], 1, keys), False)[0]


def test_symbolic_pad_and_slice_of_the_bias_is_one_kernel() -> None:
    """The padding ``(8 - s % 8) % 8`` is known not to be negative and the slice back to ``s``
    to lie inside it, so both lower (before: each ran as an aten call, with a buffer each)."""
    q, k, v = torch.randn(2, 4, 1, 16), torch.randn(2, 4, 13, 16), torch.randn(2, 4, 13, 16)
    mask = torch.rand(2, 1, 1, 13) > 0.2
    call = _generated(_padded_attention, "symbolic", q, k, v, mask).split("def call_checked")[0]
    assert len(re.findall(r"\bc\d+\(", call)) == 1 and len(re.findall(r"\bkernel\d+\(", call)) == 1, call


def _trained_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A training step's attention on CUDA (``preprocess_mask``): the padded bias is an argument
    of the forward and, saved, of the backward."""
    bias = torch.where(mask, 0.0, float("-inf"))
    keys = bias.shape[-1]
    bias = aten.constant_pad_nd(bias, [0, (8 - keys % 8) % 8])[..., :keys]
    return aten._scaled_dot_product_efficient_attention(q, k, v, bias, True)[0]


def test_saved_bias_reaches_the_backward_in_the_layout_it_was_compiled_for() -> None:
    """Whisper's and CLIP's training steps on the H200: the forward handed the kernel an aligned
    copy of the bias but saved a dense one, the backward graph (compiled for the traced, padded
    strides) got it, ran with aten, and the kernel refused it ("attn_bias is not correctly
    aligned (strideM)"). One buffer now: the padded bias, both the kernel's and the saved one."""
    from ember_aot import aot_autograd
    from ember_inductor.decompositions import decompositions

    sources: list[str] = []

    def generate(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        scheduler = Scheduler(GraphLowering(gm).run())
        prepared = CppBackend().prepare(scheduler)
        sources.append(WrapperCodegen(scheduler, prepared.kernels, torch.device("cpu"), prepared.tensor_args)
                       .generate().split("def call_checked")[1])
        return lambda *args: None
    q, k, v = (torch.randn(2, 2, 6, 8, requires_grad=True) for _ in range(3))
    mask = torch.rand(2, 1, 6, 6) > 0.2
    aot_autograd(generate, decompositions=decompositions)(torch.fx.symbolic_trace(_trained_attention), [q, k, v, mask])
    forward, backward = sources
    biases = re.findall(r"(b\d+) = empty_strided\(\(2, 1, 6, 6, \), \((.*?), \)", forward)
    assert [stride for _, stride in biases] == ["48, 48, 8, 1"], forward
    assert re.search(rf"= c\d+\(arg0, arg1, arg2, {biases[0][0]}, True\)", forward), forward
    assert re.search(rf"return \(.*\b{biases[0][0]}\b", forward), forward  # saved as it is
    assert "check_layout(arg3, (2, 1, 6, 6, ), (48, 48, 8, 1, ), 'arg3')" in backward, backward
